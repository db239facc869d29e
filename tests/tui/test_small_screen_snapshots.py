"""Snapshots at 80x24 of the screens issue 30 found rough (Textual is pinned in pyproject.toml).

A prediction step (its question open, no notice over the panel), a counterexample's
diverging step (its ``why:`` line in view without scrolling) and the lanes of
priority-order (each lease labelled, no ``✓`` running into a label). Update after an
intended change of looks with ``pytest tests/tui --snapshot-update`` and look at the
report before committing the new SVGs.
"""

from __future__ import annotations

from pathlib import Path

from fencepost.impl.mutants import closed_interval
from fencepost.spec.formats.scenario import load_scenario
from tui_helpers import app_for, pressed_and_settled

#: The terminal a newcomer's laptop gives by default.
SMALL = (80, 24)
#: The counterexample ``fencepost check impl.mutants.closed_interval:Scheduler`` found, as shipped.
CLOSED_INTERVAL = Path(__file__).resolve().parents[1] / "regressions" / "closed_interval.toml"


async def settled(pilot) -> None:
    """Wait for the model's lockstep (a worker thread) and the layouts it causes: bounded, no sleep."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


def test_a_prediction_step_at_80x24(snap_compare):
    app = app_for("onboarding")
    asked = next(n for n, step in enumerate(app.timeline.scenario.steps, 1) if step.question)
    assert snap_compare(app, terminal_size=SMALL, press=["right"] * asked)


def test_a_counterexamples_diverging_step_at_80x24(snap_compare):
    app = app_for(load_scenario(CLOSED_INTERVAL), factory=closed_interval.Scheduler)

    async def to_the_divergence(pilot) -> None:
        await settled(pilot)
        await pilot.press("d")
        await settled(pilot)

    assert snap_compare(app, terminal_size=SMALL, run_before=to_the_divergence)


def test_the_lanes_of_priority_order_at_80x24(snap_compare):
    assert snap_compare(app_for("priority-order", questions=False), terminal_size=SMALL, run_before=pressed_and_settled("end", "t"))
