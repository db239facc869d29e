"""The peers are built from the public adapter kit alone: no module under impl/peers/ imports a private name.

A private name of fencepost is a module or attribute whose name starts with an
underscore anywhere along its dotted path (``fencepost.impl._validate``,
``kit._helper``). The source is read with ``ast`` (nothing is imported), so a
lazy import inside a function counts too. The rule is also run on small
synthetic modules that break it, to show it can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PEERS = Path(__file__).resolve().parents[2] / "impl" / "peers"


def private_names(source: str, package: str = "fencepost.impl.peers") -> list[str]:
    """Every private fencepost name ``source`` imports or reads off an imported fencepost module, as written."""
    found: list[str] = []
    bound: set[str] = set()  # local names bound to a fencepost module or object

    def private(dotted: str) -> bool:
        return any(part.startswith("_") and part != "__init__" for part in dotted.split("."))

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "fencepost":
                    if private(alias.name):
                        found.append(alias.name)
                    bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: resolve against the package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([module] if module else [])])
            if module.split(".")[0] != "fencepost":
                continue
            for alias in node.names:
                if private(module) or private(alias.name):
                    found.append(f"{module}.{alias.name}")
                bound.add(alias.asname or alias.name)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in bound:
                found.append(f"{ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", sorted(PEERS.glob("*.py")), ids=lambda p: p.name)
def test_no_peer_module_imports_a_private_name_of_fencepost(path: Path) -> None:
    assert private_names(path.read_text(encoding="utf-8")) == [], f"{path.name} reaches past the kit"


@pytest.mark.parametrize(("source", "caught"), [
    ("import fencepost.impl._validate as v", "fencepost.impl._validate"),
    ("from fencepost.impl._validate import check_time", "fencepost.impl._validate.check_time"),
    ("from fencepost.impl.kit import _private", "fencepost.impl.kit._private"),
    ("def f():\n    from fencepost.impl.postgres.scheduler import _fits", "fencepost.impl.postgres.scheduler._fits"),
    ("from fencepost.impl import kit\nkit.checks._helper()", "kit.checks._helper"),
    ("from .. import _batches", "fencepost.impl._batches"),
])
def test_the_rule_catches_each_way_of_reaching_a_private_name(source: str, caught: str) -> None:
    assert private_names(source) == [caught]


def test_the_rule_lets_public_names_and_other_libraries_private_names_through() -> None:
    source = ("from fencepost.impl import kit\nfrom fencepost.impl.kit import check_time, Book\n"
              "import asyncio\nasyncio._get_running_loop()\nkit.Book().__class__\n")
    assert private_names(source) == []


KIT = PEERS.parent / "kit"


def test_the_template_a_user_copies_uses_only_the_kit_and_passes_check(capsys) -> None:
    """impl/kit/template.py, the adapter docs/adapter.md tells a user to copy, passes at default settings."""
    from fencepost.cli import main

    assert private_names((KIT / "template.py").read_text(encoding="utf-8"), "fencepost.impl.kit") == []
    status = main(["check", "fencepost.impl.kit.template:queue"])
    out = capsys.readouterr().out
    assert status == 0 and "conforms" in out, out


def test_the_write_an_adapter_page_documents_each_part_of_the_kit() -> None:
    page = (PEERS.parents[1] / "docs" / "adapter.md").read_text(encoding="utf-8")
    for words in ("check_submit", "Book.check_dispatch", "not_offered", "CompositeToken", "read_back", "guard",
                  "views=none", "impl/kit/template.py", "--variant"):
        assert words in page, words


#: The one module under impl/peers/ that is not an adapter: the recorder of histories, a harness that drives the
#: checkers' formats and clocks (``fencepost record``), not a user's adapter.
HARNESS = {"record.py"}


@pytest.mark.parametrize("path", sorted(p for p in PEERS.glob("*.py") if p.name not in HARNESS), ids=lambda p: p.name)
def test_every_adapter_imports_fencepost_only_through_the_kit(path: Path) -> None:
    """An adapter needs nothing but ``fencepost.impl.kit``: what it needed elsewhere was made public there."""
    reached = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fencepost"):
            if node.module != "fencepost.impl.kit":
                reached.append(node.module)
        elif isinstance(node, ast.Import):
            reached += [a.name for a in node.names if a.name.startswith("fencepost") and a.name != "fencepost.impl.kit"]
    assert reached == [], f"{path.name} reaches past the kit: {reached}"
