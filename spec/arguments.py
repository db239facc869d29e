"""What every ``fencepost`` subcommand and the library code behind it share.

The exit statuses, ``UsageError`` (bad input: one line on stderr, exit
status 2), the loading of ``MODULE:NAME`` factories and ``--exec`` programs,
and the variants in force. No argparse here: the options themselves are the
commands layer's (``fencepost/commands/``).

Exit statuses, shared by every subcommand: 0 success or conformance, 1 a
violation or a failed expectation, 2 bad arguments or a bad input file.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_USAGE = 2
#: After Ctrl-C: 128 + SIGINT, as a shell reports a command it interrupted.
EXIT_INTERRUPTED = 130

#: The scheduler a subcommand drives when not told which (``replay`` and
#: ``tui`` without ``--impl``): fencepost's default, by its short name.
DEFAULT_IMPL = "impl:Scheduler"


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


#: fencepost's own subpackages, which the command line also accepts by their
#: short, pre-``fencepost.`` names (``impl:Scheduler``, ``impl.mutants.x:Scheduler``),
#: so that older commands, scenario files and counterexamples keep working.
SHORT_PACKAGES = ("spec", "impl", "tui")

#: Modules that moved, by their old names (short or full) -> where they are now, so
#: that a command a user typed before the move (``spec.mutants.closed_interval:Scheduler``,
#: ``impl.postgres_broken:status_fenced``) still names the same code.
MOVED_MODULES = {
    "spec.mutants": "impl.mutants",
    "impl.postgres_broken": "impl.postgres.broken",
}


def resolve_module_name(module_name: str) -> list[str]:
    """The module names to try, in order, for a ``MODULE`` given on the command line.

    A name under one of ``SHORT_PACKAGES`` means fencepost's own module first
    (``impl.durable`` is ``fencepost.impl.durable``), then the name as given,
    so a project with its own ``impl`` package can still name its modules.
    """
    module_name = moved_module(module_name)
    head = module_name.split(".", 1)[0]
    if head in SHORT_PACKAGES:
        return [f"fencepost.{module_name}", module_name]
    return [module_name]


def moved_module(module_name: str) -> str:
    """``module_name`` under its name since the move (``MOVED_MODULES``); other names unchanged."""
    bare = module_name.removeprefix("fencepost.")
    for old, new in MOVED_MODULES.items():
        if bare == old or bare.startswith(old + "."):
            return new + bare[len(old):]
    return module_name


def canonical_factory_name(spec: str) -> str:
    """``impl:Scheduler`` -> ``fencepost.impl:Scheduler``, a moved module under its new name; other names unchanged."""
    module_name, sep, attr = spec.partition(":")
    module_name = moved_module(module_name)
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
        except Exception as exc:  # noqa: BLE001 - any import-time failure is the user's module, not ours
            problem = problem or f"cannot import module {module_name!r} for {argument} {spec!r}: {type(exc).__name__}: {exc}"
            continue
        if not callable(obj):
            raise UsageError(f"{argument} {spec!r} is not callable: it is a {type(obj).__name__}")
        return obj
    raise UsageError(problem)




def open_exec(command: str, timeout: float, tick_ms: int | None = None) -> object:
    """Start ``--exec COMMAND`` and say hello: an ``ExecProgram``, the factory of its schedulers.

    ``tick_ms``: under ``--clock real``, the tick the program is told (see
    ``spec.realclock``). The caller closes it. Raises:
        UsageError: the command is not valid, cannot start, or does not say hello properly.
    """
    from fencepost.spec.adapters.exec import AdapterStartError, ExecProgram

    try:
        program = ExecProgram(command, call_timeout=timeout, tick_ms=tick_ms)
        program.start()
    except (ValueError, AdapterStartError) as exc:
        raise UsageError(str(exc)) from None
    return program


def exec_name(command: str) -> str:
    """How a program behind ``--exec`` is named in reports: ``--exec 'node sched.js'``."""
    return f"--exec {command!r}"


def check_output_path(path: str, argument: str = "--trace-out", kind: str = "ending in .toml or .json") -> None:
    """Refuse, before any work, an output path that could not be written.

    ``kind`` says what file name to give instead of a folder (a trace's, by default).

    Raises:
        UsageError: the path is a folder, or the folder it would go in does not exist.
    """
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{argument} {path!r}: is a folder; give a file name {kind}")
    if not target.resolve().parent.is_dir():
        raise UsageError(f"{argument} {path!r}: the folder it would go in does not exist")



def declared_variants(source: object) -> dict | None:
    """What a factory, a class or an ``--exec`` program declares (``fencepost_variants``), or None.

    Raises:
        UsageError: the declaration is not a table of NAME = VALUE.
    """
    declared = getattr(source, "fencepost_variants", None)
    if declared is not None and not isinstance(declared, dict):
        raise UsageError(f"fencepost_variants must be a dict of NAME: VALUE, not {type(declared).__name__}: {declared!r}")
    return declared


def variants_in_force(given: list[str] | None, *declarations: tuple[object, str],
                      scheduler: tuple[object, str] | None = None) -> object:
    """The ``Variants`` a run checks under: ``--variant`` flags merged with each ``(declaration, who)``.

    A declaration is a mapping as files and schedulers record it (None: says
    nothing); ``who`` names it in an error ("the scenario file", "the
    scheduler"). Where two sides name the same variant they must agree, except
    ``scheduler``, a factory's or program's own declaration: ``--variant``
    overrides it name by name and extends it (``spec.variants.overlay``).

    Raises:
        UsageError: a flag or declaration is not valid, or two of them
            disagree (one line naming the variant, both values and who said each).
    """
    from fencepost.spec.variants import combine, overlay

    try:
        if scheduler is not None and scheduler[0] is not None:
            merged, _ = overlay(given or [], scheduler[0], scheduler[1])
            sides = [(merged, f"--variant over {scheduler[1]}" if given else scheduler[1])]
        else:
            sides = [(list(given), "--variant")] if given else []
        sides += [(declared, who) for declared, who in declarations if declared is not None]
        return combine(sides)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def overridden_line(given: list[str] | None, scheduler: tuple[object, str]) -> str | None:
    """The line a command prints when ``--variant`` overrode names ``scheduler`` declares, else None.
    Call it after ``variants_in_force`` accepted both."""
    from fencepost.spec.variants import describe_overrides, overlay

    if not given or scheduler[0] is None:
        return None
    _, changed = overlay(given, scheduler[0], scheduler[1])
    return describe_overrides(changed, scheduler[1]) if changed else None
