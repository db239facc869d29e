"""Pitfall: a lease is treated as the closed interval [started_at, expires_at], alive at exactly expires_at.

Seed 000 ("The interval is [5, 10), so a completion arriving exactly at 10
fails"): this scheduler expires a lease only once time is past
``expires_at``, so a completion, failure or renewal at the boundary is
accepted and the slot stays taken there.
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler


class Scheduler(SimpleScheduler):
    def _expire(self, now: int) -> None:
        # The bug: expire leases with expires_at < now, where the contract says <= now.
        super()._expire(now - 1)
        self._now = now
