"""The import layers point one way, and no module imports itself round a cycle.

The source is read with ``ast`` (nothing is imported), every ``import`` and
``from ... import`` is resolved to a module of the tree (an import inside a
function counts: a lazy import is still a dependency), and the rules, from
the bottom layer up, are:

* ``spec/`` (the protocol, the model, the formats, the checkers) imports none of
  ``impl/``, ``story/``, ``tui/``, ``report/`` or the top (``fencepost/``);
* a format module (``spec/formats/``) imports no checker (``spec/checkers/``);
* ``impl/`` (the schedulers) imports none of ``story/``, ``tui/``, ``report/`` or the top;
  within it, only the mutants import the mutants (they stand above the schedulers they break);
* ``story/`` imports neither ``tui/`` nor ``report/`` nor the top;
* ``tui/`` and ``report/`` import neither each other nor the top;
* no import cycle between modules;
* only the command line (``fencepost/commands/``, ``fencepost/cli.py``) imports
  ``argparse``: a library module takes plain arguments, never a namespace;
* a library module's ``if __name__ == "__main__":`` block is a command's entry
  point (``python -m fencepost.impl.peers.record``), run as a fresh ``__main__``
  module, not as the library module: it imports the command line and nothing
  else, and those imports are not the module's dependencies (they are left out
  of the graph the rules above read);
* no source file is over ``MAX_LINES`` lines, and ``impl/`` has at most
  ``MAX_IMPL_ENTRIES`` entries at its top (a list of schedulers and families).

The top, ``fencepost/`` (the public names, the command line, the measurements),
may import anything.

The checks run on the real tree and, to show that they can fail, on tiny
synthetic trees that break each rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from import_graph import import_graph, imports_of, module_files, stdlib_imports

REPO = Path(__file__).resolve().parents[2]


#: The packages of the top layer, under ``fencepost/``: they may import anything.
TOP = ("fencepost.cli", "fencepost.commands", "fencepost.bench", "fencepost.figures", "fencepost.__main__")

#: The command line: the only modules that parse arguments (``argparse``), and the only ones a
#: library module's ``__main__`` block may import.
COMMAND_LINE = ("fencepost.cli", "fencepost.commands")

#: No source file may be longer (issue 32: a file past it hides more than one job).
MAX_LINES = 1_000

#: ``impl/`` reads as a list of schedulers and families: at most this many entries at its top.
MAX_IMPL_ENTRIES = 12


def entry_point_violations(root: Path) -> list[str]:
    """One line per import of a library module's ``__main__`` block that is not the command line."""
    modules = module_files(root)
    return [f"{name}'s __main__ block imports {target}, not the command line"
            for name, path in sorted(modules.items()) if not _is_top(name)
            for target in sorted(imports_of(name, path, modules, main=True))
            if not any(_under(target, allowed) for allowed in COMMAND_LINE)]


def argparse_violations(root: Path) -> list[str]:
    """One line per module outside the command line that imports ``argparse``."""
    return [f"{name} imports argparse (only the command line parses arguments)"
            for name, path in sorted(module_files(root).items())
            if not any(_under(name, allowed) for allowed in COMMAND_LINE) and "argparse" in stdlib_imports(path)]


def size_violations(root: Path) -> list[str]:
    """Source files over ``MAX_LINES`` lines, and an ``impl/`` with more than ``MAX_IMPL_ENTRIES`` entries."""
    problems = [f"{path.relative_to(root).as_posix()} has {lines:,} lines, over {MAX_LINES:,}"
                for path in sorted(module_files(root).values())
                if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    impl = root / "impl"
    entries = sorted(entry.name for entry in impl.iterdir() if entry.name != "__pycache__") if impl.is_dir() else []
    if len(entries) > MAX_IMPL_ENTRIES:
        problems.append(f"impl/ has {len(entries)} entries at its top, over {MAX_IMPL_ENTRIES}: {', '.join(entries)}")
    return problems


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """One line per import that points the wrong way."""
    top = ("fencepost",)  # the package itself (its __init__) and everything in TOP
    rules = [
        ("fencepost.spec", "fencepost.impl", "spec/ imports impl/"),
        ("fencepost.spec", "fencepost.story", "spec/ imports story/"),
        ("fencepost.spec", "fencepost.tui", "spec/ imports tui/"),
        ("fencepost.spec", "fencepost.report", "spec/ imports report/"),
        ("fencepost.spec.formats", "fencepost.spec.checkers", "a format imports a checker"),
        ("fencepost.impl", "fencepost.story", "impl/ imports story/"),
        ("fencepost.impl", "fencepost.tui", "impl/ imports tui/"),
        ("fencepost.impl", "fencepost.report", "impl/ imports report/"),
        ("fencepost.story", "fencepost.tui", "story/ imports tui/"),
        ("fencepost.story", "fencepost.report", "story/ imports report/"),
        ("fencepost.tui", "fencepost.report", "tui/ imports report/"),
        ("fencepost.report", "fencepost.tui", "report/ imports tui/"),
    ]
    problems = []
    for module in sorted(graph):
        if _is_top(module):
            continue
        for target in sorted(graph[module]):
            if _is_top(target) or target in top:
                problems.append(f"a library module imports the top: {module} imports {target}")
                continue
            for lower, upper, rule in rules:
                if _under(module, lower) and _under(target, upper):
                    problems.append(f"{rule}: {module} imports {target}")
            if _under(target, "fencepost.impl.mutants") and not _under(module, "fencepost.impl.mutants"):
                problems.append(f"a scheduler imports a mutant: {module} imports {target}")
    return problems


def _is_top(module: str) -> bool:
    return module == "fencepost" or any(_under(module, package) for package in TOP)


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected component of more than one module, as one cycle through it.

    Tarjan's algorithm, iterative; O(modules + imports).
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(_cycle_through(sorted(component), graph))
    return components


def _cycle_through(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest cycle from the component's first module back to itself (breadth first)."""
    members = set(component)
    start = component[0]
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, node, start]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{component} is not strongly connected")


def _describe(cycles: list[list[str]]) -> str:
    return "; ".join(" -> ".join(cycle) for cycle in cycles)


def test_the_layers_point_one_way():
    problems = layer_violations(import_graph(REPO))
    assert not problems, "\n".join(problems)


def test_no_import_cycles():
    cycles = import_cycles(import_graph(REPO))
    assert not cycles, f"import cycles: {_describe(cycles)}"


def test_only_the_command_line_parses_arguments():
    problems = argparse_violations(REPO)
    assert not problems, "\n".join(problems)


def test_a_library_modules_entry_point_imports_only_the_command_line():
    problems = entry_point_violations(REPO)
    assert not problems, "\n".join(problems)


def test_no_source_file_is_too_long_and_impl_stays_a_short_list():
    problems = size_violations(REPO)
    assert not problems, "\n".join(problems)


def test_the_graph_sees_the_tree():
    # A graph that found nothing would pass every rule: make sure it reads real imports.
    graph = import_graph(REPO)
    assert "fencepost.cli" in graph and "fencepost.spec.model" in graph
    assert "fencepost.story.timeline" in graph["fencepost.report.scenario"]
    assert "fencepost.spec.protocol" in graph["fencepost.spec.model"]
    assert "fencepost.impl.simple" in graph["fencepost.impl.indexed"] or "fencepost.spec.protocol" in graph["fencepost.impl.indexed"]


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in ("spec", "impl", "story", "tui", "report", "fencepost", "spec/formats", "spec/checkers", "impl/mutants",
                   "impl/runner", "fencepost/bench"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "__init__.py").touch()
    return tmp_path


@pytest.mark.parametrize(
    ("files", "rule"),
    [
        ({"spec/model.py": "from fencepost.impl import simple\n", "impl/simple.py": ""}, "spec/ imports impl/: fencepost.spec.model imports fencepost.impl.simple"),
        ({"spec/model.py": "def f():\n    import fencepost.tui.app\n", "tui/app.py": ""}, "spec/ imports tui/: fencepost.spec.model imports fencepost.tui.app"),
        ({"impl/runner/demo.py": "from fencepost.tui.app import App\n", "tui/app.py": "App = 1\n"}, "impl/ imports tui/: fencepost.impl.runner.demo imports fencepost.tui.app"),
        ({"impl/simple.py": "from fencepost.report import page\n", "report/page.py": ""},
         "impl/ imports report/: fencepost.impl.simple imports fencepost.report.page"),
        ({"story/timeline.py": "from fencepost.tui import app\n", "tui/app.py": ""},
         "story/ imports tui/: fencepost.story.timeline imports fencepost.tui.app"),
        ({"report/scenario.py": "from fencepost.tui.widgets import x\n", "tui/widgets.py": "x = 1\n"},
         "report/ imports tui/: fencepost.report.scenario imports fencepost.tui.widgets"),
        ({"tui/app.py": "from fencepost.bench import tui\n", "fencepost/bench/tui.py": ""},
         "a library module imports the top: fencepost.tui.app imports fencepost.bench.tui"),
        ({"impl/indexed.py": "from fencepost.impl.mutants import x\n", "impl/mutants/x.py": ""},
         "a scheduler imports a mutant: fencepost.impl.indexed imports fencepost.impl.mutants.x"),
        ({"tui/app.py": "def f():\n    import fencepost.report.scenario\n", "report/scenario.py": ""},
         "tui/ imports report/: fencepost.tui.app imports fencepost.report.scenario"),
        ({"spec/formats/trace.py": "from ..checkers.machine import x\n", "spec/checkers/machine.py": "x = 1\n"},
         "a format imports a checker: fencepost.spec.formats.trace imports fencepost.spec.checkers.machine"),
    ],
)
def test_a_wrong_way_import_is_found(tmp_path, files, rule):
    assert layer_violations(import_graph(_tree(tmp_path, files))) == [rule]


def test_the_mutants_may_import_the_schedulers(tmp_path):
    root = _tree(tmp_path, {"impl/mutants/broken.py": "from fencepost.impl.simple import S\n", "impl/simple.py": "S = 1\n"})
    assert layer_violations(import_graph(root)) == []


def test_a_cycle_is_found_and_named(tmp_path):
    root = _tree(tmp_path, {
        "impl/runner/core.py": "from fencepost.impl.runner import isolation\n",
        "impl/runner/isolation.py": "def f():\n    from fencepost.impl.runner.core import Runner\n",
        "impl/simple.py": "from fencepost.spec import model\n",
        "spec/model.py": "",
    })
    assert import_cycles(import_graph(root)) == [["fencepost.impl.runner.core", "fencepost.impl.runner.isolation", "fencepost.impl.runner.core"]]


def test_a_longer_cycle_is_named_in_order(tmp_path):
    root = _tree(tmp_path, {"spec/a.py": "import fencepost.spec.b\n", "spec/b.py": "from . import c\n", "spec/c.py": "from .a import x\n"})
    assert import_cycles(import_graph(root)) == [["fencepost.spec.a", "fencepost.spec.b", "fencepost.spec.c", "fencepost.spec.a"]]


def test_a_tree_without_cycles_or_wrong_imports_passes(tmp_path):
    root = _tree(tmp_path, {"spec/model.py": "", "impl/simple.py": "from fencepost.spec import model\n", "tui/app.py": "import fencepost.impl.simple\n"})
    graph = import_graph(root)
    assert graph["fencepost.tui.app"] == {"fencepost.impl.simple"}
    assert layer_violations(graph) == [] and import_cycles(graph) == []


def test_argparse_outside_the_command_line_is_found(tmp_path):
    root = _tree(tmp_path, {"impl/peers/record.py": "import argparse\n", "fencepost/commands/record.py": "import argparse\n"})
    assert argparse_violations(root) == ["fencepost.impl.peers.record imports argparse (only the command line parses arguments)"]


def test_an_entry_point_may_import_the_command_line_only_and_is_no_dependency(tmp_path):
    entry = 'import sys\n\nif __name__ == "__main__":\n    from fencepost.commands.record import main\n    sys.exit(main())\n'
    root = _tree(tmp_path, {
        "impl/peers/record.py": entry,
        "fencepost/commands/record.py": "from fencepost.impl.peers import record\n",
        "impl/peers/other.py": 'if __name__ == "__main__":\n    from fencepost.tui import app\n',
        "tui/app.py": "",
    })
    graph = import_graph(root)
    assert graph["fencepost.impl.peers.record"] == set() and layer_violations(graph) == [] and import_cycles(graph) == []
    assert entry_point_violations(root) == ["fencepost.impl.peers.other's __main__ block imports fencepost.tui.app, "
                                            "not the command line"]


def test_a_long_file_and_a_crowded_impl_are_found(tmp_path):
    files = {f"impl/s{n}.py": "" for n in range(MAX_IMPL_ENTRIES)}
    files["spec/model.py"] = "x = 1\n" * (MAX_LINES + 1)
    problems = size_violations(_tree(tmp_path, files))
    assert problems[0] == f"spec/model.py has {MAX_LINES + 1:,} lines, over {MAX_LINES:,}"
    assert problems[1].startswith(f"impl/ has {MAX_IMPL_ENTRIES + 3} entries at its top")


def test_imports_between_test_modules(tmp_path):
    """No test module imports another (shared helpers live in helper modules, fixtures in conftest.py)."""
    def offenders(root: Path) -> list[str]:
        found = []
        for path in sorted(root.rglob("*.py")):
            for name in stdlib_imports(path):  # the top-level names it imports: a test module's is test_*
                if name.startswith("test_"):
                    found.append(f"{path.relative_to(root).as_posix()} imports {name}")
        return found

    assert offenders(REPO / "tests") == []
    (tmp_path / "test_a.py").write_text("from test_b import helper\n")
    assert offenders(tmp_path) == ["test_a.py imports test_b"]
