"""Explore every call sequence in a small scope, breadth first.

Where `fencepost check` samples, explore is exhaustive: from the empty
scheduler it applies every call the scope allows (valid and invalid
arguments alike) to every reachable state of the model, keeps each distinct
state once, and checks every invariant on every transition. With --impl or
--exec it drives that scheduler along every explored path and compares it
with the model; a violation is reported as a shortest counterexample.
Inside the scope nothing breaks the contract; outside it, nothing is claimed.

Examples:
  fencepost explore
  fencepost explore --impl mypackage.sched:MyScheduler
  fencepost explore --impl impl:Scheduler --tasks 3 --horizon 3 --batches
  fencepost explore --impl impl:Scheduler --trace-out cx.toml

The scope options below bound every argument domain; the default scope must
reach every declared outcome and boundary.

Exit status: 0 nothing broken in the scope; 1 a violation, or the default
scope left an outcome unreached; 2 bad arguments.
Docs: docs/exploration.md.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from dataclasses import replace

from fencepost.commands.options import add_exec_arguments, add_variant_arguments
from fencepost.spec import invariants
from fencepost.spec.arguments import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_VIOLATION,
    UsageError,
    check_output_path,
    declared_variants,
    exec_name,
    load_factory,
    open_exec,
    variants_in_force,
)
from fencepost.spec.checkers.capabilities import BATCH, detect
from fencepost.spec.checkers.check import probe_factory
from fencepost.spec.checkers import explore as explore_module
from fencepost.spec.checkers.explore import (
    DEFAULT_SCOPE,
    Result,
    Scope,
    _listed,
    default_jobs,
    explore,
    report,
)
from fencepost.spec.checkers.results import format_trace
from fencepost.spec.checkers.shards import ShardWorkerDied
from fencepost.spec.checkers.why import why_line
from fencepost.spec.formats.trace import write_trace
from fencepost.spec.protocol import BATCH_OPERATIONS
from fencepost.spec.variants import DEFAULT, Variants


def _count(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {minimum}, got {text!r}")
        return value

    return parse


def _values(kind: type, minimum: int | None, none: bool = False) -> Callable[[str], tuple]:
    """A parser for a comma-separated list of distinct ints (and ``none`` when allowed)."""
    rule = "whole numbers" + (f" >= {minimum}" if minimum is not None else "") + (" or none" if none else "")

    def parse(text: str) -> tuple:
        values: list = []
        for item in text.split(","):
            item = item.strip().lower()
            if none and item == "none":
                value = None
            else:
                try:
                    value = kind(item)
                except ValueError:
                    raise argparse.ArgumentTypeError(f"must be comma-separated {rule}, got {text!r}") from None
                if minimum is not None and value < minimum:
                    raise argparse.ArgumentTypeError(f"must be comma-separated {rule}, got {text!r}")
            if value not in values:
                values.append(value)
        return tuple(values)

    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = DEFAULT_SCOPE
    parser.add_argument("--impl", metavar="MODULE:FACTORY", default=None,
                        help="also drive this implementation along every path and compare it with the model")
    parser.add_argument("--workers", type=_count(1), default=d.workers, metavar="N",
                        help=f"worker names w1..wN (default {d.workers})")
    parser.add_argument("--capacity", type=_count(1), default=d.capacity, metavar="C",
                        help=f"every worker's capacity (default {d.capacity})")
    parser.add_argument("--tasks", type=_count(0), default=d.tasks, metavar="N",
                        help=f"most tasks submitted (default {d.tasks}; ids past 9 need 10)")
    parser.add_argument("--horizon", type=_count(0), default=d.horizon, metavar="T",
                        help=f"times 0..T (default {d.horizon})")
    parser.add_argument("--depth", type=_count(1), default=d.depth, metavar="D",
                        help="most calls on a path (default: until no new state appears)")
    parser.add_argument("--priorities", type=_values(int, None), default=d.priorities, metavar="P,P",
                        help=f"submit's priorities (default {_listed(d.priorities)})")
    parser.add_argument("--max-attempts", type=_values(int, 1, none=True), default=d.max_attempts, metavar="M,M",
                        help=f"submit's max_attempts, 'none' for unlimited (default {_listed(d.max_attempts)})")
    parser.add_argument("--durations", type=_values(int, 1), default=d.durations, metavar="D,D",
                        help=f"dispatch's and renew's durations (default {_listed(d.durations)})")
    parser.add_argument("--prune", action="store_true",
                        help="also explore prune(before, now), the optional retention operation")
    parser.add_argument("--batches", action="store_true",
                        help="also explore submit_many, dispatch_many, complete_many and fail_many, each one atomic call "
                             "(skipped, saying so, when --impl or --exec does not offer them)")
    parser.add_argument("--jobs", type=_count(1), default=None, metavar="J",
                        help="processes to explore with (default: one per core)")
    parser.add_argument("--trace-out", metavar="FILE", default=None,
                        help="write a counterexample as a scenario (JSON if FILE ends in .json, else TOML)")
    add_variant_arguments(parser)
    add_exec_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if args.impl and args.exec_command is not None:
        raise UsageError("give --impl or --exec, not both")
    variants_in_force(args.variants)  # a bad flag is an error before anything starts
    if args.exec_command is not None:
        with open_exec(args.exec_command, args.call_timeout) as program:
            args.impl = exec_name(args.exec_command)
            variants = variants_in_force(args.variants, scheduler=(declared_variants(program), "the program's hello"))
            program.opaque_tokens = variants.tokens == "opaque"
            return _run(args, program, jobs=1, variants=variants)  # forked shares cannot share one program's pipes
    factory = load_factory(args.impl, "--impl") if args.impl else None
    declared = (declared_variants(factory), f"{args.impl}'s fencepost_variants") if factory is not None else (None, "")
    variants = variants_in_force(args.variants, scheduler=declared)
    if factory is not None:
        probe_factory(factory, args.impl, variants)
    return _run(args, factory, args.jobs or default_jobs(), variants)


def _run(args: argparse.Namespace, factory: Callable[[], object] | None, jobs: int, variants: Variants = DEFAULT) -> int:
    if args.trace_out:
        check_output_path(args.trace_out)
    scope = Scope(
        workers=args.workers, capacity=args.capacity, tasks=args.tasks, horizon=args.horizon, depth=args.depth,
        priorities=args.priorities, max_attempts=args.max_attempts, durations=args.durations, prune=args.prune,
        batches=args.batches,
    )
    skipped = scope.batches and factory is not None and not detect(factory).batch
    if skipped:
        scope = replace(scope, batches=False)
    under = f", under {variants.describe()}" if variants != DEFAULT else ""
    print(f"Exploring {'the model and ' + args.impl if args.impl else 'the model'}: {scope.describe()}{under}", flush=True)
    if skipped:
        print(f"optional capabilities skipped (not offered): {BATCH} ({args.impl} does not have all of "
              f"{', '.join(BATCH_OPERATIONS)}), so no batch is explored", flush=True)
    try:
        result = explore(scope, factory, jobs=jobs, progress=_progress if sys.stderr.isatty() else None,
                         call_timeout=args.call_timeout, variants=variants)
    except ShardWorkerDied as exc:  # the scheduler ended a forked process: no verdict, one line
        raise UsageError(f"{args.impl}: {exc}") from None
    except KeyboardInterrupt:  # the forked workers ignore it and are ended with their pool (spec.checkers.shards)
        print("fencepost explore: interrupted: no verdict (nothing is left running)", file=sys.stderr)
        return EXIT_INTERRUPTED
    print("\n".join(report(result)))
    if result.violation is not None:
        steps = len(result.violation.trace)
        print(f"Violation, a shortest counterexample ({steps} step{'' if steps == 1 else 's'}, breadth-first):")
        print(format_trace(result.violation.trace, variants.interval))
        print(why_line(result.violation.trace, result.violation.problem, variants))
        if args.trace_out:
            _write(result, args, variants)
        return EXIT_VIOLATION
    unreachable = ", ".join(f"{name} ({why})" for name, why in scope.unreachable().items())
    missing = result.missing
    if missing:
        print(f"Never reached: {'; '.join(missing)}")
        if scope.covers(explore_module.DEFAULT_SCOPE):  # read at run time: a test may narrow it
            print("the default scope must reach every declared outcome and boundary: this exploration is vacuous there")
            return EXIT_VIOLATION
        print("(not an error in a scope smaller than the default)")
    else:
        print(f"Every declared outcome and boundary reached{', except ' + unreachable if unreachable else ''}.")
    agreed = f"; {args.impl} agreed with the model on every transition" if args.impl else ""
    print(f"No invariant violated ({len(invariants.INVARIANTS)} invariants){agreed}.")
    return EXIT_OK


def _progress(level: int, result: Result) -> None:
    print(f"  level {level}: {result.distinct} distinct states, {result.generated} generated, "
          f"{result.queued} on queue", file=sys.stderr, flush=True)


def _write(result: Result, args: argparse.Namespace, variants: Variants = DEFAULT) -> None:
    trace = result.violation.trace
    meta = {"generated_by": "fencepost explore", "scope": result.scope.describe()}
    if args.exec_command is not None:
        meta["exec"] = args.exec_command
    elif args.impl:
        meta["impl"] = args.impl
    description = (
        f"A shortest counterexample found by `fencepost explore{' --impl ' + args.impl if args.impl else ''}`: "
        f"{len(trace)} steps -- {result.violation.problem}"
    )
    try:
        path = write_trace(trace, args.trace_out, title="Shortest counterexample (fencepost explore)",
                           description=description, meta=meta, variants=variants)
    except OSError as exc:
        raise UsageError(f"cannot write --trace-out {args.trace_out!r}: {exc}") from None
    again = f" --exec {shlex.quote(args.exec_command)}" if args.exec_command is not None else (f" --impl {args.impl}" if args.impl else "")
    print(f"counterexample written to {path}; replay it with: fencepost replay {path}{again}")
