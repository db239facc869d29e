"""A step repaints only what changed (tui/widgets.py); these check it never leaves a stale row.

Each test steps an app through a busy stretch with the keys, then compares its
screen with that of an app opened straight at the step it ended on, whose first
paint drew every row. The screenshot is rendered from the widgets' cached rows,
so a row a step should have repainted and did not shows up as a difference.
"""

from __future__ import annotations

import collections

import pytest
from textual import events
from textual._compositor import Compositor
from textual.content import Content
from textual.screen import Screen

from fencepost.impl import Scheduler
from fencepost.tui.app import FencepostApp, open_timeline
from fencepost.bench.tui import generate
from fencepost.tui.widgets import EventLog, LineList, SidePanel, StepSummary, TaskColumn, WorkerStrip
from tui_helpers import settle

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
        # Settled, not only paused: a key that changes the bindings ("m") has the footer compose its
        # keys again, which a paused app may not have drawn yet on a loaded machine (CI run 10,
        # 2026-12-06: the stepped screen's footer was still blank).
        await settle(app, pilot)
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



@SIZES
async def test_a_step_lays_the_screen_out_only_when_a_height_changes_and_then_once(monkeypatch, size):
    """A layout costs more than drawing a step. Textual asks for one on every Static.update and
    every new virtual size, and once more after a layout changed a widget's size, and twice for a
    scrollbar that comes or goes; here a step lays out only when the step panel's summary grows
    or shrinks, then once, or when the panel's scrollbar comes or goes. A task column or the log
    that starts or stops overflowing lays nothing out: they show no scrollbar."""
    layouts = []
    lay_out = Screen._refresh_layout

    def counted(screen, *args, **kwargs):
        layouts.append(screen)
        return lay_out(screen, *args, **kwargs)

    monkeypatch.setattr(Screen, "_refresh_layout", counted)
    app = FencepostApp(open_timeline(SCENARIO, Scheduler))
    # stretches where Done grows past its height (at steps 261 and 165)
    app.set_reactive(FencepostApp.step, len(SCENARIO.steps) - 30 if size == (120, 40) else 155)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        summary, side = app.query_one(StepSummary), app.query_one(SidePanel)
        lists = [widget for widget in app.query(LineList) if widget.display]

        def heights() -> tuple:
            return summary.outer_size.height, side.show_vertical_scrollbar

        def overflowing() -> tuple:
            return tuple(widget.max_scroll_y > 0 for widget in lists)

        keys = []
        await settle(app, pilot)
        for key in ["right"] * 15 + ["left"] * 10:
            before, (height, scrollbar), lists_before = len(layouts), heights(), overflowing()
            await pilot.press(key)
            await settle(app, pilot)  # what the key's refreshes scheduled counts with this key, not the next
            new_height, new_scrollbar = heights()
            keys.append((len(layouts) - before, new_height != height, new_scrollbar != scrollbar, overflowing() != lists_before))
    assert all(count == 0 for count, taller, scrollbar, _ in keys if not (taller or scrollbar))
    assert all(count == 1 for count, taller, scrollbar, _ in keys if taller and not scrollbar)
    assert sum(taller for _, taller, _, _ in keys) > 5 and sum(not taller for _, taller, _, _ in keys) > 5
    assert any(lists for _, _, _, lists in keys), "no list started or stopped overflowing"


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
            await settle(app, pilot)
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


async def busy_stretch(size: tuple[int, int], keys: list[str] | None = None):
    """An app at the busy end of ``SCENARIO``, yielded after each of ``keys`` (12 → then 8 ←)."""
    app = FencepostApp(open_timeline(SCENARIO, Scheduler))
    app.set_reactive(FencepostApp.step, len(SCENARIO.steps) - 30)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        for key in keys or ["right"] * 12 + ["left"] * 8:
            yield app, pilot, key


@SIZES
async def test_a_list_draws_again_only_the_rows_whose_line_was_not_on_screen(monkeypatch, size):
    """Textual draws a row of a list again, its border and background too, whenever that row's
    height is marked dirty, and a scroll by a row or a top row gone marks them all; a row whose
    line was on screen the step before (at any height) is handed over as it was drawn."""
    drawn: collections.Counter = collections.Counter()
    render_line = LineList.render_line

    def counted(widget: LineList, y: int):
        drawn[widget.id] += 1
        return render_line(widget, y)

    monkeypatch.setattr(LineList, "render_line", counted)
    moved = 0
    async for app, pilot, key in busy_stretch(size):
        lists = [widget for widget in app.query(LineList) if widget.display]
        before = {widget.id: widget._drawn for widget in lists}  # the lines on screen, a row each
        drawn.clear()
        await pilot.press(key)
        await settle(app, pilot)
        for widget in lists:
            new = set(widget._drawn) - set(before[widget.id])
            assert drawn[widget.id] <= len(new), (key, app.step, widget.id)
            moved += widget._drawn[:-1] != before[widget.id][:-1] and widget._drawn[1:] != before[widget.id][1:]
    assert moved, "no list's rows moved"


@SIZES
async def test_a_step_maps_the_screen_only_when_it_lays_it_out(monkeypatch, size):
    """The compositor maps every widget (``_arrange_root``) in a layout, and again whenever a widget
    it has not placed is repainted: a list's scrollbar no column wide once was, at every step."""
    arranged, laid_out = [], []
    arrange, lay_out = Compositor._arrange_root, Screen._refresh_layout
    monkeypatch.setattr(Compositor, "_arrange_root", lambda *a, **k: arranged.append(1) or arrange(*a, **k))
    monkeypatch.setattr(Screen, "_refresh_layout", lambda *a, **k: laid_out.append(1) or lay_out(*a, **k))
    steps = 0
    async for app, pilot, key in busy_stretch(size):
        arranged.clear(), laid_out.clear()
        await pilot.press(key)
        await settle(app, pilot)
        assert len(arranged) == len(laid_out), (key, app.step)
        steps += 1
    assert steps == 20


async def test_the_wheel_scrolls_a_long_task_column_and_the_log_without_a_scrollbar():
    """The task columns and the event log show no scrollbar (it would be no column wide), and the
    mouse wheel still scrolls them when they are longer than they are high."""
    async for app, pilot, _ in busy_stretch((120, 40), ["right"]):
        for widget in (app.query_one("#pending", TaskColumn), app.query_one(EventLog)):
            assert widget.max_scroll_y > 0 and not widget.show_vertical_scrollbar
            start = widget.scroll_y
            wheel = events.MouseScrollUp if start else events.MouseScrollDown
            widget.post_message(wheel(widget, 1, 1, 0, 0, 0, False, False, False))
            await pilot.pause()
            assert widget.scroll_y != start, widget.id
        break


async def test_a_panels_height_counted_from_its_words_is_textuals_and_so_is_its_content():
    """FittedStatic counts a Text's lines from its words (``_height_at``) and ComponentStyles hands
    Textual the Text as Content (``_content``): both as Textual's own measure and conversion, on
    every summary and workers' strip of a busy stretch, at widths from 1 to 60."""
    async for app, pilot, key in busy_stretch((120, 40), ["right"] * 20):
        await pilot.press(key)
        await settle(app, pilot)
        for widget in (app.query_one(StepSummary), app.query_one(WorkerStrip)):
            text = widget._shown
            content = Content.from_rich_text(text)
            assert widget._content(text) == content and widget._content(text).spans == content.spans
            for width in range(1, 61):
                assert widget._height_at(text, width) == content.get_height(widget.styles, width), (width, text.plain)


async def test_a_task_row_is_formatted_once_for_every_board_that_shows_it_alike(monkeypatch):
    """Each step compares every row on screen with what is drawn, so a row's words are kept
    (``TaskColumn.line``): stepping back over steps just shown formats no row again."""
    formatted = []
    for kind in ("pending", "running", "done"):
        method = getattr(TaskColumn, f"_format_{kind}")
        monkeypatch.setattr(TaskColumn, f"_format_{kind}", lambda self, row, board, m=method: formatted.append(row) or m(self, row, board))
    back = []
    async for app, pilot, key in busy_stretch((120, 40)):
        before = len(formatted)
        await pilot.press(key)
        await settle(app, pilot)
        (back if key == "left" else []).append(len(formatted) - before)
    assert len(back) == 8 and back == [0] * 8 and formatted
