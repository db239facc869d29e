"""``DurableScheduler``: the protocol stored in one SQLite file, every call committed before it returns.

It refines ``impl.simple.SimpleScheduler``: for every sequence of calls it
returns the same leases, outcomes (reasons included) and task views, and
raises ``ValueError`` for the same invalid calls, changing nothing then. What
changes is where the state lives: in one SQLite file (the standard library's
``sqlite3``, no server), so a new process opening the file sees every call
that returned.

**Every call is one transaction.** Each call validates every argument
first, then makes its change inside one ``BEGIN IMMEDIATE`` ... ``COMMIT``;
an invalid call writes nothing. A call returns only after its ``COMMIT`` has
returned, so a process killed at any instant (SIGKILL) loses no call that
returned, and SQLite's atomic commit means it never leaves half a call
behind ("Transactions are durable across application crashes regardless of
the synchronous setting or journal mode", sqlite.org/pragma.html). Recovery of abandoned work is the lease rule itself: a lease keeps
its ``expires_at`` across restarts, and the first timed call at or past it
takes the task back. Nothing special-cases a restart.

**A batch is one transaction of a few statements.** ``submit_many``,
``dispatch_many``, ``complete_many`` and ``fail_many`` each mean the single
calls in order at the same ``now`` (``spec.model``), and each is one
transaction, one commit and one fsync, whatever its size, made set-based
rather than as a fold of single calls: ``submit_many`` is one
``executemany`` INSERT (ids in order, keys checked first); ``dispatch_many``
one SELECT of the ``min(limit, room)`` best due tasks (a walk of the
dispatch index) and one ``executemany`` UPDATE that leases them by id, each
re-checked as waiting, tokens consecutive in dispatch order; ``complete_many``
and ``fail_many`` judge each report in order against the live leases, an
earlier report in the batch included (a token is accepted once, a stale one
never), and change the accepted tasks with the single call's fenced UPDATE
as one ``executemany``. Each ``executemany``'s summed row count must equal
the rows meant. Every check that can make the batch invalid (a forgotten id
included) is made before its first change; one that only the write finds
rolls it back whole. (One statement over all the rows -- ``UPDATE ... FROM``
a CTE or ``VALUES`` -- runs fewer instructions, but SQLite fills a
temporary table for it, whose page cache, allocated and freed at every
batch, made ``malloc`` grow and trim the heap each time in some processes:
measured, more time in the kernel than the statements saved.)

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

**What is on disk and what is in memory.** On disk, one index: waiting
tasks in dispatch order (``priority DESC, due_at, id``, partial over
``pending``/``retry_wait``), which ``dispatch``'s one UPDATE walks. In
memory, loaded at open in one pass over the tasks: the clock, the last
token (the largest token any task row holds), the task count, the
capacities and the running leases (token, task, worker, end) -- so expiry
and capacity need no index on disk, and a write changes one table page
plus, for ``submit`` and ``dispatch``, one index page. Costs, T tasks and R
running leases: ``submit``, ``complete``, ``fail``, ``cancel``, ``renew``
and ``task`` O(log T); ``dispatch`` O(log T) plus the waiting tasks of
higher priority not yet due, which its index walk steps over; every timed
call at a new time O(R) to find expired leases, plus O(log T) for each.
Opening is O(T) (one pass for the last token and the leases).

Integers are SQLite's: 64-bit signed. An argument outside that range, or a
lease end or retry time that would leave it, is refused with ``ValueError``
naming it -- the one place where this scheduler is narrower than the model,
which has Python's unbounded ints.

One scheduler owns a file while it is open (``PRAGMA locking_mode =
EXCLUSIVE``); another, in any process, waits ``BUSY_TIMEOUT_S`` and is refused.

**When the file cannot be written** -- the disk (or ``max_bytes``) is full,
the file was made read-only or immutable under the running scheduler, an I/O
error -- the call's transaction rolls back and it raises ``StorageError``, one
line naming the file and SQLite's reason. Its outcome is known: it changed
nothing, every call acknowledged before it is still there, and the same call
made again once the file is writable and has room succeeds (docs/faults.md).
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

from fencepost.impl import kit as v
from fencepost.impl._sqlite import StorageError as StorageError  # public here: what a refused write raises
from fencepost.impl._sqlite import Transaction, run_script
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import ACCEPTED, INT_MAX, INT_MIN, Lease, Outcome, Reason, Status, TaskView

#: The file layout's version, kept in ``PRAGMA user_version``; a file with another is refused,
#: except version 1 (before ``prune``), which opening upgrades in place (``_UPGRADE_FROM_1``).
SCHEMA_VERSION = 2
#: The ``synchronous`` settings offered: FULL survives power loss, NORMAL only a process crash.
SYNCHRONOUS_SETTINGS = ("FULL", "NORMAL")
#: How long opening waits for another scheduler to let go of the file before raising: a bound, not a sleep.
BUSY_TIMEOUT_S = 5.0
#: SQLite's INTEGER range; every stored int must fit.
INT64_MIN, INT64_MAX = INT_MIN, INT_MAX  # the contract's range: kit.check_int refuses any other int before a call gets here

_SCHEMA = """
CREATE TABLE scheduler (
    only_row   INTEGER PRIMARY KEY CHECK (only_row = 1),
    now        INTEGER NOT NULL,            -- logical time, never decreasing
    last_id    INTEGER NOT NULL DEFAULT 0,  -- with last_token, written by prune before it deletes rows:
    last_token INTEGER NOT NULL DEFAULT 0   --   the counters are max(this, the largest in the rows)
);
INSERT INTO scheduler (only_row, now) VALUES (1, 0);
CREATE TABLE workers (
    name     TEXT PRIMARY KEY,
    capacity INTEGER NOT NULL CHECK (capacity >= 1)
) WITHOUT ROWID;
CREATE TABLE tasks (
    id               INTEGER PRIMARY KEY,  -- 1, 2, 3... in submit order (never reused: see last_id)
    priority         INTEGER NOT NULL,     -- higher is dispatched first
    due_at           INTEGER NOT NULL,     -- eligible once due_at <= now
    max_attempts     INTEGER,              -- NULL for unlimited
    retry_delay      INTEGER NOT NULL,     -- base of the backoff after an explicit failure
    status           TEXT NOT NULL DEFAULT 'pending',
    attempts         INTEGER NOT NULL DEFAULT 0,
    token            INTEGER,              -- the last lease's token, kept after it ends (the
                                           --   largest is the last token issued), shown only while running
    worker           TEXT,                 -- worker, started_at, expires_at: set exactly while running
    started_at       INTEGER,
    expires_at       INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,  -- only ever set while running
    expired_token    INTEGER,              -- the token whose lease expired last, for the rejection reason
    ended_at         INTEGER               -- when the task became final, set exactly while final
);
CREATE INDEX tasks_waiting ON tasks (priority DESC, due_at, id) WHERE status IN ('pending', 'retry_wait');
CREATE INDEX tasks_ended ON tasks (ended_at) WHERE status IN ('succeeded', 'failed', 'cancelled');
CREATE TABLE keys (
    key     TEXT PRIMARY KEY,  -- an idempotency key, remembered until prune forgets its task
    task_id INTEGER NOT NULL REFERENCES tasks (id),
    due_at  INTEGER            -- submit's due_at as given (NULL for None)
) WITHOUT ROWID;
CREATE INDEX keys_by_task ON keys (task_id);
"""

# A version 1 file (before prune) upgraded in place, in the opening transaction. Its
# final tasks did not record when they ended: they count as ending at the upgrade.
_UPGRADE_FROM_1 = """
ALTER TABLE scheduler ADD COLUMN last_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE scheduler ADD COLUMN last_token INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN ended_at INTEGER;
UPDATE tasks SET ended_at = (SELECT now FROM scheduler) WHERE status IN ('succeeded', 'failed', 'cancelled');
CREATE INDEX tasks_ended ON tasks (ended_at) WHERE status IN ('succeeded', 'failed', 'cancelled');
CREATE INDEX keys_by_task ON keys (task_id);
"""

_TASK_COLUMNS = "id, status, priority, due_at, attempts, worker, token, expires_at, cancel_requested"
_RELEASE = "worker = NULL, started_at = NULL, expires_at = NULL, cancel_requested = 0"
# Expiry (rule 3) of one lease at time ?: its task goes back to pending, or to
# cancelled if a cancel was requested, or to failed if its budget is spent (and
# then records when it ended: every SET expression reads the row as it was).
_EXPIRE = f"""
UPDATE tasks SET
    status = CASE WHEN cancel_requested THEN 'cancelled'
                  WHEN max_attempts IS NOT NULL AND attempts >= max_attempts THEN 'failed'
                  ELSE 'pending' END,
    ended_at = CASE WHEN cancel_requested OR (max_attempts IS NOT NULL AND attempts >= max_attempts) THEN ? END,
    expired_token = token, {_RELEASE}
WHERE id = ? AND status = 'running'
"""
_FINAL = "status IN ('succeeded', 'failed', 'cancelled')"  # the tasks_ended index's condition, word for word
# Dispatch in one statement: the best waiting task that is due, by the index's order.
_DISPATCH = """
UPDATE tasks SET status = 'running', attempts = attempts + 1, token = ?, worker = ?,
                 started_at = ?, expires_at = ?, expired_token = NULL
WHERE id = (SELECT id FROM tasks WHERE status IN ('pending', 'retry_wait') AND due_at <= ?
            ORDER BY priority DESC, due_at, id LIMIT 1)
RETURNING id
"""
# dispatch_many: the ? best waiting tasks that are due, by the index's order (a walk of it, no
# sort), then each leased by id, re-checked as waiting, as one executemany.
_WAITING = """
SELECT id FROM tasks WHERE status IN ('pending', 'retry_wait') AND due_at <= ?
ORDER BY priority DESC, due_at, id LIMIT ?
"""
_CLAIM = """
UPDATE tasks SET status = 'running', attempts = attempts + 1, token = ?, worker = ?,
                 started_at = ?, expires_at = ?, expired_token = NULL
WHERE id = ? AND status IN ('pending', 'retry_wait')
"""
# The fence: the change applies only to the task's current, live lease.
_FENCE = "id = ? AND status = 'running' AND token = ? AND expires_at > ?"
_COMPLETE = f"UPDATE tasks SET status = 'succeeded', ended_at = ?, {_RELEASE} WHERE {_FENCE}"
_FAIL = f"UPDATE tasks SET status = ?, due_at = coalesce(?, due_at), ended_at = ?, {_RELEASE} WHERE {_FENCE}"
_INSERT_TASK = "INSERT INTO tasks (id, priority, due_at, max_attempts, retry_delay) VALUES (?, ?, ?, ?, ?)"
_INSERT_KEY = "INSERT INTO keys (key, task_id, due_at) VALUES (?, ?, ?)"
# The task a key names, with the arguments it was submitted with (submit's due_at as given).
_KEYED_TASK = ("SELECT k.task_id, t.priority, k.due_at, t.max_attempts, t.retry_delay "
               "FROM keys k JOIN tasks t ON t.id = k.task_id WHERE k.key = ?")
# What a batch of reports reads of a task: the rejection's fields, then fail's.
_REPORTED = "status, token, expired_token, attempts, max_attempts, retry_delay, cancel_requested"
#: Ids bound in one ``IN (...)`` read: far below SQLite's limit on bound parameters.
_IDS_PER_READ = 500


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

    The scheduler owns its file while open (``PRAGMA locking_mode =
    EXCLUSIVE``): a second scheduler, in this process or another, waits
    ``BUSY_TIMEOUT_S`` for it and then raises ``ValueError``. Owning the file
    is what lets it keep the clock, the last token, the task count, the
    capacities and the running leases in memory, loaded at open, so that a
    call reads nothing it need not and no index on running tasks has to be
    kept on disk: ``submit`` is one INSERT, ``dispatch`` and ``complete`` one
    UPDATE each (plus, when time moves, one UPDATE per expired lease and one
    for the clock); a batch of them is the same statements, each one
    ``executemany`` for the whole batch, in one transaction.

    Args:
        path: the database file.
        synchronous: ``"FULL"`` (default: a returned call survives power
            loss) or ``"NORMAL"`` (it survives the process being killed; the
            last calls before a power loss may roll back).
        max_bytes: the most the file may grow to (None: no limit but the
            disk's), as SQLite's ``max_page_count``; a call that would pass
            it raises ``StorageError`` and changes nothing.
    """

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "FULL", max_bytes: int | None = None) -> None:
        if synchronous not in SYNCHRONOUS_SETTINGS:
            raise ValueError(f"synchronous must be one of {', '.join(SYNCHRONOUS_SETTINGS)}: {synchronous!r}")
        if max_bytes is not None and (type(max_bytes) is not int or max_bytes < 1):
            raise ValueError(f"max_bytes must be None or an int >= 1: {max_bytes!r}")
        self._path = Path(path)
        self._synchronous = synchronous
        self._max_bytes = max_bytes
        self._batch_depth = 0
        self._touched = False  # a cache changed inside the open call: reload it if the call rolls back
        self._batch_touched = False  # a cache changed by a call inside batch(): reload it if the batch rolls back
        try:
            # Any thread, one call at a time (a Runner makes its calls under its lock): the
            # caller serialises, and SQLite itself is built serialized (sqlite3.threadsafety 3).
            self._conn = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
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
        where = f"path {str(self._path)!r}"
        try:
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            if self._max_bytes is not None:
                page = conn.execute("PRAGMA page_size").fetchone()[0]
                conn.execute(f"PRAGMA max_page_count = {max(1, self._max_bytes // page)}")
            with self._write():
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version == 0 and conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0] == 0:
                    run_script(conn, _SCHEMA)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                elif version == 1:
                    run_script(conn, _UPGRADE_FROM_1)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                elif version != SCHEMA_VERSION:
                    raise ValueError(
                        f"{where} is not a fencepost durable scheduler file "
                        f"(schema version {version}, this code reads version {SCHEMA_VERSION})"
                    )
                self._load()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc):
                raise ValueError(f"{where} is held by another scheduler (waited {BUSY_TIMEOUT_S:.0f} s): {exc}") from None
            raise ValueError(f"{where} cannot be opened as a fencepost durable scheduler file: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{where} is not a fencepost durable scheduler file: {exc}") from None
        if mode.lower() != "wal":
            raise ValueError(f"{where}: SQLite refused WAL mode (journal_mode is {mode!r})")

    def _load(self) -> None:
        """Read the caches from the file: one pass over the tasks (the last token, the running leases)."""
        conn = self._conn
        self._now = conn.execute("SELECT now FROM scheduler").fetchone()[0]  # the clock
        # ids 1.._issued were issued (each has a row unless prune forgot it); prune saves both
        # counters before it deletes, so the larger of the saved and the largest left is the count
        self._issued, self._last_token = conn.execute(
            "SELECT max(s.last_id, coalesce(max(t.id), 0)), max(s.last_token, coalesce(max(t.token), 0)) "
            "FROM scheduler s LEFT JOIN tasks t ON true"
        ).fetchone()
        self._capacity = dict(conn.execute("SELECT name, capacity FROM workers"))
        # token -> [task id, worker, expires_at] for every running lease, and each worker's count of them
        self._leases: dict[int, list] = {
            token: [task_id, worker, expires_at]
            for token, task_id, worker, expires_at in conn.execute(
                "SELECT token, id, worker, expires_at FROM tasks WHERE status = 'running'")
        }
        self._load_of = dict.fromkeys(self._capacity, 0)
        for _, worker, _ in self._leases.values():
            self._load_of[worker] += 1
        self._touched = False

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
        reopened = type(self)(self._path, synchronous=self._synchronous, max_bytes=self._max_bytes)
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

    def _write(self) -> Transaction:
        """One call's transaction: BEGIN IMMEDIATE ... COMMIT, rolled back if the body raises.

        Inside ``batch()`` a call is a savepoint instead, so an invalid call
        undoes only itself. A call changes the caches only after its last
        check, so an invalid call leaves them as they were; anything else
        that rolls back (an effect raising, a failed COMMIT) reloads them.
        """
        return Transaction(self)

    def _commit(self, conn: sqlite3.Connection) -> None:
        """Make the call durable before it returns (a mutant overrides this to ack early)."""
        conn.execute("COMMIT")

    # -------------------------------------------------------------- batches
    #
    # Set-based: a batch is one transaction (one _write(): one commit, one fsync)
    # of a few statements whatever its size, each entry a step of an executemany,
    # where the fold of single calls made three per entry (a SAVEPOINT, the
    # call's statement, a RELEASE) and a read per report.
    # Everything that can make the batch invalid is checked before its first
    # change; what only the transaction finds (a retry time past 64 bits) raises
    # inside it and rolls the whole batch back.

    def submit_many(self, tasks: list[dict]) -> list[int]:
        """``submit(**entry)`` for each entry of ``tasks`` in order, all or nothing; returns the ids.

        One INSERT of the new tasks (and one of their keys), as ``executemany``:
        O(n log T) for n entries, plus one read per distinct key.

        Raises:
            ValueError: ``tasks`` is not a list of dicts of ``submit``'s keyword
                arguments, or an entry is an invalid submit (named by its
                index), a key conflict with a known key or an earlier entry
                among them; nothing is submitted and no id is consumed.
        """
        entries = v.check_list("tasks", tasks)
        known = self._known_keys(entries)
        v.check_submit_entries(entries, known, self._issued + 1)
        for number, entry in enumerate(entries):
            try:
                for name in ("priority", "due_at", "max_attempts", "retry_delay"):
                    if entry.get(name) is not None:
                        _fits(name, entry[name])
            except ValueError as exc:
                raise v.entry_error("tasks", number, exc) from None
        ids: list[int] = []
        rows, key_rows = [], []
        named: dict[str, int] = {}  # the keys this batch submits, by the id each gets
        task_id = self._issued  # explicit ids: SQLite would reuse a pruned largest id
        for entry in entries:
            key = entry.get("key")
            if key is not None and (key in named or key in known):  # an earlier task with the same arguments
                ids.append(named[key] if key in named else known[key][0])
                continue
            task_id += 1
            due_at = entry.get("due_at")
            rows.append((task_id, entry.get("priority", 0), self._now if due_at is None else due_at,
                         entry.get("max_attempts"), entry.get("retry_delay", 1)))
            if key is not None:
                named[key] = task_id
                key_rows.append((key, task_id, due_at))
            ids.append(task_id)
        if rows:
            with self._write() as conn:
                conn.executemany(_INSERT_TASK, rows)
                if key_rows:
                    conn.executemany(_INSERT_KEY, key_rows)
                self._touched = True
                self._issued = task_id
        return ids

    def _known_keys(self, entries: list) -> dict[str, tuple[int, tuple]]:
        """The known idempotency keys among ``entries``' (``kit.keyed_task``'s map): one read per distinct key."""
        keys = {e["key"] for e in entries if isinstance(e, dict) and isinstance(e.get("key"), str)}
        known = {}
        for key in keys:
            row = self._conn.execute(_KEYED_TASK, (key,)).fetchone()
            if row is not None:
                known[key] = (row[0], tuple(row[1:]))
        return known

    def dispatch_many(self, worker: str, now: int, duration: int, limit: int) -> list[Lease]:
        """Up to ``limit`` ``dispatch(worker, now, duration)`` calls, stopping at the first None; the leases.

        Those calls lease the ``min(limit, room)`` best eligible tasks, in
        dispatch order, with consecutive tokens (``room``: the worker's free
        slots once the leases due at ``now`` have expired): one SELECT finds
        them, one ``executemany`` UPDATE leases them. O(n log T) for n
        leases, plus the expiry.

        Raises:
            ValueError: a bad worker, time or duration (as ``dispatch``), or
                ``limit`` not an int >= 1; nothing changes.
        """
        v.check_dispatch(worker, now, duration, current=self._now, workers=self._capacity)
        _fits("now", now)
        expires_at = _fits("now + duration", now + duration)
        v.check_min("limit", limit, 1)
        with self._write() as conn:
            self._expire(conn, now)
            room = min(limit, self._capacity[worker] - self._load_of[worker])
            if room <= 0:
                return []
            base = self._last_token
            claimed = [(task_id, base + n) for n, (task_id,) in enumerate(conn.execute(_WAITING, (now, room)), 1)]
            if not claimed:
                return []
            changed = conn.executemany(_CLAIM, [(token, worker, now, expires_at, task_id) for task_id, token in claimed]).rowcount
            assert changed == len(claimed), f"{len(claimed)} tasks were waiting, {changed} were leased"
            self._touched = True
            self._last_token = base + len(claimed)
            for task_id, token in claimed:
                self._leases[token] = [task_id, worker, expires_at]
            self._load_of[worker] += len(claimed)
            return [Lease(task_id, worker, token, now, expires_at) for task_id, token in claimed]

    def complete_many(self, reports: list, now: int) -> list[Outcome]:
        """``complete(task_id, token, now)`` for each ``(task_id, token)`` pair in order; the outcomes.

        Each report is judged as its own ``complete`` would be, after the
        reports before it: a stale token is refused whatever was accepted
        before it. The accepted ones are one fenced UPDATE each, as one
        ``executemany``; reading a task is needed only to word a refusal.
        O(n log T) for n reports, plus the expiry.

        Raises:
            ValueError: ``reports`` is not a list of pairs, a pair has an
                unknown or forgotten id or a non-int token, or ``now`` is bad;
                nothing changes.
        """
        return self._reports_many(reports, now, failing=False)

    def fail_many(self, reports: list, now: int) -> list[Outcome]:
        """``fail(task_id, token, now)`` for each ``(task_id, token)`` pair in order; the outcomes.

        As ``complete_many``, plus one read of the accepted tasks (their
        attempts, budget, retry delay and cancel request decide where each goes).

        Raises: as ``complete_many``; also a retry time past 64 bits, which
        rolls the whole batch back.
        """
        return self._reports_many(reports, now, failing=True)

    def _reports_many(self, reports: object, now: object, failing: bool) -> list[Outcome]:
        pairs = v.check_reports(reports, self._issued)
        v.check_time(self._now, now)
        _fits("now", now)
        self._require_rows(pairs)
        if not pairs:
            self.advance(now)  # a timed call even when empty: due leases expire
            return []
        with self._write() as conn:
            self._expire(conn, now)
            # In order, as the single calls: a report is accepted if its token is the task's
            # live lease and no earlier report in the batch ended that lease.
            leases = self._leases
            ended: dict[int, int] = {}  # task id -> the number of the report that ended its lease
            for number, (task_id, token) in enumerate(pairs):
                lease = leases.get(token)
                if lease is not None and lease[0] == task_id and task_id not in ended:
                    ended[task_id] = number
            # What the refusals and the failures need, read before any change: the tasks as they were.
            unread = {task_id for number, (task_id, _) in enumerate(pairs) if ended.get(task_id, len(pairs)) > number}
            rows = _rows_by_id(conn, unread | set(ended) if failing else unread)
            endings: dict[int, tuple[Status, int | None]] = {}
            for task_id, number in ended.items():
                try:
                    endings[task_id] = _after_failure(now, *rows[task_id][3:]) if failing else (Status.SUCCEEDED, None)
                except ValueError as exc:  # raising rolls the expiry back: nothing changes
                    raise v.entry_error("reports", number, exc) from None
            outcomes = []
            for number, (task_id, token) in enumerate(pairs):
                if ended.get(task_id) == number:
                    outcomes.append(ACCEPTED)
                    continue
                if ended.get(task_id, number) < number:  # its lease ended earlier in the batch
                    lease = _Lease(endings[task_id][0], None, None)
                else:
                    status, current, expired = rows[task_id][:3]
                    lease = _Lease(Status(status), current if status == Status.RUNNING else None, expired)
                refused = SimpleScheduler._rejection(lease, token)
                assert refused is not None, f"task {task_id}'s lease {token} is current in the file, not in memory"
                outcomes.append(refused)
            if ended:
                final = []  # _FAIL's parameters: status, retry time, ended_at, then the fence (id, token, now)
                for task_id, number in ended.items():
                    status, due_at = endings[task_id]
                    final.append((status.value, due_at, None if status is Status.RETRY_WAIT else now,
                                  task_id, pairs[number][1], now))
                changed = conn.executemany(_FAIL, final).rowcount
                assert changed == len(final), f"{len(final)} leases are live in memory, {changed} in the file"
                for row in final:
                    self._release(row[4])
            return outcomes

    def _require_rows(self, pairs: list[tuple[int, int]]) -> None:
        """Raise (naming the entry) at the first report whose task prune forgot; a live lease needs no read."""
        leases, present = self._leases, set()
        for number, (task_id, token) in enumerate(pairs):
            lease = leases.get(token)
            if (lease is not None and lease[0] == task_id) or task_id in present:
                continue
            try:
                self._require_row(task_id)
            except ValueError as exc:
                raise v.entry_error("reports", number, exc) from None
            present.add(task_id)

    # -------------------------------------------------------------- queries

    @property
    def now(self) -> int:
        """The current logical time (0 at the start)."""
        return self._now

    def task(self, task_id: int) -> TaskView:
        """A detached view of one task; an unknown or forgotten id raises. O(log T)."""
        self._check_id(task_id)
        row = self._conn.execute(f"SELECT {_TASK_COLUMNS} FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            raise v.forgotten_task(task_id)
        ident, status, priority, due_at, attempts, worker, token, expires_at, cancel_requested = row
        running = status == Status.RUNNING
        return TaskView(ident, Status(status), priority, due_at, attempts, worker,
                        token if running else None, expires_at, bool(cancel_requested))

    # -------------------------------------------------------------- untimed

    def add_worker(self, worker: str, capacity: int) -> None:
        """Register ``worker`` with ``capacity`` >= 1 slots; a duplicate name raises."""
        v.check_new_worker(worker, capacity, self._capacity)
        _fits("capacity", capacity)
        with self._write() as conn:
            conn.execute("INSERT INTO workers (name, capacity) VALUES (?, ?)", (worker, capacity))
            self._touched = True
            self._capacity[worker] = capacity
            self._load_of[worker] = 0

    def submit(self, priority: int = 0, due_at: int | None = None,
               max_attempts: int | None = None, retry_delay: int = 1, key: str | None = None) -> int:
        """Add a pending task and return its id (1, 2, 3...). Expires nothing.

        With a ``key`` (a non-empty str) seen before, and the same other
        arguments as given then, returns that task's id and changes nothing;
        with other arguments it raises ``ValueError`` naming the key.
        """
        if not (type(priority) is int and due_at is None and max_attempts is None and key is None
                and type(retry_delay) is int and 1 <= retry_delay <= INT64_MAX and INT64_MIN <= priority <= INT64_MAX):
            self._check_submit(priority, due_at, max_attempts, retry_delay, key)  # the fast test above is the common case
        with self._write() as conn:
            if key is not None:
                known = self._known_key(conn, key, priority, due_at, max_attempts, retry_delay)
                if known is not None:
                    return known
            task_id = self._issued + 1  # explicit: SQLite would reuse a pruned largest id
            conn.execute(_INSERT_TASK, (task_id, priority, self._now if due_at is None else due_at, max_attempts, retry_delay))
            if key is not None:
                conn.execute(_INSERT_KEY, (key, task_id, due_at))
            self._touched = True
            self._issued = task_id
            return task_id

    @staticmethod
    def _check_submit(priority: object, due_at: object, max_attempts: object, retry_delay: object, key: object) -> None:
        """``submit``'s rules, in the contract's order; raise on the first bad argument."""
        v.check_submit(priority, due_at, max_attempts, retry_delay)
        v.check_key(key)
        for name, value in (("priority", priority), ("due_at", due_at), ("max_attempts", max_attempts), ("retry_delay", retry_delay)):
            if value is not None:
                _fits(name, value)

    @staticmethod
    def _known_key(conn: sqlite3.Connection, key: str, priority: int, due_at: int | None,
                   max_attempts: int | None, retry_delay: int) -> int | None:
        """The task a key already names, if its arguments match; None for a new key; raise on a mismatch.

        The comparison and its message are ``impl.kit.keyed_task``'s, over the one row the key has.
        """
        row = conn.execute(_KEYED_TASK, (key,)).fetchone()
        known = {} if row is None else {key: (row[0], tuple(row[1:]))}
        return v.keyed_task(known, key, (priority, due_at, max_attempts, retry_delay))

    # -------------------------------------------------------------- timed

    def advance(self, now: int) -> None:
        """Move time to ``now``, expiring every lease with ``expires_at <= now``."""
        v.check_time(self._now, now)
        _fits("now", now)
        with self._write() as conn:
            self._expire(conn, now)

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """Lease the best eligible task (priority desc, due_at asc, id asc) to ``worker``.

        Returns None when the worker is full or nothing is due; that issues no token.
        """
        v.check_dispatch(worker, now, duration, current=self._now, workers=self._capacity)
        _fits("now", now)
        expires_at = _fits("now + duration", now + duration)
        with self._write() as conn:
            self._expire(conn, now)
            if self._load_of[worker] >= self._capacity[worker]:
                return None
            token = self._last_token + 1
            row = conn.execute(_DISPATCH, (token, worker, now, expires_at, now)).fetchone()
            if row is None:
                return None
            self._touched = True
            self._last_token = token
            self._leases[token] = [row[0], worker, expires_at]
            self._load_of[worker] += 1
            return Lease(row[0], worker, token, now, expires_at)

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
        bound = self._check_lease_call(task_id, token, now)
        with self._write() as conn:
            self._expire(conn, now)
            changed = conn.execute(_COMPLETE, (now, task_id, bound, now)).rowcount
            if not changed:
                return self._rejection(conn, task_id, token)
            if effect is not None:
                effect(conn)
            self._release(token)
            return ACCEPTED

    def fail(self, task_id: int, token: int, now: int) -> Outcome:
        """Accept an explicit failure from the current lease: retry with backoff, or end."""
        bound = self._check_lease_call(task_id, token, now)
        row = self._conn.execute(
            "SELECT status, token, attempts, max_attempts, retry_delay, cancel_requested FROM tasks WHERE id = ?",
            (task_id,),
        ).fetchone()
        if row is None:
            raise v.forgotten_task(task_id)
        status, current, *rest = row
        # Where the task goes is computed only for its current, live lease: the fence refuses any other below.
        live = status == Status.RUNNING and current == token and self._leases[token][2] > now
        ending, due_at = _after_failure(now, *rest) if live else (Status.FAILED, None)
        with self._write() as conn:
            self._expire(conn, now)
            changed = conn.execute(
                _FAIL, (ending.value, due_at, None if ending is Status.RETRY_WAIT else now, task_id, bound, now),
            ).rowcount
            if not changed:
                return self._rejection(conn, task_id, token)
            self._release(token)
            return ACCEPTED

    def cancel(self, task_id: int, now: int) -> Outcome:
        """Cancel a waiting task; mark a running one ``cancel_requested``; refuse a final one."""
        self._check_id(task_id)
        try:
            v.check_time(self._now, now)
            _fits("now", now)
        except ValueError:
            self._require_row(task_id)  # a forgotten id is the first error, as the model checks it first
            raise
        with self._write() as conn:
            self._expire(conn, now)
            if conn.execute("UPDATE tasks SET cancel_requested = 1 WHERE id = ? AND status = 'running'", (task_id,)).rowcount:
                return ACCEPTED
            if conn.execute("UPDATE tasks SET status = 'cancelled', ended_at = ? WHERE id = ? AND status IN ('pending', 'retry_wait')",
                            (now, task_id)).rowcount:
                return ACCEPTED
            self._require_row(task_id)  # raising rolls the expiry back: nothing changes
            return Outcome(False, Reason.ALREADY_FINAL)

    def renew(self, task_id: int, token: int, now: int, duration: int) -> Outcome:
        """Set the current lease's end to ``now + duration``; refused after a cancel request."""
        bound = self._check_lease_call(task_id, token, now, duration)
        expires_at = v.check_lease_end(now, duration)
        with self._write() as conn:
            self._expire(conn, now)
            changed = conn.execute(
                f"UPDATE tasks SET expires_at = ? WHERE {_FENCE} AND NOT cancel_requested",
                (expires_at, task_id, bound, now),
            ).rowcount
            if changed:
                self._touched = True
                self._leases[token][2] = expires_at
                return ACCEPTED
            refused = self._rejection(conn, task_id, token)
            return refused if not refused.accepted else Outcome(False, Reason.CANCEL_REQUESTED)

    def prune(self, before: int, now: int) -> int:
        """Forget every final task that ended at a time ``< before``, with its key; return how many.

        Timed: leases due at ``now`` expire first. ``before`` is an int with
        ``0 <= before <= now``. The rows are deleted in the call's one
        transaction, together with the counters of ids and tokens, so neither
        is ever reused, after a reopen too. A forgotten key may be submitted
        again and makes a new task. O(k log T) for the k rows deleted (the
        ``tasks_ended`` index finds them), plus the expiry.
        """
        v.check_prune(self._now, before, now)
        _fits("now", now)
        with self._write() as conn:
            self._expire(conn, now)
            conn.execute(f"DELETE FROM keys WHERE task_id IN (SELECT id FROM tasks WHERE {_FINAL} AND ended_at < ?)",
                         (before,))
            forgotten = conn.execute(f"DELETE FROM tasks WHERE {_FINAL} AND ended_at < ?", (before,)).rowcount
            if forgotten:
                conn.execute("UPDATE scheduler SET last_id = ?, last_token = ?", (self._issued, self._last_token))
            return forgotten

    # -------------------------------------------------------------- internals

    def _check_id(self, task_id: object) -> int:
        return v.check_task_id(task_id, self._issued)

    def _require_row(self, task_id: int) -> None:
        """Raise the forgotten-task error if ``task_id`` (issued) has no row: prune deleted it."""
        if self._conn.execute("SELECT 1 FROM tasks WHERE id = ?", (task_id,)).fetchone() is None:
            raise v.forgotten_task(task_id)

    def _check_lease_call(self, task_id: object, token: object, now: object, duration: object = 1) -> int:
        """Validate a token-carrying call in the model's order; return the token as SQLite can bind it.

        A token outside 64 bits was never issued, so it becomes -1, which
        matches no lease either (tokens start at 1).
        """
        self._check_id(task_id)
        try:
            v.check_int("token", token)
            v.check_time(self._now, now)
            v.check_min("duration", duration, 1)
            _fits("now", now)
        except ValueError:
            self._require_row(task_id)  # a forgotten id is the first error, as the model checks it first
            raise
        return token if INT64_MIN <= token <= INT64_MAX else -1

    def _release(self, token: int) -> None:
        """Forget a lease that ended by complete or fail: its worker's slot is free."""
        self._touched = True
        self._load_of[self._leases.pop(token)[1]] -= 1

    def _expire(self, conn: sqlite3.Connection, now: int) -> None:
        """End every lease with ``expires_at <= now`` and move the clock. O(running leases).

        Nothing can expire at the current time: every lease ends after it.
        """
        if now == self._now:
            return
        self._touched = True
        ended = [token for token, (_, _, expires_at) in self._leases.items() if expires_at <= now]
        expired = []
        for token in ended:
            task_id, worker, _ = self._leases.pop(token)
            expired.append((now, task_id))
            self._load_of[worker] -= 1
        if expired:
            conn.executemany(_EXPIRE, expired)
        conn.execute("UPDATE scheduler SET now = ?", (now,))
        self._now = now

    @staticmethod
    def _rejection(conn: sqlite3.Connection, task_id: int, token: int) -> Outcome:
        """Why ``token`` may not act on the task now: ``SimpleScheduler``'s rules, read after the fence refused.

        Returns ACCEPTED when the token is the task's current lease (the caller then knows the
        fence refused for another reason: a cancel request, for ``renew``).
        """
        row = conn.execute("SELECT status, token, expired_token FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            raise v.forgotten_task(task_id)  # inside the call's transaction: raising rolls it back
        status, current, expired = row
        running = status == Status.RUNNING
        lease = _Lease(Status(status), current if running else None, expired)
        return SimpleScheduler._rejection(lease, token) or ACCEPTED

    def check_invariants(self) -> None:
        """Check the file and the caches against each other in O(T); raise AssertionError naming what is broken.

        The lease fields are set exactly while running and every lease is
        alive; no worker runs more than its capacity; no token is above the
        last issued or held by two running tasks; every key names a task;
        and the in-memory clock, task count, capacities and leases are the file's.
        """
        conn = self._conn
        bad = conn.execute(
            "SELECT id FROM tasks WHERE (status = 'running') != (worker IS NOT NULL AND token IS NOT NULL "
            "AND started_at IS NOT NULL AND expires_at IS NOT NULL) OR (status != 'running' AND cancel_requested)"
        ).fetchall()
        assert not bad, f"tasks {[r[0] for r in bad]} have lease fields that do not match their status"
        dead = conn.execute("SELECT id FROM tasks WHERE status = 'running' AND expires_at <= ?", (self._now,)).fetchall()
        assert not dead, f"tasks {[r[0] for r in dead]} are running under a lease that ended at or before now={self._now}"
        over = conn.execute(
            "SELECT w.name FROM workers w WHERE w.capacity < "
            "(SELECT count(*) FROM tasks t WHERE t.status = 'running' AND t.worker = w.name)"
        ).fetchall()
        assert not over, f"workers {[r[0] for r in over]} run more tasks than their capacity"
        top, running, distinct = conn.execute(
            "SELECT max(token), count(token), count(DISTINCT token) FROM tasks WHERE status = 'running'"
        ).fetchone()
        assert top is None or top <= self._last_token, f"token {top} is above the last issued, {self._last_token}"
        assert running == distinct, "two running tasks hold the same token"
        orphans = conn.execute("SELECT key FROM keys WHERE task_id NOT IN (SELECT id FROM tasks)").fetchall()
        assert not orphans, f"keys {[r[0] for r in orphans]} name no task"
        unended = conn.execute(f"SELECT id FROM tasks WHERE ({_FINAL}) != (ended_at IS NOT NULL)").fetchall()
        assert not unended, f"tasks {[r[0] for r in unended]} have ended_at set while not final, or not while final"
        saved = conn.execute("SELECT last_id, last_token FROM scheduler").fetchone()
        assert saved[0] <= self._issued and saved[1] <= self._last_token, (
            f"the saved counters {saved} are above the ids and tokens issued, {(self._issued, self._last_token)}")
        cached = (self._now, self._issued, self._last_token, self._capacity, self._leases, self._load_of)
        self._load()
        fresh = (self._now, self._issued, self._last_token, self._capacity, self._leases, self._load_of)
        assert cached == fresh, f"the in-memory caches differ from the file: {cached} != {fresh}"


def _after_failure(now: int, attempts: int, max_attempts: int | None, retry_delay: int,
                   cancel_requested: int) -> tuple[Status, int | None]:
    """Where an accepted ``fail`` at ``now`` sends a task, and its retry time (None unless it retries).

    Raises ``ValueError`` if the retry time ``now + retry_delay * 2 ** (attempts - 1)`` is after ``INT_MAX``.
    """
    if cancel_requested:
        return Status.CANCELLED, None
    if max_attempts is not None and attempts >= max_attempts:
        return Status.FAILED, None
    return Status.RETRY_WAIT, v.check_retry_time(now, retry_delay, attempts)


def _rows_by_id(conn: sqlite3.Connection, ids: set[int]) -> dict[int, tuple]:
    """``_REPORTED`` of each task in ``ids`` that has a row, by id: one read per ``_IDS_PER_READ`` ids."""
    found: dict[int, tuple] = {}
    ordered = sorted(ids)
    for start in range(0, len(ordered), _IDS_PER_READ):
        part = ordered[start:start + _IDS_PER_READ]
        marks = ", ".join("?" * len(part))
        for row in conn.execute(f"SELECT id, {_REPORTED} FROM tasks WHERE id IN ({marks})", part):
            found[row[0]] = row[1:]
    return found


# ------------------------------------------------------------------ temporary files


class _TemporaryFile:
    """A temporary folder holding one database; removed once no scheduler over it is left, or at exit."""

    def __init__(self, directory: str | None = None) -> None:
        self.folder = tempfile.mkdtemp(prefix="fencepost-durable-", dir=directory)
        self.path = Path(self.folder) / "scheduler.db"
        weakref.finalize(self, shutil.rmtree, self.folder, True)


def temporary(kind: type[DurableScheduler] = DurableScheduler, directory: str | None = None) -> DurableScheduler:
    """A ``DurableScheduler`` over a fresh temporary file: the zero-argument factory ``fencepost check`` takes.

    The file (under ``directory``, default ``tempfile.gettempdir()``) is
    deleted when neither this scheduler nor any ``reopen()`` of it is
    referenced any more, and at exit. ``kind`` is the class to open it with
    (a subclass, such as a mutant).
    """
    owner = _TemporaryFile(directory)
    scheduler = kind(owner.path)
    scheduler._keepalive = owner
    return scheduler

