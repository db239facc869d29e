"""``fencepost bench --runner``: the runner's throughput beside ``ThreadPoolExecutor``'s, in one run.

Both run the same no-op function N times on 1 and on 4 threads: the executor
as ``submit`` N times then ``shutdown(wait=True)``; the runner (default clock,
default scheduler, default retention, no trace) as ``submit`` N times then
``wait_idle``.
A figure is the whole wall time of that, from the first submit to the last
task done, pool start and stop included. The two take turns, ``repeats``
times each, and the best turn of each is reported (the median beside it),
so both are measured under the same load on a shared machine. The runner's
*overhead per task* is its time per task less the executor's.

Run as a script (``python fencepost/bench/runner.py --workers 4 --batch 4``) it times one
runner turn and prints one line, for whole-process timings of two settings or two
commits side by side; ``--batch default`` passes no ``batch``, so the same file
times the runner of a commit from before the setting. ``--durable`` gives the
runner a fresh ``DurableScheduler`` (a file in the temporary folder,
``synchronous=FULL``) with the tasks submitted before the turn starts.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fencepost.impl.runner.core import Runner

#: Tasks per turn, as the issue sets it.
TASKS = 100_000
#: Pool size of both for the target, as the issue sets it.
WORKERS = 4
#: Pool sizes measured, side by side.
WORKER_COUNTS = (1, 4)
#: Turns each (the best is reported).
REPEATS = 3
#: The runner must reach this fraction of the executor's throughput with ``WORKERS`` threads.
TARGET_RATIO = 0.8
#: Real seconds a runner turn may take before it counts as hung.
TURN_BOUND = 600.0


def noop(ctx: object = None) -> None:
    """The work both pools run: nothing."""


def executor_turn(tasks: int, workers: int = WORKERS) -> float:
    """Seconds for ``ThreadPoolExecutor(workers)`` to run ``tasks`` no-ops."""
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        for _ in range(tasks):
            pool.submit(noop, None)
    return time.perf_counter() - start


def runner_turn(tasks: int, workers: int = WORKERS, batch: int | None = None) -> float:
    """Seconds for ``Runner(workers=workers)`` to run ``tasks`` no-ops (to ``wait_idle``); ``batch`` if given."""
    options = {} if batch is None else {"batch": batch}
    start = time.perf_counter()
    with Runner(workers=workers, **options) as runner:
        for _ in range(tasks):
            runner.submit(noop)
        runner.wait_idle(TURN_BOUND)
    return time.perf_counter() - start


def durable_turn(tasks: int, workers: int = WORKERS, batch: int | None = None) -> float:
    """Seconds for ``Runner(workers=workers)`` on a fresh ``DurableScheduler`` to run ``tasks`` no-ops
    submitted before it starts (from ``start`` to ``wait_idle``)."""
    import tempfile
    from pathlib import Path

    from fencepost.impl.durable import DurableScheduler

    options = {} if batch is None else {"batch": batch}
    with tempfile.TemporaryDirectory() as folder, DurableScheduler(Path(folder) / "runner.db") as scheduler:
        runner = Runner(workers=workers, scheduler=scheduler, **options)
        for _ in range(tasks):
            runner.submit(noop)
        start = time.perf_counter()
        with runner:
            runner.wait_idle(TURN_BOUND)
        return time.perf_counter() - start


@dataclass(frozen=True)
class RunnerBench:
    """Best and median seconds per turn of each, over ``repeats`` alternating turns of ``tasks`` tasks."""

    tasks: int
    repeats: int
    executor_best: float
    executor_median: float
    runner_best: float
    runner_median: float
    workers: int = WORKERS

    @property
    def ratio(self) -> float:
        """The runner's throughput as a fraction of the executor's (best turns)."""
        return self.executor_best / self.runner_best

    @property
    def overhead_us(self) -> float:
        """Microseconds per task the runner spends beyond the executor (best turns)."""
        return (self.runner_best - self.executor_best) / self.tasks * 1e6


def measure_runner(tasks: int = TASKS, repeats: int = REPEATS,
                   turns: tuple[Callable[..., float], Callable[..., float]] = (executor_turn, runner_turn),
                   workers: int = WORKERS) -> RunnerBench:
    """Alternate executor and runner turns of ``workers`` threads ``repeats`` times each; O(tasks x repeats)."""
    executor, runner = [], []
    for _ in range(repeats):
        executor.append(turns[0](tasks) if workers == WORKERS else turns[0](tasks, workers))
        runner.append(turns[1](tasks) if workers == WORKERS else turns[1](tasks, workers))
    return RunnerBench(tasks, repeats, min(executor), statistics.median(executor), min(runner), statistics.median(runner),
                       workers)


def measure_all(tasks: int = TASKS, repeats: int = REPEATS) -> list[RunnerBench]:
    """``measure_runner`` for each of ``WORKER_COUNTS``, in one run."""
    return [measure_runner(tasks, repeats, workers=workers) for workers in WORKER_COUNTS]


def format_runner_benches(benches: list[RunnerBench]) -> str:
    """One table for every pool size: both pools' tasks/s and us/task, the overhead, the ratio; then the verdict."""
    first = benches[0]
    lines = [
        f"{first.tasks:,} no-op tasks, best of {first.repeats} alternating turns (median in brackets)",
        f"{'workers':>7}  {'ThreadPoolExecutor':>28}  {'Runner':>28}  {'overhead':>14}  {'ratio':>5}",
    ]
    for b in benches:
        def cell(best: float, median: float) -> str:
            return f"{b.tasks / best:>9,.0f}/s ({b.tasks / median:>7,.0f}) {best / b.tasks * 1e6:>5.1f} us"

        lines.append(f"{b.workers:>7}  {cell(b.executor_best, b.executor_median):>28}  "
                     f"{cell(b.runner_best, b.runner_median):>28}  {b.overhead_us:>6.1f} us/task  {b.ratio:>4.2f}x")
    target = next((b for b in benches if b.workers == WORKERS), benches[-1])
    verdict = "holds" if target.ratio >= TARGET_RATIO else "MISSES"
    lines.append(f"target: Runner(workers={WORKERS}) >= {TARGET_RATIO}x ThreadPoolExecutor({WORKERS})'s tasks/s   "
                 f"{target.ratio:.2f}x  {verdict}")
    return "\n".join(lines)


def format_runner_bench(bench: RunnerBench) -> str:
    """The side-by-side table, the per-task figures and the target's verdict."""
    def row(name: str, best: float, median: float) -> str:
        return (f"{name:<28} {best:>8.2f} s ({median:.2f})  {bench.tasks / best:>10,.0f} tasks/s"
                f"  {best / bench.tasks * 1e6:>6.1f} us/task")

    verdict = "holds" if bench.ratio >= TARGET_RATIO else "MISSES"
    return "\n".join([
        f"{bench.tasks:,} no-op tasks on {WORKERS} threads, best of {bench.repeats} alternating turns (median in brackets)",
        row(f"ThreadPoolExecutor({WORKERS})", bench.executor_best, bench.executor_median),
        row(f"Runner(workers={WORKERS})", bench.runner_best, bench.runner_median),
        f"runner overhead per task beyond the executor: {bench.overhead_us:.1f} us",
        f"target: runner >= {TARGET_RATIO}x the executor's throughput   {bench.ratio:.2f}x  {verdict}",
    ])


def turn(tasks: int, workers: int, batch: int | None, durable: bool) -> int:
    """``fencepost bench runner-turn``: one timed turn, one line (tasks/s), for a whole-process timer; 0."""
    took = (durable_turn if durable else runner_turn)(tasks, workers, batch)
    where = "DurableScheduler" if durable else "its own scheduler"
    print(f"{tasks / took:,.0f} tasks/s  (Runner(workers={workers}) on {where}, batch {'default' if batch is None else batch})")
    return 0


if __name__ == "__main__":  # the same as `fencepost bench runner-turn`
    from fencepost.cli import main

    sys.exit(main(["bench", "runner-turn", *sys.argv[1:]]))
