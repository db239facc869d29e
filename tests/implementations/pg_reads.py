"""A test-only view of a PostgresScheduler whose reads cost one round trip per call, not one per task.

The conformance machine reads the clock and every task's view after every step
(twice: to compare, and for the invariants), so against a database most of a
check's time is those reads. ``OneReadPerStep`` passes every protocol call
through unchanged and answers ``now`` and ``task()`` from one ``snapshot()``
taken after the call: the same columns from the same tables, read in one
statement. It is correct only while no other client changes the schema, which
holds in a conformance check. ``test_postgres.py`` shows ``snapshot()`` agrees
with ``task()`` and ``now``.
"""

from __future__ import annotations

from fencepost.impl import kit as v
from fencepost.impl.postgres.scheduler import PostgresScheduler, temporary
from fencepost.spec.protocol import TaskView


class OneReadPerStep:
    """Every protocol call goes to ``inner``; reads come from one snapshot per call."""

    def __init__(self, inner: PostgresScheduler) -> None:
        self.inner = inner
        self._seen: tuple[int, list[TaskView]] | None = None

    def _read(self) -> tuple[int, list[TaskView]]:
        if self._seen is None:
            self._seen = self.inner.snapshot()
        return self._seen

    @property
    def now(self) -> int:
        return self._read()[0]

    def task(self, task_id: int) -> TaskView:
        views = self._read()[1]
        v.check_task_id(task_id, len(views))
        return views[task_id - 1]

    def _call(self, op: str, *args: object, **kwargs: object) -> object:
        self._seen = None
        try:
            return getattr(self.inner, op)(*args, **kwargs)
        finally:
            self._seen = None

    def add_worker(self, worker, capacity):
        return self._call("add_worker", worker, capacity)

    def submit(self, priority=0, due_at=None, max_attempts=None, retry_delay=1, key=None):
        return self._call("submit", priority, due_at, max_attempts, retry_delay, key)

    def dispatch(self, worker, now, duration):
        return self._call("dispatch", worker, now, duration)

    def complete(self, task_id, token, now):
        return self._call("complete", task_id, token, now)

    def fail(self, task_id, token, now):
        return self._call("fail", task_id, token, now)

    def cancel(self, task_id, now):
        return self._call("cancel", task_id, now)

    def renew(self, task_id, token, now, duration):
        return self._call("renew", task_id, token, now, duration)

    def advance(self, now):
        return self._call("advance", now)

    def submit_many(self, tasks):
        return self._call("submit_many", tasks)

    def dispatch_many(self, worker, now, duration, limit):
        return self._call("dispatch_many", worker, now, duration, limit)

    def complete_many(self, reports, now):
        return self._call("complete_many", reports, now)

    def fail_many(self, reports, now):
        return self._call("fail_many", reports, now)

    def reopen(self) -> OneReadPerStep:
        return OneReadPerStep(self.inner.reopen())

    def close(self) -> None:
        self.inner.close()


def one_read_per_step() -> OneReadPerStep:
    """A factory for the conformance check: a fresh temporary schema behind ``OneReadPerStep``."""
    return OneReadPerStep(temporary())
