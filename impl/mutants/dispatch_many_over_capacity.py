"""Pitfall: ``dispatch_many`` hands out up to ``limit`` leases whatever room the worker has.

Seed 000 ("A worker with capacity one leases task 1 at time 5 until time 10.
At time 9, another dispatch must fail because that worker is full"; "A
capacity limit bounds simultaneous assignments"): a batch of dispatches is
the single dispatches in a row, so it stops when the worker is full. This
one checks the worker's room once, before the batch, instead of before each
lease, so a batch larger than the room overfills the worker.
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import Lease, Status


class Scheduler(SimpleScheduler):
    def dispatch_many(self, worker: str, now: int, duration: int, limit: int) -> list[Lease]:
        self._check_dispatch_arguments(worker, now, duration)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            return super().dispatch_many(worker, now, duration, limit)  # raises, changing nothing
        self._expire(now)  # what the batch's first dispatch does anyway
        load = sum(1 for t in self._tasks if t.status is Status.RUNNING and t.worker == worker)
        capacity = self._capacity[worker]
        if load < capacity:
            self._capacity[worker] = load + limit  # the bug: room checked once, for the whole batch
        try:
            return super().dispatch_many(worker, now, duration, limit)
        finally:
            self._capacity[worker] = capacity
