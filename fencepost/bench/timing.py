"""The timing core every ``fencepost bench`` measurement shares: seeded priorities and turn-taking repetitions.

``timed`` runs the loops it is given in turns, with the garbage collector
off, as ``timeit`` does; ``bench``, ``bench_durable`` and the other
benchmarks build their loops on it. ``cycle_loop`` and ``bytes_per_task``
are the submit + dispatch + complete cycle and the memory figure, over
whatever scheduler factory they are given: nothing here knows a particular
scheduler.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Priorities are drawn uniformly from range(PRIORITY_LEVELS).
PRIORITY_LEVELS = 8
#: Lease length for the benchmark's dispatches; the clock never reaches it.
DURATION = 1_000_000
#: Untimed cycles before each timed repetition, to bring that loop's data back into cache.
WARM_CYCLES = 500


@dataclass(frozen=True)
class Timing:
    """Nanoseconds per cycle over ``repeats`` repetitions of ``cycles`` cycles each."""

    best_ns: float
    median_ns: float
    cycles: int
    repeats: int



def priorities(size: int, cycles: int, seed: int) -> tuple[list[int], list[int]]:
    """The initial ``size`` priorities and the ``cycles`` submitted during timing."""
    rng = random.Random(seed)
    initial = [rng.randrange(PRIORITY_LEVELS) for _ in range(size)]
    during = [rng.randrange(PRIORITY_LEVELS) for _ in range(cycles)]
    return initial, during


def timed(loops: dict[object, Callable[[int], None]], repeats: int, cycles: int,
          warm: int = WARM_CYCLES) -> dict[object, Timing]:
    """Time each loop ``repeats`` times, taking turns, so all of them see the same machine.

    Each loop is called with the number of cycles to run. One untimed round
    comes first (allocator pools, the interpreter's specialization), and
    before every timed repetition the same loop runs ``warm`` untimed
    cycles, so it starts with its own data in cache whatever ran before it.
    The garbage collector is off throughout, as in ``timeit``.
    """
    samples: dict[object, list[float]] = {name: [] for name in loops}
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for loop in loops.values():
            loop(cycles)
        for _ in range(repeats):
            for name, loop in loops.items():
                loop(warm)
                start = time.perf_counter_ns()
                loop(cycles)
                samples[name].append((time.perf_counter_ns() - start) / cycles)
    finally:
        if was_enabled:
            gc.enable()
    return {name: Timing(min(got), statistics.median(got), cycles, repeats) for name, got in samples.items()}


def build(factory: Callable[[], object], initial: Sequence[int]) -> object:
    """A scheduler with one worker ``"w"`` of capacity one and ``initial`` pending tasks."""
    scheduler = factory()
    scheduler.add_worker("w", 1)
    submit = scheduler.submit
    for p in initial:
        submit(p)
    return scheduler


def cycle_loop(factory: Callable[[], object], size: int, cycles: int, seed: int = 0) -> Callable[[int], None]:
    """A loop of submit + dispatch + complete with ``size`` tasks pending, up to ``cycles`` per call."""
    initial, during = priorities(size, cycles, seed)
    scheduler = build(factory, initial)
    submit, dispatch, complete = scheduler.submit, scheduler.dispatch, scheduler.complete

    def loop(count: int) -> None:
        for p in during[:count]:
            submit(p)
            lease = dispatch("w", 0, DURATION)
            complete(lease.task_id, lease.token, 0)

    return loop


def bytes_per_task(factory: Callable[[], object], size: int, seed: int = 0) -> float:
    """Bytes ``tracemalloc`` sees allocated while ``size`` tasks are submitted, per task."""
    initial, _ = priorities(size, 0, seed)
    scheduler = factory()
    scheduler.add_worker("w", 1)
    submit = scheduler.submit
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for p in initial:
            submit(p)
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return (after - before) / size
