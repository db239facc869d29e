"""Decide whether a concurrent history could have come from the contract.

HISTORY is a JSON-lines file of the calls several clients made, each with
its invoke and return (or an unknown outcome, "info"). The history is
linearizable when some order of the calls, each placed between its invoke
and its return, explains every result by the model; otherwise the output
points at the first call no order explains.

A history whose header has a "clock" was recorded on a queue's own clock:
each timed call is then judged at some instant inside its recorded interval
(widened by --offset-ns for clients on other machines), not at its tick.

Examples:
  fencepost linearize history.jsonl
  fencepost linearize history.jsonl --order
  fencepost linearize history.jsonl --variant order=any
  fencepost linearize redis.jsonl --offset-ns 2000000

Exit status: 0 linearizable; 1 not; 2 a bad file or arguments; 3 undecided
within --max-states.
Docs: docs/histories.md, docs/real-clock.md.
"""

from __future__ import annotations

import argparse

from fencepost.commands.options import add_variant_arguments, non_negative_int, positive_int
from fencepost.spec.arguments import (
    EXIT_OK,
    EXIT_VIOLATION,
    UsageError,
    variants_in_force,
)
from fencepost.spec.checkers.linearize import DEFAULT_MAX_STATES, check_history
from fencepost.spec.checkers.linearize_realtime import RealTime
from fencepost.spec.checkers.linearize_command import EXIT_UNDECIDED, report
from fencepost.spec.formats.history import HistoryError, load_history


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("history", metavar="HISTORY", help="a JSON-lines history file")
    parser.add_argument(
        "--max-states", type=positive_int, default=DEFAULT_MAX_STATES, metavar="N",
        help=f"give up (exit {EXIT_UNDECIDED}, undecided) after exploring N (placed calls, model state) pairs "
             f"(default {DEFAULT_MAX_STATES:,})",
    )
    parser.add_argument("--order", action="store_true", help="print the order found for a linearizable history")
    parser.add_argument(
        "--offset-ns", type=non_negative_int, default=None, metavar="N",
        help="for a history on a real clock (a 'clock' in its header): how far apart, in nanoseconds, the "
             "clients' clocks may be; every call's interval is widened by N (default: the header's offset_ns, "
             "else 0: one machine)",
    )
    add_variant_arguments(parser)


def run(args: argparse.Namespace) -> int:
    try:
        history = load_history(args.history)
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    variants = variants_in_force(args.variants, (history.variants, "the history's header"))
    if args.offset_ns is not None and history.clock is None:
        raise UsageError(f"--offset-ns {args.offset_ns}: {args.history} is on logical time (its header has no "
                         "'clock'), where calls have no clocks to be apart")
    try:
        timing = RealTime.of(history, args.offset_ns) if history.clock is not None else None
        verdict = check_history(history, max_states=args.max_states, variants=variants, timing=timing)
    except ValueError as exc:  # a history the variants or the clock cannot judge exactly
        raise UsageError(str(exc)) from None
    for line in report(history, verdict, args.order, variants, timing):
        print(line)
    if verdict.linearizable is None:
        return EXIT_UNDECIDED
    return EXIT_OK if verdict.linearizable else EXIT_VIOLATION
