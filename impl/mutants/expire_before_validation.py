"""Pitfall: a dispatch expires leases before it checks its worker and duration, so an invalid call still expires them.

Seed 000 ("Time advancement may still expire old leases ... Invalid time or
duration arguments are rejected before that transition."): this scheduler
checks the time, moves to it and expires due leases, and only then finds the
unknown worker or the bad duration and raises, leaving the clock moved and
the leases gone.
"""

from __future__ import annotations

from fencepost.impl import kit as v
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import Lease


class Scheduler(SimpleScheduler):
    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        v.check_time(self._now, now)
        self._expire(now)  # the bug: the transition runs before the other arguments are checked
        return super().dispatch(worker, now, duration)
