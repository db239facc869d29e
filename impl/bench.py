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
buys (``impl/bench_tricks.py``).

The spec's speed is the conformance machine (``spec.checkers.machine``) driving the
model and ``IndexedScheduler`` in lockstep, in steps per second, beside a
trivial two-rule machine run the same way, so the figure says how much of the
cost is Hypothesis itself.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from heapq import heapify, heappop, heappush

from fencepost.impl.bench_timing import (  # noqa: F401  (WARM_CYCLES and the rest stay importable from here)
    DURATION,
    PRIORITY_LEVELS,
    WARM_CYCLES,
    Timing,
    build,
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
    except Exception as exc:  # the machine is optional for the bench: say why, carry on
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


# ------------------------------------------------------------------ command line


def _sizes(text: str) -> list[int]:
    """``--sizes``: comma-separated ints >= 1 (underscores allowed, as in 1_000_000)."""
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        sizes = []
    if not sizes or any(size < 1 for size in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be comma-separated ints >= 1, got {text!r}")
    return sizes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", type=_sizes, default=None,
                        help="comma-separated pending-task counts (default 1000,100000,1000000; "
                        "the ratios compare every size with the first)")
    parser.add_argument("--quick", action="store_true",
                        help="sizes 1000,10000 and fewer cycles: a smoke run in seconds")
    parser.add_argument("--cycles", type=int, default=None,
                        help="cycles per repetition (default 500, quick 200); short repetitions "
                        "fit in one scheduler time slice on a busy machine")
    parser.add_argument("--repeats", type=int, default=None,
                        help="repetitions per figure; the best is reported (default 101, quick 15)")
    parser.add_argument("--simple-max", type=int, default=100_000,
                        help="largest size SimpleScheduler is timed at (default 100000)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the priorities (default 0)")
    parser.add_argument("--no-spec", action="store_true", help="skip the spec speed measurement")
    parser.add_argument("--postgres", action="store_true",
                        help="instead: PostgresScheduler vs a bare SKIP LOCKED queue on $FENCEPOST_PG_DSN "
                        "(or --dsn), 1 and 4 client processes (impl/bench_postgres.py)")
    parser.add_argument("--dsn", default=None, help="the PostgreSQL server for --postgres (default $FENCEPOST_PG_DSN)")
    parser.add_argument("--durable", action="store_true",
                        help="instead: DurableScheduler against a bare SQLite floor (both synchronous settings), "
                        "its reopen time at 100,000 tasks and its bytes on disk per task; files under TMPDIR")
    parser.add_argument("--batches", action="store_true",
                        help="with --durable: instead, only DurableScheduler's batch rows of --postgres (batch sizes "
                        "1 and 10, synchronous=FULL, alternating rounds) and their target, no server needed; "
                        "--cycles sets the jobs per round (default 400, quick 100), --repeats the rounds (default 3)")
    parser.add_argument("--runner", action="store_true",
                        help="instead: 100,000 no-op tasks through Runner beside ThreadPoolExecutor, 1 and 4 workers")
    parser.add_argument("--shared-runner", action="store_true",
                        help="instead: no-op tasks through 1 and 2 processes of shared Runner(workers=4) on "
                        "$FENCEPOST_PG_DSN (or --dsn), batch=1 beside the default batch, alternating "
                        "(impl/bench_shared_runner.py); --tasks per turn (default 2000, quick 300)")
    parser.add_argument("--tricks", action="store_true",
                        help="instead: IndexedScheduler beside itself with each of its speed tricks taken out "
                        "(impl/bench_tricks.py), sizes 10000,100000 unless --sizes; what each trick buys")
    parser.add_argument("--soak", action="store_true",
                        help="instead: 1,000,000 no-op tasks through a Runner with a retention window, on the "
                        "default scheduler and on DurableScheduler, the heap (and file) printed at intervals")
    parser.add_argument("--idle-postgres", type=float, default=None, metavar="SECONDS",
                        help="with --soak: instead, a shared runner on $FENCEPOST_PG_DSN idle for SECONDS on the "
                        "database clock, its heap and tables printed at intervals")
    parser.add_argument("--tasks", type=int, default=None,
                        help="with --runner: tasks per turn (default 100000); with --soak: tasks per scheduler; "
                        "with --shared-runner: tasks per turn")


def run(args: argparse.Namespace) -> int:
    """Measure and print the table (and the spec speed unless ``--no-spec``); 0, or 2 on bad arguments."""
    from fencepost.spec.arguments import UsageError

    for name in ("cycles", "repeats", "simple_max", "tasks"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    if args.postgres and (args.durable or args.runner):
        raise UsageError("--postgres is a separate run: give it without --durable or --runner")
    if args.shared_runner:
        if args.postgres or args.durable or args.runner or args.soak or args.tricks:
            raise UsageError("--shared-runner is a separate run: give it without --postgres, --durable, --runner, "
                             "--soak or --tricks")
        return _run_postgres(args, shared_runner=True)
    if args.batches and not args.durable:
        raise UsageError("--batches goes with --durable (the batch rows of --postgres run alone)")
    if args.postgres:
        return _run_postgres(args)
    if args.durable and args.runner:
        raise UsageError("--durable and --runner are separate runs: give one of them")
    if args.tricks:
        if args.durable or args.runner or args.soak or args.tasks is not None:
            raise UsageError("--tricks is a separate run: give it without --durable, --runner, --soak or --tasks")
        from fencepost.impl import bench_tricks

        return bench_tricks.run(args.sizes, args.cycles, args.repeats, args.seed)
    if args.durable:
        if args.tasks is not None:
            raise UsageError("--tasks goes with --runner")
        return run_durable(args)
    if args.soak:
        if args.runner or args.durable:
            raise UsageError("--soak is a separate run: give it without --durable or --runner")
        from fencepost.impl import bench_soak

        return bench_soak.run(args)
    if args.idle_postgres is not None:
        raise UsageError("--idle-postgres goes with --soak")
    if args.runner:
        from fencepost.impl import bench_runner

        tasks = args.tasks or bench_runner.TASKS
        repeats = args.repeats or bench_runner.REPEATS
        print(f"fencepost bench --runner: {tasks:,} tasks x {repeats} turns each, 1 and 4 workers", flush=True)
        print(bench_runner.format_runner_benches(bench_runner.measure_all(tasks, repeats)))
        return 0
    if args.tasks is not None:
        raise UsageError("--tasks goes with --runner")
    sizes = args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)
    cycles = args.cycles or (200 if args.quick else 500)
    repeats = args.repeats or (15 if args.quick else 101)
    print(f"fencepost bench: sizes {', '.join(f'{s:,}' for s in sizes)}", flush=True)
    rows = measure(sizes, cycles, repeats, args.simple_max, args.seed, progress=lambda line: print(line, flush=True))
    print()
    print(format_table(rows, args.simple_max))
    if not args.no_spec:
        print()
        print(format_spec_speed(spec_speed(examples=10 if args.quick else 50)))
    return 0


def _run_postgres(args: argparse.Namespace, shared_runner: bool = False) -> int:
    """``--postgres`` (or ``--shared-runner``): hand over to ``impl/bench_postgres.py`` (or
    ``impl/bench_shared_runner.py``) once the server and psycopg are there."""
    import os

    from fencepost.spec.arguments import UsageError

    flag = "--shared-runner" if shared_runner else "--postgres"
    dsn = args.dsn or os.environ.get("FENCEPOST_PG_DSN")
    if not dsn:
        raise UsageError(f"{flag} needs a server: pass --dsn or set FENCEPOST_PG_DSN")
    try:
        import psycopg
    except ImportError:
        raise UsageError(f"{flag} needs psycopg: pip install 'fencepost[postgres]'") from None
    try:
        psycopg.connect(dsn, connect_timeout=5).close()
    except psycopg.Error as exc:
        from fencepost.impl.postgres import connect_failure

        raise UsageError(connect_failure("--dsn" if args.dsn else "FENCEPOST_PG_DSN", dsn, exc)) from None
    if shared_runner:
        from fencepost.impl import bench_shared_runner

        return bench_shared_runner.run(dsn, quick=args.quick, tasks=args.tasks, rounds=args.repeats)
    from fencepost.impl import bench_postgres

    return bench_postgres.run(dsn, quick=args.quick)


#: ``--durable`` defaults: (pending tasks, cycles, repetitions, warm-up cycles), full and quick.
#: Few cycles: with synchronous=FULL every transaction is an fsync.
DURABLE_RUN = (100_000, 60, 15, 10)
DURABLE_QUICK = (1_000, 20, 5, 5)


def run_durable(args: argparse.Namespace) -> int:
    """``--durable``: the durable table, reopen time and size (see ``impl.bench_durable``)."""
    from fencepost.impl import bench_durable

    if args.batches:
        return run_durable_batches(args)
    pending, cycles, repeats, warm = DURABLE_QUICK if args.quick else DURABLE_RUN
    pending = args.sizes[0] if args.sizes else pending
    cycles, repeats = args.cycles or cycles, args.repeats or repeats
    folder = bench_durable.default_folder()
    print(f"fencepost bench --durable: {pending:,} pending tasks, files under {folder}", flush=True)
    report = bench_durable.measure_durable(
        pending, cycles, repeats, warm=warm, reopen_size=1_000 if args.quick else bench_durable.REOPEN_SIZE,
        folder=folder, progress=lambda line: print(line, flush=True),
    )
    print()
    print(bench_durable.format_durable(report))
    return 0


def run_durable_batches(args: argparse.Namespace) -> int:
    """``--durable --batches``: DurableScheduler's batch rows alone (``impl.bench_durable.measure_batches``)."""
    import os

    from fencepost.impl import bench_durable

    if args.sizes:
        from fencepost.spec.arguments import UsageError

        raise UsageError("--sizes does not go with --durable --batches (its tasks are only the jobs it runs)")
    jobs = args.cycles or (bench_durable.QUICK_BATCH_JOBS if args.quick else bench_durable.BATCH_JOBS)
    rounds = args.repeats or (1 if args.quick else bench_durable.BATCH_ROUNDS)
    folder = bench_durable.default_folder()
    print(f"fencepost bench --durable --batches: {jobs:,} timed jobs per batch size per round, {rounds} round(s), "
          f"files under {folder}; load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    best = bench_durable.measure_batches(jobs, rounds, bench_durable.BATCH_SIZES, folder,
                                         progress=lambda line: print(line, flush=True))
    print()
    print(bench_durable.format_batches(best))
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0
