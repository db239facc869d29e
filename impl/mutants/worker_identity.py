"""Pitfall: a lease call is accepted when its token's lease went to the same worker as the current one.

Seed 000 ("Worker identity alone accepts a completion from the wrong
assignment"): reassigning a task to the same worker makes the worker
comparison pass, so a delayed completion from the old lease finishes the new
attempt. The contract wants the current token, not the worker's name.
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler, _Task
from fencepost.spec.protocol import Lease, Outcome, Status


class Scheduler(SimpleScheduler):
    def __init__(self) -> None:
        super().__init__()
        self._worker_of_token: dict[int, str] = {}

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        lease = super().dispatch(worker, now, duration)
        if lease is not None:
            self._worker_of_token[lease.token] = lease.worker
        return lease

    def _rejection(self, t: _Task, token: int) -> Outcome | None:
        # The bug: compare who held the token's lease, not the token itself.
        if t.status is Status.RUNNING and self._worker_of_token.get(token) == t.worker:
            return None
        return super()._rejection(t, token)
