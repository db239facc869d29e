"""The ``fencepost`` command line: one entry point, one module per subcommand.

This is the only module that knows every subcommand. Each subcommand lives in
its own module, which offers ``add_arguments(parser)`` and ``run(args) -> int``;
this module only wires them together, turns ``UsageError`` into one line on
stderr with exit status 2, and never shows a traceback for bad input.

Exit statuses, shared by every subcommand (``fencepost.spec.arguments``): 0
success or conformance, 1 a violation or a failed expectation, 2 bad
arguments or a bad input file.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from fencepost.commands.options import positive_int  # noqa: F401 - re-exported with the helpers below
from fencepost.spec.arguments import (  # noqa: F401 - re-exported: the command line's helpers, by one name
    DEFAULT_IMPL,
    EXIT_OK,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    EXIT_VIOLATION,
    UsageError,
    load_factory,
)

#: subcommand -> (module, one-line help). Modules are imported only when used,
#: so ``fencepost check`` never pays for importing Textual.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "check": ("fencepost.commands.check", "check a scheduler factory against the spec"),
    "replay": ("fencepost.commands.replay", "run a scenario headless and print one line per step"),
    "tui": ("fencepost.commands.tui", "step through a scenario in the terminal UI"),
    "explore": ("fencepost.commands.explore", "bounded exhaustive exploration of the model"),
    "bench": ("fencepost.commands.bench", "measure the schedulers against their floors"),
    "crash": ("fencepost.commands.crash", "SIGKILL a durable scheduler mid-run and check what it recovers"),
    "demo": ("fencepost.commands.demo", "run a small workload through the runner on real threads"),
    "linearize": ("fencepost.commands.linearize", "decide whether a concurrent history could come from the model"),
    "report": ("fencepost.commands.report", "write one self-contained HTML page of a scenario, counterexample or history"),
    "faults": ("fencepost.commands.faults", "inject PostgreSQL server faults, report what held"),
}


#: What plain ``fencepost`` says when stdin or stdout is not a terminal (pinned by issue 30: one line, exit 2).
NO_TERMINAL = ("fencepost: error: with no command, fencepost opens the terminal UI, which needs a terminal on stdin "
               "and stdout; give a command (see fencepost --help)")


class _OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage block), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _CommandListFormatter(argparse.HelpFormatter):
    """Help whose command list keeps each command's help on its line.

    argparse measures subcommand names without the extra indent they are
    printed with, so the longest one (``linearize``) pushed its help to the
    next line; this counts the indent.
    """

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if action.help is not argparse.SUPPRESS:
            for sub in self._iter_indented_subactions(action):  # indents while it iterates
                width = len(self._format_action_invocation(sub)) + self._current_indent
                self._action_max_length = max(self._action_max_length, width)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: lists the subcommands without importing them."""
    parser = _OneLineParser(
        prog="fencepost",
        formatter_class=_CommandListFormatter,
        description="Reference spec, implementations and visualizer for lease-based task scheduling. "
        "With no command, opens the onboarding walkthrough in the terminal UI (on a terminal; piped or in CI it exits 2).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in SUBCOMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def build_subparser(name: str) -> argparse.ArgumentParser:
    """The parser of one subcommand, from its own module."""
    module_name, help_text = SUBCOMMANDS[name]
    module = importlib.import_module(module_name)
    parser = _OneLineParser(prog=f"fencepost {name}", description=(module.__doc__ or help_text).strip().replace("``", ""))
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    module.add_arguments(parser)
    parser.set_defaults(run=module.run, command=name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``fencepost``; return the exit status (see the module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):  # piped or in CI: a TUI would write escape codes and wait
            print(NO_TERMINAL, file=sys.stderr)
            return EXIT_USAGE
        argv = ["tui"]
    if argv[0] not in SUBCOMMANDS:
        build_parser().parse_args(argv)  # prints help, or one usage line and exits 2
        return EXIT_USAGE
    command = argv[0]
    try:
        # argparse itself exits 2 with a usage line on a malformed option.
        args = build_subparser(command).parse_args(argv[1:])
        return int(args.run(args))
    except UsageError as exc:
        print(f"fencepost {command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # output piped into `head`: not an error of ours
        sys.stderr.close()
        return EXIT_OK


def entry_point() -> None:
    sys.exit(main())
