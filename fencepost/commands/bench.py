"""Measure fencepost's schedulers, checkers and views.

Without a subject, times one submit + dispatch + complete cycle of the
in-memory schedulers at several sizes beside a bare heapq floor, in
alternating turns, and the spec's own speed. The options marked "instead"
measure something else in place of that (storage, the runner, the speed
tricks); a SUBJECT measures the terminal UI, the HTML report or a checker
option (`fencepost bench SUBJECT --help` for its options).

Examples:
  fencepost bench --quick
  fencepost bench --postgres --dsn postgresql://root@127.0.0.1:5432/test
  fencepost bench --runner
  fencepost bench tui --tasks 100000

Every figure is printed with the date, commit, CPU and load it was measured
under; `python -m fencepost.figures` writes the docs' figures.

Exit status: 0; 2 bad arguments or an unreachable server.
Docs: docs/design.md (performance); each figure's own page names its command.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from fencepost.bench.schedulers import (
    DURABLE_QUICK,
    DURABLE_RUN,
    FULL_SIZES,
    QUICK_SIZES,
    format_spec_speed,
    format_table,
    measure,
    spec_speed,
)
from fencepost.commands.options import add_variant_arguments, positive_int, whole_int


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
                        "(or --dsn), 1 and 4 client processes (fencepost/bench/postgres.py)")
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
                        "(fencepost/bench/shared_runner.py); --tasks per turn (default 2000, quick 300)")
    parser.add_argument("--tricks", action="store_true",
                        help="instead: IndexedScheduler beside itself with each of its speed tricks taken out "
                        "(fencepost/bench/tricks.py), sizes 10000,100000 unless --sizes; what each trick buys")
    parser.add_argument("--soak", action="store_true",
                        help="instead: 1,000,000 no-op tasks through a Runner with a retention window, on the "
                        "default scheduler and on DurableScheduler, the heap (and file) printed at intervals")
    parser.add_argument("--idle-postgres", type=float, default=None, metavar="SECONDS",
                        help="with --soak: instead, a shared runner on $FENCEPOST_PG_DSN idle for SECONDS on the "
                        "database clock, its heap and tables printed at intervals")
    parser.add_argument("--tasks", type=int, default=None,
                        help="with --runner: tasks per turn (default 100000); with --soak: tasks per scheduler; "
                        "with --shared-runner: tasks per turn")
    subjects = parser.add_subparsers(dest="subject", metavar="SUBJECT", title="subjects (instead of the cycle)")
    tui = subjects.add_parser("tui", help="the terminal UI on a generated scenario: open, step",
                              description="Time the terminal UI on a generated scenario of N tasks: opening it "
                              "(imports, the timeline's two sides, the first screen) and a step forward and back.")
    tui.add_argument("--tasks", type=positive_int, default=10_000, help="tasks in the scenario (default 10,000)")
    tui.add_argument("--steps", type=positive_int, default=40, help="steps forward and back to time (default 40)")
    tui.add_argument("--size", type=_terminal_size, default=(120, 40), metavar="WxH", help="terminal size (default 120x40)")
    tui.add_argument("--write", metavar="FILE", help="also write the generated scenario here")
    report = subjects.add_parser("report", help="HTML report pages: make, size, render in Chromium",
                                 description="Make report pages of a long trace and of long histories, and time "
                                 "their rendering in the distribution's Chromium.")
    report.add_argument("--steps", type=positive_int, default=10_000, help="steps of the generated trace (default 10,000)")
    report.add_argument("--calls", type=positive_int, default=10_000, help="calls of the generated history (default 10,000)")
    report.add_argument("--repeats", type=positive_int, default=3, help="loads of each page in the browser (default 3)")
    report.add_argument("--keep", metavar="FOLDER", help="write the pages there instead of a temporary folder")
    long = subjects.add_parser("long-trace", help="replay and report of long traces: CPU per step",
                               description="Write the tui subject's generated scenario at each size and time `fencepost "
                               "replay` and `fencepost report` on it, each as a process of its own: wall and CPU seconds, "
                               "and CPU per step, which stays flat when a command is linear in the trace.")
    long.add_argument("--tasks", type=_int_list(1), default=[10_000, 100_000], metavar="N,N",
                      help="tasks of each trace (default 10000,100000; a trace has about 1.01 steps a task)")
    long.add_argument("--keep", metavar="FOLDER", help="write the traces and pages there instead of a temporary folder")
    lin = subjects.add_parser("linearize", help="what linearize costs as histories widen",
                              description="Time fencepost linearize on generated histories of growing width "
                              "(clients at once): states explored and seconds per verdict.")
    lin.add_argument("--calls", type=positive_int, default=240, help="calls per history (default 240)")
    lin.add_argument("--widths", type=_int_list(1), default=[1, 2, 4, 6, 8, 10, 12], metavar="W,W",
                     help="clients at once (default 1,2,4,6,8,10,12)")
    lin.add_argument("--seed", type=whole_int, default=1, help="seed of the histories (default 1)")
    lin.add_argument("--max-states", type=positive_int, default=2_000_000, help="the search budget (default 2,000,000)")
    lin.add_argument("--due-now", action="store_true", help="submit tasks due at the current time (forks)")
    lin.add_argument("--tasks", type=_int_list(0, single=True), default=0, help="tasks submitted before the rounds (default 0)")
    lin.add_argument("--prune-every", type=_int_list(0), default=None, metavar="K[,K...]",
                     help="make the first call of every K-th round a prune; a list measures each (0: none), "
                          "with a column of the prunes (default: none, no column)")
    add_variant_arguments(lin)
    var = subjects.add_parser("variants", help="what checking under declared variants costs",
                              description="Time fencepost check under the contract and under declared variants, "
                              "in alternating runs (steps per second).")
    var.add_argument("--impl", default="impl:Scheduler", metavar="MODULE:FACTORY", help="the scheduler (default impl:Scheduler)")
    var.add_argument("--examples", type=positive_int, default=100, help="runs per check (default 100)")
    var.add_argument("--rounds", type=positive_int, default=3, help="checks per side, alternating (default 3)")
    add_variant_arguments(var)
    jobs = subjects.add_parser("jobs", help="what --jobs buys check and explore",
                               description="Time fencepost check and fencepost explore with --jobs 1 and --jobs J, "
                               "each a process of its own, alternating; their verdicts must agree.")
    jobs.add_argument("--impl", default="impl:Scheduler", metavar="MODULE:FACTORY", help="the scheduler check runs on "
                      "(default impl:Scheduler)")
    jobs.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1, help="the job count set against 1 "
                      "(default: one per core)")
    jobs.add_argument("--rounds", type=positive_int, default=3, help="runs per job count, alternating (default 3)")
    jobs.add_argument("--only", choices=("check", "explore"), help="measure one command only")
    pgs = subjects.add_parser("pg-single", help="single PostgreSQL calls beside another checkout's",
                              description="Time submit, dispatch and complete on one PostgreSQL connection, in turns "
                              "with the PostgresScheduler another interpreter imports: cycles/s, client and server CPU.")
    pgs.add_argument("--dsn", default=None, help="the PostgreSQL server (default $FENCEPOST_PG_DSN)")
    pgs.add_argument("--against", metavar="PYTHON", help="also measure the PostgresScheduler this interpreter imports "
                     "(another checkout's virtual environment), in turns with this one")
    pgs.add_argument("--async-commit", action="store_true", help="synchronous_commit=off on every side")
    pgs.add_argument("--quick", action="store_true", help="fewer cycles and turns: a smoke run")
    pgs.add_argument("--cycles", type=positive_int, help="cycles per turn")
    pgs.add_argument("--turns", type=positive_int, help="turns of each side")
    real = subjects.add_parser("real-clock", help="what a --clock real check costs against a logical one",
                               description="Check one scheduler with the same runs on logical time and on the real "
                               "clock, alternating: wall and CPU seconds, steps/s, the lateness seen.")
    real.add_argument("--impl", default="fencepost:Scheduler", metavar="MODULE:FACTORY",
                      help="the scheduler (default the in-memory reference, fencepost:Scheduler)")
    real.add_argument("--examples", type=positive_int, default=25, help="runs per check (default 25)")
    real.add_argument("--steps", type=positive_int, default=30, help="steps per run (default 30)")
    real.add_argument("--rounds", type=positive_int, default=3, help="checks per side, alternating (default 3)")
    real.add_argument("--tick-ms", type=positive_int, default=None, metavar="N", help="the tick (default 50)")
    soak = subjects.add_parser("real-clock-soak", help="a --clock real check N times in a row",
                               description="Run fencepost check IMPL --clock real N times in a row (check i with seed i), "
                               "one line each: verdict, inconclusive runs, lateness, load before and after. See docs/real-clock.md.")
    soak.add_argument("--impl", default="fencepost:Scheduler", metavar="MODULE:FACTORY",
                      help="the scheduler (default the in-memory reference, fencepost:Scheduler)")
    soak.add_argument("--runs", type=positive_int, default=20, help="checks in a row (default 20)")
    soak.add_argument("--tick-ms", type=positive_int, default=None, metavar="N", help="the tick (default 50)")
    boundary = subjects.add_parser("redis-boundary", help="when XAUTOCLAIM takes an entry back: at min-idle-time?",
                                   description="Make entries idle exactly M ms on the Redis server and count the "
                                   "ones XAUTOCLAIM claims at min-idle-time M - 1, M and M + 1.")
    boundary.add_argument("--trials", type=positive_int, default=200, help="entries per min-idle-time (default 200)")
    boundary.add_argument("--idle-ms", type=positive_int, default=1000, help="how idle each entry is, M (default 1000)")
    turn = subjects.add_parser("runner-turn", help="one timed turn of no-op tasks through Runner, one line (for a whole-process timer)",
                               description="One timed turn of no-op tasks through Runner, printed as one line of "
                               "tasks/s, so a whole-process timer (/usr/bin/time, hyperfine) can time two commits side by side.")
    turn.add_argument("--tasks", type=positive_int, default=100_000, help="tasks (default 100,000)")
    turn.add_argument("--workers", type=positive_int, default=4, help="pool slots (default 4)")
    turn.add_argument("--batch", type=_batch, default=None, metavar="N|default", help="Runner's batch (default: its own)")
    turn.add_argument("--durable", action="store_true", help="on a fresh DurableScheduler (synchronous=FULL)")
    shared = subjects.add_parser("shared-runner-turn", help="one timed turn of shared runners over PostgreSQL, one line",
                                 description="One timed turn of shared runners over PostgreSQL, printed as one line "
                                 "of tasks/s, so a whole-process timer (/usr/bin/time, hyperfine) can time two commits side by side.")
    shared.add_argument("--tasks", type=positive_int, default=2_000, help="tasks (default 2,000)")
    shared.add_argument("--processes", type=positive_int, default=1, help="runner processes (default 1)")
    shared.add_argument("--batch", type=_batch, default=None, metavar="N|default", help="Runner's batch (default: its own)")
    shared.add_argument("--dsn", default=None, help="the server (default $FENCEPOST_PG_DSN)")


def _terminal_size(text: str) -> tuple[int, int]:
    """``--size``: WIDTHxHEIGHT, each a whole number >= 1."""
    width, sep, height = text.lower().partition("x")
    try:
        size = (int(width), int(height))
    except ValueError:
        size = (0, 0)
    if not sep or min(size) < 1:
        raise argparse.ArgumentTypeError(f"must be WIDTHxHEIGHT, e.g. 120x40, got {text!r}")
    return size


def _int_list(minimum: int, single: bool = False) -> Callable[[str], list[int] | int]:
    """A type: comma-separated whole numbers >= ``minimum`` (one of them when ``single``)."""
    def parse(text: str) -> list[int] | int:
        try:
            values = [int(part) for part in text.split(",") if part.strip()]
        except ValueError:
            values = []
        if not values or any(v < minimum for v in values) or (single and len(values) != 1):
            what = "a whole number" if single else "comma-separated whole numbers"
            raise argparse.ArgumentTypeError(f"must be {what} >= {minimum}, got {text!r}")
        return values[0] if single else values

    return parse


def _batch(text: str) -> int | None:
    """``--batch``: ``default`` (the runner's own) or a whole number >= 1."""
    return None if text == "default" else positive_int(text)


def run(args: argparse.Namespace) -> int:
    """Measure and print the table (and the spec speed unless ``--no-spec``), or the SUBJECT's; 0, or 2 on bad arguments."""
    from fencepost.spec.arguments import UsageError

    if args.subject is not None:
        return _run_subject(args)

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
        from fencepost.bench import tricks as bench_tricks

        return bench_tricks.run(args.sizes, args.cycles, args.repeats, args.seed)
    if args.durable:
        if args.tasks is not None:
            raise UsageError("--tasks goes with --runner")
        return run_durable(args)
    if args.soak:
        if args.runner or args.durable:
            raise UsageError("--soak is a separate run: give it without --durable or --runner")
        from fencepost.bench import soak as bench_soak

        return bench_soak.run(args.tasks, args.idle_postgres, args.dsn)
    if args.idle_postgres is not None:
        raise UsageError("--idle-postgres goes with --soak")
    if args.runner:
        from fencepost.bench import runner as bench_runner

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
    """``--postgres`` (or ``--shared-runner``): hand over to ``fencepost/bench/postgres.py`` (or
    ``fencepost/bench/shared_runner.py``) once the server and psycopg are there."""
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
        from fencepost.impl.postgres.scheduler import connect_failure

        raise UsageError(connect_failure("--dsn" if args.dsn else "FENCEPOST_PG_DSN", dsn, exc)) from None
    if shared_runner:
        from fencepost.bench import shared_runner as bench_shared_runner

        return bench_shared_runner.run(dsn, quick=args.quick, tasks=args.tasks, rounds=args.repeats)
    from fencepost.bench import postgres as bench_postgres

    return bench_postgres.run(dsn, quick=args.quick)


def run_durable(args: argparse.Namespace) -> int:
    """``--durable``: the durable table, reopen time and size (see ``impl.bench_durable``)."""
    from fencepost.bench import durable as bench_durable

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

    from fencepost.bench import durable as bench_durable

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


def _run_subject(args: argparse.Namespace) -> int:
    """``fencepost bench SUBJECT``: the subject's own measurement."""
    from fencepost.spec.arguments import UsageError, load_factory, variants_in_force

    if args.subject == "tui":
        from fencepost.bench import tui

        width, height = args.size
        return tui.run(args.tasks, args.steps, width, height, args.write)
    if args.subject == "report":
        from fencepost.bench import report

        return report.run(args.steps, args.calls, args.repeats, args.keep)
    if args.subject == "long-trace":
        from fencepost.bench import long_trace

        return long_trace.run(args.tasks, args.keep)
    if args.subject == "linearize":
        from fencepost.bench import linearize

        return linearize.run(args.calls, args.widths, args.seed, args.max_states, args.due_now, args.tasks,
                             variants_in_force(args.variants), args.prune_every)
    if args.subject == "variants":
        from fencepost.bench import variants as bench_variants

        factory = load_factory(args.impl, "--impl")
        variants = variants_in_force(args.variants or list(bench_variants.MEASURED))
        return bench_variants.run(factory, variants, args.examples, args.rounds)
    if args.subject == "pg-single":
        from fencepost.bench import pg_single

        dsn = args.dsn or os.environ.get("FENCEPOST_PG_DSN")
        if not dsn:
            raise UsageError("pg-single needs a server: --dsn or FENCEPOST_PG_DSN")
        if args.against is not None and not os.access(args.against, os.X_OK):
            raise UsageError(f"--against must name a Python interpreter that can run: {args.against!r}")
        return pg_single.run(dsn, args.quick, args.cycles, args.turns, args.against, synchronous=not args.async_commit)
    if args.subject == "jobs":
        from fencepost.bench import jobs

        load_factory(args.impl, "--impl")  # a bad path is one line here, not a traceback per run
        return jobs.run(args.impl, args.jobs, args.rounds, args.only)
    if args.subject == "real-clock":
        from fencepost.bench import real_clock
        from fencepost.spec.realclock import DEFAULT_TICK_MS

        return real_clock.run(load_factory(args.impl, "--impl"), args.examples, args.steps, args.rounds,
                              args.tick_ms or DEFAULT_TICK_MS)
    if args.subject == "real-clock-soak":
        from fencepost.bench import real_clock
        from fencepost.spec.realclock import DEFAULT_TICK_MS

        return real_clock.soak(load_factory(args.impl, "--impl"), args.runs, args.tick_ms or DEFAULT_TICK_MS)
    if args.subject == "redis-boundary":
        from fencepost.bench import real_clock

        return real_clock.run_boundary(args.trials, args.idle_ms)
    if args.subject == "runner-turn":
        from fencepost.bench import runner

        return runner.turn(args.tasks, args.workers, args.batch, args.durable)
    from fencepost.bench import shared_runner

    dsn = args.dsn or os.environ.get("FENCEPOST_PG_DSN")
    if not dsn:
        raise UsageError("shared-runner-turn needs a server: --dsn or FENCEPOST_PG_DSN")
    return shared_runner.one_turn(dsn, args.tasks, args.processes, args.batch)
