"""Pitfall: a pruned task still answers ``task()``.

Seed 001 ("A registry supports expected O(1) lookup by task identifier"):
the registry is what says which tasks exist. This prune counts and forgets
the keys of the tasks it drops but leaves their records in the registry, so
``task(id)`` of a forgotten task answers its old view instead of raising
``ValueError`` saying it was forgotten, and no memory is given back.
"""

from __future__ import annotations

from fencepost.impl import kit as v
from fencepost.impl.simple import SimpleScheduler


class Scheduler(SimpleScheduler):
    def __init__(self) -> None:
        super().__init__()
        self._pruned: set[int] = set()

    def prune(self, before: int, now: int) -> int:
        v.check_prune(self._now, before, now)
        self._expire(now)
        forgotten = 0
        for t in self._tasks:
            if t.id not in self._pruned and t.ended_at is not None and t.ended_at < before:
                self._pruned.add(t.id)  # the bug: the record stays, only its key goes
                if t.key is not None:
                    del self._keys[t.key]
                forgotten += 1
        return forgotten
