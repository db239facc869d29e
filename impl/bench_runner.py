"""``fencepost bench --runner``: the runner's throughput beside ``ThreadPoolExecutor``'s, in one run.

Both run the same no-op function N times on 4 threads: the executor as
``submit`` N times then ``shutdown(wait=True)``; the runner (default clock,
default scheduler, trace kept) as ``submit`` N times then ``wait_idle``.
A figure is the whole wall time of that, from the first submit to the last
task done, pool start and stop included. The two take turns, ``repeats``
times each, and the best turn of each is reported (the median beside it),
so both are measured under the same load on a shared machine. The runner's
*overhead per task* is its time per task less the executor's.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fencepost.impl.runner import Runner

#: Tasks per turn, as the issue sets it.
TASKS = 100_000
#: Pool size of both, as the issue sets it.
WORKERS = 4
#: Turns each (the best is reported).
REPEATS = 3
#: The runner must reach this fraction of the executor's throughput.
TARGET_RATIO = 0.5
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


def runner_turn(tasks: int, workers: int = WORKERS) -> float:
    """Seconds for ``Runner(workers=workers)`` to run ``tasks`` no-ops (to ``wait_idle``)."""
    start = time.perf_counter()
    with Runner(workers=workers) as runner:
        for _ in range(tasks):
            runner.submit(noop)
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

    @property
    def ratio(self) -> float:
        """The runner's throughput as a fraction of the executor's (best turns)."""
        return self.executor_best / self.runner_best

    @property
    def overhead_us(self) -> float:
        """Microseconds per task the runner spends beyond the executor (best turns)."""
        return (self.runner_best - self.executor_best) / self.tasks * 1e6


def measure_runner(tasks: int = TASKS, repeats: int = REPEATS,
                   turns: tuple[Callable[[int], float], Callable[[int], float]] = (executor_turn, runner_turn)) -> RunnerBench:
    """Alternate executor and runner turns ``repeats`` times each; O(tasks x repeats)."""
    executor, runner = [], []
    for _ in range(repeats):
        executor.append(turns[0](tasks))
        runner.append(turns[1](tasks))
    return RunnerBench(tasks, repeats, min(executor), statistics.median(executor), min(runner), statistics.median(runner))


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
