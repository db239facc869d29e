"""The timing core every ``fencepost bench`` measurement shares: seeded priorities and turn-taking repetitions.

``timed`` runs the loops it is given in turns, with the garbage collector
off, as ``timeit`` does; ``bench``, ``bench_durable`` and the other
benchmarks build their loops on it. Nothing here knows a scheduler.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable
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
