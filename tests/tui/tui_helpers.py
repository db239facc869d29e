"""Helpers for the TUI tests: apps built the way ``fencepost tui`` builds them."""

from __future__ import annotations

from fencepost.impl import Scheduler
from fencepost.spec.formats.scenario import Scenario, Step, load_scenario, resolve
from fencepost.tui.app import FencepostApp, open_timeline

#: The size the snapshots are taken at, and the Pilot tests run at.
SIZE = (120, 40)


def app_for(scenario: str | Scenario, factory=Scheduler, **options) -> FencepostApp:
    """An app on a built-in walkthrough (by name) or a Scenario, as the launcher builds it."""
    if isinstance(scenario, str):
        scenario = load_scenario(resolve(scenario))
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
