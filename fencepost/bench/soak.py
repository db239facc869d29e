"""``fencepost bench --soak``: a runner's memory stays flat however many tasks it has run.

A benchmark, not a test: it prints what it measured and a verdict, and
asserts nothing. Two soaks, one after the other, each ``tasks`` no-op tasks
(default ``TASKS``) through ``Runner(workers=4)`` on a ``ManualClock`` with
``retention=RETENTION`` ticks, in intervals of ``INTERVAL`` tasks: the
interval's tasks are submitted, run to the end (``wait_idle``), and the
clock moves ``RETENTION + 1`` ticks, past the window, so the records (and
scheduler rows) of one interval are forgotten by the next interval's calls:
the runner holds at most two intervals' tasks at any moment.

* the default scheduler (``IndexedScheduler``), made by the runner itself,
  as ``Runner()`` makes it;
* ``DurableScheduler`` on a temporary file (``synchronous="NORMAL"``: the
  soak measures memory and file size, not fsyncs), whose file size (the
  database and its write-ahead log) is printed too.

After each interval the heap is measured with ``tracemalloc`` (Python
allocations, this process, after a collection). The verdict: growth from the
end of the first interval to the end of the last, per task run since, must
stay under ``FLAT_BYTES_PER_TASK``. ``tracemalloc`` slows Python down
several times; the figures are bytes, not speed.

``--idle-postgres SECONDS`` instead starts a shared runner (payloads, the
database clock) on ``$FENCEPOST_PG_DSN`` that has nothing to do, and prints
its heap and its schema's tables (rows and bytes) every ``IDLE_SAMPLES``-th
of the time: an idle shared runner polls the queue, and must not grow.
"""

from __future__ import annotations

import gc
import os
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass

from fencepost.impl.runner.clocks import ManualClock
from fencepost.impl.runner.core import Runner

#: Tasks per soak, as the issue sets it.
TASKS = 1_000_000
#: Tasks per interval: one heap sample each.
INTERVAL = 50_000
#: The runner's retention window, in ticks; the clock moves RETENTION + 1 ticks per interval.
RETENTION = 10
#: Workers of the soaked runner.
WORKERS = 4
#: Growth allowed after the first interval, bytes per task run.
FLAT_BYTES_PER_TASK = 64
#: Heap and table samples over an idle run.
IDLE_SAMPLES = 6
#: Real seconds any wait of the soak may take before it counts as hung.
BOUND = 600.0


def noop(ctx: object = None) -> None:
    """The work: nothing."""


@dataclass(frozen=True)
class Sample:
    """One interval's end: tasks run so far, the heap in bytes, the file's bytes (None: no file)."""

    tasks: int
    heap: int
    file: int | None = None


def heap_bytes() -> int:
    """Python's allocated bytes now, after a full collection (``tracemalloc`` must be tracing)."""
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def soak(scheduler: object, tasks: int, interval: int = INTERVAL, file: Callable[[], int] | None = None,
         progress: Callable[[Sample], None] | None = None) -> list[Sample]:
    """Run ``tasks`` no-ops through a runner over ``scheduler``, sampling after every ``interval``; O(tasks).

    ``scheduler`` None: the runner makes its default one, as ``Runner()`` does (and then queues its submits).
    """
    clock = ManualClock(0)
    samples = []
    tracemalloc.start()
    try:
        with Runner(workers=WORKERS, clock=clock, lease=10**9, scheduler=scheduler, retention=RETENTION) as runner:
            done = 0
            while done < tasks:
                batch = min(interval, tasks - done)
                for _ in range(batch):
                    runner.submit(noop)
                runner.wait_idle(BOUND)
                done += batch
                clock.advance(RETENTION + 1)
                sample = Sample(done, heap_bytes(), file() if file else None)
                samples.append(sample)
                if progress:
                    progress(sample)
    finally:
        tracemalloc.stop()
    return samples


def growth_per_task(samples: list[Sample]) -> float:
    """Bytes of heap gained per task from the first sample to the last (0.0 with one sample)."""
    if len(samples) < 2:
        return 0.0
    return (samples[-1].heap - samples[0].heap) / (samples[-1].tasks - samples[0].tasks)


def format_sample(name: str, sample: Sample) -> str:
    file = "" if sample.file is None else f"  file {sample.file / 1e6:8.2f} MB"
    return f"  {name:<18} {sample.tasks:>10,} tasks  heap {sample.heap / 1e6:8.2f} MB{file}"


def verdict(name: str, samples: list[Sample]) -> str:
    growth = growth_per_task(samples)
    flat = "flat" if growth < FLAT_BYTES_PER_TASK else "GROWS"
    return (f"{name}: heap {samples[0].heap / 1e6:.2f} MB after the first interval, {samples[-1].heap / 1e6:.2f} MB "
            f"at the end: {growth:+.1f} bytes per task since ({flat}: the bound is {FLAT_BYTES_PER_TASK})")


def _file_size(path: str) -> Callable[[], int]:
    def size() -> int:
        return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))

    return size


def run_soaks(tasks: int, interval: int) -> list[str]:
    """Both soaks; the verdict lines."""
    from fencepost.impl.durable import DurableScheduler
    from fencepost.impl.indexed import IndexedScheduler

    verdicts = []
    samples = soak(None, tasks, interval,  # the default scheduler, made by the runner as a user's is
                   progress=lambda s: print(format_sample(IndexedScheduler.__name__, s), flush=True))
    verdicts.append(verdict("IndexedScheduler", samples))
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fencepost-soak-") as folder:
        path = os.path.join(folder, "soak.db")
        durable = DurableScheduler(path, synchronous="NORMAL")
        try:
            samples = soak(durable, tasks, interval, file=_file_size(path),
                           progress=lambda s: print(format_sample("DurableScheduler", s), flush=True))
        finally:
            durable.close()
    file_growth = (samples[-1].file - samples[0].file) if len(samples) > 1 else 0
    verdicts.append(verdict("DurableScheduler", samples) + f"; file {file_growth:+,} bytes after the first interval")
    return verdicts


def idle_postgres(seconds: float, dsn: str, samples: int = IDLE_SAMPLES) -> list[str]:
    """A shared runner idle on the database clock for ``seconds``: heap and tables at ``samples`` moments."""
    from fencepost.impl.postgres.scheduler import DatabaseClock, drop_schema, temporary_schema_name, PostgresScheduler
    from fencepost.impl.postgres.payloads import PostgresPayloads

    schema = temporary_schema_name("fp_soak")
    lines = []
    scheduler = PostgresScheduler(dsn, schema=schema)
    payloads = PostgresPayloads(dsn, schema=schema)
    clock = DatabaseClock(dsn, schema=schema)
    tables = ("tasks", "keys", "payloads", "workers", "meta")
    size_query = " UNION ALL ".join(
        f"SELECT '{t}', (SELECT count(*) FROM {schema}.{t}), pg_total_relation_size('{schema}.{t}')" for t in tables)
    try:
        tracemalloc.start()
        with Runner(name="soak", workers=WORKERS, clock=clock, lease=60_000, scheduler=scheduler,
                    payloads=payloads, functions={"noop": noop}):
            start = time.monotonic()
            for n in range(samples + 1):
                time.sleep(max(0.0, start + seconds * n / samples - time.monotonic()))
                rows = scheduler._conn.execute(size_query).fetchall()
                heap = heap_bytes()
                cells = ", ".join(f"{name} {count} rows {size:,} B" for name, count, size in rows)
                lines.append(f"  t={time.monotonic() - start:7.1f} s  heap {heap:>11,} B  {cells}")
                print(lines[-1], flush=True)
    finally:
        tracemalloc.stop()
        scheduler.close()
        payloads.close()
        clock.close()
        drop_schema(dsn, schema)
    return lines


def run(tasks: int | None, idle_postgres: float | None = None, dsn: str | None = None) -> int:
    """``fencepost bench --soak``: print the samples and the verdicts; 0.

    Raises:
        UsageError: ``idle_postgres`` is not > 0, or there is no server for it.
    """
    from fencepost.spec.arguments import UsageError

    if idle_postgres is not None:
        if not idle_postgres > 0:
            raise UsageError(f"--idle-postgres must be a number of seconds > 0, got {idle_postgres}")
        dsn = dsn or os.environ.get("FENCEPOST_PG_DSN")
        if not dsn:
            raise UsageError("--idle-postgres needs a server: set FENCEPOST_PG_DSN or give --dsn")
        print(f"fencepost bench --soak --idle-postgres {idle_postgres:g}: a shared runner with nothing to do", flush=True)
        idle_postgres(idle_postgres, dsn)
        return 0
    tasks = tasks or TASKS
    interval = min(INTERVAL, max(1, tasks // 10))
    print(f"fencepost bench --soak: {tasks:,} no-op tasks per scheduler, a sample every {interval:,} "
          f"(Runner(workers={WORKERS}), retention={RETENTION} ticks, the clock {RETENTION + 1} ticks per sample)", flush=True)
    for line in run_soaks(tasks, interval):
        print(line)
    return 0
