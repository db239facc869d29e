"""``PostgresScheduler``: the whole protocol over PostgreSQL, shared by many processes.

Any number of ``PostgresScheduler`` objects, in any number of processes on any
number of machines, may open the same ``schema`` of one database: together
they are one scheduler. Every call is one round trip: one ``CALL`` of a
PL/pgSQL procedure in ``impl/postgres/sql.py``, in autocommit mode, so a call
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
* Tokens come from a counter row, taken only by a dispatch that leases a task
  and undone with it: 1, 2, 3... as the model issues them, also after a crash
  of the database server or a dispatch whose connection was lost.

Limits: times, priorities, durations and the other int arguments are stored
as 64-bit integers; a value outside that range is refused with ``ValueError``.
Faults of the server (``impl/postgres/session.py``, docs/faults.md): a lost
connection is replaced, with jittered backoff and a bounded number of tries
(``reconnect``), or, given a ``Patience`` (``outlast``; a ``Runner`` gives one),
for as long as the outage lasts; a call that gets no answer within
``call_timeout`` seconds has its connection cut. A call whose answer was lost after it was sent is run
again when that is safe under the contract (reads, ``advance``, ``submit``
with a key) and otherwise raises ``OutcomeUnknown`` (``spec.protocol``): its
outcome is unknown, and the caller decides (docs/faults.md says how).

Requires the optional dependency ``psycopg`` (``pip install 'fencepost[postgres]'``).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import multiprocessing.util
import os
import re
import secrets
import threading
import weakref
from collections.abc import Iterator

import psycopg
from psycopg import sql

from fencepost.impl import kit as v
from fencepost.impl.kit.forks import INHERITED, inherited
from fencepost.impl.postgres.session import (
    DEFAULT_CALL_TIMEOUT,
    Effect,
    OutlastsOutages,
    Reconnect,
    Session,
    check_call_timeout,
    looks_dead,
)
from fencepost.impl.postgres.sql import INVALID_ARGUMENT_STATE, SCHEMA_VERSION, UPGRADES, schema_ddl
from fencepost.spec.protocol import INT_MAX, INT_MIN, Lease, Outcome, Status, TaskView

#: The environment variable naming the server that ``temporary()`` and the tests use.
DSN_VARIABLE = "FENCEPOST_PG_DSN"

#: A schema name: lower-case letters, digits and underscores, starting with a
#: letter or underscore, at most 63 bytes (PostgreSQL's identifier limit).
SCHEMA_PATTERN = re.compile(r"[a-z_][a-z0-9_]{0,62}")

#: Schema names PostgreSQL keeps for itself: ``pg_`` (its catalogs; it refuses to create one) and the SQL standard's.
RESERVED_SCHEMA = re.compile(r"pg_.*|information_schema")

#: The range a value must lie in to be stored (PostgreSQL ``bigint``).
INT64_MIN, INT64_MAX = INT_MIN, INT_MAX  # the contract's range: kit.check_int refuses any other int before a call gets here

#: SQLSTATE of PostgreSQL's "bigint out of range" (e.g. ``now + duration`` overflowing).
_OUT_OF_RANGE_STATE = "22003"


def check_schema(schema: object) -> str:
    """Return ``schema`` if it is a usable schema name, else raise ValueError."""
    if not isinstance(schema, str) or not SCHEMA_PATTERN.fullmatch(schema):
        raise ValueError(
            f"schema must be lower-case letters, digits and underscores, starting with a letter "
            f"or underscore, at most 63 characters: {schema!r}"
        )
    if RESERVED_SCHEMA.fullmatch(schema):
        raise ValueError(f"schema {schema!r} is reserved by PostgreSQL (names starting pg_, and information_schema): choose another")
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
    while True:
        with _POOL_LOCK:
            idle = _IDLE.get(dsn)
            conn = idle.pop() if idle else None
        if conn is None:
            return open_connection(dsn)
        if not looks_dead(conn):  # the server may have ended it while it sat idle (a restart, a reaper)
            return conn
        conn.close()


def open_connection(dsn: str, connect_timeout: int | None = None) -> psycopg.Connection:
    """A new autocommit connection to ``dsn`` with JIT compilation off (see ``_connect``).

    Raises:
        ValueError: ``dsn`` is not a PostgreSQL connection string or URL.
        psycopg.OperationalError: no server accepted the connection; the
            message is one line naming the dsn (its password hidden).
    """
    try:
        extra = {} if connect_timeout is None else {"connect_timeout": connect_timeout}
        conn = psycopg.connect(dsn, autocommit=True, **extra)
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


# A forked child inherits its parent's pools: the parent's live sessions, on shared sockets
# (``fencepost.impl.kit.forks``). A parent's scheduler or temporary schema freed by the child's
# garbage collector runs its finalizer (``_release_session``, ``_give_back``) in the child too, and
# would put the parent's session in the child's pool: both processes would then share it
# (psycopg's prepared statement names collide, ``DuplicatePreparedStatement``, and answers go to
# the wrong process).
def _forget_inherited_pools() -> None:
    global _POOL_LOCK
    _POOL_LOCK = threading.Lock()  # another thread of the parent may have held it at the fork
    INHERITED.append(({k: list(v) for k, v in _IDLE.items()}, {k: list(v) for k, v in _POOL.items()},
                      list(_LIVE)))
    _IDLE.clear()
    _POOL.clear()
    _LIVE.clear()


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
        RuntimeError: the schema holds fencepost tables of another version (but one of ``sql.UPGRADES``,
            which are upgraded in place, step by step, and get this version's functions), or
            tables (views, sequences) fencepost did not create: named, and nothing is changed.
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
            if version and version[0] in UPGRADES:
                for step in range(version[0], SCHEMA_VERSION):
                    if UPGRADES[step]:
                        conn.execute(UPGRADES[step].format(s=quoted).encode())
                conn.execute(schema_ddl(quoted, lock_key(schema)).encode())  # every function anew
                conn.execute(sql.SQL("UPDATE {}.meta SET version = %s").format(sql.Identifier(schema)), (SCHEMA_VERSION,))
                return
            raise RuntimeError(f"schema {schema!r} holds fencepost tables of version {version}, this is {SCHEMA_VERSION}")
        foreign = [name for (name,) in conn.execute(_FOREIGN_RELATIONS, (schema,)).fetchall()]
        if foreign:
            shown = ", ".join(foreign[:MAX_NAMED]) + (f" and {len(foreign) - MAX_NAMED} more" if len(foreign) > MAX_NAMED else "")
            raise RuntimeError(
                f"schema {schema!r} holds tables fencepost did not create ({shown}); nothing was changed: "
                "give fencepost a new or empty schema"
            )
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        conn.execute(schema_ddl(quoted, lock_key(schema)).encode())


#: Relations (tables, views, sequences, foreign tables) already in a schema that has no complete
#: fencepost scheduler: fencepost makes all of its own in one transaction, so any is someone else's.
_FOREIGN_RELATIONS = (
    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') ORDER BY c.relname"
)

#: How many foreign tables a refusal names before it says "and N more".
MAX_NAMED = 5


def lock_key(schema: str) -> int:
    """The first key (a signed 32-bit int) of ``schema``'s two advisory locks (see postgres_sql)."""
    return int.from_bytes(hashlib.sha256(f"fencepost-locks:{schema}".encode()).digest()[:4], "big", signed=True)


class PostgresScheduler(OutlastsOutages):
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
        reconnect: how a lost connection is replaced (``Reconnect``: tries,
            jittered backoff); ``Reconnect(attempts=0)`` never reconnects.
        call_timeout: seconds a call may wait for its answer before its
            connection is cut and the call counts as lost (None: no bound); also
            the session's ``statement_timeout``.

    Raises:
        ValueError: ``dsn`` is not a str, ``schema`` is not a plain lower-case
            name or is reserved (``pg_*``, ``information_schema``), or
            ``reconnect``/``call_timeout`` is out of range.
        RuntimeError: the schema holds tables fencepost did not create (named; nothing changed).
        psycopg.OperationalError: the server cannot be reached.

    Every protocol method raises ``ValueError`` for an invalid argument and
    then changes nothing. Each call is one round trip (see the module
    docstring for what waits for what). Costs inside the server: ``submit`` and
    ``add_worker`` O(log T); ``dispatch`` O(log T) plus the leases it
    expires; ``complete``/``fail``/``renew``/``cancel`` O(log T) plus expired
    leases; ``task`` and ``now`` O(log T), T the number of tasks. One object
    may be used from several threads (a lock serialises its calls).

    A call whose answer was lost raises ``OutcomeUnknown`` unless it is safe
    to run again (see the module docstring); a call that could not be sent,
    or only read, and could not reconnect raises ``psycopg.OperationalError``
    with one line naming the dsn (its password hidden).
    """

    def __init__(self, dsn: str, *, schema: str = "fencepost", synchronous_commit: bool = True,
                 reconnect: Reconnect | None = None, call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
                 _owner: object = None, _connection: psycopg.Connection | None = None,
                 _schema_exists: bool = False) -> None:
        if not isinstance(dsn, str):
            raise ValueError(f"dsn must be a str: {dsn!r}")
        if not isinstance(synchronous_commit, bool):
            raise ValueError(f"synchronous_commit must be a bool: {synchronous_commit!r}")
        reconnect = Reconnect() if reconnect is None else reconnect
        if not isinstance(reconnect, Reconnect):
            raise ValueError(f"reconnect must be a fencepost.impl.postgres.session.Reconnect: {reconnect!r}")
        self.dsn = dsn
        self.schema = check_schema(schema)
        self.synchronous_commit = synchronous_commit
        self.reconnect = reconnect
        self.call_timeout = check_call_timeout(call_timeout)
        conn = _connection or _connect(dsn)
        # Set on every connection, the first (reused or new) included: a reused one may come from a
        # scheduler with other settings. synchronous_commit off: no call waits for the disk (see _END
        # in impl/postgres/sql.py). The session adds statement_timeout to the same round trip.
        setup = f"SET synchronous_commit = {'on' if synchronous_commit else 'off'}"
        self._session = Session(f"PostgreSQL at dsn={redacted(dsn)!r}", lambda: open_connection(dsn, connect_timeout=reconnect.connect_timeout),
                                reconnect=reconnect, call_timeout=self.call_timeout, setup=setup, conn=conn)
        # ours: given back when this object is closed or goes (never closed under another's feet)
        self._release = (weakref.finalize(self, _release_session, dsn, self._session, os.getpid())
                         if _connection is None else None)
        if _connection is None and not _schema_exists:
            ensure_schema(conn, schema)
        self._owner = _owner  # keeps a temporary schema alive while any scheduler over it is
        name = sql.Identifier(schema)
        self._q = {op: sql.SQL(text).format(name).as_string(conn) for op, text in _QUERIES.items()}
        self._lock = threading.Lock()  # one call at a time on the session (a reconnect replaces its connection)

    # -------------------------------------------------------------- lifecycle

    def reopen(self) -> PostgresScheduler:
        """A new scheduler over the same schema on a new connection, as another process would see it."""
        return PostgresScheduler(self.dsn, schema=self.schema, synchronous_commit=self.synchronous_commit,
                                 reconnect=self.reconnect, call_timeout=self.call_timeout,
                                 _owner=self._owner, _schema_exists=True)

    def close(self) -> None:
        """Close this object's connection (the tasks stay in the database). Idempotent.

        Its session may be reused by a later scheduler in this process; it is closed at exit.
        """
        with self._lock:
            if self._release is not None:
                self._release()  # its session may serve another scheduler now: never touch it again
                self._session.conn = None
            self._session.close()

    @property
    def _conn(self) -> psycopg.Connection:
        """The session's live connection, for subclasses that run statements of their own
        (the deliberately broken writers of ``impl/postgres/broken.py``); no reconnect rides over them."""
        return self._session.connection()

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
        return self._run("now", None, _one, Effect.READ, {})[1]

    def task(self, task_id: int) -> TaskView:
        """A detached view of one task; an unknown or forgotten id raises ValueError."""
        v.check_int("task_id", task_id)
        if task_id < 1:
            # ids start at 1: unknown without asking the server
            raise ValueError(f"task_id {task_id!r} is unknown: ids start at 1")
        row = self._run("task", (task_id,), _one, Effect.READ, {"task_id": task_id})
        issued, found = row[0], row[1]
        if found is None:
            v.check_task_id(task_id, issued)  # raises, naming what ids exist
            raise v.forgotten_task(task_id)  # issued, and its row is gone: prune deleted it
        return TaskView(found, Status(row[2]), row[3], row[4], row[5], row[6], row[7], row[8], row[9])

    def snapshot(self) -> tuple[int, list[TaskView]]:
        """The clock and every task's view, from one statement (so one consistent moment). O(T)."""
        rows = self._run("snapshot", None, _all, Effect.READ, {})
        now = rows[0][0]
        views = [TaskView(r[1], Status(r[2]), *r[3:]) for r in rows if r[1] is not None]
        return now, views

    # -------------------------------------------------------------- untimed

    def add_worker(self, worker: str, capacity: int) -> None:
        """Register ``worker`` with ``capacity`` >= 1 slots; a duplicate name raises."""
        v.check_new_worker(worker, capacity, ())
        self._call("add_worker", (worker, _fits("capacity", capacity)), Effect.ONCE, dict(worker=worker, capacity=capacity))

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
        named = dict(priority=priority, due_at=due_at, max_attempts=max_attempts, retry_delay=retry_delay, key=key)
        # with a key, a second run returns the first one's id (or makes the task the first did not)
        effect = Effect.ONCE if key is None else Effect.REPEATABLE
        return self._call("submit", (priority, due_at, max_attempts, retry_delay, key), effect, named)[0]

    # -------------------------------------------------------------- timed

    def advance(self, now: int) -> None:
        """Move time to ``now``, expiring every lease with ``expires_at <= now``."""
        # a second run is harmless (the clock is there already); only its "backwards" refusal would be wrong
        self._call("advance", (self._time(now),), Effect.REPEATABLE, {"now": now}, refused_again_is_unknown=True)

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """Lease the best eligible task (priority desc, due_at asc, id asc) to ``worker``.

        Returns None when the worker is full or nothing is due; that issues no token.
        """
        v.check_dispatch(worker, now, duration, current=None, fits=_fits)  # the server keeps the clock and the workers
        task_id, token = self._call("dispatch", (worker, now, duration), Effect.ONCE,
                                    dict(worker=worker, now=now, duration=duration))
        if task_id is None:
            return None
        return Lease(task_id, worker, token, now, now + duration)

    def complete(self, task_id: int, token: int, now: int) -> Outcome:
        """Accept completion from the current lease only: the task succeeds, its slot frees."""
        args = (self._task_id(task_id), self._token(token), self._time(now))
        return self._outcome("complete", args, dict(task_id=task_id, token=token, now=now))

    def fail(self, task_id: int, token: int, now: int) -> Outcome:
        """Accept an explicit failure from the current lease: retry with backoff, or end."""
        args = (self._task_id(task_id), self._token(token), self._time(now))
        return self._outcome("fail", args, dict(task_id=task_id, token=token, now=now))

    def cancel(self, task_id: int, now: int) -> Outcome:
        """Cancel a waiting task; mark a running one ``cancel_requested``; refuse a final one."""
        return self._outcome("cancel", (self._task_id(task_id), self._time(now)), dict(task_id=task_id, now=now))

    def renew(self, task_id: int, token: int, now: int, duration: int) -> Outcome:
        """Set the current lease's end to ``now + duration``; refused after a cancel request."""
        args = (self._task_id(task_id), self._token(token), self._time(now))
        v.check_min("duration", duration, 1)
        v.check_lease_end(now, duration)
        return self._outcome("renew", (*args, duration), dict(task_id=task_id, token=token, now=now, duration=duration))

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
        return self._call("prune", (before, now), Effect.ONCE, {"before": before, "now": now})[0]

    # -------------------------------------------------------------- batches

    def submit_many(self, tasks: list[dict]) -> list[int]:
        """``submit(**entry)`` for each entry of ``tasks`` in order, all or nothing; the ids.

        One round trip and one commit for the whole batch (``fp_submit_many``).

        Raises:
            ValueError: ``tasks`` is not a list of dicts of ``submit``'s keyword
                arguments, or any entry is an invalid submit (named by its
                index, a key conflict included); nothing is submitted.
        """
        entries = v.check_submit_entries(tasks, None, 0)
        columns: tuple[list, ...] = ([], [], [], [], [])
        for number, entry in enumerate(entries):
            row = (entry.get("priority", 0), entry.get("due_at"), entry.get("max_attempts"),
                   entry.get("retry_delay", 1), entry.get("key"))
            try:
                for name, value in zip(v.SUBMIT_ARGUMENTS[:4], row):
                    if value is not None:
                        _fits(name, value)
            except ValueError as exc:
                raise v.entry_error("tasks", number, exc) from None
            for column, value in zip(columns, row):
                column.append(value)
        if not entries:
            return []
        keys = columns[4] if any(key is not None for key in columns[4]) else None
        return list(self._call("submit_many", (*columns[:4], keys), Effect.ONCE, {"tasks": tasks})[0])

    def dispatch_many(self, worker: str, now: int, duration: int, limit: int) -> list[Lease]:
        """Up to ``limit`` dispatches of ``worker`` at ``now``, stopping at the first that leases nothing.

        One round trip and one commit (``fp_dispatch_many``): the single
        dispatch's locks, then the best due tasks claimed together with
        ``SKIP LOCKED``, as many as ``limit`` and the worker's free slots
        allow, with tokens in dispatch order.

        Raises:
            ValueError: as ``dispatch``, or ``limit`` not an int >= 1; nothing changes.
        """
        v.check_dispatch(worker, now, duration, current=None, fits=_fits)  # the server keeps the clock and the workers
        _fits("limit", v.check_min("limit", limit, 1))
        tasks, tokens = self._call("dispatch_many", (worker, now, duration, limit), Effect.ONCE,
                                   {"worker": worker, "now": now, "duration": duration, "limit": limit})
        expires_at = now + duration
        return [Lease(task_id, worker, token, now, expires_at) for task_id, token in zip(tasks, tokens)]

    def complete_many(self, reports: list, now: int) -> list[Outcome]:
        """``complete(task_id, token, now)`` for each ``(task_id, token)`` pair in order; the outcomes.

        One round trip and one commit (``fp_complete_many``); every report is
        fenced by its token and the expiry in the ``UPDATE``, as ``complete`` is.

        Raises:
            ValueError: ``reports`` is not a list of pairs, an id is unknown, a
                token is not an int, or ``now`` is bad; nothing changes.
        """
        return self._reports_batch("complete_many", reports, now)

    def fail_many(self, reports: list, now: int) -> list[Outcome]:
        """``fail(task_id, token, now)`` for each ``(task_id, token)`` pair in order; the outcomes.

        Raises: as ``complete_many``.
        """
        return self._reports_batch("fail_many", reports, now)

    def _reports_batch(self, op: str, reports: object, now: object) -> list[Outcome]:
        ids, tokens = [], []
        for number, pair in enumerate(v.check_list("reports", reports)):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise ValueError(f"reports[{number}] must be a (task_id, token) pair, not {pair!r}")
            try:
                task_id = self._task_id(pair[0])
                if task_id < 1:
                    raise ValueError(f"task_id {task_id!r} is unknown: ids start at 1")
                ids.append(task_id)
                tokens.append(self._token(pair[1]))
            except ValueError as exc:
                raise v.entry_error("reports", number, exc) from None
        accepted, reasons = self._call(op, (ids, tokens, self._time(now)), Effect.ONCE, {"reports": reports, "now": now})
        return [Outcome(a, r) for a, r in zip(accepted, reasons)]

    # -------------------------------------------------------------- internals

    @staticmethod
    def _time(now: object) -> int:
        return _fits("now", v.check_time(None, now))  # the server refuses a time going backwards

    @staticmethod
    def _task_id(task_id: object) -> int:
        v.check_int("task_id", task_id)
        if not INT64_MIN <= task_id <= INT64_MAX:
            return 0  # never issued: the server reports it as unknown
        return task_id

    @staticmethod
    def _token(token: object) -> int:
        return _token_arg(v.check_int("token", token))

    def _outcome(self, op: str, args: tuple, named: dict) -> Outcome:
        # complete, fail, cancel, renew: never run twice blindly (a second answer could contradict the first)
        accepted, reason = self._call(op, args, Effect.ONCE, named)
        return Outcome(accepted, reason)

    def _run(self, op: str, args: tuple | None, fetch, effect: Effect, named: dict, refused_again_is_unknown: bool = False):
        """One statement through the session (reconnecting as it says), one call at a time."""
        with self._lock:
            return self._session.run(self._q[op], args, fetch, effect, op, named,
                                     refused_again_is_unknown=_is_invalid if refused_again_is_unknown else None)

    def _call(self, op: str, args: tuple, effect: Effect, named: dict, refused_again_is_unknown: bool = False) -> tuple:
        """Run one protocol procedure: one statement, one round trip. Invalid input -> ValueError.

        A call that raised is settled before the error is raised (``fp_settle``, a
        second round trip): the refusal may rest on another call's change that is
        not yet on disk.
        """
        try:
            return self._run(op, args, _row_or_empty, effect, named, refused_again_is_unknown)
        except psycopg.Error as exc:
            refusal = _refusal(op, args, exc)
            if refusal is None:
                raise
        self._run("settle", None, _nothing, Effect.READ, {})
        raise refusal

    @contextlib.contextmanager
    def _invalid_as_value_error(self, op: str, args: tuple) -> Iterator[None]:
        """Turn the functions' invalid-argument errors (and bigint overflow) into the protocol's ValueError."""
        try:
            yield
        except psycopg.Error as exc:
            refusal = _refusal(op, args, exc)
            if refusal is None:
                raise
            raise refusal from None


def _refusal(op: str, args: tuple, exc: psycopg.Error) -> ValueError | None:
    """The protocol's ValueError for a function's invalid-argument error (or bigint overflow), else None."""
    if exc.sqlstate == INVALID_ARGUMENT_STATE:
        return ValueError(exc.diag.message_primary)
    if exc.sqlstate == _OUT_OF_RANGE_STATE:  # every argument is in range: only a retry time can leave it
        return ValueError(f"{op}: the retry time now + retry_delay * 2 ** (attempts - 1) would be after the "
                          f"latest time {INT_MAX}: {args!r}")
    return None


def _one(cur: psycopg.Cursor) -> tuple:
    return cur.fetchone()


def _all(cur: psycopg.Cursor) -> list:
    return cur.fetchall()


def _row_or_empty(cur: psycopg.Cursor) -> tuple:
    return cur.fetchone() if cur.pgresult.nfields else ()  # not description: it builds a Column per field


def _nothing(cur: psycopg.Cursor) -> None:
    return None


def _is_invalid(exc: Exception) -> bool:
    return isinstance(exc, psycopg.Error) and exc.sqlstate == INVALID_ARGUMENT_STATE


def _release_session(dsn: str, session: Session, made_in: int) -> None:
    """A scheduler's finalizer: its session's connection back to the idle pool, in the process that made it only."""
    if inherited(made_in, session):
        return
    if session.conn is not None and not session.closed:
        _release(dsn, session.conn)


#: One statement per protocol call; ``{}`` is the schema. The protocol calls are procedures
#: (CALL, with NULL for each OUT parameter) because one that holds a lock others queue on
#: commits twice: see ``_END`` in impl/postgres/sql.py. Reads settle first (``fp_settle``).
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
    "submit_many": "CALL {0}.fp_submit_many(%s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[], %s::text[], NULL)",
    "dispatch_many": "CALL {0}.fp_dispatch_many(%s, %s, %s, %s, NULL, NULL)",
    "complete_many": "CALL {0}.fp_complete_many(%s::bigint[], %s::bigint[], %s, NULL, NULL)",
    "fail_many": "CALL {0}.fp_fail_many(%s::bigint[], %s::bigint[], %s, NULL, NULL)",
}


# ---------------------------------------------------------------- the shared clock


class DatabaseClock(OutlastsOutages):
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

    A lost connection is replaced as the scheduler's is (``reconnect``,
    ``call_timeout``; reading the clock is safe to repeat), so a runner on it
    rides through a server restart; giving up raises ``psycopg.OperationalError``.
    """

    def __init__(self, dsn: str, *, schema: str = "fencepost", tick_ns: int = 1_000_000,
                 reconnect: Reconnect | None = None, call_timeout: float | None = DEFAULT_CALL_TIMEOUT) -> None:
        v.check_min("tick_ns", tick_ns, 1)
        self.schema = check_schema(schema)
        self.tick_ns = tick_ns
        reconnect = Reconnect() if reconnect is None else reconnect
        call_timeout = check_call_timeout(call_timeout)
        conn = _connect(dsn)
        ensure_schema(conn, schema)
        self._query = sql.SQL(
            "SELECT greatest(now, floor(extract(epoch FROM clock_timestamp() - epoch) * 1e9 / %s)::bigint)"
            " FROM {}.meta"
        ).format(sql.Identifier(schema)).as_string(conn)
        self._session = Session(f"PostgreSQL at dsn={redacted(dsn)!r}",
                                lambda: open_connection(dsn, connect_timeout=reconnect.connect_timeout),
                                reconnect=reconnect, call_timeout=call_timeout, conn=conn)
        self._lock = threading.Lock()

    @property
    def now(self) -> int:
        """The current tick (an int >= 0), one round trip to the server."""
        with self._lock:
            return self._session.run(self._query, (self.tick_ns,), _first, Effect.READ, "clock.now", {})

    def subscribe(self, listener: object) -> None:
        """Nothing to do: no one moves this clock by hand (the runner's clock interface)."""

    def unsubscribe(self, listener: object) -> None:
        """Nothing to do (see ``subscribe``)."""

    def seconds_until(self, t: int) -> float:
        """Real seconds until ``now`` reaches ``t`` on its own (0.0 if it has). One round trip."""
        return max(0, t - self.now) * self.tick_ns / 1e9

    def close(self) -> None:
        with self._lock:
            self._session.close()


def _first(cur: psycopg.Cursor) -> int:
    return cur.fetchone()[0]


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
    " UPDATE {0}.meta SET now = 0, last_task = 0, epoch = clock_timestamp(); UPDATE {0}.issued SET last_token = 0; ALTER SEQUENCE {0}.tokens RESTART"
)


#: This process's temporary schemas still in use; each is given back at the process's exit before
#: the pool is dropped, so a schema in use at exit is dropped too.
_LIVE: weakref.WeakSet = weakref.WeakSet()

#: Where this module's exit hook runs among ``multiprocessing.util.Finalize``'s in a child (higher
#: first): after the hooks of the code that uses the schedulers, which may still use them.
EXIT_PRIORITY = 0


class _TemporarySchema:
    """Owns a throw-away schema: back to the pool when the last scheduler over it is gone."""

    def __init__(self, dsn: str, schema: str, conn: psycopg.Connection) -> None:
        self.give_back = weakref.finalize(self, _give_back, dsn, schema, conn, os.getpid())  # at most once
        _LIVE.add(self)


#: Free schemas kept per server; one more is dropped instead (its connection closed), so a
#: program that makes many at once does not keep that many connections open.
POOL_MAX = 4


def _give_back(dsn: str, schema: str, conn: psycopg.Connection, made_in: int) -> None:
    if inherited(made_in, schema, conn):  # a forked child neither reuses nor drops its parent's schema
        return
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


#: The process whose exit hook ``_end_of_process`` is registered (a forked child registers its own).
_HOOKED_IN = 0


def _hook_the_exit() -> None:
    """Register ``_end_of_process`` for this process's exit, once per process.

    A child of ``multiprocessing`` (the shards of ``fencepost check --jobs``) ends with
    ``os._exit``: neither ``atexit`` nor weakref's exit finalizers run there, so the schemas it
    made would outlive it on the server. ``multiprocessing.util.Finalize`` is the exit hook
    such a child runs; it clears the hooks it inherited at its start, so the hook is registered
    when the process makes its first temporary schema, not at the fork. (In any other process
    the hook runs at exit through ``atexit``: harmless beside ``_drop_pool``.)
    """
    global _HOOKED_IN
    if _HOOKED_IN != os.getpid():
        _HOOKED_IN = os.getpid()
        multiprocessing.util.Finalize(None, _end_of_process, exitpriority=EXIT_PRIORITY)


def _end_of_process() -> None:
    """Give back every temporary schema this process still uses, then drop the pool (a child's exit)."""
    for owner in list(_LIVE):
        owner.give_back()
    _drop_pool()


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
        if looks_dead(conn):  # ended while pooled: the schema is still there, on the server
            conn.close()
            conn = _connect(dsn)
        conn.execute(sql.SQL(_RESET).format(sql.Identifier(schema)).as_string(conn).encode())
    else:
        schema, conn = temporary_schema_name(prefix), _connect(dsn)
        ensure_schema(conn, schema)
    _hook_the_exit()
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
