"""Test-only schedulers for the optional capabilities: restart (``reopen()``) and keys.

No SQLite here: ``ReopenableScheduler`` keeps its state in memory and
``reopen()`` hands back a new object over a deep copy of it, which is what a
durable scheduler's reopen must amount to. The broken ones forget one thing
on reopen, each something only a restart followed by the right call reveals.
``KeylessScheduler`` is a third-party scheduler written before keys existed.
"""

from __future__ import annotations

import copy

from fencepost.impl.simple import SimpleScheduler


class ReopenableScheduler(SimpleScheduler):
    """``SimpleScheduler`` whose ``reopen()`` returns a new object over a copy of the same state."""

    def reopen(self) -> ReopenableScheduler:
        return copy.deepcopy(self)


class ForgetsKeysOnReopen(ReopenableScheduler):
    """Broken: idempotency keys are not stored, so after a restart a duplicate submit makes a new task."""

    def reopen(self) -> ForgetsKeysOnReopen:
        reopened = copy.deepcopy(self)
        reopened._keys.clear()
        return reopened


class ForgetsCancelRequestOnReopen(ReopenableScheduler):
    """Broken: a running task's cancellation request is lost on restart."""

    def reopen(self) -> ForgetsCancelRequestOnReopen:
        reopened = copy.deepcopy(self)
        for task in reopened._tasks:
            if task is not None:  # None: a task prune forgot
                task.cancel_requested = False
        return reopened


class ReopenRaises(ReopenableScheduler):
    """Broken: the storage cannot be reopened."""

    def reopen(self) -> ReopenRaises:
        raise OSError("database is locked")


class KeylessScheduler:
    """A scheduler from before idempotency keys and restarts: ``submit`` takes no ``key``."""

    def __init__(self) -> None:
        self._inner = SimpleScheduler()

    @property
    def now(self) -> int:
        return self._inner.now

    def add_worker(self, worker, capacity):
        return self._inner.add_worker(worker, capacity)

    def submit(self, priority=0, due_at=None, max_attempts=None, retry_delay=1):
        return self._inner.submit(priority, due_at, max_attempts, retry_delay)

    def dispatch(self, worker, now, duration):
        return self._inner.dispatch(worker, now, duration)

    def complete(self, task_id, token, now):
        return self._inner.complete(task_id, token, now)

    def fail(self, task_id, token, now):
        return self._inner.fail(task_id, token, now)

    def cancel(self, task_id, now):
        return self._inner.cancel(task_id, now)

    def renew(self, task_id, token, now, duration):
        return self._inner.renew(task_id, token, now, duration)

    def advance(self, now):
        return self._inner.advance(now)

    def task(self, task_id):
        return self._inner.task(task_id)


class KwargsScheduler(KeylessScheduler):
    """``submit(**options)``: the signature cannot say whether ``key`` is taken, a probe must."""

    def __init__(self, takes_key: bool = True) -> None:
        super().__init__()
        self._takes_key = takes_key

    def submit(self, **options):
        if "key" in options and not self._takes_key:
            raise TypeError("submit() got an unexpected keyword argument 'key'")
        return self._inner.submit(**options)


class KwargsWithoutKeyScheduler(KwargsScheduler):
    def __init__(self) -> None:
        super().__init__(takes_key=False)
