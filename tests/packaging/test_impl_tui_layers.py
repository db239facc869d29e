"""The layers of impl/ and tui/ point one way: impl/ never imports tui/, and no import cycle among them.

Read from the source with ``ast`` (every import statement, at module level or
inside a function), so a lazy import counts as much as a top-level one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import fencepost.impl
import fencepost.tui

PACKAGES = {"fencepost.impl": Path(fencepost.impl.__file__).parent, "fencepost.tui": Path(fencepost.tui.__file__).parent}


def modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.glob("*.py"):
            found[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The fencepost modules ``path`` imports (``from P import m`` counts as ``P.m`` when that is a module)."""
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            subs = {f"{base}.{alias.name}" for alias in node.names} & known.keys()
            found.update(subs or {base})
    return {m for m in found if m.startswith("fencepost.") and m != name}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_impl_never_imports_tui() -> None:
    wrong = sorted((a, b) for a, deps in graph().items() if a.startswith("fencepost.impl") for b in deps
                   if b.startswith("fencepost.tui"))
    assert wrong == []


def test_no_import_cycle_among_impl_and_tui() -> None:
    edges = graph()
    inside = {name: {d for d in deps if d in edges} for name, deps in edges.items()}
    state: dict[str, str] = {}
    cycles = []

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for dep in sorted(inside[name]):
            if state.get(dep) == "open":
                cycles.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, path + [dep])
        state[name] = "done"

    for name in sorted(inside):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_the_walk_sees_the_imports_it_checks() -> None:
    # Guards the two tests above against passing because the walk found nothing.
    edges = graph()
    assert "fencepost.impl.attempts" in edges["fencepost.impl.isolation"]
    assert "fencepost.tui.narration" in edges["fencepost.tui.timeline"]
    assert "fencepost.impl.demo" in edges["fencepost.tui.demo"]
