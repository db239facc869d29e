"""Write one self-contained HTML page of a scenario, a counterexample or a history, to attach to a bug.

  fencepost report FILE -o OUT.html [--impl MODULE:FACTORY | --exec COMMAND] [--max-states N] [--variant NAME=VALUE]

FILE is a scenario or a counterexample (.toml or .json, or a built-in
walkthrough's name), run as replay runs it (on --impl, default
impl:Scheduler, or on the program behind --exec) with the model beside it;
or a concurrent history (.jsonl, or JSON lines with a "process"), checked as
linearize checks it. Either is judged under the declared variants the
file records (a scenario's meta.variants, a history's header), the
scheduler's own declaration and ``--variant``, merged as replay and
linearize merge them; the page names them. The page fetches nothing when opened and shows every
value from the file as text.

Exit status: 0 the page was written, whatever it shows; 2 a bad file, a bad
option, or an OUT that cannot be written (one line on stderr).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fencepost.spec.checkers.deadline import CallTimeout, SchedulerFault, Watch, run_watched, watched_factory
from fencepost.spec.checkers.linearize import DEFAULT_MAX_STATES
from fencepost.spec.arguments import (
    DEFAULT_IMPL,
    EXIT_OK,
    UsageError,
    add_exec_arguments,
    add_variant_arguments,
    declared_variants,
    check_output_path,
    exec_name,
    load_factory,
    open_exec,
    positive_int,
    variants_in_force,
)
from fencepost.spec.formats.scenario import Scenario, ScenarioError, load_scenario, scenario_variants
from fencepost.spec.variants import DEFAULT, Variants
from fencepost.tui.launch import is_history
from fencepost.walkthroughs import resolve


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
    check_output_path(args.output, "-o")
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
    from fencepost.tui.timeline import build_timeline

    try:
        if getattr(factory, "keeps_deadlines", False):  # a program behind --exec times its own calls
            return build_timeline(scenario, factory, variants=variants)
        watch = Watch(call_timeout)
        return run_watched(lambda: build_timeline(scenario, watched_factory(factory, watch), variants=variants), watch)
    except CallTimeout as exc:
        raise UsageError(f"{name}: {exc}; the page cannot be made past it (fencepost replay shows the steps before it)") from None
    except SchedulerFault as exc:
        raise UsageError(f"{name}: {exc}") from None
    except Exception as exc:
        raise UsageError(f"{name}: the factory raised {type(exc).__name__}: {exc}") from None


def _write(path: str, page: str) -> None:
    try:
        Path(path).write_text(page, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"-o {path!r}: cannot write: {exc.strerror or exc}") from None
