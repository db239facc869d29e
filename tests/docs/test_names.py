"""Every name the docs show a user still names something: the house may move, what people type may not.

Read from the README and every docs page (code spans, code blocks and prose
alike): each ``MODULE:NAME`` factory loads through the command line's own
loader (imported, not called: some need a server), each dotted
``fencepost.x.y[.Name]`` imports, its last part found as a module or an
attribute, and each name a ``from fencepost... import A, B`` line shows is
importable from there. The names the issues pinned, and the old names from before the
house moved, are listed here too.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from fencepost.spec.arguments import load_factory

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

#: ``MODULE:NAME`` as the command line takes it, fencepost's own modules only (short or full names).
FACTORY = re.compile(r"(?<![\w./-])((?:fencepost\.)?(?:impl|spec|story)(?:\.[a-z_]+)*:[A-Za-z_]\w*)")
#: A dotted name into fencepost's packages.
DOTTED = re.compile(r"(?<![\w./:-])(fencepost(?:\.[A-Za-z_]\w*)+)(?![\w:])")

#: ``from fencepost[.x.y] import A, B`` as a sample shows it (one line; parentheses allowed).
FROM_IMPORT = re.compile(r"^\s*from (fencepost(?:\.[a-z_]+)*) import \(?([A-Za-z_][\w, ]*)\)?\s*$", re.M)

#: Names the issues pin, and names from before the move that users may have typed or saved.
PINNED = [
    *(f"spec.mutants.{name}:Scheduler" for name in (
        "closed_interval", "token_reuse", "attempt_off_by_one", "retry_at_failure_time", "cancelled_dispatched",
        "no_release_on_complete", "worker_identity", "dispatch_consumes_token", "boolean_assigned")),
    "impl:Scheduler", "fencepost.impl:Scheduler", "impl.durable:temporary", "impl.postgres:temporary",
    "impl.postgres_broken:status_fenced", "impl.faults:postgres_factory",
    "fencepost.impl.peers.sqs:standard", "fencepost.impl.peers.sqs:fifo", "fencepost.impl.peers.litequeue:queue",
    "fencepost.impl.peers.pgqueuer:queue",
]


def shown() -> tuple[set[str], set[str]]:
    factories, dotted = set(), set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        dotted.update(f"{module}.{name.strip()}" for module, names in FROM_IMPORT.findall(text)
                      for name in names.split(",") if name.strip())
        factories.update(m for m in FACTORY.findall(text) if not re.search(r"\b(NAME|MODULE|FACTORY)\b", m))
        dotted.update(m.rstrip(".") for m in DOTTED.findall(text)
                      if not re.search(r"\.(NAME|MODULE|X|x|py|md|toml|json|jsonl)$", m.rstrip(".")))
    return factories, dotted


FACTORIES, DOTTED_NAMES = shown()


def test_the_docs_show_names_at_all() -> None:
    # A reader that found nothing would pass every test below.
    assert "fencepost.impl.peers.sqs:standard" in FACTORIES and "fencepost.impl.runner.Runner" in DOTTED_NAMES
    assert {"fencepost.conformance_test", "fencepost.impl.runner.Cancelled"} <= DOTTED_NAMES  # from its import lines


@pytest.mark.parametrize("name", sorted(FACTORIES | set(PINNED)))
def test_every_factory_the_docs_show_loads(name: str) -> None:
    assert callable(load_factory(name))


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


@pytest.mark.parametrize("name", sorted(DOTTED_NAMES))
def test_every_dotted_name_the_docs_show_imports(name: str) -> None:
    assert _resolve(name) is not None
