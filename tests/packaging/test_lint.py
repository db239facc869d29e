"""``ruff check`` passes on the whole tree, with the rules pyproject.toml's ``[tool.ruff]`` selects.

So CI lints every change (ruff is in the ``test`` extra). A ``noqa`` comment
names a code that the configuration checks, or it is stale: both are caught
here, the second through ruff's own check for unused suppressions (RUF100,
added to the run below).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def ruff(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed: it is in the test extra (pip install -e '.[test]')")
    return subprocess.run([found, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def test_the_tree_passes_ruff_and_every_noqa_is_used() -> None:
    done = ruff("check", "--no-cache", "--extend-select", "RUF100", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_fails_on_a_lint_error_and_a_stale_noqa(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "bad.py").write_text(
        "import os\n\n\ndef f() -> int:\n    try:\n        return 1\n    except Exception:\n        return 0\n\n\n"
        "x = 1  # noqa: ANN001\n", encoding="utf-8")
    done = ruff("check", "--no-cache", "--extend-select", "RUF100", "--output-format", "concise", ".", cwd=tmp_path)
    assert done.returncode == 1
    assert {code for code in ("F401", "BLE001", "RUF100") if f" {code} " in done.stdout} == {"F401", "BLE001", "RUF100"}, done.stdout
