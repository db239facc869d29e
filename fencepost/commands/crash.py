"""Crash-test a durable scheduler: SIGKILL it mid-run, reopen its storage, compare.

A child process runs the conformance machine on schedulers OPENER makes;
the parent kills it with SIGKILL during or just after a call, reopens the
same storage and checks that it recovered exactly the acknowledged calls
(or those plus the call in flight): nothing acknowledged lost, nothing
half-applied. The first failure is printed as a scenario that replays.

Examples:
  fencepost crash impl.durable:DurableScheduler
  fencepost crash impl.durable:DurableScheduler --kills 200 --seed 7 --trace-out crash.toml

OPENER is MODULE:NAME, a callable taking a storage path and returning a
scheduler over it.

Exit status: 0 every recovery holds; 1 one did not; 2 bad arguments.
Docs: docs/durability.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from fencepost.commands.options import positive_int, whole_int
from fencepost.spec.arguments import (
    EXIT_OK,
    EXIT_VIOLATION,
    UsageError,
    check_output_path,
    load_factory,
)
from fencepost.spec.checkers.crash import (
    DEFAULT_KILLS,
    DEFAULT_OPS,
    ChildFailure,
    crash_test,
    failure_scenario_text,
    failure_trace,
    shrink,
)
from fencepost.spec.checkers.results import (
    format_trace,
)
from fencepost.spec.protocol import OPERATIONS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("opener", metavar="MODULE:OPENER", help="callable taking a storage path and returning a scheduler over it, e.g. impl.durable:DurableScheduler")
    parser.add_argument("--kills", type=positive_int, default=DEFAULT_KILLS, metavar="N", help=f"children to kill (default {DEFAULT_KILLS})")
    parser.add_argument("--seed", type=whole_int, default=None, metavar="S", help="random seed for the calls and the kill points (default: a random one, printed)")
    parser.add_argument("--ops", type=positive_int, default=DEFAULT_OPS, metavar="N", help=f"a kill lands in or just after the K-th state-changing call of its child, K random in 1..N (default {DEFAULT_OPS})")
    parser.add_argument("--trace-out", metavar="FILE", default=None, help="write the first failure as a scenario (JSON if FILE ends in .json, else TOML)")
    parser.add_argument("--no-restarts", action="store_true", help="the child takes no restart steps of its own: only the kills restart the scheduler")


def probe_opener(opener: Callable[[str], object], text: str) -> None:
    """Open storage at a fresh path once, so a broken opener is a usage error, not a failure."""
    folder = tempfile.mkdtemp(prefix="fencepost-crash-probe-")
    try:
        try:
            scheduler = opener(os.path.join(folder, "probe"))
        except Exception as exc:  # noqa: BLE001 - a user's opener may fail any way: a usage error naming it
            raise UsageError(f"OPENER {text!r} failed when called with a path: {type(exc).__name__}: {exc}") from None
        missing = [name for name in (*OPERATIONS, "task") if not callable(getattr(scheduler, name, None))]
        close = getattr(scheduler, "close", None)
        if callable(close):
            close()
        if missing:
            raise UsageError(f"OPENER {text!r} returned a {type(scheduler).__name__} without the protocol's {', '.join(missing)}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(args: argparse.Namespace) -> int:
    opener = load_factory(args.opener, "OPENER")
    if args.trace_out:
        check_output_path(args.trace_out)
    probe_opener(opener, args.opener)
    try:
        report = crash_test(opener, kills=args.kills, seed=args.seed, ops=args.ops, restarts=not args.no_restarts)
    except ChildFailure as exc:
        print(f"{args.opener}: {exc}")
        return EXIT_VIOLATION
    print(f"{args.opener}: {report.kills} kill{'s' if report.kills != 1 else ''} (seed {report.seed}, "
          f"{report.seconds:.1f}s), {report.acknowledged:,} calls acknowledged before them")
    other = report.kills - report.exact - report.in_flight_applied - (0 if report.passed else 1)
    print(f"recovered exactly the acknowledged calls: {report.exact}; "
          f"those plus the call in flight: {report.in_flight_applied}"
          + (f"; killed before any storage was opened: {other}" if other else ""))
    if report.passed:
        print("every recovery holds: no acknowledged call lost, none half-applied")
        return EXIT_OK
    failure = report.failure
    print(f"RECOVERY FAILED at kill {report.kills}: {failure.problem}")
    trace = shrink(opener, failure_trace(failure))
    text = failure_scenario_text(failure, args.opener, trace)
    if len(trace) < len(failure_trace(failure)):
        print(f"shrunk from {len(failure_trace(failure))} steps to {len(trace)}: it fails without a kill too, at a restart")
    print(format_trace(trace))
    if args.trace_out:
        try:
            Path(args.trace_out).write_text(text, encoding="utf-8", newline="\n")
        except OSError as exc:
            raise UsageError(f"cannot write --trace-out {args.trace_out!r}: {exc.strerror or exc}") from None
        print(f"written to {args.trace_out}; replay it with: fencepost replay {args.trace_out} --impl MODULE:FACTORY (a scheduler with reopen())")
    else:
        print("as a scenario (save it and replay it with fencepost replay FILE --impl MODULE:FACTORY):")
        print(text, end="")
    return EXIT_VIOLATION
