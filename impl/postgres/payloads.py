"""What a task runs, stored beside a shared PostgreSQL schema, so any runner process can run any task.

The protocol has no payload: a task is an id, a priority and a due time. A
``Runner`` alone keeps each task's function in its own memory; runners in many
processes sharing one schema cannot, since ``dispatch`` hands any process any
task. So a runner on a shared schema writes the task's payload first, under a
fresh idempotency key, and then submits with that key:

    payloads(key text primary key, function text, args jsonb)   -- this module's table
    keys(key text primary key, task_id bigint, ...)              -- the scheduler's (impl/postgres/sql.py)

Whoever dispatches the task finds its payload by ``keys.task_id -> keys.key ->
payloads.key``. The payload is committed before the submit starts, so every
dispatcher finds it; a submit the scheduler refuses (``ValueError``) has its
payload deleted again, so a refused submit leaves nothing behind. A process
that dies between the two writes leaves a payload no task points to: never
read, harmless (``orphans()`` counts them).

A payload names a function (a key of the runner's ``functions`` registry) and
JSON arguments; nothing is unpickled, so whoever can write this table can
choose which registered function runs with which JSON arguments, but cannot
run code of their own.

Every method is one statement in its own transaction (autocommit), on this
object's own connection; one object may be used from several threads (a lock
serialises them). A lost connection is replaced as the scheduler's is
(``impl/postgres/session.py``): every statement here is safe to run twice
(``put`` keeps a key's first payload, ``forget`` of a gone key does nothing, the
rest read), so a lost answer is asked for again; a repeated ``put`` answers
False, so a submit refused after one may leave an orphan payload behind. ``for_task`` uses an index this module adds on
``keys(task_id)``, ``stamp`` the tasks' primary key: each costs O(log T) for T tasks. A payload goes
with its key when the scheduler forgets the key (``prune``), by a trigger on ``keys``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass

import psycopg
from psycopg import sql

from fencepost.impl.postgres.scheduler import check_schema, ensure_schema, open_connection, redacted
from fencepost.impl.postgres.session import DEFAULT_CALL_TIMEOUT, Effect, OutlastsOutages, Reconnect, Session, check_call_timeout

#: The payload table and the lookup index, created if missing (``{0}`` is the quoted schema).
#: The index on the scheduler's ``keys(task_id)`` makes "which key made task N" O(log T);
#: the scheduler itself only ever looks keys up by key.
PAYLOADS_DDL = """
CREATE TABLE IF NOT EXISTS {0}.payloads (
    key text PRIMARY KEY,
    function text NOT NULL,
    args jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS payloads_keys_task_id ON {0}.keys (task_id);
-- A key the scheduler forgets (prune forgets a final task with its key) takes its payload with
-- it, in the same transaction: nothing will run it again, and a shared runner's table stays bounded.
CREATE OR REPLACE FUNCTION {0}.fp_forget_payloads() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {0}.payloads p USING gone g WHERE p.key = g.key;
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER keys_forget_payloads AFTER DELETE ON {0}.keys
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION {0}.fp_forget_payloads();
"""

#: One statement per operation; ``{0}`` is the quoted schema.
_QUERIES = {
    "put": "INSERT INTO {0}.payloads (key, function, args) VALUES (%s, %s, %s) ON CONFLICT (key) DO NOTHING",
    "forget": "DELETE FROM {0}.payloads WHERE key = %s",
    # the task's current attempt count comes along, so the runner numbers attempts across processes
    "for_task": "SELECT p.function, p.args, t.attempts FROM {0}.keys k JOIN {0}.payloads p ON p.key = k.key"
                " LEFT JOIN {0}.tasks t ON t.id = k.task_id WHERE k.task_id = %s",
    # for_task of many tasks at once (a batched claim's leases): the same rows, one statement
    "for_tasks": "SELECT k.task_id, p.function, p.args, t.attempts FROM {0}.keys k JOIN {0}.payloads p ON p.key = k.key"
                 " LEFT JOIN {0}.tasks t ON t.id = k.task_id WHERE k.task_id = ANY(%s)",
    # the id counter, not max(id): prune deletes rows, the counter never goes back
    "stamp": "SELECT now, last_task FROM {0}.meta",
    "orphans": "SELECT count(*) FROM {0}.payloads p WHERE NOT EXISTS (SELECT 1 FROM {0}.keys k WHERE k.key = p.key)",
}


@dataclass(frozen=True)
class Payload:
    """What a task runs, and how often it has been dispatched (``attempts``, as the scheduler counts).

    The runner calls ``functions[function](*args, ctx, **kwargs)``: as the submitted partial is called.
    """

    function: str
    args: list
    kwargs: dict
    attempts: int


def _payload(function: str, data: dict, attempts: int | None) -> Payload:
    """A payload row (function, JSON arguments, the task's attempt count) as a ``Payload``."""
    return Payload(function, list(data.get("args", [])), dict(data.get("kwargs", {})), attempts or 0)


class PostgresPayloads(OutlastsOutages):
    """The payload side table of one schema, for runners sharing that schema.

    Args:
        dsn: the libpq connection string of the scheduler's database.
        schema: the scheduler's schema; its tables are created if missing, and
            ``payloads`` (with the ``keys(task_id)`` index) beside them.

    Raises:
        ValueError: ``dsn`` is not a str or ``schema`` is not a plain lower-case name.
        psycopg.OperationalError: the server cannot be reached.
    """

    def __init__(self, dsn: str, *, schema: str = "fencepost", reconnect: Reconnect | None = None,
                 call_timeout: float | None = DEFAULT_CALL_TIMEOUT) -> None:
        if not isinstance(dsn, str):
            raise ValueError(f"dsn must be a str: {dsn!r}")
        self.schema = check_schema(schema)
        reconnect = Reconnect() if reconnect is None else reconnect
        call_timeout = check_call_timeout(call_timeout)
        conn = open_connection(dsn)  # its own: payloads are always written synchronously
        ensure_schema(conn, schema)
        quoted = sql.Identifier(schema).as_string(conn)
        # CREATE ... IF NOT EXISTS races with itself (a duplicate catalog row): one advisory lock per schema
        lock_key = int.from_bytes(hashlib.sha256(f"fencepost-payloads:{schema}".encode()).digest()[:8], "big", signed=True)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key,))
            conn.execute(PAYLOADS_DDL.format(quoted).encode())
        self._session = Session(
            f"PostgreSQL at dsn={redacted(dsn)!r}", lambda: open_connection(dsn, connect_timeout=reconnect.connect_timeout),
            reconnect=reconnect, call_timeout=call_timeout, conn=conn)  # the session sets statement_timeout
        self._q = {op: text.format(quoted) for op, text in _QUERIES.items()}
        self._lock = threading.Lock()  # one statement at a time on the connection

    @property
    def _conn(self) -> psycopg.Connection:
        """The session's live connection, for a caller's own statements (tests look at the table)."""
        return self._session.connection()

    def _run(self, op: str, args: tuple | None, fetch, effect: Effect = Effect.READ) -> object:
        with self._lock:
            return self._session.run(self._q[op], args, fetch, effect, f"payloads.{op}", {})

    def put(self, key: str, function: str, args: list, kwargs: dict) -> bool:
        """Store the payload under ``key`` unless one is there; True if this call wrote it.

        ``args`` and ``kwargs`` must be JSON (the runner checks that they come
        back unchanged). A key that already has a payload keeps its first one.
        """
        data = json.dumps({"args": args, "kwargs": kwargs}, allow_nan=False)
        return self._run("put", (key, function, data), lambda cur: cur.rowcount == 1, Effect.REPEATABLE)

    def forget(self, key: str) -> None:
        """Delete the payload under ``key`` (a submit that wrote it was refused). Unknown keys are ignored."""
        self._run("forget", (key,), lambda cur: None, Effect.REPEATABLE)

    def for_task(self, task_id: int) -> Payload | None:
        """The payload of the task the scheduler made under its key, or None (no key, or no payload)."""
        row = self._run("for_task", (task_id,), lambda cur: cur.fetchone())
        return None if row is None else _payload(*row)

    def for_tasks(self, task_ids: list[int]) -> dict[int, Payload | None]:
        """``for_task`` of each id, in one statement: every id of ``task_ids`` maps to its payload or None.

        O(k log T) for k ids (the same index as ``for_task``).
        """
        rows = self._run("for_tasks", (list(task_ids),), lambda cur: cur.fetchall())
        found = {task_id: _payload(*rest) for task_id, *rest in rows}
        return {task_id: found.get(task_id) for task_id in task_ids}

    def stamp(self) -> tuple[int, int]:
        """(the scheduler's clock, the highest task id): when it changes, work may have become eligible.

        Time moving (any client's timed call) expires leases and brings due
        tasks and retries in; a new id is a new task. Nothing else a client
        does makes a task eligible. One statement, O(1) (the ``meta`` row's counter).
        """
        now, last = self._run("stamp", None, lambda cur: cur.fetchone())
        return now, last

    def orphans(self) -> int:
        """Payloads no task points to (a process died between writing one and submitting). O(P)."""
        return self._run("orphans", None, lambda cur: cur.fetchone()[0])

    def close(self) -> None:
        """Close this object's connection (the payloads stay). Idempotent."""
        with self._lock:
            self._session.close()

    def __enter__(self) -> PostgresPayloads:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresPayloads(schema={self.schema!r})"
