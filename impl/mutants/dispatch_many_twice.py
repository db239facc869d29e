"""Pitfall: one ``dispatch_many`` hands the same task out twice.

Seed 001 ("A task is claimed by at most one worker at a time") and seed 000
("Reassigning the same task, even to the same worker, requires a fresh lease
token"): this batch picks its candidates once, from a snapshot taken before
its first lease, and when the batch wants more leases than there are
candidates it starts over at the top of the list, leasing a task it has just
leased again (under a new token, which makes the first lease of the batch
stale at once).
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import DISPATCHABLE_STATUSES, Lease, Status


class Scheduler(SimpleScheduler):
    def dispatch_many(self, worker: str, now: int, duration: int, limit: int) -> list[Lease]:
        self._check_dispatch_arguments(worker, now, duration)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            return super().dispatch_many(worker, now, duration, limit)
        self._expire(now)
        candidates = sorted((t for t in self._tasks if t.status in DISPATCHABLE_STATUSES and t.due_at <= now),
                            key=lambda t: (-t.priority, t.due_at, t.id))
        load = sum(1 for t in self._tasks if t.status is Status.RUNNING and t.worker == worker)
        leases = []
        for number in range(min(limit, self._capacity[worker] - load)):
            if not candidates:
                break
            t = candidates[number % len(candidates)]  # the bug: wraps around the snapshot
            self._last_token += 1
            if t.status is not Status.RUNNING:
                t.attempts += 1
            t.status = Status.RUNNING
            t.worker, t.token = worker, self._last_token
            t.started_at, t.expires_at = now, now + duration
            t.expired_token = None
            leases.append(Lease(t.id, worker, t.token, now, now + duration))
        return leases
