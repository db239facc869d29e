"""Run a scenario against a scheduler, one line per step.

PATH is a scenario file (.toml or .json: a counterexample written by
--trace-out, or your own) or the name of a built-in walkthrough. Every step
runs, even after a mismatch; each line shows the step, the clock after it
(t=), the call, its result and MISMATCH where an expectation does not hold.
A file's own record of the scheduler it came from is shown, never imported.

Examples:
  fencepost replay onboarding
  fencepost replay cx.toml --impl mypackage.sched:MyScheduler
  fencepost replay cx.toml --exec "node sched.js"

Without --impl or --exec the default scheduler runs it, or the shipped one
that offers what the scenario needs (a restart needs a durable scheduler).

With --clock real (the default for a queue on its server's clock) the steps
run on the wall clock, one tick every --tick-ms, and are judged by the model
as a real-clock check judges them (what the measured timing allows), not by
the file's expectations:
  fencepost replay cx.toml --impl fencepost.impl.peers.redis_streams:group --clock real

Exit status: 0 every expectation holds (on the real clock: no step diverges
whatever the timing); 1 one does not, or the scheduler raised something other
than ValueError; 2 a bad file or bad arguments; 3 on the real clock, the
timing left the replay undecided in every attempt.
Docs: docs/scenarios.md, docs/real-clock.md.
"""

from __future__ import annotations

import argparse

from fencepost.commands.options import add_clock_arguments, add_exec_arguments, add_variant_arguments, timing_in_force
from fencepost.spec.arguments import (
    DEFAULT_IMPL,
    EXIT_OK,
    EXIT_VIOLATION,
    UsageError,
    declared_variants,
    exec_name,
    load_factory,
    open_exec,
    variants_in_force,
)
from fencepost.spec.checkers.deadline import SchedulerFault
from fencepost.spec.checkers.replay import (
    ReplayedStep,
    _count,
    format_lines,
    refuse_restart_without_reopen,
    replay,
    replay_watched,
    summary,
)
from fencepost.spec.formats.recorded import suggestions
from fencepost.spec.formats.scenario import (
    Scenario,
    ScenarioError,
    load_scenario,
    scenario_variants,
)
from fencepost.spec.variants import DEFAULT, Variants
from fencepost.story.shipped import choose_impl
from fencepost.story.walkthroughs import resolve


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", metavar="PATH", help="a scenario file (.toml or .json) or a built-in walkthrough name")
    parser.add_argument(
        "--impl",
        default=None,
        metavar="MODULE:FACTORY",
        help=f"a zero-argument factory returning a fresh scheduler (default: {DEFAULT_IMPL}, "
        "or the shipped scheduler that offers what the scenario needs)",
    )
    add_variant_arguments(parser)
    add_exec_arguments(parser)
    add_clock_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if args.impl is not None and args.exec_command is not None:
        raise UsageError("give --impl or --exec, not both")
    try:
        scenario = load_scenario(resolve(args.scenario))
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    recorded = (scenario_variants(scenario), "the scenario file's meta.variants")
    variants_in_force(args.variants, recorded)  # a disagreement is an error before anything starts
    if args.exec_command is not None:
        timing = timing_in_force(args, None, exec_name(args.exec_command))
        with open_exec(args.exec_command, args.call_timeout, timing.tick_ms if timing else None) as program:
            variants = variants_in_force(args.variants, recorded, (declared_variants(program), "the program's hello"))
            program.opaque_tokens = variants.tokens == "opaque"  # its answers may then carry str tokens
            if timing is not None:
                return _replay_on_the_real_clock(args, scenario, exec_name(args.exec_command), program, variants, timing)
            try:
                scheduler = program()
            except SchedulerFault as exc:
                raise UsageError(f"{exec_name(args.exec_command)}: {exc}") from None
            try:
                refuse_restart_without_reopen(scenario, scheduler, exec_name(args.exec_command))
            except UsageError as exc:
                raise UsageError(f"{args.scenario}: {exc}") from None
            return _report(args, scenario, exec_name(args.exec_command), replay(scenario, scheduler, variants=variants), variants)
    impl, chosen = args.impl, None
    if impl is None:  # the scenario's needs choose among the shipped schedulers (the command line says how)
        try:
            impl, chosen = choose_impl(scenario)
        except UsageError as exc:
            raise UsageError(f"{args.scenario}: {exc}") from None
    factory = load_factory(impl, "--impl")
    variants = variants_in_force(args.variants, recorded, (declared_variants(factory), f"{impl}'s fencepost_variants"))
    timing = timing_in_force(args, factory, impl)
    if timing is not None:
        return _replay_on_the_real_clock(args, scenario, impl, factory, variants, timing)
    try:
        replayed = replay_watched(scenario, factory, args.call_timeout, f"--impl {impl}", variants)
    except UsageError as exc:
        raise UsageError(f"{args.scenario}: {exc}") from None
    except SchedulerFault as exc:  # the factory itself hung
        raise UsageError(f"--impl {impl}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a user's factory may fail any way: a usage error naming it
        raise UsageError(f"--impl {impl}: the factory raised {type(exc).__name__}: {exc}") from None
    return _report(args, scenario, impl, replayed, variants, chosen)


def _report(args: argparse.Namespace, scenario: Scenario, name: str, replayed: list[ReplayedStep],
            variants: Variants = DEFAULT, chosen: str | None = None) -> int:
    title = " ".join(scenario.title.split())
    print(f"replay {args.scenario} against {name}: {title} ({_count(len(scenario.steps), 'step')})")
    if chosen:
        print(f"note: {chosen}")  # no --impl: the scenario's needs chose a shipped scheduler
    if variants != DEFAULT:
        print(f"declared variants in force: {variants.describe()}")
    running = {"impl": name if args.exec_command is None else DEFAULT_IMPL, "exec": args.exec_command}
    for line in suggestions(scenario.meta, running):
        print(f"note: {line}")  # the file's own record of what it ran on: shown, never run
    for line in format_lines(replayed):
        print(line)
    print(summary(replayed, len(scenario.steps)))
    return EXIT_VIOLATION if any(r.mismatch for r in replayed) else EXIT_OK


#: Times a real-clock replay is tried when the timing leaves it undecided (a call too late to
#: tell which side of a lease's end it fell on) before it is reported undecided, exit 3.
REAL_CLOCK_ATTEMPTS = 3
#: The exit status of a replay the timing left undecided in every attempt (as linearize's undecided).
EXIT_UNDECIDED = 3


def _replay_on_the_real_clock(args: argparse.Namespace, scenario: Scenario, name: str, factory: object,
                              variants: Variants, timing: object) -> int:
    """The steps on the wall clock, judged as ``check --clock real`` judges a run: 0, 1 or ``EXIT_UNDECIDED``.

    Raises:
        UsageError: the scenario restarts the scheduler (a real-clock queue's
            restart is its server's, which fencepost does not drive).
    """
    from fencepost.spec.checkers.realtime import Inconclusive, run_timed_calls, ticked
    from fencepost.spec.checkers.results import format_trace
    from fencepost.spec.protocol import RESTART

    if any(step.op == RESTART for step in scenario.steps):
        raise UsageError(f"{args.scenario}: a scenario with a restart cannot be replayed on the real clock")
    calls = [(step.op, dict(step.args)) for step in scenario.steps]
    made = ticked(factory, timing.tick_ms) if args.exec_command is None else factory
    title = " ".join(scenario.title.split())
    print(f"replay {args.scenario} against {name} on the real clock: {title} ({_count(len(scenario.steps), 'step')})")
    if variants != DEFAULT:
        print(f"declared variants in force: {variants.describe()}")
    print("note: judged by the model with what each call's measured timing allows; the file's expectations are not read")
    trace = undecided = None
    for attempt in range(1, REAL_CLOCK_ATTEMPTS + 1):
        try:
            # no minimizing budget: the replay is run once, in full, whatever it costs
            trace = run_timed_calls(timing, budget=float("inf"), measured=True)(made, calls, args.call_timeout, variants)
        except Inconclusive:
            undecided = attempt
            continue
        undecided = None
        break
    print(timing.summary())
    if undecided is not None:
        print(f"undecided: the timing left the replay undecided in all {REAL_CLOCK_ATTEMPTS} attempts; "
              "a longer --tick-ms leaves more room")
        return EXIT_UNDECIDED
    if trace is None:
        print(f"ok: no step diverges whatever the timing ({_count(len(calls), 'step')})")
        return EXIT_OK
    print(format_trace(trace))
    print(f"step {len(trace)} diverges whatever the timing")
    return EXIT_VIOLATION
