"""The peer queues of ``fencepost bench --postgres``: pgqueuer and procrastinate, through their own APIs.

Each peer runs for real, installed from the package index (the ``peers``
extra), on its own fresh schema of the same server, with the same work as
PostgresScheduler's cycle: claim a job submitted before timing started,
acknowledge it as done, nothing else (the job function does nothing).

* ``pgqueuer_loop``: pgqueuer's own worker loop, ``QueueManager.run(batch_size=B,
  mode=drain)`` with a no-op entrypoint: it claims up to B jobs per
  ``dequeue`` statement and acknowledges them through its status-log buffer,
  which flushes B at a time (``log_jobs``); this is how pgqueuer's users run it
  (B defaults to 10). The client's time runs from the release to its last
  acknowledgement: the loop's start (``verify_structure``, its LISTEN) is
  in it, its shutdown once the queue is empty is not.
* ``pgqueuer_cycle``: the same two statements called directly, one after the
  other: ``dequeue(batch_size=B)`` then ``log_jobs`` of the B jobs.
* ``procrastinate``: ``JobManager.fetch_job`` then ``finish_job(succeeded)``,
  procrastinate's worker's two calls per job; it has no batched fetch, so it is
  measured at batch size 1 only.

Neither peer fences an acknowledgement by a lease token: pgqueuer's
``log_jobs`` and procrastinate's ``finish_job`` act on a job id whoever holds
the job now (the issue's and ``impl/peers``' findings), so they do less than
PostgresScheduler's ``complete_many``.

Everything here is imported lazily: without the packages, ``available()``
says which are missing and the bench leaves their rows out.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

#: The peer kinds, and the package each needs.
PACKAGES = {"pgqueuer_loop": "pgqueuer", "pgqueuer_cycle": "pgqueuer", "procrastinate": "procrastinate"}
#: Peers with no batched claim, measured at batch size 1 only.
SINGLE_ONLY = frozenset({"procrastinate"})
#: The entrypoint (pgqueuer) and queue (procrastinate) every benchmark job is in.
ENTRYPOINT = "fp_bench"
#: pgqueuer's heartbeat timeout: longer than any run, so no job is re-picked.
HEARTBEAT = timedelta(hours=1)


def available() -> dict[str, bool]:
    """Which peer kinds can run here: their package is installed."""
    return {kind: importlib.util.find_spec(package) is not None for kind, package in PACKAGES.items()}


def install_hint() -> str:
    return "pip install 'fencepost[peers]'"


# ---------------------------------------------------------------- pgqueuer


def _pgqueuer_queries(connection: object, schema: str) -> object:
    from pgqueuer.adapters.drivers.psycopg import PsycopgDriver
    from pgqueuer.adapters.persistence import qb
    from pgqueuer.adapters.persistence.queries import Queries
    from pgqueuer.domain.settings import DBSettings

    settings = DBSettings(db_schema=schema)
    return Queries(PsycopgDriver(connection), qbe=qb.QueryBuilderEnvironment(settings),
                   qbq=qb.QueryQueueBuilder(settings))


async def _pg_connect(dsn: str, schema: str) -> object:
    import psycopg

    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    await conn.execute(f'SET search_path = "{schema}", public')
    return conn


def pgqueuer_setup(dsn: str, schema: str, jobs: int, warm: dict[str, int]) -> None:
    """Install pgqueuer in ``schema`` and enqueue ``jobs`` jobs, plus ``warm[entrypoint]`` warm-up jobs each."""

    async def setup() -> None:
        conn = await _pg_connect(dsn, schema)
        try:
            queries = _pgqueuer_queries(conn, schema)
            await queries.install()
            for entrypoint, count in {ENTRYPOINT: jobs, **warm}.items():
                if count:
                    await queries.enqueue([entrypoint] * count, [None] * count, [0] * count)
            await conn.execute(f'ANALYZE "{schema}".pgqueuer')
        finally:
            await conn.close()

    asyncio.run(setup())


class PgQueuerCycle:
    """``dequeue(batch_size)`` then ``log_jobs`` of what it returned, on one connection."""

    def __init__(self, dsn: str, schema: str, batch: int) -> None:
        from pgqueuer.ports.repository import EntrypointExecutionParameter

        self.loop = asyncio.new_event_loop()
        self.conn = self.loop.run_until_complete(_pg_connect(dsn, schema))
        self.queries = _pgqueuer_queries(self.conn, schema)
        self.batch = batch
        self.entrypoints = {ENTRYPOINT: EntrypointExecutionParameter(concurrency_limit=0)}
        self.manager = uuid.uuid4()

    async def _cycle(self) -> int:
        jobs = await self.queries.dequeue(batch_size=self.batch, entrypoints=self.entrypoints,
                                          queue_manager_id=self.manager, global_concurrency_limit=None,
                                          heartbeat_timeout=HEARTBEAT)
        await self.queries.log_jobs([(job, "successful", None) for job in jobs])
        return len(jobs)

    def cycle(self) -> None:
        done = self.loop.run_until_complete(self._cycle())
        assert done == self.batch, f"pgqueuer dequeued {done} jobs, expected {self.batch}"

    def close(self) -> None:
        self.loop.run_until_complete(self.conn.close())
        self.loop.close()


def pgqueuer_loop(dsn: str, schema: str, batch: int, entrypoint: str = ENTRYPOINT) -> tuple[int, float]:
    """Run pgqueuer's worker loop in drain mode over ``entrypoint``'s jobs.

    Returns how many jobs it ran and when (``time.monotonic()``) its last
    acknowledgement (``log_jobs``) returned: the loop's own shutdown after the
    queue is empty (its notification watcher waits out a one-second poll) is
    not part of the work and is not timed.
    """
    from pgqueuer.core.qm import QueueManager
    from pgqueuer.types import QueueExecutionMode

    async def drain() -> tuple[int, float]:
        conn = await _pg_connect(dsn, schema)
        try:
            queries = _pgqueuer_queries(conn, schema)
            acknowledged = time.monotonic()
            log_jobs = queries.log_jobs

            async def timed_log_jobs(job_status: list) -> None:
                nonlocal acknowledged
                await log_jobs(job_status)
                acknowledged = time.monotonic()

            queries.log_jobs = timed_log_jobs
            manager = QueueManager(queries)
            ran = 0

            @manager.entrypoint(entrypoint)
            async def work(job: object) -> None:
                nonlocal ran
                ran += 1

            await manager.run(batch_size=batch, mode=QueueExecutionMode.drain, heartbeat_timeout=HEARTBEAT,
                              log_aggregation_interval=timedelta(0))
            return ran, acknowledged
        finally:
            await conn.close()

    return asyncio.run(drain())


# ---------------------------------------------------------------- procrastinate


def _procrastinate_app(dsn: str, schema: str) -> object:
    import procrastinate

    connector = procrastinate.PsycopgConnector(conninfo=dsn, kwargs={"options": f"-c search_path={schema}"},
                                               min_size=1, max_size=1)
    return procrastinate.App(connector=connector)


def procrastinate_setup(dsn: str, schema: str, jobs: int) -> None:
    """Apply procrastinate's schema in ``schema`` and defer ``jobs`` jobs in one batch."""
    from procrastinate import jobs as jobs_module

    async def setup() -> None:
        app = _procrastinate_app(dsn, schema)
        async with app.open_async():
            await app.schema_manager.apply_schema_async()
            batch = [jobs_module.Job(id=None, queue=ENTRYPOINT, task_name="fp_bench", lock=None,
                                     queueing_lock=None, task_kwargs={}) for _ in range(jobs)]
            for start in range(0, len(batch), 10_000):
                await app.job_manager.batch_defer_jobs_async(batch[start:start + 10_000])

    asyncio.run(setup())


class ProcrastinateCycle:
    """``fetch_job`` then ``finish_job(succeeded)``, as a registered worker, on one pooled connection."""

    def __init__(self, dsn: str, schema: str, batch: int) -> None:
        assert batch == 1, "procrastinate fetches one job per call"
        self.loop = asyncio.new_event_loop()
        self.app = _procrastinate_app(dsn, schema)
        self.loop.run_until_complete(self.app.open_async())
        self.manager = self.app.job_manager
        self.worker = self.loop.run_until_complete(self.manager.register_worker())

    async def _cycle(self) -> None:
        from procrastinate.jobs import Status

        job = await self.manager.fetch_job(queues=[ENTRYPOINT], worker_id=self.worker)
        assert job is not None, "procrastinate fetched no job"
        await self.manager.finish_job(job, status=Status.SUCCEEDED, delete_job=False)

    def cycle(self) -> None:
        self.loop.run_until_complete(self._cycle())

    def close(self) -> None:
        self.loop.run_until_complete(self.app.close_async())
        self.loop.close()


#: Peer kind -> the class whose ``cycle()`` claims and acknowledges one batch (the loop has none).
CYCLES: dict[str, Callable[[str, str, int], object]] = {
    "pgqueuer_cycle": PgQueuerCycle,
    "procrastinate": ProcrastinateCycle,
}
