"""Helpers for the TUI tests: apps built the way ``fencepost tui`` builds them."""

from __future__ import annotations

import dataclasses

from textual.geometry import Region

from fencepost.impl import Scheduler
from fencepost.spec.formats.scenario import Scenario, Step, load_scenario
from fencepost.story.walkthroughs import resolve
from fencepost.tui.app import FencepostApp, open_timeline

#: The size the snapshots are taken at, and the Pilot tests run at.
SIZE = (120, 40)


def app_for(scenario: str | Scenario, factory=Scheduler, questions: bool = True, **options) -> FencepostApp:
    """An app on a built-in walkthrough (by name) or a Scenario, as the launcher builds it.

    ``questions=False`` drops the steps' questions, for tests of stepping that a
    question (which holds → until answered) would get in the way of.
    """
    if isinstance(scenario, str):
        scenario = load_scenario(resolve(scenario))
    if not questions:
        steps = tuple(dataclasses.replace(step, question=None) for step in scenario.steps)
        scenario = dataclasses.replace(scenario, steps=steps)
    return FencepostApp(open_timeline(scenario, factory), **options)


def empty_session() -> FencepostApp:
    """``fencepost tui --new``."""
    return app_for(Scenario("Interactive session", ()), interactive=True)


#: A run where a completion quotes the token of an earlier lease of the same task.
STALE_TOKEN_STEPS = (
    Step("add_worker", {"worker": "w1", "capacity": 1}, note="One worker, **one slot**."),
    Step("submit", {}),
    Step("dispatch", {"worker": "w1", "now": 0, "duration": 5}),
    Step("advance", {"now": 5}, note="The lease `[0, 5)` is dead at exactly 5."),
    Step("dispatch", {"worker": "w1", "now": 5, "duration": 5}),
    Step("complete", {"task_id": 1, "token": 1, "now": 6}, expect={"accepted": True}),
)


#: One moment with a task not yet due, one waiting to retry, and one running with a cancel request.
ROW_STEPS = (
    Step("add_worker", {"worker": "w1", "capacity": 2}),
    Step("submit", {"due_at": 12}),
    Step("submit", {}),
    Step("submit", {}),
    Step("dispatch", {"worker": "w1", "now": 0, "duration": 10}),
    Step("fail", {"task_id": 2, "token": 1, "now": 1}),
    Step("dispatch", {"worker": "w1", "now": 1, "duration": 10}),
    Step("cancel", {"task_id": 3, "now": 1}, note="Task 1 is not due until 12, task 2 waits to retry at 2, "
         "and task 3 runs on with a cancel request."),
)


def text_of(widget) -> str:
    """What the widget shows on screen, its lines joined and spaces collapsed (so wrapping does not matter)."""
    region = Region(0, 0, *widget.outer_size)
    text = " ".join(strip.text for strip in widget.render_lines(region))
    return " ".join(text.translate(BORDERS).split())


#: Border characters, blanked out of a widget's text.
BORDERS = str.maketrans({char: " " for char in "│╭╮╰╯─▌"})


#: Two workers (w2 with two slots): a completion, a renewal, an expiry, a late completion, a failure.
LANE_STEPS = (
    Step("add_worker", {"worker": "w1", "capacity": 1}),
    Step("add_worker", {"worker": "w2", "capacity": 2}),
    *(Step("submit", {}) for _ in range(4)),
    Step("dispatch", {"worker": "w1", "now": 0, "duration": 4}),  # 7: task 1, token 1, [0, 4)
    Step("dispatch", {"worker": "w2", "now": 1, "duration": 3}),  # 8: task 2, token 2, [1, 4)
    Step("dispatch", {"worker": "w2", "now": 2, "duration": 10}),  # 9: task 3, token 3, [2, 12)
    Step("renew", {"task_id": 2, "token": 2, "now": 3, "duration": 5}),  # 10: [1, 8)
    Step("complete", {"task_id": 1, "token": 1, "now": 3}),  # 11: done at 3
    Step("advance", {"now": 8}),  # 12: task 2's lease expires at 8
    Step("complete", {"task_id": 2, "token": 2, "now": 9}),  # 13: the late completion, rejected
    Step("fail", {"task_id": 3, "token": 3, "now": 10}),  # 14: failed at 10
)


def long_run(tasks: int) -> Scenario:
    steps = [Step("add_worker", {"worker": "w1", "capacity": 1})]
    for n in range(1, tasks + 1):
        steps += [Step("submit", {}), Step("dispatch", {"worker": "w1", "now": 2 * n, "duration": 2}),
                  Step("complete", {"task_id": n, "token": n, "now": 2 * n + 1})]
    return Scenario(f"A long run: {tasks} leases one after another", tuple(steps))


async def settle(app: FencepostApp, pilot) -> None:
    """Pause until the screen has nothing left to do. ``pilot.pause`` runs the update that is
    due, but what that update asks for (a second layout for a scrollbar that came, a resize)
    may still be queued when it returns: its idle test compares process time with wall time,
    so on a loaded machine it returns early. A test reading a region or counting a step's
    work must wait for that too, and for the model's lockstep (a worker thread), whose result
    may show more on the screen. Bounded: 50 rounds, no sleep."""
    for _ in range(50):
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        nodes = [app, *screen.walk_children(with_self=True)]
        if not (
            screen._layout_required or screen._repaint_required or screen._scroll_required or screen._dirty_widgets
            or any(node._message_queue.qsize() for node in nodes)
            or any(node._layout_required or node._repaint_required or node._scroll_required for node in nodes[1:])
        ):
            return
    raise AssertionError("the screen never settled")


def pressed_and_settled(*keys: str):
    """A ``snap_compare`` ``run_before`` that presses ``keys`` and then waits for ``settle``.

    ``snap_compare(press=...)`` only pauses after its keys; a key that changes the bindings
    (``i``, ``t``, ``m``, ``?``, ``escape``) has the footer compose its keys again, which a
    paused app may not have drawn yet on a loaded machine (a screen compared in
    ``test_repaint.py`` had a blank footer in CI run 10, 2026-12-06).
    """

    async def run_before(pilot) -> None:
        await pilot.pause()
        await pilot.press(*keys)
        await settle(pilot.app, pilot)

    return run_before
