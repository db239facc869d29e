"""A step repaints only what changed (tui/widgets.py); these check it never leaves a stale row.

Each test steps an app through a busy stretch with the keys, then compares its
screen with that of an app opened straight at the step it ended on, whose first
paint drew every row. The screenshot is rendered from the widgets' cached rows,
so a row a step should have repainted and did not shows up as a difference.
"""

from __future__ import annotations

import pytest
from textual.screen import Screen

from fencepost.impl import Scheduler
from fencepost.tui.app import FencepostApp, open_timeline
from fencepost.tui.bench import generate
from fencepost.tui.widgets import LineList, StepSummary

#: A scenario with every kind of event, small enough to open in a moment.
SCENARIO = generate(tasks=120, rounds=30)

SIZES = pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])


async def screen_at(step: int, size: tuple[int, int], keys: list[str] = ()) -> tuple[int, str]:
    """The step shown and the screen, opened at ``step`` and then driven by ``keys``."""
    app = FencepostApp(open_timeline(SCENARIO, Scheduler))
    app.set_reactive(FencepostApp.step, step)  # before the first paint: drawn whole at this step
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        return app.step, app.export_screenshot(title="fencepost")


@SIZES
async def test_steps_forward_and_back_leave_the_screen_a_fresh_app_draws(size):
    start = len(SCENARIO.steps) - 30  # the busy end: dispatches, completions, failures, expiries
    keys = ["right"] * 12 + ["left"] * 5 + ["right"] * 2
    step, stepped = await screen_at(start, size, keys)
    assert step == start + 9
    assert stepped == (await screen_at(step, size))[1]


@SIZES
async def test_a_jump_and_the_model_side_leave_the_screen_a_fresh_app_draws(size):
    start = len(SCENARIO.steps) // 2
    step, stepped = await screen_at(start, size, ["end", "left", "m", "m", "home", "right", "right"])
    assert step == 2
    assert stepped == (await screen_at(step, size))[1]



async def test_a_step_lays_the_screen_out_only_when_a_height_changes_and_then_once(monkeypatch):
    """A layout costs more than drawing a step. Textual asks for one on every Static.update and
    every new virtual size, and once more after a layout changed a widget's size; here a step
    lays out only when the step panel's summary grows or shrinks, then once, or when a list
    starts or stops overflowing (its scrollbar comes or goes, and Textual lays out for that)."""
    layouts = []
    lay_out = Screen._refresh_layout

    def counted(screen, *args, **kwargs):
        layouts.append(screen)
        return lay_out(screen, *args, **kwargs)

    monkeypatch.setattr(Screen, "_refresh_layout", counted)
    app = FencepostApp(open_timeline(SCENARIO, Scheduler))
    app.set_reactive(FencepostApp.step, len(SCENARIO.steps) - 30)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        summary, lists = app.query_one(StepSummary), app.query(LineList)

        def heights() -> tuple:
            return summary.outer_size.height, tuple(widget.show_vertical_scrollbar for widget in lists)

        keys = []
        for key in ["right"] * 15 + ["left"] * 10:
            before, (height, overflowing) = len(layouts), heights()
            await pilot.press(key)
            await pilot.pause()
            new_height, new_overflowing = heights()
            keys.append((len(layouts) - before, new_height != height, new_overflowing != overflowing))
    assert all(count == 0 for count, taller, overflows in keys if not (taller or overflows))
    assert all(count == 1 for count, taller, overflows in keys if taller and not overflows)
    assert sum(taller for _, taller, _ in keys) > 5 and sum(not taller for _, taller, _ in keys) > 5


async def test_a_new_theme_repaints_every_row_in_its_colours():
    """The widgets keep their rows' styles between steps; new CSS (a theme from ctrl+p) must drop them."""
    step = len(SCENARIO.steps) - 30

    async def shot(switch: bool) -> str:
        app = FencepostApp(open_timeline(SCENARIO, Scheduler))
        app.set_reactive(FencepostApp.step, step)
        if not switch:
            app.theme = "textual-light"  # before the first paint
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            if switch:
                app.theme = "textual-light"
            await pilot.press("right", "left")
            await pilot.pause()
            return app.export_screenshot(title="fencepost")

    assert await shot(switch=True) == await shot(switch=False)


@SIZES
async def test_steps_in_the_lanes_view_leave_the_screen_a_fresh_app_draws(size):
    """With more lanes than rows the scrollbar that comes takes a column: the lanes are drawn
    again for it at once (they were drawn a column too wide until the next step)."""
    start = len(SCENARIO.steps) - 30
    step, stepped = await screen_at(start, size, ["t", *["right"] * 8, "left", "left"])
    assert step == start + 6
    assert stepped == (await screen_at(step, size, ["t"]))[1]
