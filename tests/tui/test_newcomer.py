"""Issue 20, the TUI as a newcomer meets it: each rough edge, and the test that it is gone."""

from __future__ import annotations

import sys

import pytest

from fencepost.cli import main
from fencepost.impl import Scheduler
from fencepost.spec.checkers.linearize import check_history
from fencepost.spec.formats.scenario import Scenario, Step
from fencepost.impl.mutants import closed_interval
from fencepost.tui.app import FencepostApp, StepScreen
from fencepost.story.history import lead_up_lines, model_lines
from fencepost.tui.history import HistoryApp
from fencepost.tui.lanes import Lanes, LanesView
from fencepost.tui.screens import HelpScreen, PromptScreen
from fencepost.story.timeline import build_timeline
from fencepost.tui.widgets import Differences, Narration, QuestionPanel, StatusBar
from long_history import long_history
from tui_helpers import LANE_STEPS, SIZE, app_for, empty_session, long_run, text_of

SMALL = (80, 24)

#: A shrunk counterexample of the closed-interval mutant: at t=5 the lease [0, 5) is over, so
#: the model has taken task 1 back, while the mutant still runs it; and the completion quotes
#: token 3, which no lease ever had.
NEVER_ISSUED = (
    Step("add_worker", {"worker": "w1", "capacity": 1}),
    Step("submit", {}),
    Step("dispatch", {"worker": "w1", "now": 0, "duration": 5}),
    Step("complete", {"task_id": 1, "token": 3, "now": 5}),
)


def messages(app: FencepostApp) -> list[str]:
    return [notification.message for notification in app._notifications]


def footer_actions(app: FencepostApp) -> set[str]:
    """The actions the footer shows now (the screen's bindings with ``show`` left on)."""
    return {active.binding.action.partition("(")[0] for active in app.screen.active_bindings.values() if active.binding.show}


# ------------------------------------------------------------ 2. interactive mode and the next walkthrough


async def test_interactive_mode_ends_when_o_opens_the_next_walkthrough():
    app = app_for("onboarding", questions=False, walkthrough="onboarding")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("i", *"advance 99", "escape", "o")
        assert app.walkthrough == "capacity-one" and app.step == 0
        assert not app.interactive and not app.has_class("-interactive")
        assert not app.query_one("#command-bar").display and app.query_one("#command").value == ""
        assert " interactive " not in str(app.query_one(StatusBar).render())


async def test_after_a_refused_call_the_next_one_typed_replaces_it():
    app = empty_session()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*"add_worker w1 1", "enter", *"dispatch w9 3 5", "enter")
        error = app.query_one("#command-error")
        assert error.has_class("-shown") and str(error.render()).startswith("dispatch refused: worker 'w9' is unknown")
        line = app.query_one("#command")
        assert line.value == "dispatch w9 3 5" and line.selected_text == "dispatch w9 3 5"  # there to mend
        await pilot.press(*"advance 3")
        assert line.value == "advance 3"  # not "dispatch w9 3 5advance 3"
        await pilot.press("enter")
        assert app.timeline.last == 2 and app.timeline.frames[2].now == 3


async def test_a_refused_call_can_be_mended_in_place():
    app = empty_session()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*"add_worker w1 1", "enter", *"submit priority=x", "enter")
        await pilot.press("end", "backspace", "2", "enter")
        assert app.timeline.last == 2 and app.timeline.steps[-1].args == {"priority": 2}


# ------------------------------------------------------------ 3. counterexample wording


def test_a_token_no_lease_had_is_narrated_as_such_not_as_stale():
    for factory in (Scheduler, closed_interval.Scheduler):
        timeline = build_timeline(Scenario("never issued", NEVER_ISSUED), factory)
        text = " ".join(event.text for event in timeline.frames[4].events)
        assert "token 3 is a token this task never had" in text, text
        assert "stale" not in text.replace("stale_token", "")


def test_a_stale_token_that_was_issued_is_still_called_stale():
    steps = (*NEVER_ISSUED[:3], Step("advance", {"now": 5}), Step("dispatch", {"worker": "w1", "now": 5, "duration": 5}),
             Step("complete", {"task_id": 1, "token": 1, "now": 6}))
    text = build_timeline(Scenario("stale", steps), Scheduler).frames[6].events[-1].text
    assert "token 1 is stale: task 1 now runs under token 2" in text


async def test_both_rejected_for_different_reasons_flags_the_state_first():
    app = app_for(Scenario("closed interval", NEVER_ISSUED), factory=closed_interval.Scheduler)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")
        assert app.step == 4
        lines = str(app.query_one(Differences).render()).split("• ")
        assert lines[1].startswith("task 1: status 'running' (model: 'pending')")
        assert "both rejected the call, for different reasons: stale_token here, not_running in the model" in lines[2]
        assert app.timeline.checks[4].divergence.startswith("task 1: status 'running'")


# ------------------------------------------------------------ 4. an --impl without the protocol


def test_tui_refuses_an_impl_without_the_protocols_methods_in_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "odd.py").write_text("class Empty:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "odd", raising=False)
    monkeypatch.setattr(FencepostApp, "run", lambda self: pytest.fail("the app must not start"))
    assert main(["tui", "--impl", "odd:Empty"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "returned a Empty without the protocol's add_worker" in err
    sys.modules.pop("odd", None)


# ------------------------------------------------------------ 5. keys, help, m, →, lanes


async def test_the_footer_at_80x24_shows_the_keys_of_the_view_and_fits():
    app = app_for("onboarding", questions=False, walkthrough="onboarding")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("right")
        shown = footer_actions(app)
        assert {"next", "previous", "help", "quit", "toggle_lanes", "toggle_side", "next_notable"} <= shown
        assert "open_next" not in shown
        active = [a for a in app.screen.active_bindings.values() if a.binding.show]
        assert app._footer_width([a.binding for a in active]) <= SMALL[0]
        await pilot.press("end")
        assert "open_next" in footer_actions(app)  # at the last step, the next walkthrough
        await pilot.press("g")  # not in the footer here, and still a key
        assert isinstance(app.screen, PromptScreen)


async def test_the_footer_shows_time_scrolling_only_in_the_lanes_of_a_long_run():
    app = app_for(long_run(300))
    async with app.run_test(size=SMALL) as pilot:
        assert "scroll_lanes" not in footer_actions(app)
        await pilot.press("t")
        assert "scroll_lanes" in footer_actions(app)


async def test_the_help_screen_says_how_to_close_it_and_closes():
    app = app_for("onboarding")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        box = help_screen.query_one("#help-box")
        assert "Esc" in box.border_subtitle and "closes" in box.border_subtitle
        await pilot.press("escape")
        assert isinstance(app.screen, StepScreen)


async def test_m_in_a_walkthrough_shows_the_model_and_says_so():
    app = app_for("onboarding", questions=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("right", "right", "m")
        assert app.side == "model" and app.query_one("#board").has_class("-model")
        assert "showing the model" in str(app.query_one(StatusBar).render())
        assert any("the same as the implementation's here" in m for m in messages(app))
        await pilot.press("m")
        assert app.side == "impl"


async def test_right_past_a_question_says_the_answer_was_revealed_unscored_in_the_panel_not_a_notice():
    app = app_for("onboarding")
    asked = next(n for n, step in enumerate(app.timeline.scenario.steps, 1) if step.question)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*["right"] * asked)
        assert app.quiz.open(app.step)
        await pilot.press("right")
        await pilot.pause()
        assert "Revealed with → before an answer: not scored." in text_of(app.query_one(QuestionPanel))
        assert messages(app) == []  # a notice would sit over the panel that already says it
        assert "Nothing scored yet." in text_of(app.query_one(QuestionPanel))


async def test_a_wrong_pick_after_the_reveal_is_told_not_quite_and_left_unscored():
    app = app_for("onboarding")
    asked = next(n for n, step in enumerate(app.timeline.scenario.steps, 1) if step.question)
    wrong = next(n for n in range(1, 10) if n != app.timeline.scenario.steps[asked - 1].question.answer)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*["right"] * (asked + 2), "left", str(wrong))  # past it, back, then a pick
        await pilot.pause()
        assert app.step == asked
        assert f"You picked {wrong} after → showed the answer: not quite, not scored." in text_of(app.query_one(QuestionPanel))
        assert app.quiz.answered == 0 and app.quiz.late == {asked: wrong}


async def test_a_notice_is_taken_down_when_the_step_changes():
    app = app_for("onboarding", questions=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("right", "right", "m")
        await pilot.pause()
        assert messages(app)
        await pilot.press("right")
        await pilot.pause()
        assert messages(app) == []


def axis_labels(lanes: Lanes, index: int, width: int) -> list[int]:
    _, parts = lanes.lines(index, width)[0]
    axis = "".join(part for part, _ in parts[1:]).replace("▼", " ")
    return [int(token) for token in axis.split()]


def test_the_axis_is_scaled_to_the_run_and_labels_are_whole():
    lanes = Lanes(build_timeline(Scenario("lanes", LANE_STEPS), Scheduler, model=False))
    for width in range(20, 131):
        labels = axis_labels(lanes, 14, width)  # the cursor at t=10 hides the label it falls on, whole
        assert labels and labels[0] == 0 and labels == sorted(set(labels))
        step = min((b - a for a, b in zip(labels, labels[1:])), default=1)
        assert all(label % step == 0 and label <= lanes.extent for label in labels), (width, labels)
    # At 120 columns the run (t=0 to 12) fills the width: several columns a tick, not 0 to 115.
    cells = lanes.cells(118)
    window = lanes.window(10, cells)
    assert window.columns > 1 and window.column(lanes.extent) <= cells < window.column(lanes.extent) + 2 * window.columns


async def test_the_lanes_of_a_long_run_scroll_in_time_and_a_step_brings_the_cursor_back():
    app = app_for(long_run(300))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("t", "end")
        view = app.query_one(LanesView)
        first = int(view.border_title.split("t=")[1].split()[0])
        await pilot.press("left_square_bracket", "left_square_bracket")
        earlier = int(view.border_title.split("t=")[1].split()[0])
        assert earlier < first and view.pan == -2
        await pilot.press("right_square_bracket")
        assert view.pan == -1
        await pilot.press("left")
        assert view.pan == 0 and int(view.border_title.split("t=")[1].split()[0]) <= first


# ------------------------------------------------------------ 6. the history view uses the space


def test_the_checker_keeps_the_model_state_before_a_failing_stretch():
    history = long_history(60)
    verdict = check_history(history)
    zombie = history.calls[-1]
    start = verdict.failure.starts[0]
    task = start.tasks[zombie.args["task_id"] - 1]
    assert task.status.value == "running" and task.token == zombie.args["token"]
    lines = model_lines(history, verdict)
    assert f"task {zombie.args['task_id']}: running on w2 under token {zombie.args['token']}" in "\n".join(lines)
    lead_up = "\n".join(lead_up_lines(history, verdict))
    assert f"token {zombie.args['token']}" in lead_up and f"-> task {zombie.args['task_id']}" in lead_up


async def test_a_long_failing_history_fills_the_rows_under_the_lanes():
    history = long_history(400)
    app = HistoryApp(history, check_history(history))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        detail = app.query_one("#history-detail")
        used = sum(child.region.height for child in detail.children if child.display)
        assert detail.region.height >= 20 and used >= 20, (detail.region.height, used)
        assert app.query_one("#history-model").display and app.query_one("#history-lead-up").display
        assert not app.query_one("#history-order").display


async def test_right_through_questions_faster_than_the_screen_leaves_no_notice():
    app = app_for("onboarding")
    asked = [n for n, step in enumerate(app.timeline.scenario.steps, 1) if step.question]
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(app.timeline.last + len(asked)):
            app.action_next()  # no pause between: any notices' messages would queue up
        await pilot.pause()
        assert app.step == app.timeline.last
        assert messages(app) == []


async def test_the_history_views_footer_holds_every_key_at_80_columns():
    from textual.widgets._footer import FooterKey

    history = long_history(20)
    app = HistoryApp(history, check_history(history))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        keys = list(app.query(FooterKey))
        assert {key.action for key in keys} >= {"next", "previous", "lane(1)", "lane(-1)", "failure", "quit"}
        assert all(key.region.right <= SMALL[0] and key.region.width > 0 for key in keys if key.action != "command_palette")


async def test_at_80x24_e_shows_the_event_log_in_the_step_panels_place_and_the_panel_says_so():
    """The README promises an event log; at 80x24 it has no room of its own, so e swaps it in."""
    app = app_for("onboarding", questions=False)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("right", "right", "right")
        await pilot.pause()
        log, side = app.query_one("#log"), app.query_one("#side")
        assert not log.display and side.display
        assert side.border_title == "e: event log" and app.check_action("toggle_log", ()) is True
        await pilot.press("e")
        await pilot.pause()
        assert log.display and not side.display and log.region.height >= 8
        await pilot.press("e")
        await pilot.pause()
        assert not log.display and side.display
    wide = app_for("onboarding", questions=False)
    async with wide.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert wide.query_one("#log").display and "toggle_log" not in footer_actions(wide)  # shown anyway: no key
        assert wide.query_one("#side").border_title == ""


async def test_steps_typed_after_a_finished_walkthrough_do_not_carry_its_closing_note():
    app = app_for("onboarding", questions=False, walkthrough="onboarding")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("end")
        assert "press o" in text_of(app.query_one(Narration))
        await pilot.press("i", *"advance 99", "enter")
        await pilot.pause()
        assert app.step == app.timeline.last == len(app.timeline.scenario.steps) + 1
        assert "Predictions" not in text_of(app.query_one(Narration)) and "press o" not in text_of(app.query_one(Narration))


async def test_a_title_the_status_line_cuts_is_shown_whole_before_the_first_step():
    app = app_for("lease-ends", questions=False)
    title = app.timeline.scenario.title
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert " ".join(text_of(app.query_one(Narration)).split()).startswith(title)
    fits = app_for("onboarding", questions=False)
    async with fits.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert not text_of(fits.query_one(Narration)).startswith(fits.timeline.scenario.title)
