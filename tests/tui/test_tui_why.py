"""The TUI says why at a diverging step, in the words ``fencepost check`` prints (issue 30)."""

from __future__ import annotations

from fencepost.impl.mutants import token_reuse
from fencepost.spec.checkers.lockstep import run_calls
from fencepost.spec.checkers.why import WHY_PREFIX, why
from fencepost.spec.formats.scenario import Scenario
from fencepost.tui.widgets import Differences
from tui_helpers import SIZE, STALE_TOKEN_STEPS, app_for


async def test_the_diverging_step_ends_with_the_same_why_line_as_the_cli():
    app = app_for(Scenario("diverges", STALE_TOKEN_STEPS), factory=token_reuse.Scheduler)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")
        assert app.step == 5
        shown = app.query_one(Differences)._shown.plain.splitlines()
        trace = run_calls(token_reuse.Scheduler, [(s.op, dict(s.args)) for s in STALE_TOKEN_STEPS[:5]])
        assert shown[-1].startswith(WHY_PREFIX) and shown[-1] == why(trace).line()
        assert "tokens are handed out 1, 2, 3" in shown[-1]


async def test_a_step_that_agrees_with_the_model_has_no_why():
    app = app_for(Scenario("diverges", STALE_TOKEN_STEPS), factory=token_reuse.Scheduler)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("right", "right")
        assert app.why_line(2) is None


async def test_at_80x24_the_diverging_steps_why_line_is_in_view_without_scrolling():
    from fencepost.tui.widgets import SidePanel

    app = app_for(Scenario("diverges", STALE_TOKEN_STEPS), factory=token_reuse.Scheduler)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("d")
        await pilot.pause()
        await pilot.pause()  # the scroll comes after the step's layout
        side, differences = app.query_one(SidePanel), app.query_one(Differences)
        assert app.step == 5 and side.max_scroll_y > 0  # the panel overflows: the test means something
        assert differences.region.bottom <= side.content_region.bottom
        assert differences.region.y >= side.content_region.y


async def test_checks_note_on_the_diverging_step_is_not_shown_under_the_differences_it_repeats():
    from pathlib import Path

    from fencepost.impl.mutants import closed_interval
    from fencepost.spec.formats.scenario import load_scenario
    from fencepost.tui.widgets import Narration

    shipped = Path(__file__).resolve().parents[1] / "regressions" / "closed_interval.toml"
    app = app_for(load_scenario(shipped), factory=closed_interval.Scheduler)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("d")
        await pilot.pause()
        assert app.step == 4 and app.query_one(Differences).has_class("-shown")
        assert not app.query_one(Narration).has_class("-shown")
