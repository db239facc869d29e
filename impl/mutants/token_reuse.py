"""Pitfall: a task keeps the token of its first lease when it is dispatched again.

Seed 000 ("Reassigning the same task, even to the same worker, requires a
fresh lease token. Otherwise a delayed completion could finish the
replacement attempt."): here the token names the task, not the assignment.
"""

from __future__ import annotations

from dataclasses import replace

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import Lease


class Scheduler(SimpleScheduler):
    def __init__(self) -> None:
        super().__init__()
        self._first_token: dict[int, int] = {}

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        lease = super().dispatch(worker, now, duration)
        if lease is None:
            return None
        first = self._first_token.setdefault(lease.task_id, lease.token)
        if first == lease.token:
            return lease
        # The bug: the reassignment hands out the old token again (and issues none).
        self._last_token -= 1
        self._tasks[lease.task_id - 1].token = first
        return replace(lease, token=first)
