"""Write one self-contained HTML page of a scenario, a counterexample or a history.

The page shows every step with the model's and the scheduler's results, the
leases over time, the state at each step, and for a counterexample where and
why it diverges; for a history, its lanes and verdict. It needs no network
and no other file: attach it to a bug report.

Examples:
  fencepost report cx.toml --impl mypackage.sched:MyScheduler -o cx.html
  fencepost report onboarding -o onboarding.html
  fencepost report history.jsonl -o history.html

A file's own record of its scheduler is shown, never imported.

Exit status: 0 the page was written; 2 a bad file or arguments.
Docs: docs/report.md.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path

from fencepost.commands.options import (
    add_exec_arguments,
    add_variant_arguments,
    positive_int,
)
from fencepost.spec.arguments import (
    DEFAULT_IMPL,
    EXIT_OK,
    UsageError,
    check_output_path,
    declared_variants,
    exec_name,
    load_factory,
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
from fencepost.spec.checkers.linearize import DEFAULT_MAX_STATES
from fencepost.spec.formats.history import is_history
from fencepost.spec.formats.scenario import (
    Scenario,
    ScenarioError,
    load_scenario,
    scenario_variants,
)
from fencepost.spec.variants import DEFAULT, Variants
from fencepost.story.walkthroughs import resolve


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a scenario or counterexample (.toml, .json, a built-in name) or a history (.jsonl)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.html", help="where to write the page")
    parser.add_argument("--impl", default=None, metavar="MODULE:FACTORY",
                        help=f"the scheduler a scenario runs on (default: {DEFAULT_IMPL}; a file's meta.impl is only suggested)")
    add_exec_arguments(parser)
    parser.add_argument("--max-states", type=positive_int, default=DEFAULT_MAX_STATES, metavar="N",
                        help=f"a history's search budget, as for linearize (default {DEFAULT_MAX_STATES:,})")
    add_variant_arguments(parser)


def run(args: argparse.Namespace) -> int:
    check_output_path(args.output, "-o", "ending in .html")
    if args.impl is not None and args.exec_command is not None:
        raise UsageError("give --impl or --exec, not both")
    if is_history(args.file):
        if args.impl is not None or args.exec_command is not None:
            raise UsageError(f"{args.file}: a history is checked against the model; --impl and --exec are for a scenario")
        page, summary = history_report(args.file, args.max_states, args.variants)
    else:
        page, summary = scenario_report(args)
    _write(args.output, page)
    print(f"wrote {args.output} ({len(page.encode('utf-8')):,} bytes): {summary}")
    return EXIT_OK


def history_report(path: str, max_states: int = DEFAULT_MAX_STATES, given: list[str] | None = None) -> tuple[str, str]:
    """The page of the history at ``path``, judged under its header's variants merged with
    ``given`` (``--variant`` flags), and a one-line summary.

    Raises:
        UsageError: a bad file, a bad or disagreeing variant, or a history those variants
            cannot judge exactly (as linearize says it).
    """
    from fencepost.report.history import history_page
    from fencepost.spec.checkers.linearize import check_history
    from fencepost.spec.formats.history import HistoryError, load_history

    try:
        history = load_history(path)
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    variants = variants_in_force(given, (history.variants, "the history's header"))
    try:
        verdict = check_history(history, max_states=max_states, variants=variants)
    except ValueError as exc:  # a history the variants cannot judge exactly
        raise UsageError(str(exc)) from None
    words = {True: "linearizable", False: "NOT linearizable", None: "undecided"}[verdict.linearizable]
    return history_page(history, verdict, variants), f"{len(history.calls):,} calls, {words}{_under(variants)}"


def _under(variants: Variants) -> str:
    return "" if variants == DEFAULT else f", under {variants.describe()}"


def scenario_report(args: argparse.Namespace) -> tuple[str, str]:
    """The page of the scenario ``args.file`` run on ``--impl`` or ``--exec``, and a one-line summary."""
    from fencepost.report.scenario import scenario_page

    try:
        scenario = load_scenario(resolve(args.file))
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    recorded = (scenario_variants(scenario), "the scenario file's meta.variants")
    variants_in_force(args.variants, recorded)  # a disagreement is an error before anything starts
    if args.exec_command is not None:
        name = exec_name(args.exec_command)
        with open_exec(args.exec_command, args.call_timeout) as program:
            variants = variants_in_force(args.variants, recorded, (declared_variants(program), "the program's hello"))
            program.opaque_tokens = variants.tokens == "opaque"  # its answers may then carry str tokens
            timeline = build(scenario, program, args.call_timeout, name, variants)
    else:
        name = args.impl or DEFAULT_IMPL
        factory = load_factory(name, "--impl")
        variants = variants_in_force(args.variants, recorded, (declared_variants(factory), f"{name}'s fencepost_variants"))
        timeline = build(scenario, factory, args.call_timeout, f"--impl {name}", variants)
    running = {"impl": args.impl or DEFAULT_IMPL, "exec": args.exec_command}
    page = scenario_page(timeline, args.file, name, running)
    problems = sorted(set(timeline.mismatches) | set(timeline.divergences))
    summary = f"first problem at step {problems[0]}" if problems else "no problem"
    steps = len(scenario.steps)
    return page, f"{steps:,} step{'' if steps == 1 else 's'} on {name}, {summary}{_under(variants)}"


def build(scenario: Scenario, factory: object, call_timeout: float, name: str, variants: Variants = DEFAULT) -> object:
    """The scenario's timeline on ``factory``, with the model's checks under ``variants``, every
    call under ``call_timeout``.

    Raises:
        UsageError: the factory failed, or a call did not return in time.
    """
    try:
        with _collector_paused():  # here, not in run_watched's thread, which a hung call leaves running
            if getattr(factory, "keeps_deadlines", False):  # a program behind --exec times its own calls
                return _build_frozen(scenario, factory, variants)
            watch = Watch(call_timeout)
            return run_watched(lambda: _build_frozen(scenario, watched_factory(factory, watch), variants), watch)
    except CallTimeout as exc:
        raise UsageError(f"{name}: {exc}; the page cannot be made past it (fencepost replay shows the steps before it)") from None
    except SchedulerFault as exc:
        raise UsageError(f"{name}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a user's factory may fail any way: a usage error naming it
        raise UsageError(f"{name}: the factory raised {type(exc).__name__}: {exc}") from None


def _build_frozen(scenario: Scenario, factory: object, variants: Variants) -> object:
    """``build_timeline``, called by ``build`` with the garbage collector paused (``_collector_paused``)."""
    from fencepost.story.timeline import build_timeline

    return build_timeline(scenario, factory, variants=variants)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The garbage collector paused for the block, and enabled again when it ends, however it ends.

    The timeline lives until the page is written and the process ends, so a
    collection finds nothing to free in it, and the collections that walked it
    as it grew made a 100,000-step trace cost 2.7 times as much per step as a
    10,000-step one (1.8 times when what was built was frozen every 500 frames,
    as the TUI does). A collector paused by someone else stays paused.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _write(path: str, page: str) -> None:
    try:
        Path(path).write_text(page, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"-o {path!r}: cannot write: {exc.strerror or exc}") from None
