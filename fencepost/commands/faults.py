"""Inject PostgreSQL server faults under a scheduler, and report what held.

Starts a throw-away PostgreSQL cluster of its own (initdb and pg_ctl on a
free port; binaries on PATH or in $FENCEPOST_PG_BIN; as root the server runs
as $FENCEPOST_PG_USER or postgres), so no server of yours is restarted.
Client processes drive the protocol while each fault is injected: terminate
(every client backend killed), crash (immediate stop, then start), refuse
(stopped for a while), pause (every server process stopped for 3 s). It then
prints each fault and how often it was injected, and each property and
whether it held: acknowledged calls kept, one accepted completion per task,
leases never overlap, every task accounted for, linearizable.

Examples:
  fencepost faults
  fencepost faults mypackage:scheduler_over --faults terminate,crash --times 5 --history-out h.jsonl
  fencepost faults --clients 5 --times 8 --rounds 1500 --seed 34 --history-out chaos.jsonl

FACTORY is MODULE:NAME, a callable taking a dsn and returning a scheduler over
that server (default: fencepost's own PostgresScheduler).

Exit status: 0 every property held; 1 one did not; 2 bad arguments, or no
cluster can be made here.
Docs: docs/faults.md.
"""

from __future__ import annotations

import argparse

from fencepost.commands.options import positive_int
from fencepost.spec.arguments import (
    EXIT_OK,
    EXIT_VIOLATION,
    UsageError,
    check_output_path,
    load_factory,
)

#: FACTORY when none is given.
DEFAULT_FACTORY = "impl.faults:postgres_factory"

#: The faults there are, as ``impl/faults/cluster.py`` injects them (a test keeps the two the same);
#: named here so that --help and a bad --faults need no PostgreSQL driver.
FAULTS = ("terminate", "crash", "refuse", "pause")


def fault_list(text: str) -> tuple[str, ...]:
    """An argparse type: comma-separated fault names, each one of ``FAULTS``."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in FAULTS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of {', '.join(FAULTS)}, got {text!r}")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("factory", metavar="MODULE:FACTORY", nargs="?", default=DEFAULT_FACTORY,
                        help=f"callable taking a dsn and returning a scheduler over it (default {DEFAULT_FACTORY})")
    parser.add_argument("--faults", type=fault_list, default=FAULTS, metavar="LIST",
                        help=f"faults to inject, comma-separated (default {','.join(FAULTS)})")
    parser.add_argument("--times", type=positive_int, default=3, metavar="N", help="each fault this many times (default 3)")
    parser.add_argument("--clients", type=positive_int, default=3, metavar="N", help="client processes (default 3)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the workload and the fault order (default 0)")
    parser.add_argument("--rounds", type=positive_int, default=None, metavar="N",
                        help="rounds of 3 calls each client makes at least, faults or not (default: until the faults are over)")
    parser.add_argument("--history-out", metavar="FILE", default=None, help="write the recorded history (for fencepost linearize)")


def run(args: argparse.Namespace) -> int:
    try:
        from fencepost.impl.faults.cluster import ClusterUnavailable
        from fencepost.impl.faults.inject import run_faults, table, write_history
    except ImportError as exc:  # the PostgreSQL driver is an extra
        raise UsageError(f"fencepost faults needs {exc.name or 'psycopg'}: pip install 'fencepost[postgres]'") from None
    factory = load_factory(args.factory, "FACTORY")
    if args.history_out:
        check_output_path(args.history_out, "--history-out", "for the history (JSON lines)")
    try:
        report = run_faults(factory, faults=args.faults, times=args.times, clients=args.clients, seed=args.seed,
                            min_rounds=args.rounds or 0)
    except ClusterUnavailable as exc:
        raise UsageError(str(exc)) from None
    except RuntimeError as exc:
        lines = str(exc).strip().splitlines()
        print(f"{args.factory}: {lines[0]} {lines[-1].strip() if len(lines) > 1 else ''}".rstrip())
        return EXIT_VIOLATION
    print(f"{args.factory}: seed {args.seed}")
    print("\n".join(table(report)))
    if args.history_out:
        write_history(report, args.history_out)
        print(f"history written to {args.history_out} (fencepost linearize {args.history_out})")
    return EXIT_OK if report.ok else EXIT_VIOLATION
