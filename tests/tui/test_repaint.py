"""A step repaints only what changed (tui/widgets.py); these check it never leaves a stale row.

Each test steps an app through a busy stretch with the keys, then compares its
screen with that of an app opened straight at the step it ended on, whose first
paint drew every row. The screenshot is rendered from the widgets' cached rows,
so a row a step should have repainted and did not shows up as a difference.
"""

from __future__ import annotations

import pytest

from fencepost.impl import Scheduler
from fencepost.tui.app import FencepostApp, open_timeline
from fencepost.tui.bench import generate

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
