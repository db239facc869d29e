"""Measure both implementations against the bare heapq floor, and the spec's own speed.

For each size N, a scheduler holds N pending tasks and one worker of capacity
one; a *cycle* is one ``submit`` + ``dispatch`` + ``complete``, so N stays
constant. The *floor* is the bare heap work of such a cycle: one
``heappush`` and one ``heappop`` on a plain list of N ``(-priority, due_at,
id)`` tuples. Both get the same seeded priorities (uniform over
``PRIORITY_LEVELS`` levels) and the clock stays at 0, so the floor's heap and
the indexed scheduler's ready heap hold the same keys at every step. Each
figure is the best of many short repetitions (the median beside it), timed
with ``time.perf_counter_ns`` with the garbage collector off, as ``timeit``
does. The floor and the indexed scheduler at every size take turns, each
repetition after an untimed one of the same loop, so every ratio compares
runs made under the same load on a shared machine.
Memory is what ``tracemalloc`` sees allocated while N tasks are submitted.

``SimpleScheduler`` scans every task on each timed call, so it runs few
cycles and none above ``--simple-max``; the output says so.

``--tricks`` measures instead what each speed trick in ``impl/indexed.py``
buys (``fencepost/bench/tricks.py``).

The spec's speed is the conformance machine (``spec.checkers.machine``) driving the
model and ``IndexedScheduler`` in lockstep, in steps per second, beside a
trivial two-rule machine run the same way, so the figure says how much of the
cost is Hypothesis itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from heapq import heapify, heappop, heappush

from fencepost.bench.timing import (
    PRIORITY_LEVELS,
    Timing,
    bytes_per_task,
    cycle_loop,
    priorities,
    timed,
)
from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.simple import SimpleScheduler

#: Sizes for a full run and for ``--quick``.
FULL_SIZES = (1_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000)
#: The targets the issue sets for IndexedScheduler at TARGET_SIZE, growth measured from BASE_SIZE.
TARGET_SIZE = 1_000_000
BASE_SIZE = 1_000
TARGET_FLOOR_RATIO = 2.5
TARGET_GROWTH_RATIO = 1.6
TARGET_BYTES_PER_TASK = 300


@dataclass(frozen=True)
class Row:
    """Everything measured at one size; ``None`` where a figure was skipped."""

    size: int
    floor: Timing
    indexed: Timing
    simple: Timing | None
    indexed_bytes: float
    simple_bytes: float | None


@dataclass(frozen=True)
class SpecSpeed:
    """Steps per second of the full conformance machine and of a trivial machine."""

    full_steps_per_s: float
    trivial_steps_per_s: float
    full_steps: int
    trivial_steps: int


# ------------------------------------------------------------------ measuring


def floor_loop(size: int, cycles: int, seed: int = 0) -> Callable[[int], None]:
    """A loop of one heappush + one heappop on a heap of ``size`` tuples, up to ``cycles`` per call."""
    initial, during = priorities(size, cycles, seed)
    heap = [(-p, 0, i) for i, p in enumerate(initial, 1)]
    heapify(heap)
    next_id = size + 1

    def loop(count: int) -> None:
        nonlocal next_id
        push, pop = heappush, heappop
        task_id = next_id
        for p in during[:count]:
            push(heap, (-p, 0, task_id))
            pop(heap)
            task_id += 1
        next_id = task_id

    return loop


def measure_floor(size: int, cycles: int, repeats: int, seed: int = 0) -> Timing:
    """The heapq floor alone: ns per heappush + heappop on a heap of ``size`` tuples."""
    return timed({"floor": floor_loop(size, cycles, seed)}, repeats, cycles)["floor"]


def measure_cycle(factory: Callable[[], object], size: int, cycles: int, repeats: int, seed: int = 0) -> Timing:
    """One implementation alone: ns per submit + dispatch + complete with ``size`` tasks pending."""
    return timed({"cycle": cycle_loop(factory, size, cycles, seed)}, repeats, cycles)["cycle"]


def simple_cycles(size: int, cycles: int) -> int:
    """Cycles for ``SimpleScheduler``: its cycle scans every task, so keep the work near 10^6 task visits."""
    return max(3, min(cycles, 1_000_000 // size))


def measure(sizes: Sequence[int], cycles: int, repeats: int, simple_max: int, seed: int = 0,
            progress: Callable[[str], None] = lambda line: None) -> list[Row]:
    """Every figure for every size.

    The floor and the indexed scheduler at every size are built first and
    then take turns (see ``timed``), so the ratios between sizes, not only the
    one against the floor, compare runs made under the same load. The simple
    scheduler and the memory figures are measured afterwards, one at a time.
    """
    loops: dict[object, Callable[[int], None]] = {}
    for size in sizes:
        progress(f"  building {size:,} pending tasks")
        loops["floor", size] = floor_loop(size, cycles, seed)
        loops["indexed", size] = cycle_loop(IndexedScheduler, size, cycles, seed)
    progress(f"  timing floor and indexed, {repeats} turns each")
    timings = timed(loops, repeats, cycles)
    loops.clear()
    rows = []
    for size in sizes:
        simple = None
        if size <= simple_max:
            progress(f"  timing simple at {size:,}")
            simple = measure_cycle(SimpleScheduler, size, simple_cycles(size, cycles), min(repeats, 3), seed)
        progress(f"  memory at {size:,}")
        rows.append(Row(size, timings["floor", size], timings["indexed", size], simple,
                        bytes_per_task(IndexedScheduler, size, seed), bytes_per_task(SimpleScheduler, size, seed)))
    return rows


# ------------------------------------------------------------------ the spec's speed


def _trivial_machine() -> type:
    """Two rules and one invariant over a counter: what Hypothesis costs per step by itself."""
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

    class Counter(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.value = 0

        @rule(amount=st.integers(min_value=0, max_value=3))
        def add(self, amount: int) -> None:
            self.value += amount

        @rule()
        def reset(self) -> None:
            self.value = 0

        @invariant()
        def never_negative(self) -> None:
            assert self.value >= 0

    return Counter


def _steps_per_second(machine: type, examples: int, steps: int) -> tuple[float, int]:
    """Run ``machine`` for ``examples`` derandomized examples; return (steps per second, steps).

    Steps are counted by an added invariant, which Hypothesis runs once as
    each machine starts and once after every step.
    """
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.stateful import invariant, run_state_machine_as_test

    checks, machines = [0], [0]

    class Counted(machine):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            machines[0] += 1

        @invariant(check_during_init=True)
        def count_steps(self) -> None:  # runs once before the first step and after every step
            checks[0] += 1

    config = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    start = time.perf_counter_ns()
    run_state_machine_as_test(Counted, settings=config)
    elapsed = time.perf_counter_ns() - start
    steps = checks[0] - machines[0]
    return steps / (elapsed / 1e9), steps


def spec_speed(examples: int = 50, steps: int = 50, repeats: int = 3) -> SpecSpeed | str:
    """Steps per second of the full machine and the trivial one, or why it is unavailable.

    The two take turns ``repeats`` times (derandomized, so every turn runs the
    same steps) and the fastest turn of each is reported.
    """
    try:
        from fencepost.spec.checkers.machine import conformance_machine

        full_machine = conformance_machine(IndexedScheduler)
    except Exception as exc:  # noqa: BLE001 - the machine is optional for the bench: say why, carry on
        return f"{type(exc).__name__}: {exc}"
    trivial_machine = _trivial_machine()
    full = trivial = (0.0, 0)
    for _ in range(repeats):
        full = max(full, _steps_per_second(full_machine, examples, steps))
        trivial = max(trivial, _steps_per_second(trivial_machine, examples, steps))
    return SpecSpeed(full[0], trivial[0], full[1], trivial[1])


# ------------------------------------------------------------------ reporting


def _ns(timing: Timing | None) -> str:
    if timing is None:
        return "skipped"
    return f"{timing.best_ns:,.0f} ({timing.median_ns:,.0f})"


def format_table(rows: Sequence[Row], simple_max: int) -> str:
    """The timing and memory table, the ratios, and the targets at the largest size."""
    base = rows[0].indexed.best_ns
    header = ("N pending", "heapq floor ns", "indexed ns", "idx/floor", f"idx/idx@{rows[0].size:,}",
              "simple ns", "idx B/task", "simple B/task")
    lines = [[f"{r.size:,}", _ns(r.floor), _ns(r.indexed), f"{r.indexed.best_ns / r.floor.best_ns:.2f}x",
              f"{r.indexed.best_ns / base:.2f}x", _ns(r.simple), f"{r.indexed_bytes:.0f}",
              "-" if r.simple_bytes is None else f"{r.simple_bytes:.0f}"] for r in rows]
    widths = [max(len(header[i]), *(len(line[i]) for line in lines)) for i in range(len(header))]
    out = ["  ".join(h.rjust(w) for h, w in zip(header, widths))]
    out += ["  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in lines]
    out.append("")
    out.append("ns per submit + dispatch + complete cycle, best of the repetitions (median in brackets);")
    out.append(f"priorities uniform over {PRIORITY_LEVELS} levels, clock at 0, gc off while timing.")
    cycles = ", ".join(f"{r.size:,}: {r.indexed.cycles:,} x {r.indexed.repeats}" for r in rows)
    out.append(f"cycles x repetitions (floor and indexed): {cycles}.")
    simple = ", ".join(f"{r.size:,}: {r.simple.cycles:,} x {r.simple.repeats}" for r in rows if r.simple)
    skipped = [f"{r.size:,}" for r in rows if r.simple is None]
    out.append(f"simple: an O(T) scan per timed call, so few cycles ({simple or 'none'})"
               + (f"; skipped above {simple_max:,} ({', '.join(skipped)})." if skipped else "."))
    out.append("")
    out.extend(format_targets(rows))
    return "\n".join(out)


def format_targets(rows: Sequence[Row]) -> list[str]:
    """The issue's three targets, judged at TARGET_SIZE against BASE_SIZE when the run has both."""
    by_size = {row.size: row for row in rows}
    if TARGET_SIZE not in by_size or BASE_SIZE not in by_size:
        return [f"targets: judged only when the sizes include {BASE_SIZE:,} and {TARGET_SIZE:,}."]
    base, last = by_size[BASE_SIZE], by_size[TARGET_SIZE]
    floor_ratio = last.indexed.best_ns / last.floor.best_ns
    growth = last.indexed.best_ns / base.indexed.best_ns
    return [
        f"targets for IndexedScheduler at {TARGET_SIZE:,} pending tasks:",
        _target(f"indexed / heapq floor <= {TARGET_FLOOR_RATIO}x", floor_ratio, TARGET_FLOOR_RATIO, "x"),
        _target(f"indexed / indexed at {BASE_SIZE:,} <= {TARGET_GROWTH_RATIO}x", growth, TARGET_GROWTH_RATIO, "x"),
        _target(f"bytes per pending task <= {TARGET_BYTES_PER_TASK}", last.indexed_bytes, TARGET_BYTES_PER_TASK, ""),
        f"  (for scale: the heapq floor itself grows {last.floor.best_ns / base.floor.best_ns:.2f}x "
        f"from {BASE_SIZE:,} to {TARGET_SIZE:,})",
    ]


def _target(label: str, value: float, limit: float, unit: str) -> str:
    verdict = "holds" if value <= limit else "MISSED"
    shown = f"{value:.2f}{unit}" if unit else f"{value:.0f}"
    return f"  {label:<36} {shown:>8}  {verdict}"


def format_spec_speed(speed: SpecSpeed | str) -> str:
    if isinstance(speed, str):
        return f"spec speed: unavailable ({speed})"
    return (
        f"spec speed: full conformance machine (model + IndexedScheduler) {speed.full_steps_per_s:,.0f} steps/s "
        f"({speed.full_steps:,} steps); trivial two-rule machine {speed.trivial_steps_per_s:,.0f} steps/s "
        f"({speed.trivial_steps:,} steps); the full machine costs "
        f"{speed.trivial_steps_per_s / speed.full_steps_per_s:.1f}x a trivial step"
    )


#: ``--durable`` defaults: (pending tasks, cycles, repetitions, warm-up cycles), full and quick.
#: Few cycles: with synchronous=FULL every transaction is an fsync.
DURABLE_RUN = (100_000, 60, 15, 10)
DURABLE_QUICK = (1_000, 20, 5, 5)
