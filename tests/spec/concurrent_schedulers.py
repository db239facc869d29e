"""Schedulers for concurrent histories: the real one behind a lock, and two broken ones.

The broken ones are the model with one step done the way the public bug
reports show it done: each is sequentially plausible, and only a concurrent
history (or a zombie's late call) shows the fault. Their interleavings are
forced with events and barriers, never with sleeps.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import replace

from fencepost.spec import model
from fencepost.spec.protocol import Lease, Status
from schedulers import ModelScheduler

#: Seconds any thread in these tests waits for another before the test fails: a safety net, never
#: reached when all is well, so generous (a loaded CI machine may hold a thread back for seconds).
WAIT_SECONDS = 30


class Locked:
    """Any scheduler behind one lock: every call is atomic, so every history it gives is linearizable.

    Each call yields the processor before taking the lock and after letting it
    go, so other clients' calls start and end inside it, as they would with a
    database round trip; without that, the GIL lets one thread run a whole
    client before the next one starts, and the history has no overlap at all.
    """

    def __init__(self, inner: object) -> None:
        self._inner = inner
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def locked(*args, **kwargs):
            os.sched_yield()
            try:
                with self._lock:
                    return attr(*args, **kwargs)
            finally:
                os.sched_yield()

        return locked


class _LockedModel(ModelScheduler):
    """The model behind one lock, with the protocol's methods."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def _do(self, op: str, **args: object) -> object:
        with self.lock:
            return super()._do(op, **args)


class StatusFencedCompletion(_LockedModel):
    """``complete`` accepts while the task is running, whoever asks: ``WHERE status = 'running'``
    instead of ``WHERE token = :token``. A zombie's late completion finishes its replacement's lease."""

    def complete(self, task_id, token, now):
        with self.lock:
            current = model.task(self.state, task_id)  # an unknown id still raises ValueError
            model.require_time(self.state, now)
            running = model.expire(self.state, now).tasks[task_id - 1]
            fence = running.token if running.status is Status.RUNNING else token
            self.state, result = model.complete(self.state, task_id, fence, now)
            del current
            return result


class UnlockedClaim(_LockedModel):
    """``dispatch`` reads the best task, lets go, then writes the lease whatever happened since:
    a SELECT then an UPDATE without ``FOR UPDATE``. Two clients between the two steps claim one task.

    ``between`` runs after the read; a test puts a barrier there to force the race.
    """

    def __init__(self, between: Callable[[], object]) -> None:
        super().__init__()
        self.between = between

    def dispatch(self, worker, now, duration):
        with self.lock:
            _, chosen = model.dispatch(self.state, worker, now, duration)  # the read
        self.between()
        if chosen is None:
            return None
        with self.lock:  # the write, with a fresh token from the (atomic) sequence
            state = model.expire(self.state, max(now, self.state.now))
            token = state.last_token + 1
            task = state.tasks[chosen.task_id - 1]
            leased = replace(task, status=Status.RUNNING, attempts=task.attempts + 1, worker=worker, token=token,
                             started_at=now, expires_at=now + duration)
            tasks = state.tasks[: task.id - 1] + (leased,) + state.tasks[task.id:]
            self.state = replace(state, tasks=tasks, last_token=token)
            return Lease(task.id, worker, token, now, now + duration)
