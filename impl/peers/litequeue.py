"""litequeue (a queue in one SQLite table) behind the protocol, through its public ``LiteQueue`` API.

Factories: ``queue`` (a fresh in-memory database per scheduler) and
``queue_file`` (a fresh database file, shared by the scheduler's
``client()`` connections, for concurrent histories). A task is one message
whose data is the task id.

=============  ==========================================================================
protocol       litequeue call
=============  ==========================================================================
submit         ``put(data)``
dispatch       the recovery sweep (below), then ``pop()``; the token is the message id
complete       ``done(message_id)`` (after ``get(message_id)`` shows it is this task's)
advance        the recovery sweep
=============  ==========================================================================

litequeue has no lease expiry of its own. What it offers for recovery is
``list_locked(threshold_seconds)`` (messages locked for more than that long)
and ``retry(message_id)`` (back to ready); the adapter runs exactly that
before every timed call, with the threshold each lease was handed out with
(the only lease length litequeue knows is the one its user applies). Its
comparison is ``lock_time < now - threshold``, so a lease is live through
exactly its end (``interval=closed``).

What litequeue offers, and so what ``queue`` declares: ``pop()`` takes the
ready message with the smallest message id, a uuid7 of the put time
(``order=fifo``: no priority, no due time); no workers (``capacity=none``);
``get()`` shows a message's status but not who holds it or until when
(``views=none``); no renew, cancel, idempotency key or attempt budget;
``mark_failed`` ends a message for good, which is not the contract's
``fail`` (a retry), so ``fail`` is not offered either.

The token is the message id, since that is all ``done()`` takes: litequeue
gives a message the same id at every ``pop()``, and ``done()`` updates the
row by id whatever its status or holder. So a lease's token is never fresh,
and a worker whose lease expired finishes the next holder's attempt: the
seed's central pitfall, which no declared variant excuses.

Logical time: litequeue reads the clock through its module attribute
``litequeue.time_ns`` ("Expose function used by uuid7() to get current
time"); the adapter replaces that one name, for the whole process, with
``(EPOCH_SECONDS + now) * 10**9`` of the scheduler that is calling.

No private state is read.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import tempfile
import threading

from fencepost.impl.kit import (
    ACCEPTED, EPOCH_SECONDS, Lease, Outcome, check_dispatch, check_new_worker, check_submit, check_task_id,
    check_time, check_token, declare, not_offered,
)

#: Nanoseconds in a second: litequeue's clock is ``time.time_ns``.
NS = 1_000_000_000
#: Why a report is refused when litequeue knows no message with that id.
UNKNOWN_MESSAGE = "unknown_message_id"
#: Why a report is refused when the message id is another task's.
OTHER_TASKS_MESSAGE = "message_id_of_another_task"


class _LogicalClock:
    """The time litequeue sees: ``(EPOCH_SECONDS + now) * NS`` of the calling scheduler."""

    def __init__(self) -> None:
        self.now = 0
        self.installed = False
        self.lock = threading.Lock()

    def time_ns(self) -> int:
        return (EPOCH_SECONDS + self.now) * NS


_CLOCK = _LogicalClock()


def _litequeue_module() -> object:
    """Import litequeue and install the logical clock in it, once per process.

    Raises:
        ModuleNotFoundError: litequeue is not installed (the ``peers`` extra).
    """
    import litequeue

    with _CLOCK.lock:
        if not _CLOCK.installed:
            litequeue.time_ns = _CLOCK.time_ns
            _CLOCK.installed = True
    return litequeue


class _Shared:
    """What the clients of one scheduler share: the clock, the task map, the workers, the lease lengths."""

    def __init__(self, path: str | None) -> None:
        self.path = path  # the database file, or None for one private in-memory database
        self.now = 0
        self.tasks: list[str] = []  # message id of task id - 1
        self.workers: dict[str, int] = {}
        self.thresholds: dict[str, int] = {}  # message id -> the lease length of its latest pop
        self.lock = threading.Lock()  # guards these fields only: litequeue's calls run outside it


class LiteQueueScheduler:
    """One litequeue queue behind the protocol; see the module docstring for the mapping.

    With ``path`` (a database file), ``client()`` opens another ``LiteQueue``
    on the same file: the way litequeue is shared between threads or
    processes, one connection each. Without, the database is in memory and
    private to this object. The adapter's lock guards only its own maps,
    never a litequeue call, so concurrent callers meet in litequeue.
    """

    def __init__(self, path: str | None = None, shared: _Shared | None = None) -> None:
        litequeue = _litequeue_module()
        self._shared = shared or _Shared(path)
        if self._shared.path is None:
            # Our own connection, so that the watched thread the checker calls from may use it.
            connection = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            self._queue = litequeue.LiteQueue(connection, queue_name="fp_peers")
        else:
            self._queue = litequeue.LiteQueue(self._shared.path, queue_name="fp_peers")

    def client(self) -> LiteQueueScheduler:
        """Another connection to the same queue file (for another thread).

        Raises:
            ValueError: the queue is in memory, so no other connection can see it.
        """
        if self._shared.path is None:
            raise ValueError("an in-memory litequeue has no other clients: make it with queue_file()")
        return LiteQueueScheduler(shared=self._shared)

    @property
    def now(self) -> int:
        return self._shared.now

    def _at(self, now: object) -> None:
        """Validate ``now``, move the clock, and run litequeue's recovery: ``list_locked`` then ``retry``."""
        shared = self._shared
        with shared.lock:
            check_time(shared.now, now)
            shared.now = now
            thresholds = dict(shared.thresholds)
        _CLOCK.now = now
        for threshold in sorted(set(thresholds.values())):
            for message in list(self._queue.list_locked(threshold)):
                if thresholds.get(message.message_id) == threshold:
                    self._queue.retry(message.message_id)

    def add_worker(self, worker: str, capacity: int) -> None:
        """Remember the name: litequeue has no workers (``capacity=none``)."""
        with self._shared.lock:
            check_new_worker(worker, capacity, self._shared.workers)
            self._shared.workers[worker] = capacity

    def submit(self, priority: int = 0, due_at: int | None = None, max_attempts: int | None = None,
               retry_delay: int = 1) -> int:
        """``put(str(task_id))``; returns the task id.

        Raises:
            ValueError: an invalid argument, or one litequeue does not offer
                (a priority other than 0, a due time, an attempt budget).
        """
        check_submit(priority, due_at, max_attempts, retry_delay)
        for name, value, default in (("priority", priority, 0), ("due_at", due_at, None), ("max_attempts", max_attempts, None)):
            if value != default:
                raise not_offered(name, value, "litequeue")
        shared = self._shared
        with shared.lock:  # the id and the put together, so task ids follow put order
            _CLOCK.now = shared.now
            task_id = len(shared.tasks) + 1
            message = self._queue.put(str(task_id))
            shared.tasks.append(message.message_id)
            return task_id

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """Recovery sweep, then ``pop()``; the message id is the token."""
        check_dispatch(worker, now, duration, current=self._shared.now, workers=self._shared.workers)
        self._at(now)
        message = self._queue.pop()
        if message is None:
            return None
        with self._shared.lock:
            self._shared.thresholds[message.message_id] = duration
        return Lease(task_id=int(message.data), worker=worker, token=message.message_id,
                     started_at=now, expires_at=now + duration)

    def complete(self, task_id: int, token: object, now: int) -> Outcome:
        """``done(message_id)``: litequeue refuses nothing, so every report on the task's own id is accepted."""
        check_task_id(task_id, len(self._shared.tasks))
        check_token(token, opaque=True)
        check_time(self._shared.now, now)
        self._at(now)
        message = self._queue.get(token) if isinstance(token, str) else None
        if message is None:
            return Outcome(False, UNKNOWN_MESSAGE)
        if message.data != str(task_id):
            return Outcome(False, OTHER_TASKS_MESSAGE)
        self._queue.done(token)
        with self._shared.lock:
            self._shared.thresholds.pop(token, None)
        return ACCEPTED

    def advance(self, now: int) -> None:
        """Move the clock and run the recovery sweep."""
        self._at(now)

    def close(self) -> None:
        self._queue.close()


@declare({
    "order": "fifo",
    "interval": "closed",
    "tokens": "opaque",
    "capacity": "none",
    "views": "none",
    "without": "cancel,due_at,fail,keys,max_attempts,renew",
})
def queue() -> LiteQueueScheduler:
    """A fresh litequeue queue in a private in-memory SQLite database."""
    return LiteQueueScheduler()


@declare(queue.fencepost_variants)
def queue_file() -> LiteQueueScheduler:
    """A fresh litequeue queue in a new database file (removed at exit), whose ``client()`` opens more connections."""
    folder = tempfile.mkdtemp(prefix="fp_peers_litequeue_")
    atexit.register(shutil.rmtree, folder, True)
    return LiteQueueScheduler(os.path.join(folder, "queue.db"))
