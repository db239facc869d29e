"""The ``fencepost`` command line: one entry point, one module per subcommand.

Each subcommand lives in its own module, which offers ``add_arguments(parser)``
and ``run(args) -> int``; this module only wires them together, turns
``UsageError`` into one line on stderr with exit status 2, and never shows a
traceback for bad input.

Exit statuses, shared by every subcommand: 0 success or conformance, 1 a
violation or a failed expectation, 2 bad arguments or a bad input file.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_USAGE = 2

#: subcommand -> (module, one-line help). Modules are imported only when used,
#: so ``fencepost check`` never pays for importing Textual.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "check": ("spec.check", "check a scheduler factory against the spec"),
    "replay": ("spec.replay", "run a scenario headless and print one line per step"),
    "tui": ("tui.launch", "step through a scenario in the terminal UI"),
    "explore": ("spec.explore", "bounded exhaustive exploration of the model"),
    "bench": ("impl.bench", "measure both implementations against the heapq floor"),
}


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


def load_factory(spec: str, argument: str = "FACTORY") -> Callable[[], object]:
    """Import ``MODULE:NAME`` and return the callable it names.

    Raises:
        UsageError: the text is not ``MODULE:NAME``, the module cannot be
            imported, the name is missing, or it is not callable.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"{argument} must look like MODULE:NAME, got {spec!r}")
    if "" not in sys.path and "." not in sys.path:
        # Like `python -m`, let the user's own modules in the current folder import.
        sys.path.insert(0, "")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure is the user's module, not ours
        raise UsageError(f"cannot import module {module_name!r} for {argument} {spec!r}: {type(exc).__name__}: {exc}") from None
    obj: object = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"module {module_name!r} has no attribute {attr!r} (from {argument} {spec!r})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"{argument} {spec!r} is not callable: it is a {type(obj).__name__}")
    return obj


def check_output_path(path: str, argument: str = "--trace-out") -> None:
    """Refuse, before any work, an output path that could not be written.

    Raises:
        UsageError: the path is a folder, or the folder it would go in does not exist.
    """
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{argument} {path!r}: is a folder; give a file name ending in .toml or .json")
    if not target.resolve().parent.is_dir():
        raise UsageError(f"{argument} {path!r}: the folder it would go in does not exist")


class _OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage block), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: lists the subcommands without importing them."""
    parser = _OneLineParser(
        prog="fencepost",
        description="Reference spec, implementations and visualizer for lease-based task scheduling. "
        "With no command, opens the onboarding walkthrough in the terminal UI.",
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
        return 130
    except BrokenPipeError:  # output piped into `head`: not an error of ours
        sys.stderr.close()
        return EXIT_OK


def entry_point() -> None:
    sys.exit(main())
