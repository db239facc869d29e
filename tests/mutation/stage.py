"""Lay the tree out as it is installed, so mutmut mutates the modules the tests import.

    python tests/mutation/stage.py STAGE      # then: cd STAGE && mutmut run && mutmut results

mutmut names each mutant after the module path of its file and runs the
tests from its copy of the tree; the tests import ``fencepost.impl``, which
in this repository is the folder ``impl/`` (pyproject's ``package-dir``), so a
run from the repository root mutates ``impl.*`` while the tests call the
installed, unmutated ``fencepost.impl.*``. This script copies the packages to
``STAGE/src/fencepost/`` (``spec``, ``impl``, ``tui`` and ``report`` under their installed
names), ``tests/`` beside it, and writes a ``pyproject.toml`` holding only
the mutmut and pytest settings, with the mutated path
``src/fencepost/impl``. Run mutmut from STAGE with an interpreter that has
fencepost's dependencies but not fencepost itself (so ``src/`` is what it
imports): ``pip install "mutmut==3.8.1" hypothesis textual pytest``.

Refuses (one line, exit 2) a STAGE that exists and is not empty.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: The tests the mutation run selects: the spec as the test (see test_spec_as_test.py).
SELECTION = [
    "tests/mutation",
    "tests/spec/test_seed_examples.py",
    "tests/spec/test_model.py",
    "tests/spec/test_regressions.py::test_every_saved_scenario_replays_clean",
    # check_invariants() is the oracle the spec's runs lean on, not behaviour the spec
    # can see; its own corruption cases say whether it is weakened.
    "tests/implementations/test_indexed.py::test_check_invariants_catches_a_corrupted_index",
]
#: Harness, not schedulers: left unmutated.
NOT_MUTATED = ["bench.py", "bench_timing.py"]


def stage(target: Path) -> None:
    package = target / "src" / "fencepost"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "fencepost", package, ignore=ignore)
    for folder in ("spec", "impl", "tui", "report"):
        shutil.copytree(REPO / folder, package / folder, ignore=ignore)
    shutil.copytree(REPO / "tests", target / "tests", ignore=ignore)
    also = sorted(f"src/fencepost/{p.name}" for p in package.iterdir() if p.name != "impl")
    lines = [
        "[tool.pytest.ini_options]", 'testpaths = ["tests"]', "",
        "[tool.mutmut]", 'source_paths = ["src/fencepost/impl"]',
        "also_copy = [" + ", ".join(f'"{p}"' for p in also) + "]",
        "do_not_mutate = [" + ", ".join(f'"src/fencepost/impl/{n}"' for n in NOT_MUTATED) + "]",
        "pytest_add_cli_args_test_selection = [" + ", ".join(f'"{t}"' for t in SELECTION) + "]", "",
    ]
    (target / "pyproject.toml").write_text("\n".join(lines), encoding="utf-8")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tests/mutation/stage.py STAGE", file=sys.stderr)
        return 2
    target = Path(argv[0])
    if target.exists() and any(target.iterdir()):
        print(f"stage.py: STAGE {target} exists and is not empty: give a new folder", file=sys.stderr)
        return 2
    stage(target)
    print(f"staged in {target}: cd {target} && mutmut run && mutmut results")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
