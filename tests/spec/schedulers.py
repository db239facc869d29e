"""The schedulers every example test runs against: both implementations and the model.

``ModelScheduler`` wraps the pure model in the protocol's method form, so the
seeds' worked examples are checked against the spec itself too.
"""

from __future__ import annotations

import threading

import pytest

from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec import model


class ModelScheduler:
    """The reference model behind the protocol's methods (state held, transitions pure)."""

    def __init__(self) -> None:
        self.state = model.initial()

    @property
    def now(self) -> int:
        return self.state.now

    def task(self, task_id):
        return model.task(self.state, task_id)

    def _do(self, op, **args):
        self.state, result = model.apply(self.state, op, args)
        return result

    def add_worker(self, worker, capacity):
        return self._do("add_worker", worker=worker, capacity=capacity)

    def submit(self, priority=0, due_at=None, max_attempts=None, retry_delay=1, key=None):
        return self._do("submit", priority=priority, due_at=due_at, max_attempts=max_attempts, retry_delay=retry_delay,
                        key=key)

    def dispatch(self, worker, now, duration):
        return self._do("dispatch", worker=worker, now=now, duration=duration)

    def complete(self, task_id, token, now):
        return self._do("complete", task_id=task_id, token=token, now=now)

    def fail(self, task_id, token, now):
        return self._do("fail", task_id=task_id, token=token, now=now)

    def cancel(self, task_id, now):
        return self._do("cancel", task_id=task_id, now=now)

    def renew(self, task_id, token, now, duration):
        return self._do("renew", task_id=task_id, token=token, now=now, duration=duration)

    def advance(self, now):
        return self._do("advance", now=now)

    def prune(self, before, now):
        return self._do("prune", before=before, now=now)

    def submit_many(self, tasks):
        return self._do("submit_many", tasks=tasks)

    def dispatch_many(self, worker, now, duration, limit):
        return self._do("dispatch_many", worker=worker, now=now, duration=duration, limit=limit)

    def complete_many(self, reports, now):
        return self._do("complete_many", reports=reports, now=now)

    def fail_many(self, reports, now):
        return self._do("fail_many", reports=reports, now=now)


SCHEDULERS = [ModelScheduler, SimpleScheduler, IndexedScheduler]

every_scheduler = pytest.mark.parametrize("make", SCHEDULERS, ids=lambda c: c.__name__)


class DeadlocksOnCancel(SimpleScheduler):
    """A scheduler that hangs: cancelling a running task takes a lock it already holds.

    The shortest way to the hang is add_worker, submit, dispatch, cancel. Its
    thread blocks forever (no CPU spent), as a real deadlock would.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def cancel(self, task_id, now):
        if type(task_id) is int and 1 <= task_id <= len(self._tasks) and self.task(task_id).status == "running":
            with self._lock:
                self._lock.acquire()  # the bug: never released, never acquirable
        return super().cancel(task_id, now)
