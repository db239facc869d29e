"""Run a scenario headless against an implementation and print one line per step.

``fencepost replay PATH [--impl MODULE:FACTORY]``: PATH is a scenario file
(``.toml`` or ``.json``) or the name of a built-in walkthrough. Every step runs,
even after a mismatch, so the whole story is on screen; each line shows the
step number, the scheduler's time after the step (``t=``), the call and its
result, and ``MISMATCH: expected ..., got ...`` where an ``expect`` does not
hold. The last line sums up and names the first mismatching step.

A scenario's ``meta.impl`` is never imported: when it names another
scheduler, a note says which and the ``--impl`` that would run it there.

Exit status: 0 every ``expect`` holds; 1 one does not, or the implementation
raised something other than ``ValueError``; 2 a bad file or a bad ``--impl``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from fencepost.spec.cli import EXIT_OK, EXIT_VIOLATION, UsageError, load_factory
from fencepost.spec.formats.recorded import suggestions
from fencepost.spec.protocol import RESTART
from fencepost.spec.formats.scenario import (
    Scenario,
    ScenarioError,
    Step,
    StepResult,
    apply_step,
    check_expect,
    check_state,
    describe_call,
    describe_result,
    first_restart,
    load_scenario,
    offers_restart,
    resolve,
)

DEFAULT_IMPL = "impl:Scheduler"


@dataclass(frozen=True)
class ReplayedStep:
    """One step as replayed: what was called, what came back, and whether ``expect`` held."""

    number: int  # 1-based
    step: Step
    result: StepResult
    now: object  # the scheduler's ``now`` after the step ("?" if it could not be read)
    mismatch: str | None  # one line, or None when the step is fine


def replay(scenario: Scenario, scheduler: object) -> list[ReplayedStep]:
    """Apply every step of ``scenario`` to ``scheduler`` in order and check each ``expect``.

    An exception other than ``ValueError`` is caught and reported as a
    mismatch, since the protocol allows only ``ValueError``; the replay goes on.
    A ``restart`` step replaces ``scheduler`` with its ``reopen()`` for every
    later step (the caller checks up front that it has one).
    """
    replayed = []
    submitted = 0
    for number, step in enumerate(scenario.steps, start=1):
        try:
            result = apply_step(scheduler, step)
            if step.op == RESTART:
                scheduler = result.value
            if step.op == "submit" and result.error is None and result.value == submitted + 1:
                submitted += 1  # the ids task() must know from here on (a duplicate by key issues none)
            mismatch = check_expect(step, result) or check_state(step, scheduler, submitted)
        except Exception as exc:  # a non-conforming implementation, reported, not raised
            result = StepResult(error=f"{type(exc).__name__}: {exc}")
            mismatch = f"raised {type(exc).__name__}, but the protocol allows only ValueError"
        try:
            now = scheduler.now
        except Exception:
            now = "?"
        replayed.append(ReplayedStep(number, step, result, now, mismatch))
    return replayed


def format_lines(replayed: list[ReplayedStep]) -> list[str]:
    """One aligned line per replayed step."""
    number_width = len(str(len(replayed)))
    times = [f"t={r.now}" for r in replayed]
    time_width = max((len(t) for t in times), default=0)
    lines = []
    for r, t in zip(replayed, times):
        line = f"step {r.number:>{number_width}}  {t:<{time_width}}  {describe_call(r.step)} -> {describe_result(r.step, r.result)}"
        if r.mismatch:
            line += f"  MISMATCH: {r.mismatch}"
        lines.append(line)
    return lines


def summary(replayed: list[ReplayedStep]) -> str:
    """The last line: how many expectations held, and the first step that did not."""
    checked = sum(1 for r in replayed if r.step.expect is not None)
    failed = [r for r in replayed if r.mismatch]
    steps = _count(len(replayed), "step")
    if not failed:
        if not checked:
            return f"ok: {steps}, no expectations to check"
        if checked == 1:
            return f"ok: the 1 expectation holds over {steps}"
        return f"ok: all {checked} expectations hold over {steps}"
    first = failed[0]
    verb = "does" if len(failed) == 1 else "do"
    return (f"FAILED: {len(failed)} of {steps} {verb} not meet the scenario; "
            f"the first is step {first.number}: {first.mismatch}")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", metavar="PATH", help="a scenario file (.toml or .json) or a built-in walkthrough name")
    parser.add_argument(
        "--impl",
        default=DEFAULT_IMPL,
        metavar="MODULE:FACTORY",
        help=f"a zero-argument factory returning a fresh scheduler (default: {DEFAULT_IMPL})",
    )


def run(args: argparse.Namespace) -> int:
    try:
        scenario = load_scenario(resolve(args.scenario))
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    factory = load_factory(args.impl, "--impl")
    try:
        scheduler = factory()
    except Exception as exc:
        raise UsageError(f"--impl {args.impl}: the factory raised {type(exc).__name__}: {exc}") from None
    restart = first_restart(scenario)
    if restart is not None and not offers_restart(scheduler):
        raise UsageError(f"{args.scenario}: step {restart} is a restart, but --impl {args.impl} "
                         f"makes a {type(scheduler).__name__} without reopen(); replay it against a durable scheduler")
    replayed = replay(scenario, scheduler)
    title = " ".join(scenario.title.split())
    print(f"replay {args.scenario} against {args.impl}: {title} ({_count(len(replayed), 'step')})")
    for line in suggestions(scenario.meta, {"impl": args.impl}):
        print(f"note: {line}")  # the file's own record of what it ran on: shown, never run
    for line in format_lines(replayed):
        print(line)
    print(summary(replayed))
    return EXIT_VIOLATION if any(r.mismatch for r in replayed) else EXIT_OK
