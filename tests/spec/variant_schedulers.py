"""Schedulers that differ from the contract in exactly one documented choice, or break the core.

Each is ``SimpleScheduler`` with one rule changed, so a check's verdict on
it says whether that one rule is judged as the declared variants say
(tests/spec/test_check_variants.py):

* ``WrongPriority`` hands out the lowest priority first: a choice that
  ``order=fifo`` (no priorities) and ``order=any`` allow, the contract not.
* ``EarlyDispatch`` hands out a task whatever its due time: the core
  ("nothing is dispatched before its due time"), rejected whatever is declared.
* ``ClosedInterval`` keeps a lease live at exactly ``expires_at`` (as
  ``impl.mutants.closed_interval`` does, but ending it at the time of the call
  that sees it over): allowed only by ``interval=closed``.
* ``RandomTokens`` hands out random strings as tokens: allowed only by
  ``tokens=opaque``; ``ReusedRandomTokens`` hands a task its first random
  token again when it is leased again: the core, rejected under it too.
"""

from __future__ import annotations

import uuid

from fencepost.impl import kit as v
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import DISPATCHABLE_STATUSES, Lease, Status


class _Picking(SimpleScheduler):
    """``SimpleScheduler`` whose dispatch asks ``_key`` and ``_due`` which task goes and ``_token`` for its token."""

    def _key(self, t: object) -> tuple:
        return (-t.priority, t.due_at, t.id)

    def _due(self, t: object, now: int) -> bool:
        return t.due_at <= now

    def _token(self, t: object) -> object:
        self._last_token += 1
        return self._last_token

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        v.check_worker_name(worker)
        if worker not in self._capacity:
            raise v.unknown_worker(worker)
        v.check_time(self._now, now)
        v.check_min("duration", duration, 1)
        self._expire(now)
        load = sum(1 for t in self._tasks if t is not None and t.status is Status.RUNNING and t.worker == worker)
        if load >= self._capacity[worker]:
            return None
        ready = [t for t in self._tasks if t is not None and t.status in DISPATCHABLE_STATUSES and self._due(t, now)]  # None: pruned
        if not ready:
            return None
        best = min(ready, key=self._key)
        best.status = Status.RUNNING
        best.attempts += 1
        best.worker, best.token = worker, self._token(best)
        best.started_at, best.expires_at = now, now + duration
        best.expired_token = None
        return Lease(best.id, worker, best.token, now, now + duration)


class ClosedInterval(SimpleScheduler):
    """A lease is live on ``[started_at, expires_at]``: it ends once ``now > expires_at``."""

    def _expire(self, now: int) -> None:
        for t in self._tasks:
            if t is not None and t.status is Status.RUNNING and t.expires_at < now:
                token = t.token
                if t.cancel_requested:
                    t.release(Status.CANCELLED, now)
                elif t.budget_spent():
                    t.release(Status.FAILED, now)
                else:
                    t.release(Status.PENDING, now)
                t.expired_token = token
        self._now = now


class WrongPriority(_Picking):
    """The lowest priority first (then due time, then id)."""

    def _key(self, t: object) -> tuple:
        return (t.priority, t.due_at, t.id)


class EarlyDispatch(_Picking):
    """A task may be handed out before its due time: due times are ignored."""

    def _due(self, t: object, now: int) -> bool:
        return True


class DeclaredFifo(WrongPriority):
    """``WrongPriority`` declaring the variant it follows, as a third-party scheduler would."""

    fencepost_variants = {"order": "fifo"}


class RandomTokens(_Picking):
    """Every lease's token is a fresh random string (as an SQS receipt handle is); a report may carry any str or int."""

    def _token(self, t: object) -> object:
        return uuid.uuid4().hex

    def _timed_lease_call(self, task_id: object, token: object, now: object, duration: object = 1) -> object:
        t = self._get(task_id)
        if isinstance(token, bool) or not isinstance(token, (int, str)) or token == "":
            raise ValueError(f"token must be a non-empty str or an int, not {type(token).__name__}: {token!r}")
        v.check_time(self._now, now)
        v.check_min("duration", duration, 1)
        self._expire(now)
        return t


class ReusedRandomTokens(RandomTokens):
    """Random tokens, but a task leased again gets the token of its first lease back."""

    def __init__(self) -> None:
        super().__init__()
        self._first: dict[int, str] = {}

    def _token(self, t: object) -> object:
        return self._first.setdefault(t.id, super()._token(t))


class WorkerHeartbeat(SimpleScheduler):
    """A renew is its worker's heartbeat: every live lease the worker holds (but a cancel-requested one) is
    extended with it. Allowed only by ``heartbeat=worker``."""

    def renew(self, task_id: int, token: int, now: int, duration: int) -> object:
        outcome = super().renew(task_id, token, now, duration)
        if outcome.accepted:
            worker = self._tasks[task_id - 1].worker
            for t in self._tasks:
                if t is not None and t.status is Status.RUNNING and t.worker == worker and not t.cancel_requested:
                    t.expires_at = now + duration
        return outcome


class WorkerHeartbeatReusedTokens(WorkerHeartbeat):
    """As ``WorkerHeartbeat``, and a task leased again gets its first token again: the core, under any variant."""

    def __init__(self) -> None:
        super().__init__()
        self._first: dict[int, int] = {}  # task id -> the token of its first lease

    def dispatch(self, worker: str, now: int, duration: int) -> object:
        lease = super().dispatch(worker, now, duration)
        if lease is None:
            return None
        t = self._tasks[lease.task_id - 1]
        first = self._first.setdefault(lease.task_id, t.token)
        t.token = first
        return Lease(lease.task_id, lease.worker, first, lease.started_at, lease.expires_at)
