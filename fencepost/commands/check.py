"""Check a scheduler against the fencepost contract.

Drives the scheduler and the reference model side by side through many
generated runs of calls (add_worker, submit, dispatch, complete, fail,
cancel, renew, advance, and the optional ones it offers), compares every
result and task view, and checks the safety invariants after each step. It
prints either that the scheduler conforms, or the shortest counterexample it
found as numbered steps you can replay.

Examples:
  fencepost check impl:Scheduler
  fencepost check mypackage.sched:MyScheduler --trace-out cx.toml
  fencepost check --exec "node sched.js"
  fencepost check mypackage:Queue --variant order=any --variant tokens=opaque

FACTORY is MODULE:NAME, a zero-argument callable (a class works) returning a
fresh scheduler. Without --seed the run is derandomized: the same command
gives the same verdict. A queue that makes documented choices the contract
does not (no ordering, opaque tokens, ...) declares them as variants, with
--variant or a fencepost_variants attribute; the safety core is checked
whatever they say.

Runs are split into shards with seeds of their own, checked on --jobs
processes (one per core by default, as explore); the output is the same for
any number of jobs.

Exit status: 0 conforms; 1 a counterexample, or an outcome the check must
reach and never did; 2 bad arguments; 130 interrupted (Ctrl-C).
Docs: docs/checking.md (variants: docs/contract.md; --exec: docs/adapter-protocol.md).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Callable

from fencepost.commands.options import (
    add_clock_arguments,
    add_exec_arguments,
    add_variant_arguments,
    timing_in_force,
    positive_int,
    whole_int,
)
from fencepost.spec import profiles
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
    overridden_line,
    variants_in_force,
)
from fencepost.spec.checkers.check import (
    DEFAULT_MAX_EXAMPLES,
    check_factory,
    probe_factory,
    report_failure,
    variants_summary,
)
from fencepost.spec.checkers.capabilities import evidence, uncalled
from fencepost.spec.checkers.deadline import CallTimeout
from fencepost.spec.checkers.explore import default_jobs
from fencepost.spec.checkers.shards import ShardWorkerDied
from fencepost.spec.checkers.realtime import REAL_EXAMPLES, REAL_STEPS, ticked, Timing
from fencepost.spec.variants import DEFAULT, Variants


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("factory", metavar="MODULE:FACTORY", nargs="?", default=None,
                        help="zero-argument callable returning a fresh scheduler, e.g. impl:Scheduler (or --exec COMMAND)")
    parser.add_argument("--max-examples", type=positive_int, default=None, metavar="N", help=f"runs of the state machine (default {DEFAULT_MAX_EXAMPLES})")
    parser.add_argument("--seed", type=whole_int, default=None, metavar="S", help="random seed; without it the run is derandomized and repeatable")
    parser.add_argument("--steps", type=positive_int, default=None, metavar="N", help="steps per run (default %d)" % profiles.CI_STEPS)
    parser.add_argument("--coverage", action="store_true", help="print how often each outcome and boundary was reached")
    parser.add_argument("--trace-out", metavar="FILE", default=None, help="write a counterexample as a scenario (JSON if FILE ends in .json, else TOML)")
    parser.add_argument("--jobs", type=positive_int, default=None, metavar="J",
                        help="processes to check with (default: one per core); the verdict, the counterexample and "
                             "the coverage are the same for any J (one process under --exec or --clock real)")
    add_variant_arguments(parser)
    add_exec_arguments(parser)
    add_clock_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if (args.factory is None) == (args.exec_command is None):
        raise UsageError("give a MODULE:FACTORY or --exec COMMAND, exactly one of them")
    if args.trace_out:
        check_output_path(args.trace_out)
    if args.exec_command is not None:
        variants_in_force(args.variants)  # a bad flag is an error before the program starts
        timing = timing_in_force(args, None, exec_name(args.exec_command))
        with open_exec(args.exec_command, args.call_timeout, timing.tick_ms if timing else None) as program:
            hello = (declared_variants(program), "the program's hello")
            variants = variants_in_force(args.variants, scheduler=hello)
            _say_overrides(args.variants, hello)
            program.opaque_tokens = variants.tokens == "opaque"  # its answers may then carry str tokens
            return _check(args, program, exec_name(args.exec_command), variants, timing)
    variants = variants_in_force(args.variants)
    factory = load_factory(args.factory)
    declared = (declared_variants(factory), f"{args.factory}'s fencepost_variants")
    variants = variants_in_force(args.variants, scheduler=declared)
    _say_overrides(args.variants, declared)
    timing = timing_in_force(args, factory, args.factory)
    probe_factory(ticked(factory, timing.tick_ms) if timing else factory, args.factory, variants)
    return _check(args, factory, args.factory, variants, timing)


def _say_overrides(given: list[str] | None, declared: tuple[object, str]) -> None:
    """Print what ``--variant`` overrode of the scheduler's declaration (the variants in force follow)."""
    line = overridden_line(given, declared)
    if line:
        print(line)


def _check(args: argparse.Namespace, factory: Callable[[], object], name: str, variants: Variants = DEFAULT,
           timing: Timing | None = None) -> int:
    max_examples, steps = args.max_examples, args.steps
    if timing is not None:  # each run costs real time: fewer, shorter runs unless told otherwise
        max_examples, steps = max_examples or REAL_EXAMPLES, steps or REAL_STEPS
    try:
        result = check_factory(factory, max_examples=max_examples, seed=args.seed, steps=steps,
                               call_timeout=args.call_timeout, variants=variants, timing=timing,
                               jobs=args.jobs or default_jobs())
    except (CallTimeout, ShardWorkerDied) as exc:  # making a sample scheduler, before any step; or a dead shard process
        raise UsageError(f"{name}: {exc}") from None
    except KeyboardInterrupt:  # the shards' processes are already ended and reaped (spec.checkers.shards)
        print("fencepost check: interrupted: no verdict (nothing is left running)", file=sys.stderr)
        return EXIT_INTERRUPTED
    mode = "derandomized" if args.seed is None else f"seed {args.seed}"
    if args.coverage:
        print(result.coverage.report())
    not_called = uncalled(result.capabilities, result.variants)
    print(result.capabilities.summary(not_called))
    if (offered := evidence(result.capabilities, not_called)) is not None:
        print(offered)
    if variants != DEFAULT:
        print(variants_summary(variants))
    if timing is not None:
        print(timing.summary())
    if not result.passed:
        print(f"{name} does NOT conform to the fencepost spec ({mode}, {result.examples} runs, {result.seconds:.1f}s)")
        print(report_failure(result))
        if args.trace_out:
            from fencepost.spec.formats.trace import write_counterexample

            try:
                path = write_counterexample(result, args.trace_out, factory_spec=args.factory, exec_command=args.exec_command)
                # the file records its variants, so replaying it needs no --variant
            except OSError as exc:
                raise UsageError(f"cannot write --trace-out {args.trace_out!r}: {exc.strerror or exc}") from None
            again = f"--exec {shlex.quote(args.exec_command)}" if args.exec_command else f"--impl {args.factory}"
            print(f"counterexample written to {path}; replay it with: fencepost replay {path} {again}")
        return EXIT_VIOLATION
    missing = result.missing
    if missing:
        print(f"{name} passed, but the run never reached: {'; '.join(missing)}")
        print("the check is vacuous there: raise --max-examples or --steps")
        return EXIT_VIOLATION
    print(f"{name} conforms to the fencepost spec ({mode}, {result.examples} runs in {result.batches} batch{'es' if result.batches > 1 else ''}, {result.seconds:.1f}s); every declared outcome and boundary reached")
    return EXIT_OK
