"""Pitfall: assignment is a single boolean, so completing a task makes it pending again.

Seed 000 ("Problems arise when assignment is represented by a single boolean.
A task cannot then distinguish pending, running, and done. ... completed work
may accidentally reenter the queue."): completion clears ``assigned`` to free
the slot, and an unassigned task is exactly what the dispatcher looks for.
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import Outcome, Status


class Scheduler(SimpleScheduler):
    def complete(self, task_id: int, token: int, now: int) -> Outcome:
        outcome = super().complete(task_id, token, now)
        if outcome.accepted:
            # The bug: with one boolean, "not assigned" is all a completed task can be.
            self._tasks[task_id - 1].status = Status.PENDING
        return outcome
