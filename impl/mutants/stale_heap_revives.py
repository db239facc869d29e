"""Pitfall: cancelling a waiting task leaves its heap entry live, so the heap hands the cancelled task out again.

Seed 001 ("A stale queue entry for a cancelled task is ignored after checking
its current registry state") and seed 000 ("stale heap entries and count
maintenance introduce additional invariants"): this is
``impl.indexed.IndexedScheduler`` with lazy cancellation that marks the
registry ``cancelled`` but does not retire the task's heap entry, so the
dispatcher's stale-entry check (is this still the task's entry?) passes and
never looks at the status.
"""

from __future__ import annotations

from fencepost.impl import kit as v
from fencepost.impl.indexed import IndexedScheduler
from fencepost.spec.protocol import ACCEPTED, DISPATCHABLE_STATUSES, Outcome, Status


class Scheduler(IndexedScheduler):
    # IndexedScheduler's own O(n) self-check would notice a final task holding a
    # live entry; the spec must catch this from outside, as it would for a
    # third-party heap scheduler, so the mutant offers no self-check.
    check_invariants = None

    def cancel(self, task_id: int, now: int) -> Outcome:
        t = self._get(task_id)
        v.check_time(self._now, now)
        self._advance_to(now)
        if t.status in DISPATCHABLE_STATUSES:
            t.status = Status.CANCELLED  # the bug: t.entry still names its heap entry
            return ACCEPTED
        return super().cancel(task_id, now)
