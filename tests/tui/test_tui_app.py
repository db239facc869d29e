"""The app driven through its keys with Pilot: no sleeps, every wait is pilot.pause()."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.geometry import Region

from fencepost.cli import main
from fencepost.impl.mutants import token_reuse
from fencepost.spec.formats.scenario import Scenario, Step, load_scenario
from tui_helpers import ROW_STEPS, SIZE, STALE_TOKEN_STEPS, app_for, empty_session
from fencepost.tui import app as app_module
from fencepost.tui.app import DEFAULT_SPEED, SPEEDS, FencepostApp, open_timeline
from fencepost.tui.screens import HelpScreen, PromptScreen
from fencepost.tui.widgets import KEEP, EventLog, SidePanel, StatusBar, TaskColumn, fit, wrap

#: The size a new user tried first.
SMALL = (80, 24)


def titles(app: FencepostApp) -> list[str]:
    return [column.border_title for column in app.query(TaskColumn)]


async def test_right_and_left_step_forward_and_back_exactly():
    app = app_for("onboarding", questions=False)
    async with app.run_test(size=SIZE) as pilot:
        assert app.step == 0 and titles(app) == ["Pending 0", "Running 0", "Done 0"]
        await pilot.press("right", "right", "right")
        assert app.step == 3 and titles(app) == ["Pending 2", "Running 0", "Done 0"]
        seen_at_3 = titles(app), app.query_one(EventLog)._count
        await pilot.press("l", "l", "h", "left")
        assert app.step == 3
        assert (titles(app), app.query_one(EventLog)._count) == seen_at_3


async def test_home_and_end_and_the_keys_that_no_longer_apply():
    app = app_for("onboarding")
    async with app.run_test(size=SIZE) as pilot:
        last = app.timeline.last
        assert app.check_action("previous", ()) is None  # shown greyed at step 0
        await pilot.press("end")
        assert app.step == last
        assert app.check_action("next", ()) is None and app.check_action("toggle_play", ()) is None
        await pilot.press("right")
        assert app.step == last
        await pilot.press("home")
        assert app.step == 0
        assert app.check_action("write", ()) is False  # hidden outside interactive mode


async def test_g_jumps_to_the_step_typed_and_escape_changes_nothing():
    app = app_for("onboarding")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("1", "2", "enter")
        assert app.step == 12 and not isinstance(app.screen, PromptScreen)
        await pilot.press("g", "3", "escape")
        assert app.step == 12
        await pilot.press("g", "9", "9", "9", "enter")
        assert app.step == app.timeline.last  # clamped


async def test_n_and_shift_n_visit_the_expiries_and_rejections():
    app = app_for("onboarding")
    async with app.run_test(size=SIZE) as pilot:
        notable = app.timeline.notable
        assert len(notable) >= 2
        for index in notable:
            await pilot.press("n")
            assert app.step == index
        await pilot.press("n")
        assert app.step == notable[-1]
        assert app.check_action("next_notable", ()) is None
        await pilot.press("N")
        assert app.step == notable[-2]


@pytest.fixture
def timer_never_fires(monkeypatch):
    """Autoplay speeds so slow that no tick lands during a test: the test ticks itself."""
    monkeypatch.setattr(app_module, "SPEEDS", tuple(n * 1e-9 for n in range(1, len(SPEEDS) + 1)))


async def test_autoplay_steps_through_the_same_next_action_and_stops_at_the_end(timer_never_fires):
    app = app_for("capacity-one", questions=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        assert app.playing and app._timer._callback == app.action_next
        await pilot.press("plus", "plus", "minus")
        assert app.speed == DEFAULT_SPEED + 1 and app._timer._callback == app.action_next
        # Each tick of the timer calls action_next; the test ticks instead of waiting.
        for _ in range(app.timeline.last):
            app.action_next()
            await pilot.pause()
        assert app.step == app.timeline.last and not app.playing
        assert app.check_action("toggle_play", ()) is None


async def test_space_pauses_autoplay(timer_never_fires):
    app = app_for("capacity-one")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        app.action_next()
        await pilot.press("space")
        assert not app.playing and app.step == 1
        assert app.check_action("faster", ()) is False  # speed keys only while playing


async def test_clicking_a_log_line_jumps_to_its_step():
    app = app_for("onboarding")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("end")
        log = app.query_one(EventLog)
        first_shown = log.step_of_line(round(log.scroll_y))
        await pilot.click(EventLog, offset=(3, 1))  # inside the border: the first line
        assert app.step == first_shown


async def test_interactive_calls_append_steps_and_refused_ones_show_the_schedulers_message():
    app = empty_session()
    async with app.run_test(size=SIZE) as pilot:
        assert app.interactive and app.timeline.last == 0
        await pilot.press(*"add_worker w1 1", "enter")
        assert app.timeline.last == 1 and app.step == 1
        await pilot.press(*"dispatch w9 0 5", "enter")
        error = app.query_one("#command-error")
        assert error.has_class("-shown")
        assert "worker 'w9' is unknown: add it with add_worker first" in str(error.render())
        assert app.timeline.last == 1
        app.query_one("#command").value = ""
        await pilot.press(*"frobnicate 1", "enter")
        assert "unknown operation 'frobnicate'" in str(error.render()) and app.timeline.last == 1
        app.query_one("#command").value = ""
        for line in ("submit priority=2", "dispatch w1 5 5", "complete 1 1 9"):
            await pilot.press(*line, "enter")
        assert not error.has_class("-shown")
        assert [s.op for s in app.timeline.steps] == ["add_worker", "submit", "dispatch", "complete"]
        assert app.timeline.frames[-1].now == 9
        assert titles(app) == ["Pending 0", "Running 0", "Done 1"]


async def test_escape_leaves_the_command_line_so_the_keys_step_again():
    app = empty_session()
    async with app.run_test(size=SIZE) as pilot:
        for line in ("add_worker w1 1", "submit"):
            await pilot.press(*line, "enter")
        await pilot.press("escape", "left")
        assert app.step == 1
        await pilot.press("i")
        assert app.step == 2 and app.focused is app.query_one("#command")


async def test_w_writes_the_session_and_it_loads_back_identically(in_tmp_cwd: Path):
    app = empty_session()
    async with app.run_test(size=SIZE) as pilot:
        for line in ("add_worker w1 1", "submit", "dispatch w1 0 5", "advance 5", "dispatch w1 5 5", "complete 1 1 6"):
            await pilot.press(*line, "enter")
        await pilot.press("escape", "w")
        assert isinstance(app.screen, PromptScreen)
        app.screen.query_one("#prompt-input").value = "session.toml"
        await pilot.press("enter")
        session = app.timeline
    path = in_tmp_cwd / "session.toml"
    loaded = load_scenario(path)
    assert loaded.steps == session.steps
    assert loaded.steps[-1].expect == {"accepted": False}
    reopened = open_timeline(loaded, session.factory)
    assert reopened.frames == session.frames and reopened.checks == session.checks
    assert main(["replay", str(path)]) == 0


async def test_a_divergence_is_marked_and_m_shows_the_models_state():
    scenario = Scenario("diverges", STALE_TOKEN_STEPS)
    app = app_for(scenario, factory=token_reuse.Scheduler)
    async with app.run_test(size=SIZE) as pilot:
        # Step 5 reuses token 1 where the model issues 2; step 6's stale token 1 is then accepted.
        assert app.timeline.divergences == [5, 6] and app.timeline.mismatches == []
        await pilot.press("d")
        assert app.step == 5
        assert app.query_one("#differences").has_class("-shown")
        await pilot.press("m")
        assert app.side == "model" and app.query_one("#board").has_class("-model")
        running = app.query_one("#running", TaskColumn)
        assert running._rows[0].token == 2  # the model's fresh token; the mutant kept 1


async def test_a_big_scenario_is_checked_against_the_model_in_the_background(monkeypatch):
    monkeypatch.setattr(app_module, "MODEL_UP_FRONT_STEPS", 0)
    app = app_for(Scenario("diverges", STALE_TOKEN_STEPS), factory=token_reuse.Scheduler)
    assert not app.timeline.model_done and app.timeline.ran == 1  # nothing run before the first screen
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()  # the first screen is up, so the worker that runs the rest has been started
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.timeline.model_done and app.timeline.divergences == [5, 6]
        assert app.check_action("next_problem", ()) is True
        await pilot.press("d")
        assert app.step == 5 and app.query_one("#differences").has_class("-shown")


async def test_a_jump_past_the_steps_run_so_far_waits_for_the_background_worker(monkeypatch):
    import threading

    from fencepost.impl import Scheduler

    monkeypatch.setattr(app_module, "MODEL_UP_FRONT_STEPS", 0)
    monkeypatch.setattr(app_module, "RUN_AT_ONCE_STEPS", 1)
    go_on = threading.Event()

    class Held(Scheduler):
        def submit(self, *args, **kwargs):  # the worker's first step past the first screen waits here
            assert go_on.wait(timeout=30), "the test never let the worker go on"
            return super().submit(*args, **kwargs)

    steps = (Step("add_worker", {"worker": "w1", "capacity": 1}), *[Step("submit", {}) for _ in range(4)])
    app = app_for(Scenario("held", steps), factory=Held)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.timeline.ran == 2  # frame 0 and the next step's, for the first screen
        await pilot.press("end")
        assert app.step == 0 and app._wanted == 5  # the screen did not wait for the steps
        go_on.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.step == 5 and app.timeline.model_done


async def test_question_mark_opens_help_and_escape_closes_it():
    app = app_for("onboarding")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_the_palette_offers_load_jump_and_screenshot(in_tmp_cwd: Path):
    app = app_for("onboarding")
    async with app.run_test(size=SIZE) as pilot:
        commands = {command.title: command for command in app.get_system_commands(app.screen)}
        assert {"Load scenario", "Jump to step", "Save screenshot"} <= commands.keys()
        await pilot.press("right", "right", "right")
        commands["Save screenshot"].callback()
        saved = list((in_tmp_cwd / "screenshots").glob("*.svg"))
        assert len(saved) == 1 and saved[0].name.startswith("a-first-tour-")
        assert saved[0].name.endswith("-step-0003.svg") and "step 3/16" in saved[0].read_text().replace("&#160;", " ")
        commands["Load scenario"].callback()
        await pilot.pause()
        app.screen.query_one("#prompt-input").value = "capacity-one"
        await pilot.press("enter")
        assert app.timeline.scenario.title.startswith("Capacity one") and app.step == 0


def test_the_stylesheet_colours_every_kind_of_event():
    from fencepost.story.narration import EVENT_KINDS

    css = (Path(app_module.__file__).with_name("app.tcss")).read_text()
    for kind in EVENT_KINDS:
        assert f"EventLog > .event-log--{kind} " in css, kind
        assert f"StepSummary > .step-summary--{kind} " in css, kind


def notices(app: FencepostApp) -> list[str]:
    return [notification.message for notification in app._notifications]


def status_line(app: FencepostApp) -> str:
    status = app.query_one(StatusBar)
    return status.render_lines(Region(0, 0, status.size.width, 1))[0].text


async def test_a_long_narration_scrolls_by_keys_and_starts_at_the_top_of_every_step():
    app = app_for("onboarding")
    async with app.run_test(size=SMALL) as pilot:
        side = app.query_one(SidePanel)
        await pilot.pause()
        assert side.max_scroll_y > 0, "step 0's narration is longer than the panel at 80x24"
        assert side.border_subtitle == "more ↓ PgDn" and side.show_vertical_scrollbar
        await pilot.press("down")
        assert side.scroll_y == 1 and side.border_subtitle == "↑ more ↓"
        for _ in range(side.max_scroll_y):
            await pilot.press("pagedown")
        assert side.scroll_y == side.max_scroll_y and side.border_subtitle == "↑ PgUp"
        await pilot.press("shift+up")
        assert 0 <= side.scroll_y < side.max_scroll_y
        await pilot.press("shift+down", "right")
        await pilot.pause()
        assert app.step == 1 and side.scroll_y == 0
        assert side.border_subtitle == ("more ↓ PgDn" if side.max_scroll_y else "")


async def test_the_next_problem_is_on_the_status_line_not_in_a_notice_over_the_panel():
    app = app_for(Scenario("A completion with a stale token", STALE_TOKEN_STEPS))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert notices(app) == []
        assert status_line(app).startswith(" step 0/6  t=0  problem at step 6: d ")
        await pilot.press("d")
        await pilot.pause()
        assert app.step == 6 and "problem at step" not in status_line(app)


async def test_the_status_line_keeps_step_clock_and_marks_and_shortens_a_long_title():
    title = "A completion quoting a stale token, which the implementation must reject outright"
    app = app_for(Scenario(title, STALE_TOKEN_STEPS))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("end")
        line = status_line(app)
        assert line.startswith(" step 6/6  t=6  ✗ expect  A completion quoting")
        assert line.rstrip().endswith("…") and len(line) == SMALL[0]


async def test_a_renew_under_a_stale_token_is_shown_with_the_token_the_task_holds():
    from fencepost.impl.mutants import worker_identity

    # The counterexample `fencepost check impl.mutants.worker_identity:Scheduler` finds.
    trace = (
        Step("submit", {}),
        Step("submit", {}),
        Step("add_worker", {"worker": "w3", "capacity": 3}),
        Step("dispatch", {"worker": "w3", "now": 0, "duration": 1}),
        Step("dispatch", {"worker": "w3", "now": 0, "duration": 1}),
        Step("renew", {"task_id": 2, "token": 1, "now": 0, "duration": 1}, expect={"accepted": False}),
    )
    app = app_for(Scenario("Counterexample", trace), factory=worker_identity.Scheduler)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")
        assert app.step == 6
        summary = str(app.query_one("#summary").render())
        assert "lease of task 2 renewed: now [0, 1), under token 2, not the 1 given" in summary
        assert "still token 1" not in summary


async def test_the_event_log_wraps_an_explanation_instead_of_cutting_it():
    app = app_for("onboarding", questions=False)
    async with app.run_test(size=SIZE) as pilot:
        expiry = next(i for i in app.timeline.notable if app.timeline.frames[i].events[0].kind == "expiry")
        await pilot.press("g")
        app.screen.query_one("#prompt-input").value = str(expiry)
        await pilot.press("enter")
        log = app.query_one(EventLog)
        shown = [" ".join(text for text, _ in log.line(i)[1]) for i in range(log._count)]
        width = log.scrollable_content_region.width
        assert all(len("".join(text for text, _ in log.line(i)[1])) <= width for i in range(log._count))
        words = " ".join(" ".join(shown).split())
        for event in app.timeline.frames[expiry].events:
            assert event.text in words


def test_wrap_cuts_at_spaces_and_keeps_every_word():
    assert wrap("short", 10) == ("short",)
    assert wrap("lease [1, 9) of task 1 expired at t=9", 14) == ("lease [1, 9)", "of task 1", "expired at t=9")
    assert wrap("abcdefghijkl", 5) == ("abcde", "fghij", "kl")


async def test_g_says_so_when_the_step_typed_is_not_one():
    app = app_for("onboarding")
    last = app.timeline.last
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("right", "g", "x", "enter")
        assert app.step == 1 and notices(app) == [f"'x' is not a step number: still at step 1 (steps are 0 to {last})"]
        app.clear_notifications()
        await pilot.press("g", "enter")
        assert app.step == 1 and notices(app) == [f"no step number typed: still at step 1 (steps are 0 to {last})"]
        app.clear_notifications()
        await pilot.press("g", "9", "9", "enter")
        assert app.step == last and notices(app) == [f"there is no step 99: went to step {last}, the last"]
        app.clear_notifications()
        await pilot.press("g", "-", "3", "enter")
        assert app.step == 0 and notices(app) == ["there is no step -3: went to step 0, the first"]
        app.clear_notifications()
        await pilot.press("g", "4", "escape")
        assert app.step == 0 and notices(app) == []  # Escape is a change of mind, not a mistake


@pytest.mark.parametrize(
    "line, message",
    [
        ("submit priority=1 priority=2", "priority given twice: submit [priority] [due_at] [max_attempts] [retry_delay] [key]"),
        ("submit 1 2 3 4 k 6", "too many values for submit: submit [priority] [due_at] [max_attempts] [retry_delay] [key]"),
    ],
)
async def test_a_refused_line_shows_the_verbs_whole_signature(line: str, message: str):
    app = empty_session()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*line, "enter")
        error = app.query_one("#command-error")
        assert error.has_class("-shown") and str(error.render()) == message


@pytest.mark.parametrize("size", [SIZE, SMALL], ids=["120x40", "80x24"])
async def test_rows_show_due_time_retry_and_cancel_request_whatever_the_width(size):
    app = app_for(Scenario("Rows", ROW_STEPS))
    async with app.run_test(size=size) as pilot:
        await pilot.press("end")
        lines = {column.kind: ["".join(text for text, _ in column.line(i)[1]) for i in range(column._count)]
                 for column in app.query(TaskColumn)}
        assert lines["pending"][0].startswith("  #2 retry t=2") and lines["pending"][1].startswith("  #1 due t=12")
        assert lines["running"][0].startswith("#3 cancel req") and "tok 2 [1, 11)" in lines["running"][0]
        widths = {column.kind: column.scrollable_content_region.width for column in app.query(TaskColumn)}
        assert all(len(line) <= widths[kind] for kind, rows in lines.items() for line in rows)


def test_fit_drops_the_highest_rank_first_and_never_a_kept_part():
    parts = [("#1", "id", KEEP), (" a", None, 1), (" bb", None, 2), (" due t=12", None, KEEP)]
    assert fit(parts, 100) == (("#1", "id"), (" a", None), (" bb", None), (" due t=12", None))
    assert fit(parts, 13) == (("#1", "id"), (" a", None), (" due t=12", None))
    assert fit(parts, 3) == (("#1", "id"), (" due t=12", None))  # kept parts stay, to be cropped
