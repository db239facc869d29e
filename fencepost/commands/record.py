"""Record concurrent histories of a real queue, driven from several real threads.

Not a ``fencepost`` subcommand: it is started as
``python -m fencepost.impl.peers.record FACTORY RACE PATH [--rounds N] ...``
(a pinned command), whose ``__main__`` block calls ``main`` here. The races,
the clock and what is written are ``fencepost.impl.peers.record``'s.

Example:
  python -m fencepost.impl.peers.record fencepost.impl.peers.sqs:fifo claim h.jsonl --rounds 300 --excerpt

Exit status: 0 written; 2 bad arguments or a factory that cannot be loaded.
Docs: docs/findings.md, docs/real-clock.md.
"""

from __future__ import annotations

import argparse
import sys

from fencepost.commands.options import call_timeout, positive_int
from fencepost.impl.peers.record import RACES, excerpt, record
from fencepost.spec.arguments import UsageError, check_output_path, load_factory
from fencepost.spec.formats.history import HistoryError, write_history
from fencepost.spec.realclock import DEFAULT_TICK_MS

#: How the command is started (it is not a ``fencepost`` subcommand).
PROG = "python -m fencepost.impl.peers.record"


def parser() -> argparse.ArgumentParser:
    """The command's arguments and help."""
    made = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    made.add_argument("factory", metavar="FACTORY", help="MODULE:NAME of a zero-argument scheduler factory")
    made.add_argument("race", choices=sorted(RACES))
    made.add_argument("path", metavar="PATH", help="where to write the history (JSON lines)")
    made.add_argument("--rounds", type=int, default=20)
    made.add_argument("--threads", type=int, default=4)
    made.add_argument("--switch-interval", type=call_timeout, default=None, metavar="SECONDS",
                      help="the interpreter's thread switch interval while recording (see record())")
    made.add_argument("--excerpt", action="store_true",
                      help="stop at the first round the race saw go wrong and write only it (see excerpt())")
    made.add_argument("--shared", action="store_true",
                      help="every thread calls the one scheduler object, not a connection of its own")
    made.add_argument("--tick-ms", type=positive_int, default=None, metavar="N",
                      help="for a queue on its server's clock: milliseconds one tick lasts "
                      f"(default {DEFAULT_TICK_MS}; see docs/real-clock.md)")
    return made


def main(argv: list[str] | None = None) -> int:
    """Record, write the history, print one line; the exit status."""
    args = parser().parse_args(argv)
    try:
        check_output_path(args.path, "PATH", "for the history (JSON lines)")  # before the recording, which may take minutes
        factory = load_factory(args.factory)
        recording = record(factory, args.race, args.rounds, args.threads, args.switch_interval, args.excerpt, args.shared,
                           args.tick_ms)
    except (UsageError, ValueError) as exc:
        print(f"record: error: {exc}", file=sys.stderr)
        return 2
    events = recording.log.events
    if args.excerpt and recording.problems:
        events = excerpt(events, recording.problems[0][0])
    try:
        write_history(args.path, events, recording.log.variants, recording.log.timing)
    except HistoryError as exc:  # e.g. a folder it may not write in
        print(f"record: error: {exc}", file=sys.stderr)
        return 2
    seen = "; ".join(f"round {r}: {p}" for r, p in recording.problems[:3]) or "nothing"
    print(f"{args.path}: {len(events)} events, {args.threads} threads, {recording.rounds} rounds of {args.race}; "
          f"the race saw {len(recording.problems)} problem(s): {seen}")
    return 0
