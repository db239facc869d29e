"""procrastinate 3.10 (a PostgreSQL task queue) behind the protocol, through its public ``JobManager``.

Factory: ``queue``. It needs a PostgreSQL server: ``FENCEPOST_PG_DSN``, else
``postgresql://root@127.0.0.1:5432/test``. procrastinate's schema (tables,
types, functions) is applied once per process into the schema
``fp_peers_procr_<pid>``, dropped at exit (``uninstall``); each scheduler is
its own procrastinate queue there (``fp_<pid>_<n>``), so schedulers never
see each other's jobs. A task is one job; task ids 1, 2, 3... map to job ids.

=============  ==========================================================================
protocol       procrastinate call
=============  ==========================================================================
submit         ``defer_job_async(Job(queue, priority, scheduled_at=due_at))``
dispatch       ``register_worker()``, then ``fetch_job([queue], worker_id)``;
               the token is ``<job id>/<worker id>`` (``TOKEN``)
complete       ``finish_job_by_id_async(job id, succeeded, delete_job=False)``
renew          ``update_heartbeat(worker id)``, then the job read back (``list_jobs_async``)
expiry         before every timed call: ``get_stalled_jobs(queue, seconds_since_heartbeat=DURATION)``
               and ``retry_job`` of each, retry at ``now`` (the "retry stalled jobs" recipe of
               procrastinate's docs, run exactly on time)
=============  ==========================================================================

What procrastinate offers, and so what ``queue`` declares. ``fetch_job``
takes the job with the highest priority, then the lowest id, among those with
``scheduled_at <= now()`` (``order=priority-id``, ``due=at``). A fetched job
is stalled once its worker's ``last_heartbeat < now() - seconds_since_heartbeat``,
where that timeout is the RECOVERER's argument, not the holder's, so every
lease has one length (``duration=DURATION``) and is live through exactly its
end (``interval=closed``). ``finish_job`` accepts a job in ``todo`` as well
as ``doing`` (``late=accept-unclaimed``: a late complete of a job nobody
took since counts). No per-job view of holder and expiry (``views=none``).
Cancellation of a running job is an abort, not the contract's cooperative
cancel; failure belongs to the worker's retry strategy; queueing locks refuse
a duplicate only while the first waits: so no ``cancel``, ``fail``, ``keys``
or ``max_attempts`` here.

**Workers and heartbeats.** procrastinate's heartbeat is per worker process
(``procrastinate_workers.last_heartbeat``), not per job. Each lease here is
held by a worker registered when it fetches (a worker of concurrency 1, whose
heartbeat starts with the fetch), so a heartbeat renews exactly one lease; a
protocol worker's capacity is how many of those it runs at once, counted from
the queue's own rows (``list_jobs_async(status="doing")``, by worker id).

**The token** names the assignment as procrastinate records it: the job id
and the worker id ``fetch_job`` stored in the row (``kit.CompositeToken``).
``finish_job`` takes only the job id, so only the job id is passed; the
worker id is used only for the heartbeat, which is the worker's. The adapter
never compares worker ids itself (that would be fencing on procrastinate's
behalf): ``procrastinate_finish_job_v1`` updates ``WHERE id = job_id AND
status IN ('todo', 'doing')`` and never compares ``worker_id``, so a worker
whose heartbeat lapsed finishes the job another worker fetched since. No
declared variant excuses that (docs/findings.md, procrastinate 3.10).

**Calls that answer nothing.** ``update_heartbeat`` returns nothing whatever
it did; a renew is decided by reading the job back after it
(``kit.read_back``): accepted while the job is ``doing`` under the token's
worker, else refused. ``finish_job`` raises when the job is not ``todo`` or
``doing``: that is its refusal.

Logical time: procrastinate computes every timestamp with ``now()``. The
schema holds its own ``now()``, returning the session setting
``fp_peers.now``, and each connection's ``search_path`` names that schema
before ``pg_catalog``, also while the schema is applied, so column defaults
use it too. Before each call the adapter sets ``fp_peers.now`` to
``EPOCH_SECONDS + now``. procrastinate's API is asyncio: the schedulers of a thread share one event
loop and a pool of one connection (``_Session``), each its own queue, and
set the session's clock before each call.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import os
import threading
from datetime import datetime, timezone

from fencepost.impl.kit import (
    ACCEPTED, EPOCH_SECONDS, Book, CompositeToken, Lease, Outcome, check_fits, check_submit, declare, not_offered,
    read_back,
)

#: The server used when ``FENCEPOST_PG_DSN`` is not set: the one CI starts.
DEFAULT_DSN = "postgresql://root@127.0.0.1:5432/test"
#: The schema holding procrastinate's objects and the logical ``now()``, one per process.
SCHEMA = f"fp_peers_procr_{os.getpid()}"
#: The one lease length: the recoverer's ``seconds_since_heartbeat``, in seconds of logical time.
DURATION = 5
#: A lease's token: the job fetched and the worker that fetched it, as ``fetch_job`` records them.
TOKEN = CompositeToken("job", "worker")
#: The task name every job is deferred under (procrastinate requires one; nothing runs it).
TASK_NAME = "fencepost"
#: Why a report is refused without a call: its token names no assignment of this task's job.
NOT_THIS_JOB = "not_this_tasks_job"
#: Why ``finish_job`` refused: it raised, the job being neither ``todo`` nor ``doing``.
NOT_TODO_OR_DOING = "job_not_todo_or_doing"
#: Why a renew is refused: read back after the heartbeat, the job is not ``doing`` under the token's worker.
NOT_HELD = "job_not_doing_under_this_worker"

_CLOCK_FUNCTION = """
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE OR REPLACE FUNCTION {schema}.now() RETURNS timestamptz
    LANGUAGE sql STABLE
    AS $$ SELECT pg_catalog.to_timestamp(pg_catalog.current_setting('fp_peers.now')::bigint) $$;
"""
_QUEUES = itertools.count(1)
_INSTALL_LOCK = threading.Lock()
# (dsn, schema) known installed. A forked child (check --jobs forks its shards) keeps the parent's: were it
# to install again, its DROP SCHEMA would pull the types from under the parent's and its siblings' sessions.
_INSTALLED: set[tuple[str, str]] = set()
_OWNED: set[tuple[str, str]] = set()  # (dsn, schema) this very process installed: the ones its exit drops
os.register_at_fork(after_in_child=_OWNED.clear)  # a child installed nothing: its exit drops nothing


def dsn() -> str:
    return os.environ.get("FENCEPOST_PG_DSN") or DEFAULT_DSN


def moment(now: int) -> datetime:
    """Logical time ``now`` as the timestamp procrastinate's ``now()`` returns for it."""
    return datetime.fromtimestamp(EPOCH_SECONDS + now, tz=timezone.utc)


async def _connector(server: str, schema: str) -> object:
    """An open ``PsycopgConnector`` on one connection whose ``search_path`` puts ``schema`` first."""
    import psycopg_pool
    from procrastinate import PsycopgConnector

    pool = psycopg_pool.AsyncConnectionPool(
        server, min_size=1, max_size=1, open=False,
        kwargs={"autocommit": True, "options": f"-c search_path={schema},pg_catalog,public"})
    await pool.open(wait=True)
    connector = PsycopgConnector()
    await connector.open_async(pool=pool)
    return connector


class _Session:
    """One event loop and one connection, shared by every scheduler of a thread on one schema.

    Schedulers are cheap this way (the checkers make hundreds, most with a few
    calls): they share the connection, each its own procrastinate queue, and
    the session remembers the time its ``fp_peers.now`` reads. Closed at exit
    (``uninstall``).
    """

    def __init__(self, schema: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.connector = self.loop.run_until_complete(_connector(dsn(), schema))
        self.clock: int | None = None  # the logical time fp_peers.now reads, once set

    def run(self, coroutine: object) -> object:
        return self.loop.run_until_complete(coroutine)

    def set_clock(self, now: int) -> None:
        if now != self.clock:
            self.run(self.connector.execute_query_async(
                "SELECT pg_catalog.set_config('fp_peers.now', %(now)s, false)", now=str(EPOCH_SECONDS + now)))
            self.clock = now

    def close(self) -> None:
        try:
            self.run(self.connector.pool.close())
        except Exception:  # noqa: BLE001 - the server went away: nothing is left to free
            pass
        finally:
            self.loop.close()


_SESSIONS: dict[tuple[int, str, str], _Session] = {}  # (thread, dsn, schema) -> its session
os.register_at_fork(after_in_child=_SESSIONS.clear)  # a child's copies are the parent's sockets: never used


def _session(schema: str) -> _Session:
    key = (threading.get_ident(), dsn(), schema)
    if key not in _SESSIONS:
        _SESSIONS[key] = _Session(schema)
    return _SESSIONS[key]


class ProcrastinateQueue:
    """One procrastinate queue behind the protocol (see the module docstring for the mapping)."""

    def __init__(self, schema: str = SCHEMA) -> None:
        """A new queue in ``schema``, which ``install(schema)`` made."""
        from procrastinate.manager import JobManager

        self._book = Book()
        self._queue = f"fp_{os.getpid()}_{next(_QUEUES)}"
        self._workers: dict[str, set[int]] = {}  # protocol worker -> procrastinate worker ids it registered
        self._session = _session(schema)
        self._connector = self._session.connector
        self._jobs = JobManager(self._connector)
        self._recovered_at: int | None = None  # the time the stalled jobs were last retried at

    def _run(self, coroutine: object) -> object:
        return self._session.run(coroutine)

    def _set_clock(self, now: int) -> None:
        self._session.set_clock(now)

    def _at(self, now: int) -> None:
        """Move the clock to ``now`` (checked), then retry this queue's stalled jobs, as the recipe does.

        The recipe runs once per moment: no heartbeat lapses while the clock
        stands still, so a second run at the same ``now`` would find nothing.
        """
        self._book.move_to(now)
        self._set_clock(now)  # the session is shared: it may read another scheduler's time
        if now == self._recovered_at:
            return
        for job in self._run(self._jobs.get_stalled_jobs(queue=self._queue, seconds_since_heartbeat=DURATION)):
            self._retry_stalled(job, now)
        self._recovered_at = now

    def _retry_stalled(self, job: object, now: int) -> None:
        """The recipe's ``retry_job`` of one stalled job, eligible again at once."""
        self._run(self._jobs.retry_job(job, retry_at=moment(now)))

    def _finish(self, job_id: int, worker_id: int) -> None:
        """``finish_job`` as procrastinate's worker calls it: by job id alone (``worker_id`` is not passed)."""
        from procrastinate.jobs import Status

        self._run(self._jobs.finish_job_by_id_async(job_id, Status.SUCCEEDED, delete_job=False))

    # ------------------------------------------------------------ the protocol

    @property
    def now(self) -> int:
        return self._book.now

    def add_worker(self, worker: str, capacity: int) -> None:
        """Remember the worker; its procrastinate workers register as they fetch."""
        self._book.add_worker(worker, capacity)
        self._workers[worker] = set()

    def submit(self, priority: int = 0, due_at: int | None = None, max_attempts: int | None = None,
               retry_delay: int = 1) -> int:
        """``defer_job_async`` into this queue, ``scheduled_at`` the due time; returns the task id.

        Raises:
            ValueError: an invalid argument, or a ``max_attempts`` (not offered).
        """
        from procrastinate.jobs import Job

        check_submit(priority, due_at, max_attempts, retry_delay)
        if max_attempts is not None:
            raise not_offered("max_attempts", max_attempts, "procrastinate's queue", "its worker's retry strategy retries")
        check_fits("priority", priority, 32, "procrastinate's int column")
        with self._book.lock:
            self._set_clock(self._book.now)
            scheduled = None if due_at is None else moment(due_at)
            job = self._run(self._jobs.defer_job_async(
                Job(queue=self._queue, task_name=TASK_NAME, priority=priority, scheduled_at=scheduled,
                    lock=None, queueing_lock=None)))
            return self._book.add_task(job.id)

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """A procrastinate worker registers (its heartbeat is ``now``) and fetches one job, room permitting."""
        capacity = self._book.check_dispatch(worker, now, duration)
        _one_length(duration)
        self._at(now)
        doing = self._run(self._jobs.list_jobs_async(queue=self._queue, status="doing"))
        if sum(job.worker_id in self._workers[worker] for job in doing) >= capacity:
            return None
        worker_id = self._run(self._jobs.register_worker())
        job = self._run(self._jobs.fetch_job([self._queue], worker_id))
        if job is None:
            self._run(self._jobs.unregister_worker(worker_id))
            return None
        self._workers[worker].add(worker_id)
        task_id = self._book.task_of(job.id)
        token = TOKEN.make(job=job.id, worker=worker_id)
        self._book.handed_out(token, task_id)
        return Lease(task_id=task_id, worker=worker, token=token, started_at=now, expires_at=now + DURATION)

    def complete(self, task_id: int, token: object, now: int) -> Outcome:
        """``finish_job`` of the token's job as succeeded: accepted unless procrastinate raises."""
        from procrastinate.exceptions import ConnectorException

        parts = self._report(task_id, token, now)
        if parts is None:
            return Outcome(False, NOT_THIS_JOB)
        try:
            self._finish(int(parts["job"]), int(parts["worker"]))
        except ConnectorException:  # 'Job was not found or not in "doing" or "todo" status'
            return Outcome(False, NOT_TODO_OR_DOING)
        return ACCEPTED

    def renew(self, task_id: int, token: object, now: int, duration: int) -> Outcome:
        """``update_heartbeat`` of the token's worker; decided by reading the job back (it answers nothing)."""
        parts = self._report(task_id, token, now, duration)
        if parts is None:
            return Outcome(False, NOT_THIS_JOB)
        worker_id, job_id = int(parts["worker"]), int(parts["job"])
        self._run(self._jobs.update_heartbeat(worker_id))
        return read_back(lambda: self._run(self._jobs.list_jobs_async(id=job_id)),
                         lambda jobs: any(j.status == "doing" and j.worker_id == worker_id for j in jobs), NOT_HELD)

    def advance(self, now: int) -> None:
        """Move the clock; stalled jobs are retried as before every timed call."""
        self._at(now)

    def close(self) -> None:
        """Nothing to free: the thread's session is shared, and the jobs go with the schema at exit."""

    # ------------------------------------------------------------ helpers

    def _report(self, task_id: object, token: object, now: object, duration: object = None) -> dict | None:
        """Check a report's arguments and move the clock; the token's parts if it names this task's job."""
        job = self._book.check_report(task_id, token, now, duration)
        if duration is not None:
            _one_length(duration)
        self._at(now)
        parts = TOKEN.parse(token)
        # ASCII digits only: "²".isdigit() is true, and int() refuses it (a ValueError, not a refusal)
        digits = parts is not None and all(parts[p].isascii() and parts[p].isdigit() for p in ("job", "worker"))
        if not digits or int(parts["job"]) != job:
            return None
        return parts


def _one_length(duration: int) -> None:
    if duration != DURATION:
        raise ValueError(f"duration must be {DURATION}: procrastinate's stalled-worker timeout is one for the queue: "
                         f"{duration!r}")


def install(schema: str = SCHEMA) -> None:
    """Create ``schema`` with the logical ``now()`` and apply procrastinate's schema there, once per process."""
    if (dsn(), schema) in _INSTALLED:
        return
    with _INSTALL_LOCK:
        if (dsn(), schema) in _INSTALLED:  # another thread did it while this one waited
            return
        import psycopg

        with psycopg.connect(dsn(), autocommit=True) as connection:
            connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            connection.execute(_CLOCK_FUNCTION.format(schema=schema))

        async def apply() -> None:
            from procrastinate import App

            connector = await _connector(dsn(), schema)
            try:
                await connector.execute_query_async(
                    "SELECT pg_catalog.set_config('fp_peers.now', %(now)s, false)", now=str(EPOCH_SECONDS))
                await App(connector=connector).schema_manager.apply_schema_async()
            finally:
                await connector.pool.close()

        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(apply())
        finally:
            loop.close()
        _INSTALLED.add((dsn(), schema))
        _OWNED.add((dsn(), schema))


def installed_here() -> bool:
    """Whether this process installed procrastinate's schema anywhere."""
    return bool(_OWNED)


@atexit.register
def uninstall() -> None:
    """Drop every schema ``install`` made in this process (also run at exit)."""
    import psycopg

    with _INSTALL_LOCK:
        for session in list(_SESSIONS.values()):
            session.close()
        _SESSIONS.clear()
        for server, schema in list(_OWNED):
            _OWNED.discard((server, schema))
            _INSTALLED.discard((server, schema))
            try:
                with psycopg.connect(server, autocommit=True, connect_timeout=3) as connection:
                    connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            except psycopg.Error:  # the server went away: nothing is left to drop
                pass


@declare({
    "order": "priority-id",
    "interval": "closed",
    "tokens": "opaque",
    "late": "accept-unclaimed",
    "duration": str(DURATION),
    "views": "none",
    "without": "cancel,fail,keys,max_attempts",
})
def queue() -> ProcrastinateQueue:
    """A fresh procrastinate queue (its own queue name) on the server ``dsn()`` names."""
    install()
    return ProcrastinateQueue()
