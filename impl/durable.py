"""``DurableScheduler``: the protocol stored in one SQLite file, every call committed before it returns.

It refines ``impl.simple.SimpleScheduler``: for every sequence of calls it
returns the same leases, outcomes (reasons included) and task views, and
raises ``ValueError`` for the same invalid calls, changing nothing then. What
changes is where the state lives: in one SQLite file (the standard library's
``sqlite3``, no server), so a new process opening the file sees every call
that returned.

**Every call is one transaction.** Each mutating call runs inside ``BEGIN
IMMEDIATE`` ... ``COMMIT``: it takes the write lock first, reads what it
needs, validates every argument, and only then writes; an invalid call rolls
back with nothing written. A call returns only after its ``COMMIT`` has
returned, so a process killed at any instant (SIGKILL) loses no call that
returned, and SQLite's atomic commit means it never leaves half a call
behind. Recovery of abandoned work is the lease rule itself: a lease keeps
its ``expires_at`` across restarts, and the first timed call at or past it
takes the task back. Nothing special-cases a restart.

**Journal and sync settings.** The file is in WAL mode
(``PRAGMA journal_mode=WAL``) with ``PRAGMA synchronous=FULL`` by default.
SQLite's documentation (https://www.sqlite.org/wal.html, "Performance
Considerations"; https://www.sqlite.org/pragma.html#pragma_synchronous):
in WAL mode a commit appends to the write-ahead log; with ``FULL`` the log is
fsynced at every commit, so a committed call survives a power loss or an
operating-system crash too, at the price of one fsync per call. With
``NORMAL`` (``synchronous="NORMAL"``) the log is fsynced only at checkpoints:
a committed call still survives the process being killed (the write is in
the operating system's cache before ``COMMIT`` returns), but the last calls
before a power loss may roll back -- never half of one, the database stays
consistent. Figures for both are in the README (``fencepost bench --durable``).

**Fencing inside the write.** Every lease call changes its task with one
``UPDATE ... WHERE id = ? AND status = 'running' AND token = ? AND expires_at
> now``: the token check and the change are one statement. When no row
matched, the reason is read afterwards (``SimpleScheduler``'s rules, in its
order).

**Indexes** (so no call reads all tasks): waiting tasks in dispatch order
(``priority DESC, due_at, id``, partial over ``pending``/``retry_wait``);
running tasks by ``expires_at`` (expiry) and by worker (capacity). Costs, T
tasks in the file: ``submit``, ``complete``, ``fail``, ``cancel``, ``renew``
and ``task`` O(log T); ``dispatch`` O(log T) plus the waiting tasks of
higher priority not yet due, which its index walk steps over; every timed
call O(k log T) more for the k leases it expires. Opening a file reads
nothing but its schema version, so reopening costs the same at any size.

Integers are SQLite's: 64-bit signed. An argument outside that range, or a
lease end or retry time that would leave it, is refused with ``ValueError``
naming it -- the one place where this scheduler is narrower than the model,
which has Python's unbounded ints.

Only one scheduler object should hold a file at a time: several processes
may share a file (every call is its own serialized transaction), but the
conformance contract is about one sequence of calls.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fencepost.impl import _validate as v
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import ACCEPTED, Lease, Outcome, Reason, Status, TaskView

#: The file layout's version, kept in ``PRAGMA user_version``; a file with another is refused.
SCHEMA_VERSION = 1
#: The ``synchronous`` settings offered: FULL survives power loss, NORMAL only a process crash.
SYNCHRONOUS_SETTINGS = ("FULL", "NORMAL")
#: How long a call waits for another connection's write lock before raising: a bound, not a sleep.
BUSY_TIMEOUT_S = 5.0
#: SQLite's INTEGER range; every stored int must fit.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_SCHEMA = """
CREATE TABLE scheduler (
    only_row   INTEGER PRIMARY KEY CHECK (only_row = 1),
    now        INTEGER NOT NULL,  -- logical time, never decreasing
    last_token INTEGER NOT NULL   -- tokens issued so far (the next one is last_token + 1)
);
INSERT INTO scheduler (only_row, now, last_token) VALUES (1, 0, 0);
CREATE TABLE workers (
    name     TEXT PRIMARY KEY,
    capacity INTEGER NOT NULL CHECK (capacity >= 1)
) WITHOUT ROWID;
CREATE TABLE tasks (
    id               INTEGER PRIMARY KEY,  -- 1, 2, 3... in submit order (rows are never deleted)
    priority         INTEGER NOT NULL,     -- higher is dispatched first
    due_at           INTEGER NOT NULL,     -- eligible once due_at <= now
    max_attempts     INTEGER,              -- NULL for unlimited
    retry_delay      INTEGER NOT NULL,     -- base of the backoff after an explicit failure
    status           TEXT NOT NULL DEFAULT 'pending',
    attempts         INTEGER NOT NULL DEFAULT 0,
    worker           TEXT,                 -- worker, token, started_at, expires_at:
    token            INTEGER,              --   set exactly while running
    started_at       INTEGER,
    expires_at       INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,  -- only ever set while running
    expired_token    INTEGER               -- the token whose lease expired last, for the rejection reason
);
CREATE INDEX tasks_waiting ON tasks (priority DESC, due_at, id) WHERE status IN ('pending', 'retry_wait');
CREATE INDEX tasks_expiry ON tasks (expires_at) WHERE status = 'running';
CREATE INDEX tasks_load ON tasks (worker) WHERE status = 'running';
CREATE TABLE keys (
    key     TEXT PRIMARY KEY,  -- an idempotency key, remembered for the file's whole life
    task_id INTEGER NOT NULL REFERENCES tasks (id),
    due_at  INTEGER            -- submit's due_at as given (NULL for None)
) WITHOUT ROWID;
"""

_TASK_COLUMNS = "id, status, priority, due_at, attempts, worker, token, expires_at, cancel_requested"
_RELEASE = "worker = NULL, token = NULL, started_at = NULL, expires_at = NULL, cancel_requested = 0"
# Expiry (rule 3): every lease ending at or before now goes back to pending, or
# to cancelled if a cancel was requested, or to failed if its budget is spent.
_EXPIRE = f"""
UPDATE tasks SET
    status = CASE WHEN cancel_requested THEN 'cancelled'
                  WHEN max_attempts IS NOT NULL AND attempts >= max_attempts THEN 'failed'
                  ELSE 'pending' END,
    expired_token = token, {_RELEASE}
WHERE status = 'running' AND expires_at <= ?
"""
_BEST_WAITING = """
SELECT id FROM tasks
WHERE status IN ('pending', 'retry_wait') AND due_at <= ?
ORDER BY priority DESC, due_at, id LIMIT 1
"""
# The fence: the change applies only to the task's current, live lease.
_FENCE = "id = ? AND status = 'running' AND token = ? AND expires_at > ?"


@dataclass(frozen=True, slots=True)
class _Lease:
    """What a rejection needs to know about a task (``SimpleScheduler._rejection``'s fields)."""

    status: Status
    token: int | None
    expired_token: int | None


def _fits(name: str, value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{name} must fit in a 64-bit signed integer (SQLite's INTEGER): {value!r}")
    return value


class DurableScheduler:
    """A lease scheduler whose state lives in the SQLite file at ``path``.

    Opening a missing (or empty) file creates the schema; opening a file of
    another kind raises ``ValueError`` naming it. Every protocol method
    raises ``ValueError`` for an invalid argument and then changes nothing;
    every call that returns has been committed (see the module docstring).
    After ``close()`` or ``reopen()`` this object must not be used again.

    Args:
        path: the database file.
        synchronous: ``"FULL"`` (default: a returned call survives power
            loss) or ``"NORMAL"`` (it survives the process being killed; the
            last calls before a power loss may roll back).
    """

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "FULL") -> None:
        if synchronous not in SYNCHRONOUS_SETTINGS:
            raise ValueError(f"synchronous must be one of {', '.join(SYNCHRONOUS_SETTINGS)}: {synchronous!r}")
        self._path = Path(path)
        self._synchronous = synchronous
        self._batch_depth = 0
        try:
            self._conn = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as exc:
            raise ValueError(f"path {str(path)!r} cannot be opened as a SQLite file: {exc}") from None
        # After the connection, so that it is closed before what it keeps alive is released.
        self._keepalive: object = None  # what must outlive every scheduler over a temporary file
        try:
            self._open()
        except Exception:
            self._conn.close()
            raise

    def _open(self) -> None:
        conn = self._conn
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            with self._write():
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version == 0 and conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0] == 0:
                    # One statement at a time: executescript() would COMMIT the transaction.
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                elif version != SCHEMA_VERSION:
                    raise ValueError(
                        f"path {str(self._path)!r} is not a fencepost durable scheduler file "
                        f"(schema version {version}, this code reads version {SCHEMA_VERSION})"
                    )
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"path {str(self._path)!r} is not a fencepost durable scheduler file: {exc}") from None
        if mode.lower() != "wal":
            raise ValueError(f"path {str(self._path)!r}: SQLite refused WAL mode (journal_mode is {mode!r})")

    # -------------------------------------------------------------- lifecycle

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    def close(self) -> None:
        """Release the file. Idempotent; the object must not be used afterwards."""
        self._conn.close()

    def reopen(self) -> DurableScheduler:
        """Close this scheduler and return a new one over the same file, as a new process would open it."""
        self.close()
        reopened = DurableScheduler(self._path, synchronous=self._synchronous)
        reopened._keepalive = self._keepalive
        return reopened

    def __enter__(self) -> DurableScheduler:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Group the calls made inside the block into one transaction: one commit, one fsync.

        Each call still validates first and an invalid one still changes
        nothing (it rolls back to a savepoint), but no call inside the block
        is durable until the block exits normally; if the block raises,
        every call in it is rolled back. Meant for loading many tasks at once.
        """
        with self._write():
            self._batch_depth += 1
            try:
                yield
            finally:
                self._batch_depth -= 1

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One call's transaction: BEGIN IMMEDIATE ... COMMIT, rolled back if the body raises.

        Inside ``batch()`` a call is a savepoint instead, so an invalid call
        undoes only itself.
        """
        conn = self._conn
        if self._batch_depth:
            conn.execute("SAVEPOINT call")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK TO call")
                conn.execute("RELEASE call")
                raise
            conn.execute("RELEASE call")
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self._commit(conn)

    def _commit(self, conn: sqlite3.Connection) -> None:
        """Make the call durable before it returns (a mutant overrides this to ack early)."""
        conn.execute("COMMIT")

    # -------------------------------------------------------------- queries

    @property
    def now(self) -> int:
        """The current logical time (0 at the start)."""
        return self._conn.execute("SELECT now FROM scheduler").fetchone()[0]

    def task(self, task_id: int) -> TaskView:
        """A detached view of one task; an unknown id raises. O(log T)."""
        return self._view(self._conn, task_id)

    # -------------------------------------------------------------- untimed

    def add_worker(self, worker: str, capacity: int) -> None:
        """Register ``worker`` with ``capacity`` >= 1 slots; a duplicate name raises."""
        with self._write() as conn:
            v.check_new_worker(worker, capacity, _Workers(conn))
            _fits("capacity", capacity)
            conn.execute("INSERT INTO workers (name, capacity) VALUES (?, ?)", (worker, capacity))

    def submit(self, priority: int = 0, due_at: int | None = None,
               max_attempts: int | None = None, retry_delay: int = 1, key: str | None = None) -> int:
        """Add a pending task and return its id (1, 2, 3...). Expires nothing.

        With a ``key`` (a non-empty str) seen before, and the same other
        arguments as given then, returns that task's id and changes nothing;
        with other arguments it raises ``ValueError`` naming the key.
        """
        v.check_submit(priority, due_at, max_attempts, retry_delay)
        if key is not None and (not isinstance(key, str) or not key):
            raise ValueError(f"key must be None or a non-empty str: {key!r}")
        for name, value in (("priority", priority), ("due_at", due_at), ("max_attempts", max_attempts), ("retry_delay", retry_delay)):
            if value is not None:
                _fits(name, value)
        with self._write() as conn:
            if key is not None:
                known = self._known_key(conn, key, priority, due_at, max_attempts, retry_delay)
                if known is not None:
                    return known
            now = conn.execute("SELECT now FROM scheduler").fetchone()[0]
            task_id = conn.execute(
                "INSERT INTO tasks (priority, due_at, max_attempts, retry_delay) VALUES (?, ?, ?, ?)",
                (priority, now if due_at is None else due_at, max_attempts, retry_delay),
            ).lastrowid
            if key is not None:
                conn.execute("INSERT INTO keys (key, task_id, due_at) VALUES (?, ?, ?)", (key, task_id, due_at))
            return task_id

    @staticmethod
    def _known_key(conn: sqlite3.Connection, key: str, priority: int, due_at: int | None,
                   max_attempts: int | None, retry_delay: int) -> int | None:
        """The task a key already names, if its arguments match; None for a new key; raise on a mismatch."""
        row = conn.execute(
            "SELECT k.task_id, k.due_at, t.priority, t.max_attempts, t.retry_delay "
            "FROM keys k JOIN tasks t ON t.id = k.task_id WHERE k.key = ?", (key,),
        ).fetchone()
        if row is None:
            return None
        task_id, *first = row
        if first == [due_at, priority, max_attempts, retry_delay]:
            return task_id
        raise ValueError(
            f"key {key!r} already names task {task_id}, submitted with other arguments "
            f"(priority={first[1]!r}, due_at={first[0]!r}, max_attempts={first[2]!r}, retry_delay={first[3]!r})"
        )

    # -------------------------------------------------------------- timed

    def advance(self, now: int) -> None:
        """Move time to ``now``, expiring every lease with ``expires_at <= now``."""
        with self._write() as conn:
            current = self._clock(conn)[0]
            v.check_time(current, now)
            self._expire(conn, current, now)

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """Lease the best eligible task (priority desc, due_at asc, id asc) to ``worker``.

        Returns None when the worker is full or nothing is due; that issues no token.
        """
        with self._write() as conn:
            v.check_worker_name(worker)
            row = conn.execute("SELECT capacity FROM workers WHERE name = ?", (worker,)).fetchone()
            if row is None:
                raise v.unknown_worker(worker)
            current, last_token = self._clock(conn)
            v.check_time(current, now)
            v.check_min("duration", duration, 1)
            expires_at = _fits("now + duration", now + duration)
            self._expire(conn, current, now)
            load = conn.execute("SELECT count(*) FROM tasks WHERE status = 'running' AND worker = ?", (worker,)).fetchone()[0]
            if load >= row[0]:
                return None
            best = conn.execute(_BEST_WAITING, (now,)).fetchone()
            if best is None:
                return None
            token = last_token + 1
            conn.execute(
                "UPDATE tasks SET status = 'running', attempts = attempts + 1, worker = ?, token = ?, "
                "started_at = ?, expires_at = ?, expired_token = NULL WHERE id = ?",
                (worker, token, now, expires_at, best[0]),
            )
            conn.execute("UPDATE scheduler SET last_token = ?", (token,))
            return Lease(best[0], worker, token, now, expires_at)

    def complete(self, task_id: int, token: int, now: int,
                 *, effect: Callable[[sqlite3.Connection], object] | None = None) -> Outcome:
        """Accept completion from the current lease only: the task succeeds, its slot frees.

        The transactional boundary for effects: ``effect``, when given, is
        called with this file's connection inside the same transaction, only
        if the completion is accepted, after the task is marked succeeded. Its
        SQL (say, rows in the application's own tables in this file) commits
        with the completion or not at all: if ``effect`` raises, the
        completion is rolled back too and the exception propagates.
        """
        with self._write() as conn:
            _, bound = self._lease_call(conn, task_id, token, now)
            changed = conn.execute(f"UPDATE tasks SET status = 'succeeded', {_RELEASE} WHERE {_FENCE}", (task_id, bound, now)).rowcount
            if not changed:
                return self._rejection(conn, task_id, token)
            if effect is not None:
                effect(conn)
            return ACCEPTED

    def fail(self, task_id: int, token: int, now: int) -> Outcome:
        """Accept an explicit failure from the current lease: retry with backoff, or end."""
        with self._write() as conn:
            row, bound = self._lease_call(conn, task_id, token, now)
            status, current, attempts, max_attempts, retry_delay, cancel_requested = row
            due_at = None
            if cancel_requested:
                ending = Status.CANCELLED
            elif max_attempts is not None and attempts >= max_attempts:
                ending = Status.FAILED
            else:
                ending = Status.RETRY_WAIT
                if status == Status.RUNNING and current == token:  # else the fence refuses it below
                    backoff = retry_delay * 2 ** (attempts - 1)
                    due_at = _fits("the retry time now + retry_delay * 2 ** (attempts - 1)", now + backoff)
            changed = conn.execute(
                f"UPDATE tasks SET status = ?, due_at = coalesce(?, due_at), {_RELEASE} WHERE {_FENCE}",
                (ending.value, due_at, task_id, bound, now),
            ).rowcount
            return ACCEPTED if changed else self._rejection(conn, task_id, token)

    def cancel(self, task_id: int, now: int) -> Outcome:
        """Cancel a waiting task; mark a running one ``cancel_requested``; refuse a final one."""
        with self._write() as conn:
            self._row(conn, task_id)
            current = self._clock(conn)[0]
            v.check_time(current, now)
            self._expire(conn, current, now)
            if conn.execute("UPDATE tasks SET cancel_requested = 1 WHERE id = ? AND status = 'running'", (task_id,)).rowcount:
                return ACCEPTED
            if conn.execute("UPDATE tasks SET status = 'cancelled' WHERE id = ? AND status IN ('pending', 'retry_wait')", (task_id,)).rowcount:
                return ACCEPTED
            return Outcome(False, Reason.ALREADY_FINAL)

    def renew(self, task_id: int, token: int, now: int, duration: int) -> Outcome:
        """Set the current lease's end to ``now + duration``; refused after a cancel request."""
        with self._write() as conn:
            _, bound = self._lease_call(conn, task_id, token, now, duration)
            expires_at = _fits("now + duration", now + duration)
            changed = conn.execute(
                f"UPDATE tasks SET expires_at = ? WHERE {_FENCE} AND NOT cancel_requested",
                (expires_at, task_id, bound, now),
            ).rowcount
            if changed:
                return ACCEPTED
            refused = self._rejection(conn, task_id, token)
            return refused if not refused.accepted else Outcome(False, Reason.CANCEL_REQUESTED)

    # -------------------------------------------------------------- internals

    @staticmethod
    def _clock(conn: sqlite3.Connection) -> tuple[int, int]:
        return conn.execute("SELECT now, last_token FROM scheduler").fetchone()

    @staticmethod
    def _row(conn: sqlite3.Connection, task_id: object) -> tuple:
        """The task's (status, token, attempts, max_attempts, retry_delay, cancel_requested); an unknown id raises."""
        v.check_int("task_id", task_id)
        row = None
        if INT64_MIN <= task_id <= INT64_MAX:
            row = conn.execute(
                "SELECT status, token, attempts, max_attempts, retry_delay, cancel_requested FROM tasks WHERE id = ?",
                (task_id,),
            ).fetchone()
        if row is None:
            issued = conn.execute("SELECT coalesce(max(id), 0) FROM tasks").fetchone()[0]
            v.check_task_id(task_id, issued)
        return row

    def _view(self, conn: sqlite3.Connection, task_id: object) -> TaskView:
        self._row(conn, task_id)
        row = conn.execute(f"SELECT {_TASK_COLUMNS} FROM tasks WHERE id = ?", (task_id,)).fetchone()
        ident, status, priority, due_at, attempts, worker, token, expires_at, cancel_requested = row
        return TaskView(ident, Status(status), priority, due_at, attempts, worker, token, expires_at, bool(cancel_requested))

    def _lease_call(self, conn: sqlite3.Connection, task_id: object, token: object, now: object,
                    duration: object = 1) -> tuple[tuple, int]:
        """Validate a token-carrying call (in the model's order), then expire.

        Returns the task's row as read before expiry (see ``_row``) and the
        token as SQLite can bind it: one outside 64 bits was never issued, so
        it becomes -1, which matches no lease either (tokens start at 1).
        """
        row = self._row(conn, task_id)
        v.check_int("token", token)
        current = self._clock(conn)[0]
        v.check_time(current, now)
        v.check_min("duration", duration, 1)
        self._expire(conn, current, now)
        return row, token if INT64_MIN <= token <= INT64_MAX else -1

    @staticmethod
    def _expire(conn: sqlite3.Connection, current: int, now: int) -> None:
        """End every lease with ``expires_at <= now`` and move the clock. Nothing can expire at ``current``."""
        _fits("now", now)
        if now != current:
            conn.execute(_EXPIRE, (now,))
            conn.execute("UPDATE scheduler SET now = ?", (now,))

    @staticmethod
    def _rejection(conn: sqlite3.Connection, task_id: int, token: int) -> Outcome:
        """Why ``token`` may not act on the task now: ``SimpleScheduler``'s rules, read after the fence refused.

        Returns ACCEPTED when the token is the task's current lease (the caller then knows the
        fence refused for another reason: a cancel request, for ``renew``).
        """
        status, current, expired = conn.execute(
            "SELECT status, token, expired_token FROM tasks WHERE id = ?", (task_id,)
        ).fetchone()
        return SimpleScheduler._rejection(_Lease(Status(status), current, expired), token) or ACCEPTED

    def check_invariants(self) -> None:
        """Check the file's own consistency in O(T); raise AssertionError naming what is broken.

        The lease fields are set exactly while running and every lease is
        alive; no worker runs more than its capacity; no token is above
        ``last_token`` or held by two running tasks; every key names a task.
        """
        conn = self._conn
        now, last_token = self._clock(conn)
        bad = conn.execute(
            "SELECT id FROM tasks WHERE (status = 'running') != (worker IS NOT NULL AND token IS NOT NULL "
            "AND started_at IS NOT NULL AND expires_at IS NOT NULL) OR (status != 'running' AND cancel_requested)"
        ).fetchall()
        assert not bad, f"tasks {[r[0] for r in bad]} have lease fields that do not match their status"
        dead = conn.execute("SELECT id FROM tasks WHERE status = 'running' AND expires_at <= ?", (now,)).fetchall()
        assert not dead, f"tasks {[r[0] for r in dead]} are running under a lease that ended at or before now={now}"
        over = conn.execute(
            "SELECT w.name FROM workers w WHERE w.capacity < "
            "(SELECT count(*) FROM tasks t WHERE t.status = 'running' AND t.worker = w.name)"
        ).fetchall()
        assert not over, f"workers {[r[0] for r in over]} run more tasks than their capacity"
        top, running, distinct = conn.execute(
            "SELECT max(token), count(token), count(DISTINCT token) FROM tasks WHERE status = 'running'"
        ).fetchone()
        assert top is None or top <= last_token, f"token {top} is above the last issued, {last_token}"
        assert running == distinct, "two running tasks hold the same token"
        orphans = conn.execute("SELECT key FROM keys WHERE task_id NOT IN (SELECT id FROM tasks)").fetchall()
        assert not orphans, f"keys {[r[0] for r in orphans]} name no task"


class _Workers:
    """The worker names in the file, as the container ``check_new_worker`` asks ``in`` of."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __contains__(self, worker: object) -> bool:
        return self._conn.execute("SELECT 1 FROM workers WHERE name = ?", (worker,)).fetchone() is not None


# ------------------------------------------------------------------ temporary files


class _TemporaryFile:
    """A temporary folder holding one database; removed once no scheduler over it is left, or at exit."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="fencepost-durable-")
        self.path = Path(self.folder) / "scheduler.db"
        weakref.finalize(self, shutil.rmtree, self.folder, True)


def temporary() -> DurableScheduler:
    """A ``DurableScheduler`` over a fresh temporary file: the zero-argument factory ``fencepost check`` takes.

    The file (under ``tempfile.gettempdir()``) is deleted when neither this
    scheduler nor any ``reopen()`` of it is referenced any more, and at exit.
    """
    owner = _TemporaryFile()
    scheduler = DurableScheduler(owner.path)
    scheduler._keepalive = owner
    return scheduler

