"""Step through a scenario in the terminal UI.

Opens a built-in walkthrough (NAME; --list shows them in teaching order), a
scenario file (PATH: a counterexample opens at its diverging step), or a
concurrent history (.jsonl), shown lane by lane with its linearizability
verdict. Plain `fencepost` opens the first walkthrough. Press ? in the app
for the keys: arrows step through logical time, m shows the model's state,
o opens the next walkthrough.

Examples:
  fencepost tui --list
  fencepost tui lease-ends
  fencepost tui cx.toml --impl mypackage.sched:MyScheduler
  fencepost tui --new                  # type protocol calls yourself

Everything is run before the screen opens, so a bad file or name is one line
on stderr and exit status 2. A file's own record of its scheduler is shown
as a suggestion, never imported.

Exit status: 0; 2 a bad file, name or arguments.
Docs: docs/tui.md.
"""

from __future__ import annotations

import argparse
import gc

from fencepost.commands.options import add_exec_arguments, add_variant_arguments
from fencepost.spec.arguments import (
    DEFAULT_IMPL,
    EXIT_OK,
    UsageError,
    declared_variants,
    exec_name,
    open_exec,
    variants_in_force,
)
from fencepost.spec.checkers.deadline import (
    CallTimeout,
    SchedulerFault,
    Watch,
    run_watched,
    watched_factory,
)
from fencepost.spec.formats.history import is_history
from fencepost.spec.formats.recorded import suggestions
from fencepost.spec.formats.scenario import (
    Scenario,
    ScenarioError,
    load_scenario,
    scenario_variants,
)
from fencepost.spec.variants import DEFAULT, Variants
from fencepost.story.shipped import open_for
from fencepost.story.walkthroughs import (
    DEFAULT_WALKTHROUGH,
    builtin_names,
    builtin_summary,
    curriculum,
    resolve,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "scenario",
        nargs="?",
        metavar="NAME | PATH",
        help=f"a built-in walkthrough or a scenario file (default: {DEFAULT_WALKTHROUGH})",
    )
    parser.add_argument("--list", action="store_true", help="list the built-in walkthroughs, one line each")
    parser.add_argument("--new", action="store_true", help="start an interactive session: type protocol calls")
    parser.add_argument(
        "--impl",
        metavar="MODULE:FACTORY",
        help=f"the scheduler to run the steps on (default: {DEFAULT_IMPL}; a file's meta.impl is only suggested)",
    )
    add_variant_arguments(parser)
    add_exec_arguments(parser)


def list_builtins() -> list[str]:
    """One line per built-in walkthrough, in teaching order: its number in the curriculum
    (``-`` for one the curriculum does not list), its name, and what it teaches."""
    names, order = builtin_names(), curriculum()
    width = max((len(name) for name in names), default=0)
    lines = []
    for name in names:
        number = f"{order.index(name) + 1:>2}." if name in order else " -."
        lines.append(f"{number} {name:<{width}}  {builtin_summary(name)}")
    return lines


def choose_factory(scenario: Scenario, impl: str | None) -> tuple[object, str, str | None]:
    """The factory to run ``scenario`` on, its MODULE:NAME, and a notice for the screen (or None).

    Only the command line names code: ``impl`` (``--impl``) is imported, and
    without it the shipped scheduler that offers what the scenario needs runs
    (``fencepost.story.shipped``: the default scheduler unless it needs more). What the scenario records
    (``meta.impl``, ``meta.exec``) is never imported or run, only offered in
    the notice as the option that would run it.

    A factory given by ``--impl`` is called once up front, as ``check`` and
    ``explore`` do, so one whose scheduler lacks the protocol's methods is
    refused in one line rather than opening a screen of errors.

    Raises:
        UsageError: ``impl`` was given and cannot be loaded, its factory fails,
            or what it returns lacks a protocol method.
    """
    opened = open_for(scenario, impl)
    if impl is not None:
        from fencepost.spec.checkers.check import (
            probe_factory,  # only for a factory the user named
        )

        probe_factory(opened.factory, impl)
    notice = "; ".join(filter(None, [opened.reason, *suggestions(scenario.meta, {"impl": opened.name})])) or None
    return opened.factory, opened.name, notice


def builtin_name(args: argparse.Namespace) -> str | None:
    """The built-in walkthrough the arguments open, or None (a file, or an empty session)."""
    if args.scenario is None:
        return None if args.new else DEFAULT_WALKTHROUGH
    return args.scenario if args.scenario in builtin_names() else None


def run(args: argparse.Namespace) -> int:
    if args.scenario and is_history(args.scenario):
        return run_history(args.scenario)
    if args.list:
        for line in list_builtins():
            print(line)
        return EXIT_OK
    if args.new and args.scenario is None:
        scenario = Scenario("Interactive session", (), None, {})
    else:
        try:
            scenario = load_scenario(resolve(args.scenario or DEFAULT_WALKTHROUGH))
        except ScenarioError as exc:
            raise UsageError(str(exc)) from None
    if args.impl and args.exec_command is not None:
        raise UsageError("give --impl or --exec, not both")
    recorded = (scenario_variants(scenario), "the scenario file's meta.variants")
    variants_in_force(args.variants, recorded)  # a disagreement is an error before anything starts
    if args.exec_command is not None:
        with open_exec(args.exec_command, args.call_timeout) as program:
            variants = variants_in_force(args.variants, recorded, (declared_variants(program), "the program's hello"))
            program.opaque_tokens = variants.tokens == "opaque"
            return _show(args, scenario, program, exec_name(args.exec_command), None, variants)
    try:
        factory, impl_name, notice = choose_factory(scenario, args.impl)
    except UsageError as exc:
        if args.impl is not None:
            raise
        raise UsageError(f"{args.scenario or DEFAULT_WALKTHROUGH}: {exc}") from None
    variants = variants_in_force(args.variants, recorded, (declared_variants(factory), f"{impl_name}'s fencepost_variants"))
    return _show(args, scenario, factory, impl_name, notice, variants)


def _show(args: argparse.Namespace, scenario: Scenario, factory: object, impl_name: str, notice: str | None,
          variants: Variants = DEFAULT) -> int:
    from fencepost.tui.app import FencepostApp  # Textual only once the input is good

    timeline = build_watched(scenario, factory, args.call_timeout, impl_name, variants)
    # The process is the app's from here to its end: the timeline's rows are out of the
    # collector's sight for good, so no full collection walks them in the middle of a step.
    gc.freeze()
    opener = None if args.exec_command is not None else (lambda later: choose_factory(later, args.impl))
    app = FencepostApp(
        timeline,
        opener=opener,
        interactive=args.new,
        impl_name=impl_name if impl_name != DEFAULT_IMPL else None,
        notice=notice,
        walkthrough=builtin_name(args),
        freeze_collector=True,
    )
    app.run()
    return EXIT_OK


def build_watched(scenario: Scenario, factory: object, call_timeout: float, name: str,
                  variants: Variants = DEFAULT) -> object:
    """``open_timeline`` with every call into the scheduler under ``call_timeout``.

    A program behind ``--exec`` keeps its own deadlines (a hung step is
    marked on the screen like any other fault); an in-process scheduler runs
    on a watched thread, and a hang there is one line, exit 2: the screen
    cannot be prepared past it. (Calls typed later in interactive mode have
    no deadline, nor, in a scenario too long to run before the first screen
    (``tui.app.MODEL_UP_FRONT_STEPS``), the steps run after it.)

    Raises:
        UsageError: the factory failed, or a call did not return in time.
    """
    from fencepost.tui.app import open_timeline

    try:
        if getattr(factory, "keeps_deadlines", False):
            return open_timeline(scenario, factory, variants)
        watch = Watch(call_timeout)
        return run_watched(lambda: open_timeline(scenario, watched_factory(factory, watch), variants), watch)
    except CallTimeout as exc:
        raise UsageError(f"{name}: {exc}; the screen cannot be prepared past it (fencepost replay shows the steps before it)") from None
    except SchedulerFault as exc:
        raise UsageError(f"{name}: {exc}") from None



def run_history(path: str) -> int:
    """Check the history at ``path`` and open it in the history view.

    Raises:
        UsageError: the file is not a valid history (one line, exit status 2).
    """
    from fencepost.spec.checkers.linearize import check_history
    from fencepost.spec.formats.history import HistoryError, load_history

    try:
        history = load_history(path)
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    verdict = check_history(history)

    from fencepost.tui.history import HistoryApp  # Textual only once the input is good

    HistoryApp(history, verdict).run()
    return EXIT_OK
