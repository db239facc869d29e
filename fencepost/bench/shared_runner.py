"""``fencepost bench --shared-runner``: shared runners over PostgreSQL, single calls beside batches, in one run.

A *turn* runs ``tasks`` no-op tasks, submitted before timing starts, through
``processes`` runner processes on one fresh schema, each a shared ``Runner``
of ``WORKERS`` slots as production runs it: ``PostgresScheduler`` (synchronous
commit on: every acknowledged call is on disk), ``PostgresPayloads``,
``DatabaseClock`` (real time from the server, milliseconds), the default
poll. The figure is the tasks divided by the time from the moment every
process is released to the moment the last one saw every task final (each
process waits for its runner to be idle, then counts the schema's unfinished
tasks, until there are none). Each turn is one ``batch`` setting of the
runners: ``1`` (every call a single one, each slot a worker of capacity one)
or the default (``None``: on PostgreSQL, batches of up to ``WORKERS``; see
``impl.runner.default_batch``). The settings take turns, ``rounds`` times for
each process count, and each figure is the best turn (the median beside it),
so both are measured under the same load.

Run as a script (``python fencepost/bench/shared_runner.py --batch default``) it
times one turn and prints one line; it uses only what the runner had before
``batch`` existed when ``--batch default`` is given, so the same file times the
code of an older commit installed in another environment (a whole-process
timer alternating the two).
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence

#: Slots per runner process.
WORKERS = 4
#: Runner processes per turn, measured side by side.
PROCESS_COUNTS = (1, 2)
#: Tasks per turn, and in a quick run.
TASKS = 2_000
QUICK_TASKS = 300
#: Turns of each setting per process count; the best is reported.
ROUNDS = 3
#: The settings compared: every call single, and the runner's default.
SETTINGS = (1, None)
#: Lease length in the database clock's milliseconds: far longer than a turn.
LEASE = 600_000
#: Real seconds a turn may take, or a process to start, before the run is abandoned.
BOUND = 600.0


def noop(ctx: object) -> None:
    """The work: nothing."""


def _label(batch: int | None) -> str:
    return "batch=1 (single calls)" if batch == 1 else "default batch" if batch is None else f"batch={batch}"


def _fill(dsn: str, schema: str, tasks: int) -> None:
    """Make ``schema`` and its payload table, and submit ``tasks`` no-op tasks with payloads, untimed.

    The payloads are written in one statement and the tasks in one
    ``submit_many``, under keys the runner would have written itself
    (``impl.postgres_payloads``: a task's payload is found through its key).
    """
    import psycopg
    from psycopg import sql

    from fencepost.impl.postgres.scheduler import PostgresScheduler
    from fencepost.impl.postgres.payloads import PostgresPayloads

    PostgresPayloads(dsn, schema=schema).close()  # the tables, before the processes race to make them
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("INSERT INTO {}.payloads (key, function, args) SELECT 'bench:' || n, 'noop', "
                             "'{{\"args\": [], \"kwargs\": {{}}}}' FROM generate_series(1, %s) n").format(
                                 sql.Identifier(schema)), (tasks,))
    with PostgresScheduler(dsn, schema=schema) as scheduler:
        ids = scheduler.submit_many([{"key": f"bench:{n}"} for n in range(1, tasks + 1)])
    if len(ids) != tasks:
        raise RuntimeError(f"submitted {len(ids)} tasks, not {tasks}")


def _unfinished(conn: object, schema: str) -> int:
    from psycopg import sql

    return conn.execute(sql.SQL("SELECT count(*) FROM {}.tasks WHERE status NOT IN ('succeeded', 'failed', 'cancelled')")
                        .format(sql.Identifier(schema))).fetchone()[0]


def _run_one(dsn: str, schema: str, index: int, batch: int | None, ready, go, out) -> None:
    """One runner process: connect, say ready, wait for ``go``, run until every task is final, report when."""
    import psycopg

    from fencepost.impl.postgres.scheduler import DatabaseClock, PostgresScheduler
    from fencepost.impl.postgres.payloads import PostgresPayloads
    from fencepost.impl.runner.core import Runner

    try:
        scheduler = PostgresScheduler(dsn, schema=schema)
        payloads = PostgresPayloads(dsn, schema=schema)
        clock = DatabaseClock(dsn, schema=schema)
        options = {} if batch is None else {"batch": batch}  # None: whatever this code's runner does by default
        runner = Runner(name=f"bench{index}", workers=WORKERS, clock=clock, lease=LEASE, scheduler=scheduler,
                        functions={"noop": noop}, payloads=payloads, **options)
        with psycopg.connect(dsn, autocommit=True) as observer:
            ready.put(index)
            if not go.wait(BOUND):
                raise RuntimeError("never released")
            runner.start()
            try:
                while True:
                    runner.wait_idle(BOUND)
                    if not _unfinished(observer, schema):
                        break
                end = time.monotonic()
            finally:
                runner.stop(BOUND)
        for thing in (scheduler, payloads, clock):
            thing.close()
        out.put((index, end, None))
    except BaseException as exc:  # reported, so the parent does not wait out its bound
        out.put((index, None, f"{type(exc).__name__}: {exc}"))
        raise


def turn(dsn: str, tasks: int, processes: int, batch: int | None) -> float:
    """Seconds for ``processes`` shared runners of ``WORKERS`` slots to run ``tasks`` no-ops on a fresh schema."""
    from fencepost.impl.postgres.scheduler import drop_schema, temporary_schema_name

    schema = temporary_schema_name("fp_bench_runner")
    ctx = multiprocessing.get_context("spawn")
    try:
        _fill(dsn, schema, tasks)
        ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
        procs = [ctx.Process(target=_run_one, args=(dsn, schema, i, batch, ready, go, out), daemon=True)
                 for i in range(processes)]
        for p in procs:
            p.start()
        for _ in procs:
            ready.get(timeout=BOUND)
        start = time.monotonic()
        go.set()
        ends = [out.get(timeout=BOUND) for _ in procs]
        for p in procs:
            p.join(BOUND)
        failed = [error for _, _, error in ends if error]
        if failed:
            raise RuntimeError(f"a runner process failed: {failed[0]}")
        return max(end for _, end, _ in ends) - start
    finally:
        drop_schema(dsn, schema)


def measure(dsn: str, tasks: int, rounds: int, counts: Sequence[int] = PROCESS_COUNTS,
            settings: Sequence[int | None] = SETTINGS,
            progress: Callable[[str], None] | None = None) -> dict[tuple[int, int | None], list[float]]:
    """Every turn's seconds, by (processes, batch): the settings alternate ``rounds`` times for each count."""
    seconds: dict[tuple[int, int | None], list[float]] = {}
    for processes in counts:
        for number in range(rounds):
            for batch in settings:
                took = turn(dsn, tasks, processes, batch)
                seconds.setdefault((processes, batch), []).append(took)
                if progress:
                    progress(f"  {processes} process(es), {_label(batch)}, round {number + 1}: "
                             f"{tasks / took:,.0f} tasks/s (load {os.getloadavg()[0]:.1f})")
    return seconds


def format_table(seconds: dict[tuple[int, int | None], list[float]], tasks: int,
                 counts: Sequence[int] = PROCESS_COUNTS, settings: Sequence[int | None] = SETTINGS) -> list[str]:
    """tasks/s of each setting (best turn, median in brackets) per process count, and default over single calls."""
    lines = [f"{'processes':>9}" + "".join(f"  {_label(b):>26}" for b in settings) + "  default / single"]
    for processes in counts:
        cells, best = [], {}
        for batch in settings:
            turns = seconds[processes, batch]
            best[batch] = tasks / min(turns)
            cells.append(f"{best[batch]:>12,.0f}/s ({tasks / statistics.median(turns):>7,.0f})")
        ratio = best[None] / best[1] if None in best and 1 in best else float("nan")
        lines.append(f"{processes:>9}" + "".join(f"  {cell:>26}" for cell in cells) + f"  {ratio:>15.2f}x")
    return lines


def run(dsn: str, quick: bool, tasks: int | None = None, rounds: int | None = None) -> int:
    """Measure and print the table (``fencepost bench --shared-runner``); the caller has checked ``dsn``.

    ``tasks`` per turn and ``rounds`` (None: the defaults, or the quick ones)."""
    from fencepost.bench.postgres import server_line

    tasks = tasks or (QUICK_TASKS if quick else TASKS)
    rounds = rounds or (1 if quick else ROUNDS)
    print(f"fencepost bench --shared-runner: {server_line(dsn)}", flush=True)
    print(f"{tasks:,} no-op tasks per turn through shared Runner(workers={WORKERS}) processes (PostgresScheduler, "
          f"PostgresPayloads, DatabaseClock), {rounds} round(s), best turn (median in brackets)", flush=True)
    seconds = measure(dsn, tasks, rounds, progress=lambda line: print(line, flush=True))
    print()
    print("\n".join(format_table(seconds, tasks)))
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


def one_turn(dsn: str, tasks: int, processes: int, batch: int | None) -> int:
    """``fencepost bench shared-runner-turn``: one timed turn, one line (tasks/s), for a whole-process timer; 0."""
    took = turn(dsn, tasks, processes, batch)
    print(f"{tasks / took:,.0f} tasks/s  ({processes} process(es), {_label(batch)}, "
          f"load {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":  # the same as `fencepost bench shared-runner-turn`
    from fencepost.cli import main

    sys.exit(main(["bench", "shared-runner-turn", *sys.argv[1:]]))
