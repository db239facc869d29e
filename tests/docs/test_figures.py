"""Every figure in the docs is the stamped output of a command anyone can rerun.

``python -m fencepost.figures NAME -- COMMAND`` writes ``docs/figures/NAME.md``
(see ``fencepost/figures.py``); a page shows it with ``--8<-- "figures/NAME.md"``.
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path

from fencepost import figures

REPO = Path(__file__).resolve().parents[2]
FIGURES = sorted((REPO / "docs" / "figures").glob("*.md"))
STAMP = re.compile(r"\*Measured \d{4}-\d\d-\d\d \d\d:\d\d UTC at commit \S+ on .+ \(\d+ cores\), "
                   r"load average [\d.]+ [\d.]+ [\d.]+, by `(fencepost|python) .+`\.\*")


def test_every_figure_is_stamped_and_says_how_to_refresh_it():
    assert FIGURES, "no figures in docs/figures"
    for path in FIGURES:
        first, second = path.read_text(encoding="utf-8").split("\n")[:2]
        assert first.startswith(figures.STAMP_PREFIX + f" {path.stem}; refresh with: python -m fencepost.figures "), path
        assert STAMP.fullmatch(second), f"{path.name}: no stamp: {second!r}"


def test_every_figure_is_shown_by_a_page_and_every_include_names_a_figure():
    pages = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "docs").glob("*.md"))
    included = set(re.findall(r'--8<-- "figures/([a-z0-9-]+)\.md"', pages))
    assert included == {p.stem for p in FIGURES}


def test_a_stamp_says_date_commit_cpu_and_load(tmp_path: Path):
    line = figures.stamp(["fencepost", "bench", "--quick"], tmp_path,
                         datetime.datetime(2026, 12, 1, 9, 30, tzinfo=datetime.timezone.utc))
    assert STAMP.fullmatch(f"*{line}*"), line
    assert "at commit unknown" in line  # tmp_path is no git checkout


def test_a_bad_figure_name_is_one_line_and_writes_nothing(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert figures.main(["../escape", "--", "fencepost", "--help"]) == 2
    assert "NAME must be" in capsys.readouterr().err
    assert not (tmp_path / "docs").exists()
