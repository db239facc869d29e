"""``fencepost faults [MODULE:FACTORY]``: a PostgreSQL server's faults against your scheduler, and what held.

  fencepost faults [MODULE:FACTORY] [--faults terminate,crash,refuse,pause] [--times N]
                   [--clients N] [--seed S] [--history-out FILE]

Starts a throw-away PostgreSQL cluster of its own (initdb and pg_ctl into a
temporary folder, on a free port of 127.0.0.1, torn down afterwards; the
server binaries are looked for on PATH or in $FENCEPOST_PG_BIN; as root the
server runs as $FENCEPOST_PG_USER or postgres), so no server of yours is ever
restarted. FACTORY(dsn) must return a scheduler over the server at dsn; every
client process calls it once, and all must see one scheduler (one schema),
empty at the start. Default: impl.faults:postgres_factory (fencepost's own
PostgresScheduler, calls cut after 1 s).

The clients drive the protocol while every fault of --faults is injected
--times times: terminate (pg_terminate_backend of every client backend),
crash (pg_ctl stop -m immediate, then start), refuse (stopped, connections
refused for 1.5 s, then started), pause (every server process SIGSTOPped for
3 s: a scheduler should time its calls out sooner). A call that raises
anything but ValueError is recorded as info (its outcome unknown). Then it
prints, as Jepsen reports do, each fault and how often it was injected, and
each property and whether it held: acknowledged calls kept, one accepted
completion per task, leases never overlap, every task accounted for,
linearizable (the history with its info calls; --history-out writes it for
fencepost linearize).

Exit status: 0 every property held; 1 one did not (or a client failed); 2 bad
arguments, or no cluster can be made here (one line saying why).
"""

from __future__ import annotations

import argparse

from fencepost.impl.faults import run_faults, table, write_history
from fencepost.impl.pg_cluster import FAULTS, ClusterUnavailable
from fencepost.spec.arguments import EXIT_OK, EXIT_VIOLATION, UsageError, check_output_path, load_factory, positive_int

#: FACTORY when none is given.
DEFAULT_FACTORY = "impl.faults:postgres_factory"


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
    parser.add_argument("--history-out", metavar="FILE", default=None, help="write the recorded history (for fencepost linearize)")


def run(args: argparse.Namespace) -> int:
    factory = load_factory(args.factory, "FACTORY")
    if args.history_out:
        check_output_path(args.history_out, "--history-out")
    try:
        report = run_faults(factory, faults=args.faults, times=args.times, clients=args.clients, seed=args.seed)
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
