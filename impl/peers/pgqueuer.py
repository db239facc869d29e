"""pgqueuer (a PostgreSQL job queue) behind the protocol, through its public ``Queries`` API.

Factory: ``queue``. It needs a PostgreSQL server: ``FENCEPOST_PG_DSN`` (as the
PostgreSQL scheduler's tests), else ``postgresql://root@127.0.0.1:5432/test``.
pgqueuer's objects live in the schema ``fp_peers_pgq_<pid>`` with names
prefixed ``fp_peers_``, one schema per process (so concurrent test runs never
drop each other's), installed once (``install()``) and dropped by
``uninstall()``, which runs at exit;
each scheduler is its own entrypoint there, so schedulers never see each
other's jobs. A task is one job; the task ids 1, 2, 3... map to job ids.

=============  ==========================================================================
protocol       pgqueuer call
=============  ==========================================================================
submit         ``enqueue(entrypoint, payload, priority, execute_after)``
dispatch       ``dequeue(batch_size=1, queue_manager_id=<the worker's id>,
               global_concurrency_limit=<its capacity>, heartbeat_timeout=DURATION)``;
               the token is the job id
complete       ``log_jobs([(job, "successful", None)])``
renew          ``update_heartbeat([job id])``
=============  ==========================================================================

What pgqueuer offers, and so what ``queue`` declares: jobs are picked by
priority, then id (``order=priority-id``: the due time breaks no tie); a job
is eligible once ``execute_after < NOW()``, strictly (``due=after``); a
picked job is taken back once ``heartbeat < NOW() - heartbeat_timeout``, where
the timeout is the DEQUEUER's argument, not the holder's lease, so every lease
has one length (``duration=DURATION``) and is live through exactly its end
(``interval=closed``); a worker is a queue manager id with a
``global_concurrency_limit`` (``capacity=per-worker``). No per-job view of the
holder or expiry (``views=none``); cancellation deletes a picked job at once
(not the contract's cooperative cancel), failure and retry belong to its
executors, dedupe keys refuse a duplicate only while the first is queued: so
no ``cancel``, ``fail``, ``keys`` or ``max_attempts`` here.

The token is the job id, since that is what ``log_jobs`` and
``update_heartbeat`` take: the same at every pick, and neither call checks
who holds the job. A lease's token is therefore never fresh, and a worker
whose heartbeat lapsed completes (deletes) the job under its new holder: no
declared variant excuses that.

Logical time: pgqueuer computes every timestamp with ``NOW()`` in its SQL.
The adapter creates ``fp_peers_clock_<pid>.now()``, returning the session setting
``fp_peers.now`` as a timestamp, and puts that schema before
``pg_catalog`` in each connection's ``search_path`` (PostgreSQL resolves an
unqualified ``now()`` through the path when ``pg_catalog`` is named in it), also
while installing, so pgqueuer's column defaults use it too. Before each call
the adapter sets ``fp_peers.now`` to ``EPOCH_SECONDS + now``.

No private state is read. pgqueuer's API is asyncio; each client runs its
calls on its own event loop and connection.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import os
import threading
import uuid
import weakref
from datetime import timedelta

from fencepost.impl.kit import (
    ACCEPTED, EPOCH_SECONDS, Lease, Outcome, check_dispatch, check_fits, check_min, check_new_worker, check_submit,
    check_task_id, check_time, check_token, declare, inherited, not_offered,
)

#: The server used when ``FENCEPOST_PG_DSN`` is not set: the one CI starts.
DEFAULT_DSN = "postgresql://root@127.0.0.1:5432/test"
#: The schema holding pgqueuer's tables, and the prefix of their names.
SCHEMA = f"fp_peers_pgq_{os.getpid()}"
PREFIX = "fp_peers_"
#: The schema of the logical ``now()``, searched before ``pg_catalog``.
CLOCK_SCHEMA = f"fp_peers_clock_{os.getpid()}"
#: The one lease length: pgqueuer's ``heartbeat_timeout``, in seconds of logical time.
DURATION = 5
#: Why a report is refused when its token is not this task's job id.
NOT_THIS_JOB = "not_this_tasks_job_id"

_SEARCH_PATH = f"{CLOCK_SCHEMA}, {SCHEMA}, pg_catalog, public"
_QUEUE_TABLE = f"{SCHEMA}.{PREFIX}pgqueuer"
_CLOCK_FUNCTION = f"""
CREATE SCHEMA IF NOT EXISTS {CLOCK_SCHEMA};
CREATE OR REPLACE FUNCTION {CLOCK_SCHEMA}.now() RETURNS timestamptz
    LANGUAGE sql STABLE
    AS $$ SELECT pg_catalog.to_timestamp(pg_catalog.current_setting('fp_peers.now')::bigint) $$;
"""
_ENTRYPOINTS = itertools.count(1)
_INSTALL_LOCK = threading.Lock()
_INSTALLED: dict[str, bool] = {}  # dsn -> installed by this process
# A forked child did not install anything: its copy of the table must not make its exit drop
# the parent's schema (``uninstall`` runs at exit).
os.register_at_fork(after_in_child=_INSTALLED.clear)


def dsn() -> str:
    return os.environ.get("FENCEPOST_PG_DSN") or DEFAULT_DSN


def _settings() -> object:
    from pgqueuer.domain.settings import DBSettings

    return DBSettings(prefix=PREFIX, db_schema=SCHEMA)


def _queries(driver: object) -> object:
    from pgqueuer.adapters.persistence import qb
    from pgqueuer.adapters.persistence.queries import Queries

    settings = _settings()
    return Queries(driver, qbe=qb.QueryBuilderEnvironment(settings), qbq=qb.QueryQueueBuilder(settings))


class _Scheduler:
    """What the clients of one scheduler share: the clock, the task map, the workers."""

    def __init__(self) -> None:
        self.entrypoint = f"{PREFIX}{os.getpid()}_{next(_ENTRYPOINTS)}"
        self.now = 0
        self.jobs: list[int] = []  # job id of task id - 1
        self.task_of_job: dict[int, int] = {}
        self.picked: dict[int, object] = {}  # job id -> the Job row its latest pick returned
        self.workers: dict[str, tuple[uuid.UUID, int]] = {}  # name -> (queue manager id, capacity)
        self.lock = threading.RLock()


def _release(loop: asyncio.AbstractEventLoop, connection: object, entrypoint: str | None, made_in: int) -> None:
    """Delete a scheduler's jobs (its first client only passes ``entrypoint``), close the connection and loop.

    Run by ``close()``, or by the garbage collector for a scheduler nobody
    closed (the checkers drop hundreds of schedulers without closing them):
    without it each would keep a server connection open. The collector may
    run this while another client's loop is running on this thread, where no
    loop can be run: then the connection is closed at the libpq level and the
    jobs go with the process's schema at exit (``uninstall``).

    In a forked child's copy of a client (``made_in`` is not this process) it does nothing but
    keep the copy referenced: the connection's socket is the parent's, so deleting or closing
    through it would end the parent's session and its jobs.
    """
    if inherited(made_in, loop, connection) or loop.is_closed():
        return
    try:
        if asyncio._get_running_loop() is not None:
            connection.pgconn.finish()
            return
        if entrypoint is not None and not connection.closed:
            loop.run_until_complete(connection.execute(f"DELETE FROM {_QUEUE_TABLE} WHERE entrypoint = %s", (entrypoint,)))
        loop.run_until_complete(connection.close())
    except Exception:  # noqa: BLE001 - the server went away: nothing is left to free
        pass
    finally:
        loop.close()


class PgQueuerClient:
    """One connection to one pgqueuer scheduler; ``client()`` opens another on the same scheduler."""

    def __init__(self, shared: _Scheduler | None = None) -> None:
        import psycopg

        first = shared is None
        self._shared = shared or _Scheduler()
        self._loop = asyncio.new_event_loop()
        self._connection = self._run(psycopg.AsyncConnection.connect(dsn(), autocommit=True))
        self._release = weakref.finalize(self, _release, self._loop, self._connection,
                                         self._shared.entrypoint if first else None, os.getpid())
        self._run(self._connection.execute(f"SET search_path = {_SEARCH_PATH}"))
        self._set_clock(self._shared.now)
        from pgqueuer.adapters.drivers.psycopg import PsycopgDriver

        self._queries = _queries(PsycopgDriver(self._connection))

    def _run(self, coroutine: object) -> object:
        return self._loop.run_until_complete(coroutine)

    def _set_clock(self, now: int) -> None:
        self._run(self._connection.execute("SELECT pg_catalog.set_config('fp_peers.now', %s, false)",
                                           (str(EPOCH_SECONDS + now),)))

    def client(self) -> PgQueuerClient:
        """Another connection to the same scheduler (for several threads)."""
        return PgQueuerClient(self._shared)

    @property
    def entrypoint(self) -> str:
        """The pgqueuer entrypoint holding this scheduler's jobs (one per scheduler)."""
        return self._shared.entrypoint

    # ------------------------------------------------------------ the protocol

    @property
    def now(self) -> int:
        return self._shared.now

    def _at(self, now: object) -> int:
        with self._shared.lock:
            check_time(self._shared.now, now)
            self._shared.now = now
        self._set_clock(now)
        return now

    def add_worker(self, worker: str, capacity: int) -> None:
        """A queue manager id for the worker; its capacity becomes its ``global_concurrency_limit``."""
        with self._shared.lock:
            check_new_worker(worker, capacity, self._shared.workers)
            self._shared.workers[worker] = (uuid.uuid4(), capacity)

    def submit(self, priority: int = 0, due_at: int | None = None, max_attempts: int | None = None,
               retry_delay: int = 1) -> int:
        """``enqueue`` with ``execute_after = due_at - now``; returns the task id.

        Raises:
            ValueError: an invalid argument, or a ``max_attempts`` (not offered).
        """
        check_submit(priority, due_at, max_attempts, retry_delay)
        if max_attempts is not None:
            raise not_offered("max_attempts", max_attempts, "pgqueuer's queue", "its executors retry")
        check_fits("priority", priority, 32, "pgqueuer's int column")
        with self._shared.lock:
            now = self._shared.now
            self._set_clock(now)
            delay = timedelta(seconds=0 if due_at is None else max(0, due_at - now))
            (job_id,) = self._run(self._queries.enqueue(self._shared.entrypoint, None, priority, delay))
            self._shared.jobs.append(job_id)
            task_id = len(self._shared.jobs)
            self._shared.task_of_job[job_id] = task_id
            return task_id

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """``dequeue`` one job as the worker's queue manager; the job id is the token."""
        from pgqueuer.ports.repository import EntrypointExecutionParameter

        check_dispatch(worker, now, duration, current=self._shared.now, workers=self._shared.workers)
        if duration != DURATION:
            raise ValueError(f"duration must be {DURATION}: pgqueuer's heartbeat_timeout is one for the queue: {duration!r}")
        manager, capacity = self._shared.workers[worker]
        self._at(now)
        jobs = self._run(self._queries.dequeue(
            batch_size=1,
            entrypoints={self._shared.entrypoint: EntrypointExecutionParameter(concurrency_limit=0)},
            queue_manager_id=manager,
            global_concurrency_limit=capacity,
            heartbeat_timeout=timedelta(seconds=DURATION),
        ))
        if not jobs:
            return None
        job = jobs[0]
        with self._shared.lock:
            self._shared.picked[job.id] = job
            task_id = self._shared.task_of_job[job.id]
        return Lease(task_id=task_id, worker=worker, token=job.id, started_at=now, expires_at=now + DURATION)

    def complete(self, task_id: int, token: object, now: int) -> Outcome:
        """``log_jobs`` the job as successful; pgqueuer answers nothing, so it is accepted."""
        job = self._report(task_id, token, now)
        if job is None:
            return Outcome(False, NOT_THIS_JOB)
        self._run(self._queries.log_jobs([(job, "successful", None)]))
        return ACCEPTED

    def renew(self, task_id: int, token: object, now: int, duration: int) -> Outcome:
        """``update_heartbeat`` of the job: its lease now ends ``DURATION`` after ``now``."""
        check_task_id(task_id, len(self._shared.jobs))
        check_min("duration", duration, 1)
        if duration != DURATION:
            raise ValueError(f"duration must be {DURATION}: pgqueuer's heartbeat_timeout is one for the queue: {duration!r}")
        job = self._report(task_id, token, now)
        if job is None:
            return Outcome(False, NOT_THIS_JOB)
        self._run(self._queries.update_heartbeat([job.id]))
        return ACCEPTED

    def advance(self, now: int) -> None:
        """Move the clock; pgqueuer needs no call (staleness is worked out at the next dequeue)."""
        self._at(now)

    def close(self) -> None:
        """Close this client's connection and event loop; the first client also deletes the scheduler's jobs."""
        self._release()

    def clear(self) -> None:
        """Delete every job of this scheduler's entrypoint."""
        self._run(self._queries.clear_queue(self._shared.entrypoint))

    # ------------------------------------------------------------ helpers

    def _report(self, task_id: object, token: object, now: object) -> object | None:
        """Check a report's arguments, move the clock; the Job the token names if it is this task's, else None."""
        check_task_id(task_id, len(self._shared.jobs))
        check_token(token, opaque=True)
        check_time(self._shared.now, now)
        self._at(now)
        with self._shared.lock:
            if token != self._shared.jobs[task_id - 1]:
                return None
            return self._shared.picked.get(token)


def install() -> None:
    """Create the logical clock and pgqueuer's schema (``SCHEMA``) once per process and server."""
    import psycopg

    if _INSTALLED.get(dsn()):
        return
    with _INSTALL_LOCK, psycopg.connect(dsn(), autocommit=True) as connection:
        if _INSTALLED.get(dsn()):  # another thread did it while this one waited
            return
        connection.execute(_CLOCK_FUNCTION)
        connection.execute(f"SET search_path = {_SEARCH_PATH}")
        installed = connection.execute(
            "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = %s", (SCHEMA,)).fetchone()
        if installed:
            _INSTALLED[dsn()] = True
            return
        connection.execute("SELECT pg_catalog.set_config('fp_peers.now', %s, false)", (str(EPOCH_SECONDS),))
        loop = asyncio.new_event_loop()
        try:
            async def run() -> None:
                from pgqueuer.adapters.drivers.psycopg import PsycopgDriver

                async with await psycopg.AsyncConnection.connect(dsn(), autocommit=True) as aconn:
                    await aconn.execute(f"SET search_path = {_SEARCH_PATH}")
                    await aconn.execute("SELECT pg_catalog.set_config('fp_peers.now', %s, false)", (str(EPOCH_SECONDS),))
                    await _queries(PsycopgDriver(aconn)).install()

            loop.run_until_complete(run())
        finally:
            loop.close()
        _INSTALLED[dsn()] = True


def installed_here() -> bool:
    """Whether this process installed (or found) pgqueuer's schema on some server."""
    return bool(_INSTALLED)


@atexit.register
def uninstall() -> None:
    """Drop everything ``install`` made on every server this process installed on (also run at exit)."""
    import psycopg

    with _INSTALL_LOCK:
        for server in list(_INSTALLED):
            _INSTALLED.pop(server, None)
            try:
                with psycopg.connect(server, autocommit=True, connect_timeout=3) as connection:
                    connection.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
                    connection.execute(f"DROP SCHEMA IF EXISTS {CLOCK_SCHEMA} CASCADE")
            except psycopg.Error:  # the server went away: nothing is left to drop
                pass


@declare({
    "order": "priority-id",
    "interval": "closed",
    "tokens": "opaque",
    "due": "after",
    "duration": str(DURATION),
    "views": "none",
    "without": "cancel,fail,keys,max_attempts",
})
def queue() -> PgQueuerClient:
    """A fresh pgqueuer scheduler (its own entrypoint) on the server ``dsn()`` names."""
    install()
    return PgQueuerClient()
