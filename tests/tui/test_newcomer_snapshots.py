"""Snapshots of the screens issue 20 changed, at 80x24 and 120x40 (Textual is pinned in pyproject.toml).

Update after an intended change of looks with ``pytest tests/tui --snapshot-update``
and look at the report before committing the new SVGs.
"""

from __future__ import annotations

import pytest

from fencepost.spec.checkers.linearize import check_history
from fencepost.tui.history import HistoryApp
from long_history import long_history
from tui_helpers import app_for, long_run, pressed_and_settled

SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


@SIZES
def test_a_walkthrough_after_interactive_mode_and_o(snap_compare, size):
    app = app_for("onboarding", questions=False, walkthrough="onboarding")
    assert snap_compare(app, terminal_size=size, run_before=pressed_and_settled("i", *"advance 99", "escape", "o", "right"))


@SIZES
def test_the_lanes_of_a_long_run(snap_compare, size):
    app = app_for(long_run(300))
    assert snap_compare(app, terminal_size=size, run_before=pressed_and_settled("t", "end", "left", "left_square_bracket"))


@SIZES
def test_the_history_view_of_a_long_history_that_is_not_linearizable(snap_compare, size):
    history = long_history(400)
    assert snap_compare(HistoryApp(history, check_history(history)), terminal_size=size)


@SIZES
def test_the_help_screen(snap_compare, size):
    assert snap_compare(app_for("onboarding"), terminal_size=size, run_before=pressed_and_settled("question_mark"))
