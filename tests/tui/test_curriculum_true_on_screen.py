"""Every walkthrough as the TUI opens it: no step shows an error it did not expect, "✗ expect" or "≠ model".

Opened the way a newcomer opens them: ``fencepost tui NAME`` with no flag, and
one after another with ``o`` from the first, so a walkthrough that needs a
capability (``needs``) gets a scheduler that has it either way.
"""

from __future__ import annotations

import pytest

from fencepost.cli import main
from fencepost.spec.formats.scenario import load_scenario
from fencepost.story.walkthroughs import builtin_names, curriculum
from fencepost.tui.app import FencepostApp
from fencepost.tui.widgets import StatusBar
from tui_helpers import SIZE


@pytest.fixture
def started(monkeypatch) -> list[FencepostApp]:
    """The apps ``fencepost tui`` would have run, instead of running them."""
    apps: list[FencepostApp] = []
    monkeypatch.setattr(FencepostApp, "run", lambda self: apps.append(self))
    return apps


def problems(app: FencepostApp) -> list[tuple[int, str]]:
    """(step, what is wrong) for every step of the open timeline, as the timeline judged it."""
    timeline, found = app.timeline, []
    for frame in timeline.frames[1:]:
        if frame.mismatch:
            found.append((frame.index, f"expect: {frame.mismatch}"))
        if frame.error is not None and frame.step.expect != "error":
            found.append((frame.index, f"error: {frame.error}"))
        check = timeline.check(frame.index)
        if check is None or check.divergence or check.differing:
            found.append((frame.index, "model: " + ("not checked" if check is None else "differs")))
    return found


async def status_at(app: FencepostApp, pilot, index: int) -> str:
    """The status line at step ``index``, its question (if any) answered rightly first."""
    question = app.quiz.open(index)
    if question is not None:
        app.quiz.answer(index, question.answer)
    app.step = index
    await pilot.pause()
    bar = app.query_one(StatusBar)
    return " ".join(strip.text for strip in bar.render_lines(bar.region.reset_offset))


@pytest.mark.parametrize("name", builtin_names())
def test_tui_name_opens_every_walkthrough_on_a_scheduler_that_runs_every_step(name: str, started) -> None:
    assert main(["tui", name]) == 0
    (app,) = started
    assert app.timeline.model_done and app.walkthrough == name
    assert problems(app) == []


async def test_every_step_of_the_curriculum_opened_with_o_shows_no_error_and_no_difference(started) -> None:
    assert main(["tui"]) == 0
    (app,) = started
    seen, shown = [], []
    async with app.run_test(size=SIZE) as pilot:
        for name in curriculum():
            await pilot.pause()
            assert app.walkthrough == name
            seen.append(name)
            if not app.timeline.model_done:
                await app.workers.wait_for_complete()
            shown += [(name, step, problem) for step, problem in problems(app)]
            for index in range(1, app.timeline.last + 1):
                status = await status_at(app, pilot, index)
                if "✗ expect" in status or "≠ model" in status:
                    shown.append((name, index, status.strip()))
            await pilot.press("o")
    assert seen == curriculum()
    assert shown == [], f"(walkthrough, step, problem): {shown}"


async def test_tui_durability_by_name_steps_through_its_restart_on_the_durable_scheduler(started, tmp_path) -> None:
    assert main(["tui", "durability"]) == 0
    (app,) = started
    assert app.impl_name == "impl.durable:temporary"
    async with app.run_test(size=SIZE) as pilot:
        for index in range(1, app.timeline.last + 1):
            status = await status_at(app, pilot, index)
            assert f"step {index}/" in status and "✗ expect" not in status and "≠ model" not in status
    written = tmp_path / "session.toml"
    app.write_session(str(written))
    assert load_scenario(written).needs == ("restart",) and main(["replay", str(written)]) == 0
