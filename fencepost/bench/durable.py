"""``fencepost bench --durable``: DurableScheduler against a bare SQLite floor, its reopen time and its size.

The *cycle* is ``bench``'s: one ``submit`` + ``dispatch`` + ``complete`` with
N tasks pending and one worker of capacity one, the clock at 0. Each of the
three calls is one committed transaction, so the *floor* is three
single-row write transactions on a bare two-column table (an INSERT, then
two UPDATEs of that row, each ``BEGIN IMMEDIATE`` ... ``COMMIT``) with the
same settings as the scheduler's file: WAL, exclusive locking, and the same
``synchronous``. Floor and cycle take turns (``bench.timed``), for each
``synchronous`` setting, in one run. With ``FULL`` both are mostly fsync;
with ``NORMAL`` they are SQLite's and Python's own work.

Reopen is the time to open a file of ``REOPEN_SIZE`` tasks (some running)
and answer the first ``task()``: what a restarted process pays before its
first call. Size is the file's bytes on disk per task after a checkpoint.

The *batch rows* (``fencepost bench --durable --batches``, and the
DurableScheduler line of ``fencepost bench --postgres``, which runs the same
code): jobs per second of a job claimed and acknowledged, at batch size B
one ``dispatch_many(limit=B)`` + one ``complete_many`` of the B leases (one
``dispatch`` + one ``complete`` at B = 1) by a worker of capacity B, with
``synchronous=FULL``, the tasks submitted before timing and the clock at 0.
Batch sizes take turns within each round, ``TURN_JOBS`` jobs at a time,
each in its own file; each figure is the best round.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from fencepost.bench.timing import DURATION, Timing, priorities, timed
from fencepost.impl.durable import SYNCHRONOUS_SETTINGS, DurableScheduler

#: Tasks in the file whose reopen is timed (the issue's figure).
REOPEN_SIZE = 100_000
#: Opens timed; the best is reported.
REOPEN_REPEATS = 5
#: The issue's targets.
TARGET_FLOOR_RATIO = 2.5
TARGET_REOPEN_S = 2.0
#: Leases left running in the reopened file, so opening has leases to load too.
RUNNING_AT_REOPEN = 100
#: The batch rows: batch sizes, and the issue's target at TARGET_BATCH over batch 1 (issue 22).
BATCH_SIZES = (1, 10)
TARGET_BATCH = 10
TARGET_BATCH_RATIO = 5.0
#: Timed jobs per batch row and round (every commit is an fsync), quick and full; rounds; untimed warm-up cycles.
BATCH_JOBS = 400
QUICK_BATCH_JOBS = 100
BATCH_ROUNDS = 3
BATCH_WARM_CYCLES = 50
#: Jobs each batch size runs in its turn before the next size's turn (batch_rates).
TURN_JOBS = 20
#: The write-ahead log's size once SQLite reuses it: its header, then the frames (a 24-byte header
#: and a page each) up to the automatic checkpoint (SQLite's defaults: 4096-byte pages, 1000 pages).
WAL_STEADY_BYTES = 32 + 1000 * (24 + 4096)
#: At most this many warm-up cycles to fill the log (two commits a cycle, a page or more each).
WAL_FILL_CYCLES = 500


@dataclass(frozen=True)
class DurableRow:
    """One ``synchronous`` setting's cycle and floor."""

    synchronous: str
    pending: int
    floor: Timing
    cycle: Timing


@dataclass(frozen=True)
class DurableReport:
    rows: list[DurableRow]
    reopen_s: float
    reopen_tasks: int
    bytes_per_task: float
    folder: str


def floor_loop(path: Path, synchronous: str) -> Callable[[int], None]:
    """Three single-row write transactions per cycle on a bare table, the scheduler's settings."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute("CREATE TABLE floor (id INTEGER PRIMARY KEY, value INTEGER NOT NULL)")
    execute = conn.execute

    def loop(count: int) -> None:
        for _ in range(count):
            execute("BEGIN IMMEDIATE")
            row = execute("INSERT INTO floor (value) VALUES (0)").lastrowid
            execute("COMMIT")
            execute("BEGIN IMMEDIATE")
            execute("UPDATE floor SET value = 1 WHERE id = ?", (row,))
            execute("COMMIT")
            execute("BEGIN IMMEDIATE")
            execute("UPDATE floor SET value = 2 WHERE id = ?", (row,))
            execute("COMMIT")

    return loop


def build(path: Path, size: int, synchronous: str = "FULL", seed: int = 0, running: int = 0) -> DurableScheduler:
    """A scheduler file with worker ``"w"`` (capacity one) and ``size`` pending tasks, loaded in one batch.

    With ``running``, a worker ``"r"`` holds that many of them under leases.
    """
    initial, _ = priorities(size, 0, seed)
    scheduler = DurableScheduler(path, synchronous=synchronous)
    with scheduler.batch():
        scheduler.add_worker("w", 1)
        for p in initial:
            scheduler.submit(p)
        if running:
            scheduler.add_worker("r", running)
            for _ in range(running):
                scheduler.dispatch("r", 0, DURATION)
    return scheduler


def cycle_loop(path: Path, size: int, cycles: int, synchronous: str, seed: int = 0) -> Callable[[int], None]:
    """``bench.cycle_loop`` on a DurableScheduler file."""
    _, during = priorities(size, cycles, seed)
    scheduler = build(path, size, synchronous, seed)
    submit, dispatch, complete = scheduler.submit, scheduler.dispatch, scheduler.complete

    def loop(count: int) -> None:
        for p in during[:count]:
            submit(p)
            lease = dispatch("w", 0, DURATION)
            complete(lease.task_id, lease.token, 0)

    return loop


def job_cycle(s: Any, worker: str, batch: int, duration: int = DURATION) -> Callable[[], None]:
    """One cycle of ``batch`` jobs on scheduler ``s`` at time 0: dispatch + complete, or their batches above 1."""
    if batch == 1:
        def cycle() -> None:
            lease = s.dispatch(worker, 0, duration)
            assert lease is not None and s.complete(lease.task_id, lease.token, 0).accepted
        return cycle

    def cycle() -> None:
        leases = s.dispatch_many(worker, 0, duration, batch)
        assert len(leases) == batch
        assert all(o.accepted for o in s.complete_many([(lease.task_id, lease.token) for lease in leases], 0))
    return cycle


def batch_rates(jobs: int, batches: tuple[int, ...] = BATCH_SIZES, folder: str | None = None) -> dict[int, float]:
    """DurableScheduler (``synchronous=FULL``) jobs per second at each batch size, timed in turns.

    One file per batch size, side by side under ``folder``, each with
    ``jobs`` tasks (and the warm-up's) submitted first, then warmed up until
    its write-ahead log is full size (``WAL_STEADY_BYTES``): until then every
    commit appends to the log, and on ext4 an fdatasync that grows a file
    also commits the file system's journal (measured here: 210 to 330 us a
    commit against 120 to 200 once the log is reused), which a running
    scheduler pays only in its first thousand pages written, and a short run
    at batch 10 would pay throughout. Then the sizes take turns,
    ``TURN_JOBS`` jobs at a time, so that every size sees the same disk: a
    shared disk's fsync time moves by several times within seconds, and
    whole runs one after the other measure that as much as the batches.
    """
    with tempfile.TemporaryDirectory(prefix="fp-bench-batches-", dir=folder) as work, ExitStack() as files:
        cycles: dict[int, Callable[[], None]] = {}
        for batch in batches:
            path = Path(work) / f"batch-{batch}.db"
            s = files.enter_context(DurableScheduler(path))
            s.add_worker("w", batch)
            s.submit_many([{}] * (jobs + (BATCH_WARM_CYCLES + WAL_FILL_CYCLES) * batch))
            cycles[batch] = job_cycle(s, "w", batch)
            for _ in range(BATCH_WARM_CYCLES):
                cycles[batch]()
            log = path.with_name(path.name + "-wal")
            for _ in range(WAL_FILL_CYCLES):  # bounded: a cycle commits twice, a page or more each
                if log.stat().st_size >= WAL_STEADY_BYTES:
                    break
                cycles[batch]()
        spent = dict.fromkeys(batches, 0.0)
        left = {batch: jobs // batch for batch in batches}  # cycles still to time
        while any(left.values()):
            for batch, cycle in cycles.items():
                turn = min(left[batch], max(1, TURN_JOBS // batch))
                start = time.perf_counter()
                for _ in range(turn):
                    cycle()
                spent[batch] += time.perf_counter() - start
                left[batch] -= turn
        return {batch: jobs // batch * batch / spent[batch] for batch in batches}


def measure_batches(jobs: int, rounds: int, batches: tuple[int, ...] = BATCH_SIZES, folder: str | None = None,
                    progress: Callable[[str], None] = lambda line: None) -> dict[int, float]:
    """The best jobs/s at each batch size over ``rounds`` rounds of ``batch_rates``."""
    best: dict[int, float] = {}
    for round_ in range(rounds):
        rates = batch_rates(jobs, batches, folder)
        for batch, rate in rates.items():
            best[batch] = max(rate, best.get(batch, 0.0))
        progress(f"  round {round_ + 1}/{rounds}: DurableScheduler, "
                 + ", ".join(f"batch {batch}: {rate:,.0f} jobs/s" for batch, rate in rates.items())
                 + f" (load {os.getloadavg()[0]:.1f})")
    return best


def rates_line(best: dict[int, float]) -> str:
    """The batch rows in one line, as ``fencepost bench --postgres`` prints them too."""
    rates = ", ".join(f"batch {b}: {rate:,.0f}" for b, rate in best.items())
    return f"DurableScheduler (SQLite, synchronous=FULL, 1 process): {rates} jobs/s"


def batch_ratio(best: dict[int, float]) -> float | None:
    """TARGET_BATCH's rate over batch 1's, if both were measured."""
    one, many = best.get(1), best.get(TARGET_BATCH)
    return many / one if one and many else None


def format_batches(best: dict[int, float]) -> str:
    """The batch rows and the target, judged."""
    ratio = batch_ratio(best)
    label = f"target: DurableScheduler batch {TARGET_BATCH} / its batch 1 >= {TARGET_BATCH_RATIO}x"
    verdict = (f"not measured (needs batches 1 and {TARGET_BATCH})" if ratio is None
               else f"{ratio:.2f}x  {'holds' if ratio >= TARGET_BATCH_RATIO else 'MISSED'}")
    return "\n".join([
        rates_line(best),
        "jobs/s: a job is claimed and acknowledged; at batch B, B jobs per dispatch_many and per complete_many "
        f"(dispatch + complete at 1), every call one committed transaction; the sizes in turns of {TURN_JOBS} jobs, "
        "each on its own file; best of the rounds.",
        f"{label}   {verdict}",
    ])


def reopen_seconds(path: Path, repeats: int = REOPEN_REPEATS) -> float:
    """Best time to open the file and answer ``task(1)``."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        scheduler = DurableScheduler(path)
        scheduler.task(1)
        best = min(best, time.perf_counter() - started)
        scheduler.close()
    return best


def measure_durable(pending: int, cycles: int, repeats: int, warm: int = 10, reopen_size: int = REOPEN_SIZE,
                    folder: str | None = None, progress: Callable[[str], None] = lambda line: None) -> DurableReport:
    """Every durable figure, in a fresh folder under ``folder`` (default the system's temporary one)."""
    work = Path(tempfile.mkdtemp(prefix="fencepost-bench-", dir=folder))
    try:
        rows = []
        for synchronous in SYNCHRONOUS_SETTINGS:
            progress(f"  synchronous={synchronous}: building {pending:,} pending tasks, timing cycle and floor")
            loops = {
                "floor": floor_loop(work / f"floor-{synchronous}.db", synchronous),
                "cycle": cycle_loop(work / f"cycle-{synchronous}.db", pending, cycles, synchronous),
            }
            timings = timed(loops, repeats, cycles, warm)
            rows.append(DurableRow(synchronous, pending, timings["floor"], timings["cycle"]))
        progress(f"  building a {reopen_size:,}-task file and timing its reopen")
        path = work / "reopen.db"
        build(path, reopen_size, "NORMAL", running=RUNNING_AT_REOPEN).close()  # closing checkpoints the WAL
        size = path.stat().st_size
        return DurableReport(rows, reopen_seconds(path), reopen_size, size / reopen_size, str(work.parent))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def format_durable(report: DurableReport) -> str:
    """The table, the reopen time and the size, each judged against its target."""
    header = ("synchronous", "N pending", "floor us/cycle", "durable us/cycle", "durable/floor")
    lines = [[r.synchronous, f"{r.pending:,}", _us(r.floor), _us(r.cycle), f"{r.cycle.best_ns / r.floor.best_ns:.2f}x"]
             for r in report.rows]
    widths = [max(len(header[i]), *(len(line[i]) for line in lines)) for i in range(len(header))]
    out = ["  ".join(h.rjust(w) for h, w in zip(header, widths))]
    out += ["  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in lines]
    out.append("")
    out.append("us per submit + dispatch + complete (three committed transactions), best of the repetitions "
               "(median in brackets); floor: three single-row write transactions, same settings; "
               f"files under {report.folder}.")
    for row in report.rows:
        ratio = row.cycle.best_ns / row.floor.best_ns
        verdict = "holds" if ratio <= TARGET_FLOOR_RATIO else "MISSED"
        out.append(f"  durable / floor <= {TARGET_FLOOR_RATIO}x with synchronous={row.synchronous}: {ratio:.2f}x  {verdict}")
    verdict = "holds" if report.reopen_s < TARGET_REOPEN_S else "MISSED"
    out.append(f"  reopen of a {report.reopen_tasks:,}-task file < {TARGET_REOPEN_S:.0f} s: "
               f"{report.reopen_s * 1000:,.0f} ms  {verdict}")
    out.append(f"  bytes on disk per task: {report.bytes_per_task:.1f} ({report.reopen_tasks:,} tasks, after a checkpoint)")
    return "\n".join(out)


def _us(timing: Timing) -> str:
    return f"{timing.best_ns / 1000:,.1f} ({timing.median_ns / 1000:,.1f})"


def default_folder() -> str:
    """Where the files go: the system's temporary folder (``TMPDIR``), so on disk unless told otherwise."""
    return os.environ.get("TMPDIR") or tempfile.gettempdir()
