"""Helpers for the TUI tests: apps built the way ``fencepost tui`` builds them."""

from __future__ import annotations

import dataclasses

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
