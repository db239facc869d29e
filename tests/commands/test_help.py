"""Every subcommand's ``--help`` is written for the person typing it.

It says what the command does, shows examples of it, gives the exit statuses
and the docs page to read next, and never names fencepost's internals: no
module paths (a ``MODULE:NAME`` a user types is fine), no private names, no
notes to developers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fencepost.cli import SUBCOMMANDS, main

DOCS = Path(__file__).resolve().parents[2] / "docs"

#: A dotted path into fencepost's packages that is not a ``MODULE:NAME`` argument a user types.
MODULE_PATH = re.compile(r"(?<![\w.:])(?:fencepost\.)?(?:spec|impl|tui|report|story|commands|bench)\.[a-z_]+(?:\.[a-z_]+)*(?![\w.]*:)")

#: Words that belong to the code or to a developer, not to a user's help.
INTERNAL = re.compile(r"\b_[A-Za-z]\w*|\bstate_key\b|\bImplementationCheck\b|\bA test\b|\bimpl/ never\b|\blives here\b")


def help_text(capsys: pytest.CaptureFixture[str], command: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_help_says_what_shows_examples_and_names_a_docs_page(capsys, command: str) -> None:
    text = help_text(capsys, command)
    assert "Examples:" in text
    examples = text.split("Examples:", 1)[1]
    assert re.search(rf"^  fencepost {command}\b", examples, re.M), f"no example of fencepost {command}"
    assert "Exit status:" in text
    pages = re.findall(r"docs/([\w-]+\.md)", text)
    assert pages, "names no docs page"
    assert all((DOCS / page).is_file() for page in pages), pages


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_help_names_no_internals(capsys, command: str) -> None:
    text = help_text(capsys, command)
    text = re.sub(r"python -m fencepost\.figures|docs/[\w-]+\.md", "", text)  # a command a user types; a page
    assert not MODULE_PATH.findall(text), MODULE_PATH.findall(text)
    assert not INTERNAL.findall(text), INTERNAL.findall(text)


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_help_fits_in_a_few_screens(capsys, command: str) -> None:
    assert len(help_text(capsys, command).splitlines()) <= 100


def test_the_checks_catch_what_they_look_for() -> None:
    # The two patterns above, shown to find what they are for and to leave a user's MODULE:NAME alone.
    assert MODULE_PATH.findall("the format (spec.formats.adapter) and fencepost.impl.runner")
    assert not MODULE_PATH.findall("fencepost check impl.durable:DurableScheduler spec.mutants.x:Scheduler")
    assert INTERNAL.findall("shows the private _State") and INTERNAL.findall("A test runs it")


def test_faults_names_the_faults_the_cluster_injects() -> None:
    from fencepost.commands import faults
    from fencepost.impl.faults import cluster

    assert faults.FAULTS == cluster.FAULTS
