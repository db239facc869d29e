"""Pitfall: a dispatch that returns None still consumes a token.

Seed 000 ("A failed dispatch must not consume an identifier or token or
assign any task"): the counter is drawn before the scheduler knows there is
anything to lease, so every later token is one too high.
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import Lease


class Scheduler(SimpleScheduler):
    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        lease = super().dispatch(worker, now, duration)
        if lease is None:
            self._last_token += 1  # the bug: a refused dispatch burns a token
        return lease
