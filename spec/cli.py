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
import contextlib
import importlib
import importlib.util
import math
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NoReturn

from fencepost.spec.checkers.deadline import DEFAULT_CALL_TIMEOUT

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_USAGE = 2

#: subcommand -> (module, one-line help). Modules are imported only when used,
#: so ``fencepost check`` never pays for importing Textual.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "check": ("fencepost.spec.checkers.check", "check a scheduler factory against the spec"),
    "replay": ("fencepost.spec.checkers.replay", "run a scenario headless and print one line per step"),
    "tui": ("fencepost.tui.launch", "step through a scenario in the terminal UI"),
    "explore": ("fencepost.spec.checkers.explore", "bounded exhaustive exploration of the model"),
    "bench": ("fencepost.impl.bench", "measure the schedulers against their floors"),
    "crash": ("fencepost.spec.checkers.crash", "SIGKILL a durable scheduler mid-run and check what it recovers"),
    "demo": ("fencepost.impl.demo", "run a small workload through the runner on real threads"),
    "linearize": ("fencepost.spec.checkers.linearize", "decide whether a concurrent history could come from the model"),
    "report": ("fencepost.report.command", "write one self-contained HTML page of a scenario, counterexample or history"),
}


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


#: fencepost's own subpackages, which the command line also accepts by their
#: short, pre-``fencepost.`` names (``impl:Scheduler``, ``spec.mutants.x:Scheduler``),
#: so that older commands, scenario files and counterexamples keep working.
SHORT_PACKAGES = ("spec", "impl", "tui")


def resolve_module_name(module_name: str) -> list[str]:
    """The module names to try, in order, for a ``MODULE`` given on the command line.

    A name under one of ``SHORT_PACKAGES`` means fencepost's own module first
    (``impl.durable`` is ``fencepost.impl.durable``), then the name as given,
    so a project with its own ``impl`` package can still name its modules.
    """
    head = module_name.split(".", 1)[0]
    if head in SHORT_PACKAGES:
        return [f"fencepost.{module_name}", module_name]
    return [module_name]


def canonical_factory_name(spec: str) -> str:
    """``impl:Scheduler`` -> ``fencepost.impl:Scheduler``; other names unchanged."""
    module_name, sep, attr = spec.partition(":")
    if module_name.split(".", 1)[0] in SHORT_PACKAGES and importlib.util.find_spec("fencepost." + module_name.split(".", 1)[0]):
        return f"fencepost.{module_name}{sep}{attr}"
    return spec


def _import_attribute(module_name: str, attr: str) -> object:
    """Import ``module_name`` and walk the dotted ``attr``; raise LookupError naming what is missing."""
    module = importlib.import_module(module_name)
    obj: object = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise LookupError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


@contextlib.contextmanager
def _current_folder_importable(wanted: bool) -> Iterator[None]:
    """While importing a module the user named, put the current folder first on ``sys.path``.

    Like ``python -m``, so a user's own module beside them imports; but only
    for that import, and never for fencepost's own modules: with the current
    folder left on the path, any module imported later (Textual's, the
    standard library's) could be shadowed by a file in a downloaded folder.
    """
    added = wanted and "" not in sys.path and "." not in sys.path
    if added:
        sys.path.insert(0, "")
    try:
        yield
    finally:
        if added and "" in sys.path:
            sys.path.remove("")


def load_factory(spec: str, argument: str = "FACTORY") -> Callable[[], object]:
    """Import ``MODULE:NAME`` and return the callable it names.

    ``MODULE`` may be any importable module (the current folder is searched
    first while it is imported, as with ``python -m``, and only then), or
    fencepost's own module by its short name (see ``resolve_module_name``),
    which never searches the current folder. Only the command line calls
    this: no file fencepost reads ever names code for it to import.

    Raises:
        UsageError: the text is not ``MODULE:NAME``, the module cannot be
            imported, the name is missing, or it is not callable.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"{argument} must look like MODULE:NAME, got {spec!r}")
    candidates = resolve_module_name(module_name)
    problem = ""
    for index, candidate in enumerate(candidates):
        last = index == len(candidates) - 1
        try:
            with _current_folder_importable(not candidate.startswith("fencepost.")):
                obj = _import_attribute(candidate, attr)
        except ModuleNotFoundError as exc:
            if not last and exc.name is not None and candidate.startswith(exc.name):
                continue  # fencepost has no such module: try the name as given
            problem = problem or f"cannot import module {module_name!r} for {argument} {spec!r}: {type(exc).__name__}: {exc}"
            continue
        except LookupError as exc:
            problem = problem or f"{exc} (from {argument} {spec!r})".replace(repr(candidate), repr(module_name))
            continue
        except Exception as exc:  # any import-time failure is the user's module, not ours
            problem = problem or f"cannot import module {module_name!r} for {argument} {spec!r}: {type(exc).__name__}: {exc}"
            continue
        if not callable(obj):
            raise UsageError(f"{argument} {spec!r} is not callable: it is a {type(obj).__name__}")
        return obj
    raise UsageError(problem)


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


def open_exec(command: str, timeout: float) -> object:
    """Start ``--exec COMMAND`` and say hello: an ``ExecProgram``, the factory of its schedulers.

    The caller closes it. Raises:
        UsageError: the command is not valid, cannot start, or does not say hello properly.
    """
    from fencepost.spec.adapters.exec import AdapterStartError, ExecProgram

    try:
        program = ExecProgram(command, call_timeout=timeout)
        program.start()
    except (ValueError, AdapterStartError) as exc:
        raise UsageError(str(exc)) from None
    return program


def exec_name(command: str) -> str:
    """How a program behind ``--exec`` is named in reports: ``--exec 'node sched.js'``."""
    return f"--exec {command!r}"


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


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1, else a one-line error naming the value."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


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
