"""Pitfall: an explicit failure makes the task due again at the failure time, not after its backoff.

Seed 001 ("If A explicitly fails, schedule its retry at a later due time
rather than blocking the queue with a sleeping worker"), with the contract's
``due_at = now + retry_delay * 2**(attempts-1)``: here a failed task is
eligible at once and the backoff is lost.
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import Outcome, Status


class Scheduler(SimpleScheduler):
    def fail(self, task_id: int, token: int, now: int) -> Outcome:
        outcome = super().fail(task_id, token, now)
        task = self._tasks[task_id - 1]
        if outcome.accepted and task.status is Status.RETRY_WAIT:
            task.due_at = now  # the bug: no backoff
        return outcome
