"""Run a small workload through the runner on real threads, then watch it in the TUI.

The runner executes Python functions under leases on a thread pool: some
succeed, some fail and retry with backoff, one stalls past its lease and
its late report is refused, one is cancelled, and one task submits another
while it runs (so the demo ends with one task more than --tasks). The
runner's trace is written to FILE and opened in the TUI; when standard
output is not a terminal, the trace is only written and its path printed.

Examples:
  fencepost demo
  fencepost demo --workers 6 --tasks 40 --seed 3 --out demo.toml

Exit status: 0; 2 bad arguments.
Docs: docs/runner.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from fencepost.impl.runner.demo import MAX_TASKS, MIN_TASKS, MIN_WORKERS, run_demo
from fencepost.spec.arguments import EXIT_OK, UsageError, check_output_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=4, help=f"pool slots (default 4, at least {MIN_WORKERS})")
    parser.add_argument("--tasks", type=int, default=16,
                        help=f"tasks submitted by the demo (default 16, {MIN_TASKS} to {MAX_TASKS:,})")
    parser.add_argument("--seed", type=int, default=0, help="seed for priorities, due times and failures (default 0)")
    parser.add_argument("--out", metavar="FILE", help="where to write the trace (.toml or .json; default: a temporary file)")


def run(args: argparse.Namespace) -> int:
    if args.workers < MIN_WORKERS:
        raise UsageError(f"--workers must be at least {MIN_WORKERS} (a stalled, a cancelled and a long task run beside the rest), got {args.workers}")
    if not MIN_TASKS <= args.tasks <= MAX_TASKS:
        raise UsageError(f"--tasks must be from {MIN_TASKS} to {MAX_TASKS}, got {args.tasks}")
    if args.out is not None:
        check_output_path(args.out, "--out")
    out = Path(args.out) if args.out else Path(tempfile.gettempdir()) / f"fencepost-demo-seed{args.seed}.toml"
    runner = run_demo(args.workers, args.tasks, args.seed, out)
    print(f"fencepost demo: wrote {len(runner._trace)} protocol calls to {out}")
    if not sys.stdout.isatty():
        return EXIT_OK
    from fencepost.commands import tui as launch  # Textual only on a terminal

    # The arguments `fencepost tui FILE` would get, every default included (--call-timeout, --exec).
    parser = argparse.ArgumentParser(prog="fencepost tui")
    launch.add_arguments(parser)
    return launch.run(parser.parse_args([str(out)]))
