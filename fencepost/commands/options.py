"""The options and argument types the subcommands share.

Each type is an argparse ``type=``: it returns the value or raises
``argparse.ArgumentTypeError`` with a message naming the rule and the value,
which argparse prints as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import math

from fencepost.spec.checkers.deadline import DEFAULT_CALL_TIMEOUT


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1, else a one-line error naming the value."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: a whole number >= 0, else a one-line error naming the value."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}")
    return value


def call_timeout(text: str) -> float:
    """``--call-timeout``'s type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value



def add_exec_arguments(parser: argparse.ArgumentParser) -> None:
    """``--exec COMMAND`` and ``--call-timeout SECONDS``, for every subcommand that drives a scheduler."""
    parser.add_argument(
        "--exec", dest="exec_command", metavar="COMMAND", default=None,
        help="run the scheduler in this program, in any language, over the JSON-lines adapter protocol "
        "(split like a shell command, run without a shell)",
    )
    parser.add_argument(
        "--call-timeout", type=call_timeout, default=DEFAULT_CALL_TIMEOUT, metavar="SECONDS",
        help=f"longest any one call into the scheduler may take before it is reported as a hang (default {DEFAULT_CALL_TIMEOUT:g})",
    )



def add_variant_arguments(parser: argparse.ArgumentParser) -> None:
    """``--variant NAME=VALUE`` (repeatable), for every subcommand that judges by the contract."""
    from fencepost.spec.variants import VALUES

    parser.add_argument(
        "--variant", dest="variants", action="append", default=None, metavar="NAME=VALUE",
        help="check under a declared contract variant instead of the contract's rule (repeatable; "
        f"names: {', '.join([*VALUES, 'without'])}; see docs/contract.md). A file's or the scheduler's "
        "own declaration is used without it, and must agree with it",
    )


def whole_int(text: str) -> int:
    """An argparse type: any whole number (a seed), else a one-line error naming the value."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None


def add_clock_arguments(parser: argparse.ArgumentParser) -> None:
    """``--clock logical|real`` and ``--tick-ms N``, for every subcommand that can drive a queue on the wall clock."""
    from fencepost.spec.realclock import CLOCKS, DEFAULT_TICK_MS

    parser.add_argument(
        "--clock", choices=CLOCKS, default=None,
        help="logical: the scheduler is given every instant (the default); real: for a queue whose clock "
        "cannot be set, ticks run on the wall clock, every call is timed and judged by what its measured "
        "timing allows (the default for a factory that declares fencepost_clock = \"real\"; see docs/real-clock.md)",
    )
    parser.add_argument(
        "--tick-ms", type=positive_int, default=None, metavar="N",
        help=f"under --clock real, milliseconds one logical tick lasts (default {DEFAULT_TICK_MS})",
    )


def timing_in_force(args: argparse.Namespace, factory: object, name: str) -> object:
    """The real clock a run uses (a ``spec.checkers.realtime.Timing``), or None for logical time.

    ``--clock`` wins; without it a factory that declares ``fencepost_clock =
    "real"`` runs on the real clock.

    Raises:
        UsageError: ``--clock logical`` for a factory whose clock cannot be
            set, or ``--tick-ms`` without the real clock.
    """
    from fencepost.spec.arguments import UsageError
    from fencepost.spec.checkers.realtime import Timing
    from fencepost.spec.realclock import declares_real_clock, DEFAULT_TICK_MS

    real_only = factory is not None and declares_real_clock(factory)
    if args.clock == "logical" and real_only:
        raise UsageError(f"--clock logical: {name} runs on its server's clock, which fencepost cannot set "
                         "(it declares fencepost_clock = \"real\"); use --clock real")
    real = args.clock == "real" or (args.clock is None and real_only)
    if args.tick_ms is not None and not real:
        raise UsageError(f"--tick-ms {args.tick_ms}: a tick lasts a set time only on the real clock; add --clock real")
    return Timing(args.tick_ms or DEFAULT_TICK_MS) if real else None
