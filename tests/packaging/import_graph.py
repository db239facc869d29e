"""The tree's modules and the imports between them, read with ``ast`` (nothing is imported).

Shared by ``test_layers.py`` (the layers point one way) and ``test_house_map.py``
(the map in docs/design.md is the house). Every ``import`` and ``from ...
import`` is resolved to a module of the tree; an import inside a function
counts (a lazy import is still a dependency), one in a module's ``if __name__
== "__main__":`` block does not (the block is a command's entry point, run as
a fresh ``__main__`` module: ``imports_of(main=True)`` reads those alone).
"""

from __future__ import annotations

import ast
from pathlib import Path


#: Where each installed package's modules live in the repository (pyproject's package-dir).
PACKAGE_DIRS = {
    "fencepost": "fencepost", "fencepost.spec": "spec", "fencepost.impl": "impl", "fencepost.story": "story",
    "fencepost.tui": "tui", "fencepost.report": "report",
}


def module_files(root: Path) -> dict[str, Path]:
    """Every module of the tree under ``root``, by its installed dotted name."""
    modules: dict[str, Path] = {}
    for package, folder in PACKAGE_DIRS.items():
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if package == "fencepost" and parts and f"fencepost.{parts[0]}" in PACKAGE_DIRS:
                continue  # not a folder of fencepost/ in this layout
            modules[".".join([package, *parts])] = path
    return modules


def _is_main_guard(node: ast.AST) -> bool:
    """``if __name__ == "__main__":``"""
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")


def _split_main(tree: ast.Module) -> tuple[list[ast.AST], list[ast.AST]]:
    """(every node outside the module's ``__main__`` blocks, every node inside them)."""
    main_blocks = [node for node in tree.body if _is_main_guard(node)]
    inside = [inner for block in main_blocks for inner in ast.walk(block)]
    seen = {id(node) for node in inside}
    return [node for node in ast.walk(tree) if id(node) not in seen], inside


def stdlib_imports(path: Path) -> set[str]:
    """Every top-level name ``path`` imports outside its ``__main__`` blocks (``argparse``, ``sys``...)."""
    names = set()
    for node in _split_main(ast.parse(path.read_text(encoding="utf-8"), str(path)))[0]:
        if isinstance(node, ast.Import):
            names |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.partition(".")[0])
    return names


def imports_of(name: str, path: Path, modules: dict[str, Path], main: bool = False) -> set[str]:
    """The tree's modules that ``name`` (at ``path``) imports, anywhere in its body but its
    ``__main__`` blocks (``main=True``: in those blocks only)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def known(target: str) -> str | None:
        # ``import a.b.c`` depends on the longest prefix that is a module of the tree.
        while target:
            if target in modules:
                return target
            target = target.rpartition(".")[0]
        return None

    outside, inside = _split_main(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    for node in inside if main else outside:
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name if is_package else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            # ``from pkg import mod`` imports the submodule when there is one.
            targets = [f"{module}.{alias.name}" for alias in node.names]
            targets = [t for t in targets if t in modules] or [module]
        for target in targets:
            hit = known(target)
            if hit is not None and hit != name:
                found.add(hit)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = module_files(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}
