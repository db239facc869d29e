"""Pitfall: prune forgets a task that ended exactly at ``before``.

Seed 000 ("The interval is [5, 10), so a completion arriving exactly at 10
fails"): every boundary in this contract is exact, and retention's is strict:
``prune(before, now)`` forgets tasks that ended at a time ``< before``. This
one compares with ``<=``, so a task that ended at ``before`` is forgotten one
call too early.
"""

from __future__ import annotations

from fencepost.impl import kit as v
from fencepost.impl.simple import SimpleScheduler


class Scheduler(SimpleScheduler):
    def prune(self, before: int, now: int) -> int:
        v.check_prune(self._now, before, now)
        self._expire(now)
        forgotten = 0
        for index, t in enumerate(self._tasks):
            if t is not None and t.ended_at is not None and t.ended_at <= before:  # the bug: <= instead of <
                self._tasks[index] = None
                if t.key is not None:
                    del self._keys[t.key]
                forgotten += 1
        return forgotten
