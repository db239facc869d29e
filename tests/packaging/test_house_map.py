"""The map of the house in docs/design.md ("Layout") is the house.

Every module of the tree is placed by one row of the table (the most
specific path that covers it), and every import it makes is allowed by that
row's last column: a list of folders and files, each covering what is under
it, minus those after "but"; or "anything". Read from the source with the
same import graph as ``test_layers.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from import_graph import PACKAGE_DIRS, import_graph, module_files

REPO = Path(__file__).resolve().parents[2]
DESIGN = REPO / "docs" / "design.md"


def table_rows(text: str) -> list[tuple[list[str], str]]:
    """(paths, may-import text) of each row of the Layout table."""
    section = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("path", "---"):
            continue
        rows.append((re.findall(r"`([^`]+)`", cells[0]), cells[2]))
    return rows


def allowed(text: str) -> tuple[list[str], list[str]] | None:
    """(allowed paths, excluded paths) of a may-import cell; None for "anything"."""
    if text.strip() == "anything":
        return None
    kept, _, but = text.partition(" but ")
    return re.findall(r"`([^`]+)`", kept), re.findall(r"`([^`]+)`", but)


def path_of(module: str, files: dict[str, Path]) -> str:
    return files[module].relative_to(REPO).as_posix()


def covers(path: str, place: str) -> bool:
    return path == place or (place.endswith("/") and path.startswith(place))


def row_for(path: str, rows: list[tuple[list[str], str]]) -> tuple[str, str] | None:
    """The most specific (path, may-import) covering ``path``."""
    best = None
    for places, may in rows:
        for place in places:
            if covers(path, place) and (best is None or len(place) > len(best[0])):
                best = (place, may)
    return best


ROWS = table_rows(DESIGN.read_text(encoding="utf-8"))
FILES = module_files(REPO)


def test_the_table_is_read() -> None:
    assert len(ROWS) > 10 and any("impl/runner/" in places for places, _ in ROWS)


def test_every_path_the_table_names_exists() -> None:
    missing = [place for places, _ in ROWS for place in places if not (REPO / place).exists()]
    assert not missing, missing


def test_every_module_has_a_place() -> None:
    homeless = sorted(path_of(m, FILES) for m in FILES if row_for(path_of(m, FILES), ROWS) is None)
    assert not homeless, f"modules docs/design.md's Layout table does not place: {homeless}"


def wrong_imports(graph: dict[str, set[str]], files: dict[str, Path], rows: list[tuple[list[str], str]]) -> list[str]:
    problems = []
    for module in sorted(graph):
        home = row_for(path_of(module, files), rows)
        rule = allowed(home[1]) if home else None
        if rule is None:
            continue
        keep, but = rule
        for target in sorted(graph[module]):
            target_path = path_of(target, files)
            if not any(covers(target_path, p) for p in keep) or any(covers(target_path, p) for p in but):
                problems.append(f"{path_of(module, files)} imports {target_path}, which its row ({home[0]}) does not allow")
    return problems


def test_every_import_is_one_the_table_allows() -> None:
    problems = wrong_imports(import_graph(REPO), FILES, ROWS)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("may", "target", "ok"), [
    ("`spec/`, `impl/` but `impl/mutants/`", "impl/indexed.py", True),
    ("`spec/`, `impl/` but `impl/mutants/`", "impl/mutants/closed_interval.py", False),
    ("`spec/`", "story/timeline.py", False),
])
def test_the_rule_reader_allows_and_refuses(may: str, target: str, ok: bool) -> None:
    keep, but = allowed(may)
    assert (any(covers(target, p) for p in keep) and not any(covers(target, p) for p in but)) is ok


def test_the_package_dirs_match_the_layers_test() -> None:
    assert set(PACKAGE_DIRS.values()) == {"fencepost", "spec", "impl", "story", "tui", "report"}


def test_the_checkers_package_names_every_checker() -> None:
    """``spec/checkers/__init__.py``'s docstring is the map of that folder: every module in it."""
    import ast

    folder = REPO / "spec" / "checkers"
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    unnamed = sorted(path.stem for path in folder.glob("*.py") if path.stem != "__init__" and f"``{path.stem}``" not in doc)
    assert not unnamed, f"spec/checkers/__init__.py does not name {unnamed}"


def test_every_folder_of_the_house_has_a_row() -> None:
    """Each top-level folder the repository tracks, and each package folder, is placed by the table."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    folders = {path.split("/", 1)[0] + "/" for path in tracked if "/" in path and not path.startswith(".")}
    folders |= {path.rsplit("/", 1)[0] + "/" for path in tracked if path.endswith("/__init__.py")}
    named = [place for places, _ in ROWS for place in places]
    # A folder is placed by a row of its own or of a folder around it, or file by file (``spec/model.py``...).
    unplaced = sorted(folder for folder in folders
                      if row_for(folder, ROWS) is None and not any(place.startswith(folder) for place in named))
    assert not unplaced, f"folders docs/design.md's Layout table does not place: {unplaced}"
