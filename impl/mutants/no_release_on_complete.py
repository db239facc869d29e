"""Pitfall: a completion does not give the worker's slot back.

Seed 000 ("Completion changes a matching running task to done and releases
its slot immediately"): this scheduler releases a slot when a lease expires
or fails but forgets it on completion, so a worker shrinks by one slot per
completed task.
"""

from __future__ import annotations

from collections import Counter

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import Lease, Outcome


class Scheduler(SimpleScheduler):
    def __init__(self) -> None:
        super().__init__()
        self._leaked: Counter[str] = Counter()  # worker -> slots its completed tasks still hold

    def complete(self, task_id: int, token: int, now: int) -> Outcome:
        worker = self._get(task_id).worker  # an unknown id raises here, as complete would
        outcome = super().complete(task_id, token, now)
        if outcome.accepted:
            self._leaked[worker] += 1  # the bug: the slot is never released
        return outcome

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        leaked = self._leaked[worker] if isinstance(worker, str) else 0
        if not leaked:
            return super().dispatch(worker, now, duration)
        self._capacity[worker] -= leaked  # only a known worker has leaked slots
        try:
            return super().dispatch(worker, now, duration)
        finally:
            self._capacity[worker] += leaked
