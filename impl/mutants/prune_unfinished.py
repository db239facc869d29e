"""Pitfall: prune forgets a task that is not final.

Seed 001 ("PENDING or RETRY_WAIT -> CANCELLED"; "A cancelled pending task
cannot subsequently start"): the lifecycle's final states are the only ones a
task never leaves, so they are the only ones retention may drop. This prune
also forgets waiting tasks (pending or retry_wait) whose due time is before
``before``, as a cleaner that sweeps "old rows" by any timestamp would: work
that was still owed vanishes, and ``task()`` of it raises.
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import DISPATCHABLE_STATUSES


class Scheduler(SimpleScheduler):
    def prune(self, before: int, now: int) -> int:
        forgotten = super().prune(before, now)
        for index, t in enumerate(self._tasks):
            # the bug: a waiting task is old enough to forget too
            if t is not None and t.status in DISPATCHABLE_STATUSES and t.due_at < before:
                self._tasks[index] = None
                if t.key is not None:
                    del self._keys[t.key]
                forgotten += 1
        return forgotten

