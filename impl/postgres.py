"""``PostgresScheduler``: the whole protocol over PostgreSQL, shared by many processes.

Any number of ``PostgresScheduler`` objects, in any number of processes on any
number of machines, may open the same ``schema`` of one database: together
they are one scheduler. Every call is one round trip: one ``CALL`` of a
PL/pgSQL procedure in ``impl/postgres_sql.py``, in autocommit mode, so a call
that returned has committed (and, by default, is on disk) and a call that
raised changed nothing.

Guarantees under concurrency (``tests/implementations/test_postgres_concurrency.py``
and the stress tests show them):

* The calls of all clients take effect in one total order that is consistent
  with real time, and each call's result is the model's result in that
  order: the history is linearizable. Calls that must be ordered are
  ordered by locks held until they are visible: a timed call holds the
  schema's clock lock (shared, or exclusive when it moves the clock), a
  dispatch also the dispatch lock (tokens and the choice of task come in one
  order), a submit the ``meta`` row (ids). Completions, failures, renewals
  and cancels of different tasks do not wait for each other.
* A completion, failure or renewal is one ``UPDATE`` fenced by the token and
  the expiry in its ``WHERE`` clause, so at most one completion is accepted
  per task and a task never has two current leases, whatever the
  interleaving of workers, zombies and reclaimers.
* No call holds a lock while it waits for the disk: one that holds a lock
  others queue on commits without waiting, then waits for the flush in a
  second transaction of the same procedure, so many clients' flushes are
  grouped. Reads (``task``, ``now``, ``snapshot``) wait for the flush of
  what they may have seen.
* Time is the caller's, as the contract says, and never goes backwards for the
  scheduler as a whole: a call whose ``now`` is behind the clock any client
  has already moved to raises ``ValueError`` ("time can't go backwards") and
  changes nothing. ``DatabaseClock`` reads one clock for every client from
  the database server; a client that read it just before another client's
  call moved the clock on gets that ``ValueError`` and re-reads (see the
  README, "Time across clients").
* Tokens come from a sequence, taken only by a dispatch that leases a task:
  1, 2, 3... as the model issues them. After a crash of the database server
  (not of a client) the sequence may skip values; tokens stay unique and
  increasing.

Limits: times, priorities, durations and the other int arguments are stored
as 64-bit integers; a value outside that range is refused with ``ValueError``.
A connection that drops in the middle of a call leaves its outcome unknown to
the caller (committed or not); the call raises ``psycopg.OperationalError``.

Requires the optional dependency ``psycopg`` (``pip install 'fencepost[postgres]'``).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import re
import secrets
import threading
import weakref
from collections.abc import Iterator

import psycopg
from psycopg import sql

from fencepost.impl import _validate as v
from fencepost.impl.postgres_sql import INVALID_ARGUMENT_STATE, SCHEMA_VERSION, schema_ddl
from fencepost.spec.protocol import Lease, Outcome, Status, TaskView

#: The environment variable naming the server that ``temporary()`` and the tests use.
DSN_VARIABLE = "FENCEPOST_PG_DSN"

#: A schema name: lower-case letters, digits and underscores, starting with a
#: letter or underscore, at most 63 bytes (PostgreSQL's identifier limit).
SCHEMA_PATTERN = re.compile(r"[a-z_][a-z0-9_]{0,62}")

#: The range a value must lie in to be stored (PostgreSQL ``bigint``).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

#: SQLSTATE of PostgreSQL's "bigint out of range" (e.g. ``now + duration`` overflowing).
_OUT_OF_RANGE_STATE = "22003"


def check_schema(schema: object) -> str:
    """Return ``schema`` if it is a usable schema name, else raise ValueError."""
    if not isinstance(schema, str) or not SCHEMA_PATTERN.fullmatch(schema):
        raise ValueError(
            f"schema must be lower-case letters, digits and underscores, starting with a letter "
            f"or underscore, at most 63 characters: {schema!r}"
        )
    return schema


def _fits(name: str, value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{name} must fit in a signed 64-bit integer (PostgreSQL bigint): {value!r}")
    return value


def _token_arg(token: int) -> int:
    """A token outside bigint can never have been issued: pass one that matches nothing (0)."""
    return token if INT64_MIN <= token <= INT64_MAX else 0


#: dsn -> idle connections a closed (or collected) scheduler gave back, for the next one to
#: take: a new server session costs a process fork and recompiling every function it calls,
#: which a check that reopens its scheduler every few steps pays hundreds of times.
_IDLE: dict[str, list[psycopg.Connection]] = {}
_POOL_LOCK = threading.Lock()  # guards _IDLE and _POOL
#: Idle connections kept per server; one more is closed.
IDLE_MAX = 8


def _connect(dsn: str) -> psycopg.Connection:
    """An autocommit connection (one statement, one transaction) with JIT compilation off.

    An idle one given back by a closed scheduler if there is one (no session
    state of ours survives in it but ``jit`` and ``synchronous_commit``, which
    every scheduler sets), else a new one. The planner's row estimates for
    small or fresh tables can pass ``jit_above_cost``; compiling then costs
    milliseconds on statements that run in microseconds.
    """
    with _POOL_LOCK:
        idle = _IDLE.get(dsn)
        conn = idle.pop() if idle else None
    if conn is None or conn.closed:
        conn = open_connection(dsn)
    return conn


def open_connection(dsn: str) -> psycopg.Connection:
    """A new autocommit connection to ``dsn`` with JIT compilation off (see ``_connect``).

    Raises:
        ValueError: ``dsn`` is not a PostgreSQL connection string or URL.
        psycopg.OperationalError: no server accepted the connection; the
            message is one line naming the dsn (its password hidden).
    """
    try:
        conn = psycopg.connect(dsn, autocommit=True)
    except psycopg.Error as exc:
        message = connect_failure("dsn", dsn, exc)
        if isinstance(exc, psycopg.OperationalError):
            raise psycopg.OperationalError(message) from exc
        raise ValueError(message) from exc
    conn.execute("SET jit = off")
    return conn


def redacted(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***``, for error messages."""
    dsn = re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", dsn)  # postgresql://user:secret@host
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", dsn)  # password=secret


def connect_failure(label: str, dsn: str, exc: psycopg.Error) -> str:
    """One line saying why connecting to ``dsn`` (given as ``label``) failed, the password hidden."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    where = f"{label}={redacted(dsn)!r}"
    if isinstance(exc, psycopg.OperationalError):
        return f"cannot connect to PostgreSQL at {where}: {lines[0].strip()}"
    return f"{where} is not a PostgreSQL connection string or URL: {lines[0].strip()}"


class _ClosedConnection:
    """What a closed scheduler holds instead of the connection it gave back: every use raises."""

    closed = True

    def execute(self, *args: object, **kwargs: object) -> None:
        raise psycopg.OperationalError("the connection is closed")

    def transaction(self) -> None:
        raise psycopg.OperationalError("the connection is closed")

    def close(self) -> None:
        pass


_CLOSED = _ClosedConnection()


#: What a forked child inherited from its parent's pools: the parent's live sessions, on shared
#: sockets. The child must neither use them (two processes talking on one session) nor close
#: them (that would end the parent's session), so it only keeps them referenced.
_INHERITED: list[object] = []


def _forget_inherited_pools() -> None:
    global _POOL_LOCK
    _POOL_LOCK = threading.Lock()  # another thread of the parent may have held it at the fork
    _INHERITED.append(({k: list(v) for k, v in _IDLE.items()}, {k: list(v) for k, v in _POOL.items()}))
    _IDLE.clear()
    _POOL.clear()


def _release(dsn: str, conn: psycopg.Connection) -> None:
    """Give an idle, healthy connection back for reuse; close anything else."""
    if conn.closed:
        return
    if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        with _POOL_LOCK:
            idle = _IDLE.setdefault(dsn, [])
            if len(idle) < IDLE_MAX:
                idle.append(conn)
                return
    conn.close()


def ensure_schema(conn: psycopg.Connection, schema: str) -> None:
    """Create ``schema``'s tables and functions unless they exist (safe to race: one advisory lock).

    Raises:
        RuntimeError: the schema holds fencepost tables of another version.
    """
    quoted = sql.Identifier(schema).as_string(conn)
    create_key = int.from_bytes(hashlib.sha256(f"fencepost:{schema}".encode()).digest()[:8], "big", signed=True)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (create_key,))
        row = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL, to_regprocedure(%s) IS NOT NULL",
            (f"{quoted}.meta", f"{quoted}.fp_advance(bigint)"),
        ).fetchone()
        if row[0] and row[1]:
            version = conn.execute(sql.SQL("SELECT version FROM {}.meta").format(sql.Identifier(schema))).fetchone()
            if version and version[0] == SCHEMA_VERSION:
                return
            raise RuntimeError(f"schema {schema!r} holds fencepost tables of version {version}, this is {SCHEMA_VERSION}")
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        conn.execute(schema_ddl(quoted, lock_key(schema)).encode())


def lock_key(schema: str) -> int:
    """The first key (a signed 32-bit int) of ``schema``'s two advisory locks (see postgres_sql)."""
    return int.from_bytes(hashlib.sha256(f"fencepost-locks:{schema}".encode()).digest()[:4], "big", signed=True)


class PostgresScheduler:
    """The fencepost protocol over one PostgreSQL schema, safe to share between processes.

    Args:
        dsn: a libpq connection string or URL (``postgresql://user@host:5432/db``).
        schema: where the scheduler's tables live; created on first use.
            Every scheduler opened on the same ``dsn`` and ``schema`` sees and
            changes the same tasks.
        synchronous_commit: True (default): a call returns only once its
            commit is flushed to disk, so it survives a server crash. False:
            it returns once the commit is logged in memory; a server (not
            client) crash may then lose the last few returned calls, always
            a suffix of the order they took effect in, never half a call.
            A lost dispatch's token may then be issued again, so a worker
            still holding that lease could act on the new attempt: after a
            server crash, every lease held must be dropped by its worker.

    Raises:
        ValueError: ``dsn`` is not a str, or ``schema`` is not a plain lower-case name.
        psycopg.OperationalError: the server cannot be reached.

    Every protocol method raises ``ValueError`` for an invalid argument and
    then changes nothing. Each call is one round trip (see the module
    docstring for what waits for what). Costs inside the server: ``submit`` and
    ``add_worker`` O(log T); ``dispatch`` O(log T) plus the leases it
    expires; ``complete``/``fail``/``renew``/``cancel`` O(log T) plus expired
    leases; ``task`` and ``now`` O(log T), T the number of tasks. One object
    may be used from several threads (psycopg serialises its connection).
    """

    def __init__(self, dsn: str, *, schema: str = "fencepost", synchronous_commit: bool = True,
                 _owner: object = None, _connection: psycopg.Connection | None = None,
                 _schema_exists: bool = False) -> None:
        if not isinstance(dsn, str):
            raise ValueError(f"dsn must be a str: {dsn!r}")
        if not isinstance(synchronous_commit, bool):
            raise ValueError(f"synchronous_commit must be a bool: {synchronous_commit!r}")
        self.dsn = dsn
        self.schema = check_schema(schema)
        self.synchronous_commit = synchronous_commit
        self._conn = _connection or _connect(dsn)
        # ours: given back when this object is closed or goes (never closed under another's feet)
        self._release = weakref.finalize(self, _release, dsn, self._conn) if _connection is None else None
        # Set either way: a reused connection may come from a scheduler with the other setting.
        # Off: no call waits for the disk (see _END in impl/postgres_sql.py).
        self._conn.execute(f"SET synchronous_commit = {'on' if synchronous_commit else 'off'}")
        if _connection is None and not _schema_exists:
            ensure_schema(self._conn, schema)
        self._owner = _owner  # keeps a temporary schema alive while any scheduler over it is
        name = sql.Identifier(schema)
        self._q = {op: sql.SQL(text).format(name).as_string(self._conn) for op, text in _QUERIES.items()}

    # -------------------------------------------------------------- lifecycle

    def reopen(self) -> PostgresScheduler:
        """A new scheduler over the same schema on a new connection, as another process would see it."""
        return PostgresScheduler(self.dsn, schema=self.schema, synchronous_commit=self.synchronous_commit,
                                 _owner=self._owner, _schema_exists=True)

    def close(self) -> None:
        """Close this object's connection (the tasks stay in the database). Idempotent.

        Its session may be reused by a later scheduler in this process; it is closed at exit.
        """
        if self._release is not None:
            self._release()  # its session may serve another scheduler now: never touch it again
            self._conn = _CLOSED
        else:
            self._conn.close()

    def __enter__(self) -> PostgresScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresScheduler(schema={self.schema!r})"

    # -------------------------------------------------------------- reading

    @property
    def now(self) -> int:
        """The scheduler's clock: the latest ``now`` any client's valid timed call brought."""
        return self._conn.execute(self._q["now"]).fetchone()[1]

    def task(self, task_id: int) -> TaskView:
        """A detached view of one task; an unknown or forgotten id raises ValueError."""
        v.check_int("task_id", task_id)
        if task_id < 1:
            # ids start at 1: unknown without asking the server
            raise ValueError(f"task_id {task_id!r} is unknown: ids start at 1")
        if task_id > INT64_MAX:
            task_id = 0  # no such id: reported as unknown below
        row = self._conn.execute(self._q["task"], (task_id,)).fetchone()
        issued, found = row[0], row[1]
        if found is None:
            v.check_task_id(task_id, issued)  # raises, naming what ids exist
            raise v.forgotten_task(task_id)  # issued, and its row is gone: prune deleted it
        return TaskView(found, Status(row[2]), row[3], row[4], row[5], row[6], row[7], row[8], row[9])

    def snapshot(self) -> tuple[int, list[TaskView]]:
        """The clock and every task's view, from one statement (so one consistent moment). O(T)."""
        rows = self._conn.execute(self._q["snapshot"]).fetchall()
        now = rows[0][0]
        views = [TaskView(r[1], Status(r[2]), *r[3:]) for r in rows if r[1] is not None]
        return now, views

    # -------------------------------------------------------------- untimed

    def add_worker(self, worker: str, capacity: int) -> None:
        """Register ``worker`` with ``capacity`` >= 1 slots; a duplicate name raises."""
        v.check_new_worker(worker, capacity, ())
        self._call("add_worker", (worker, _fits("capacity", capacity)))

    def submit(self, priority: int = 0, due_at: int | None = None, max_attempts: int | None = None,
               retry_delay: int = 1, key: str | None = None) -> int:
        """Add a pending task and return its id (1, 2, 3... across all clients). Expires nothing.

        With a ``key`` already used by an earlier submit with the same other
        arguments as given (``due_at=None`` is not the same as an int), return
        that task's id and change nothing; with other arguments, raise
        ``ValueError`` naming the key. Keys are remembered for the schema's life.
        """
        v.check_submit(priority, due_at, max_attempts, retry_delay)
        v.check_key(key)
        _fits("priority", priority)
        if due_at is not None:
            _fits("due_at", due_at)
        if max_attempts is not None:
            _fits("max_attempts", max_attempts)
        _fits("retry_delay", retry_delay)
        return self._call("submit", (priority, due_at, max_attempts, retry_delay, key))[0]

    # -------------------------------------------------------------- timed

    def advance(self, now: int) -> None:
        """Move time to ``now``, expiring every lease with ``expires_at <= now``."""
        self._call("advance", (self._time(now),))

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """Lease the best eligible task (priority desc, due_at asc, id asc) to ``worker``.

        Returns None when the worker is full or nothing is due; that issues no token.
        """
        v.check_worker_name(worker)
        self._time(now)
        _fits("duration", v.check_min("duration", duration, 1))
        task_id, token = self._call("dispatch", (worker, now, duration))
        if task_id is None:
            return None
        return Lease(task_id, worker, token, now, now + duration)

    def complete(self, task_id: int, token: int, now: int) -> Outcome:
        """Accept completion from the current lease only: the task succeeds, its slot frees."""
        return self._outcome("complete", (self._task_id(task_id), self._token(token), self._time(now)))

    def fail(self, task_id: int, token: int, now: int) -> Outcome:
        """Accept an explicit failure from the current lease: retry with backoff, or end."""
        return self._outcome("fail", (self._task_id(task_id), self._token(token), self._time(now)))

    def cancel(self, task_id: int, now: int) -> Outcome:
        """Cancel a waiting task; mark a running one ``cancel_requested``; refuse a final one."""
        return self._outcome("cancel", (self._task_id(task_id), self._time(now)))

    def renew(self, task_id: int, token: int, now: int, duration: int) -> Outcome:
        """Set the current lease's end to ``now + duration``; refused after a cancel request."""
        args = (self._task_id(task_id), self._token(token), self._time(now))
        _fits("duration", v.check_min("duration", duration, 1))
        return self._outcome("renew", (*args, duration))

    def prune(self, before: int, now: int) -> int:
        """Forget every final task that ended at a time ``< before``, with its key; return how many.

        Timed (leases due at ``now`` expire first); ``before`` an int with
        ``0 <= before <= now``. One round trip: the rows are deleted in the
        call's one transaction (``fp_prune``); ids and tokens are counters
        apart from the rows, never reused. O(k log T) for the k rows deleted.
        """
        v.check_int("before", before)
        self._time(now)
        if not 0 <= before <= now:
            raise ValueError(f"before must be >= 0 and <= now: before={before!r}, now={now!r}")
        return self._call("prune", (before, now))[0]

    # -------------------------------------------------------------- internals

    @staticmethod
    def _time(now: object) -> int:
        v.check_int("now", now)
        if now < 0:
            raise ValueError(f"now must be >= 0: {now!r}")
        return _fits("now", now)

    @staticmethod
    def _task_id(task_id: object) -> int:
        v.check_int("task_id", task_id)
        if not INT64_MIN <= task_id <= INT64_MAX:
            return 0  # never issued: the server reports it as unknown
        return task_id

    @staticmethod
    def _token(token: object) -> int:
        return _token_arg(v.check_int("token", token))

    def _outcome(self, op: str, args: tuple) -> Outcome:
        accepted, reason = self._call(op, args)
        return Outcome(accepted, reason)

    def _call(self, op: str, args: tuple) -> tuple:
        """Run one protocol procedure: one statement, one round trip. Invalid input -> ValueError.

        A call that raised is settled before the error is raised (``fp_settle``): the
        refusal may rest on another call's change that is not yet on disk.
        """
        try:
            with self._invalid_as_value_error(op, args):
                cur = self._conn.execute(self._q[op], args)
                return cur.fetchone() if cur.description else ()
        except ValueError:
            self._conn.execute(self._q["settle"])
            raise

    @contextlib.contextmanager
    def _invalid_as_value_error(self, op: str, args: tuple) -> Iterator[None]:
        """Turn the functions' invalid-argument errors (and bigint overflow) into the protocol's ValueError."""
        try:
            yield
        except psycopg.Error as exc:
            if exc.sqlstate == INVALID_ARGUMENT_STATE:
                raise ValueError(exc.diag.message_primary) from None
            if exc.sqlstate == _OUT_OF_RANGE_STATE:
                raise ValueError(f"{op}: a value would leave the signed 64-bit range the scheduler stores: {args!r}") from None
            raise


#: One statement per protocol call; ``{}`` is the schema. The protocol calls are procedures
#: (CALL, with NULL for each OUT parameter) because one that holds a lock others queue on
#: commits twice: see ``_END`` in impl/postgres_sql.py. Reads settle first (``fp_settle``).
_QUERIES = {
    "now": "SELECT {0}.fp_settle(), now FROM {0}.meta",
    "task": "SELECT m.last_task, t.id, t.status, t.priority, t.due_at, t.attempts, t.worker, t.token,"
            " t.expires_at, t.cancel_requested, {0}.fp_settle() FROM {0}.meta m LEFT JOIN {0}.tasks t ON t.id = %s",
    "snapshot": "WITH settled AS MATERIALIZED (SELECT {0}.fp_settle())"
                " SELECT m.now, t.id, t.status, t.priority, t.due_at, t.attempts, t.worker, t.token,"
                " t.expires_at, t.cancel_requested FROM settled, {0}.meta m LEFT JOIN {0}.tasks t ON true ORDER BY t.id",
    "settle": "SELECT {0}.fp_settle()",
    "add_worker": "SELECT {0}.fp_add_worker(%s, %s)",
    "submit": "CALL {0}.fp_submit(%s, %s, %s, %s, %s, NULL)",
    "dispatch": "CALL {0}.fp_dispatch(%s, %s, %s, NULL, NULL)",
    "complete": "CALL {0}.fp_complete(%s, %s, %s, NULL, NULL)",
    "fail": "CALL {0}.fp_fail(%s, %s, %s, NULL, NULL)",
    "cancel": "CALL {0}.fp_cancel(%s, %s, NULL, NULL)",
    "renew": "CALL {0}.fp_renew(%s, %s, %s, %s, NULL, NULL)",
    "advance": "CALL {0}.fp_advance(%s)",
    "prune": "CALL {0}.fp_prune(%s, %s, NULL)",
}


# ---------------------------------------------------------------- the shared clock


class DatabaseClock:
    """One clock for every client of a schema, read from the database server.

    ``now`` is the number of ``tick_ns`` ticks since the schema was created,
    by the server's ``clock_timestamp()``, and never less than the
    scheduler's own clock, so it never goes backwards and never lags the
    scheduler. Every client reading it reads the same server clock, so
    clients on machines whose own clocks disagree still agree on time.

    What it cannot do: a value read is already old when it is used. If
    another client's call moves the scheduler's clock past it in between, the
    call made with it raises ``ValueError`` ("time can't go backwards") and
    changes nothing; read ``now`` again and retry.
    """

    def __init__(self, dsn: str, *, schema: str = "fencepost", tick_ns: int = 1_000_000) -> None:
        v.check_min("tick_ns", tick_ns, 1)
        self.schema = check_schema(schema)
        self.tick_ns = tick_ns
        self._conn = _connect(dsn)
        ensure_schema(self._conn, schema)
        self._query = sql.SQL(
            "SELECT greatest(now, floor(extract(epoch FROM clock_timestamp() - epoch) * 1e9 / %s)::bigint)"
            " FROM {}.meta"
        ).format(sql.Identifier(schema)).as_string(self._conn)
        self._lock = threading.Lock()

    @property
    def now(self) -> int:
        """The current tick (an int >= 0), one round trip to the server."""
        with self._lock:
            return self._conn.execute(self._query, (self.tick_ns,)).fetchone()[0]

    def subscribe(self, listener: object) -> None:
        """Nothing to do: no one moves this clock by hand (the runner's clock interface)."""

    def unsubscribe(self, listener: object) -> None:
        """Nothing to do (see ``subscribe``)."""

    def seconds_until(self, t: int) -> float:
        """Real seconds until ``now`` reaches ``t`` on its own (0.0 if it has). One round trip."""
        return max(0, t - self.now) * self.tick_ns / 1e9

    def close(self) -> None:
        self._conn.close()


# ---------------------------------------------------------------- temporary schemas
#
# A conformance check makes a fresh scheduler for every run, hundreds per
# check. A fresh schema on a fresh connection starts cold: the server compiles
# every PL/pgSQL function and plans every statement again for new tables, which
# costs more than the run itself. So a temporary schema whose schedulers are
# all gone goes back to a pool with its warm connection, emptied when it is
# next handed out; every pooled schema is dropped at exit.

#: dsn -> [(schema, its warm connection)] free for the next ``temporary()``.
_POOL: dict[str, list[tuple[str, psycopg.Connection]]] = {}

#: Empties a pooled schema: what a fresh one holds (time 0, no worker, task, token or key).
_RESET = (
    "DELETE FROM {0}.keys; DELETE FROM {0}.tasks; DELETE FROM {0}.workers;"
    " UPDATE {0}.meta SET now = 0, last_task = 0, epoch = clock_timestamp(); ALTER SEQUENCE {0}.tokens RESTART"
)


class _TemporarySchema:
    """Owns a throw-away schema: back to the pool when the last scheduler over it is gone."""

    def __init__(self, dsn: str, schema: str, conn: psycopg.Connection) -> None:
        weakref.finalize(self, _give_back, dsn, schema, conn)


#: Free schemas kept per server; one more is dropped instead (its connection closed), so a
#: program that makes many at once does not keep that many connections open.
POOL_MAX = 4


def _give_back(dsn: str, schema: str, conn: psycopg.Connection) -> None:
    with _POOL_LOCK:
        free = _POOL.setdefault(dsn, [])
        if len(free) < POOL_MAX:
            free.append((schema, conn))
            return
    conn.close()
    drop_schema(dsn, schema)


def _take(dsn: str) -> tuple[str, psycopg.Connection] | None:
    with _POOL_LOCK:
        free = _POOL.get(dsn)
        return free.pop() if free else None


@atexit.register  # registered at import, so it runs after weakref's finalizers have given schemas back
def _drop_pool() -> None:
    with _POOL_LOCK:
        pooled = [(dsn, schema, conn) for dsn, free in _POOL.items() for schema, conn in free]
        _POOL.clear()
        idle = [conn for conns in _IDLE.values() for conn in conns]
        _IDLE.clear()
    for conn in idle:
        conn.close()
    for dsn, schema, conn in pooled:
        if not conn.closed:
            conn.close()
        drop_schema(dsn, schema)


def drop_schema(dsn: str, schema: str) -> None:
    """Drop ``schema`` and everything in it; quiet if the server is gone (a temporary schema at exit)."""
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(check_schema(schema))))
    except psycopg.OperationalError:
        pass


def dsn_from_environment() -> str:
    """The DSN in ``FENCEPOST_PG_DSN``; RuntimeError naming the variable if it is unset."""
    dsn = os.environ.get(DSN_VARIABLE)
    if not dsn:
        raise RuntimeError(f"{DSN_VARIABLE} is not set: name a PostgreSQL server, e.g. postgresql://root@127.0.0.1:5432/test")
    return dsn


def temporary_schema_name(prefix: str = "fp_tmp") -> str:
    """A schema name no other client is using: prefix, process id and random hex."""
    return f"{prefix}_{os.getpid()}_{secrets.token_hex(6)}"


def temporary_scheduler(cls: type[PostgresScheduler] = PostgresScheduler, prefix: str = "fp_tmp") -> PostgresScheduler:
    """A ``cls`` over an empty temporary schema on ``$FENCEPOST_PG_DSN`` (pooled; dropped at exit)."""
    dsn = dsn_from_environment()
    try:
        return _temporary(cls, prefix, dsn)
    except (ValueError, psycopg.OperationalError) as exc:
        cause = exc.__cause__ if isinstance(exc.__cause__, psycopg.Error) else exc
        if not isinstance(cause, psycopg.Error):
            raise
        # said again under the variable's name: that is what the user set
        raise RuntimeError(connect_failure(DSN_VARIABLE, dsn, cause)) from None


def _temporary(cls: type[PostgresScheduler], prefix: str, dsn: str) -> PostgresScheduler:
    taken = _take(dsn)
    if taken is not None:
        schema, conn = taken
        if conn.closed:
            conn = _connect(dsn)
        conn.execute(sql.SQL(_RESET).format(sql.Identifier(schema)).as_string(conn).encode())
    else:
        schema, conn = temporary_schema_name(prefix), _connect(dsn)
        ensure_schema(conn, schema)
    return cls(dsn, schema=schema, _owner=_TemporarySchema(dsn, schema, conn), _connection=conn)


def temporary() -> PostgresScheduler:
    """A scheduler over an empty schema of its own on ``$FENCEPOST_PG_DSN``, dropped at exit.

    A zero-argument factory, so ``fencepost check impl.postgres:temporary`` works.
    Schedulers made by ``reopen()`` share the schema; once none is left, the
    schema may be emptied and handed to a later ``temporary()``.
    """
    return temporary_scheduler()


# ---------------------------------------------------------------- storage at a path, for ``fencepost crash``

#: Schemas made by ``opener`` start with this; each carries its path as the schema's comment.
OPENER_PREFIX = "fp_path_"


def opener(path: str) -> PostgresScheduler:
    """A scheduler over the schema that stands for ``path`` on ``$FENCEPOST_PG_DSN``.

    For ``fencepost crash impl.postgres:opener``, which names storage by
    filesystem paths: the same path always opens the same schema (named from
    a hash of the absolute path), in any process. The path itself is not
    written; the schema is dropped, by the next ``opener`` call or at exit of
    a process that called it, once the path's folder no longer exists.
    """
    dsn = dsn_from_environment()
    where = os.path.abspath(path)
    schema = OPENER_PREFIX + hashlib.sha256(where.encode()).hexdigest()[:32]
    conn = _connect(dsn)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (schema,))
        known = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    if known is None:
        ensure_schema(conn, schema)
        conn.execute(sql.SQL("COMMENT ON SCHEMA {} IS {}").format(sql.Identifier(schema), sql.Literal(where)))
        _forget_gone_paths(conn, keep=schema)
        _register_path_cleanup(dsn)
    return PostgresScheduler(dsn, schema=schema, _owner=None, _connection=conn)


def _forget_gone_paths(conn: psycopg.Connection, keep: str = "") -> None:
    """Drop every ``opener`` schema but ``keep`` whose path's folder is gone (on this machine)."""
    rows = conn.execute(
        "SELECT nspname, obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname LIKE %s",
        (OPENER_PREFIX + "%",),
    ).fetchall()
    for schema, where in rows:
        if schema != keep and where and not os.path.isdir(os.path.dirname(where)):
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


_PATH_CLEANUP: set[str] = set()


def _register_path_cleanup(dsn: str) -> None:
    if dsn not in _PATH_CLEANUP:
        _PATH_CLEANUP.add(dsn)
        atexit.register(_cleanup_paths, dsn)


def _cleanup_paths(dsn: str) -> None:
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
            _forget_gone_paths(conn)
    except psycopg.Error:
        pass


os.register_at_fork(after_in_child=_forget_inherited_pools)
