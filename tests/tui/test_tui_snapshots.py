"""Snapshots of the key screens at a fixed size (Textual is pinned in pyproject.toml).

Update after an intended change of looks with ``pytest tests/tui --snapshot-update``
and look at the report before committing the new SVGs.
"""

from __future__ import annotations

from fencepost.impl.mutants import token_reuse
from fencepost.spec.formats.scenario import Scenario
from tui_helpers import ROW_STEPS, SIZE, STALE_TOKEN_STEPS, app_for, empty_session


def test_opening_screen(snap_compare):
    assert snap_compare(app_for("onboarding", questions=False), terminal_size=SIZE)


def test_a_lease_expires(snap_compare):
    app = app_for("onboarding", questions=False)
    step = app.timeline.notable[0]  # the first expiry
    assert [e.kind for e in app.timeline.frames[step].events] == ["expiry"]
    assert snap_compare(app, terminal_size=SIZE, press=["right"] * step)


def test_a_completion_is_rejected(snap_compare):
    app = app_for("onboarding", questions=False)
    step = app.timeline.notable[1]
    assert "rejection" in [e.kind for e in app.timeline.frames[step].events]
    assert snap_compare(app, terminal_size=SIZE, press=["n", "n"])


def test_a_broken_expect_is_marked(snap_compare):
    app = app_for(Scenario("A completion with a stale token", STALE_TOKEN_STEPS))
    assert app.timeline.mismatches == [6]
    assert snap_compare(app, terminal_size=SIZE, press=["d"])


def test_the_implementation_parts_from_the_model(snap_compare):
    app = app_for(Scenario("Token reuse, against the model", STALE_TOKEN_STEPS), factory=token_reuse.Scheduler)
    assert snap_compare(app, terminal_size=SIZE, press=["d"])


def test_a_small_terminal_stays_readable(snap_compare):
    assert snap_compare(app_for("onboarding", questions=False), terminal_size=(80, 24), press=["n"])


def test_an_interactive_session_shows_the_schedulers_refusal(snap_compare):
    keys = [*"add_worker w1 1", "enter", *"submit priority=2", "enter", *"dispatch w1 5 5", "enter"]
    keys += [*"complete 1 7 6", "enter", *"dispatch w2 6 1", "enter"]
    assert snap_compare(empty_session(), terminal_size=SIZE, press=keys)


#: The smaller size people use.
SMALL = (80, 24)


def test_rows_show_due_time_retry_and_cancel_request_first(snap_compare):
    app = app_for(Scenario("Rows", ROW_STEPS))
    assert snap_compare(app, terminal_size=SIZE, press=["end"])


def test_rows_keep_their_key_facts_at_80x24(snap_compare):
    app = app_for(Scenario("Rows", ROW_STEPS))
    assert snap_compare(app, terminal_size=SMALL, press=["end"])


def test_a_question_hides_the_result(snap_compare):
    app = app_for("onboarding")
    assert snap_compare(app, terminal_size=SIZE, press=["right"] * 4)


def test_a_wrong_answer_at_80x24(snap_compare):
    app = app_for("onboarding")
    assert snap_compare(app, terminal_size=SMALL, press=["right"] * 4 + ["1"])
