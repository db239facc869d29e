"""Run a scenario headless against an implementation and print one line per step.

``fencepost replay PATH [--impl MODULE:FACTORY]``: PATH is a scenario file
(``.toml`` or ``.json``) or the name of a built-in walkthrough. Every step runs,
even after a mismatch, so the whole story is on screen; each line shows the
step number, the scheduler's time after the step (``t=``), the call and its
result, and ``MISMATCH: expected ..., got ...`` where an ``expect`` does not
hold. The last line sums up and names the first mismatching step.

A scenario's ``meta.impl`` is never imported: when it names another
scheduler, a note says which and the ``--impl`` that would run it there.

Declared variants: a scenario's ``meta.variants``, the scheduler's own
declaration (``fencepost_variants``, an ``--exec`` program's hello) and
``--variant NAME=VALUE`` flags are merged; two that disagree are a usage
error. They change how a step is judged, never what it expects: under
``tokens=opaque`` a step's ``token = N`` is sent as the N-th distinct token
the scheduler handed out, and a dispatch's ``expect = { token = N }`` holds
for that token (a fresh one when N is new; ``spec.checkers.renaming``);
under ``views=none`` no ``task()`` is read (an ``expect_state`` checks the
clock only).

Exit status: 0 every ``expect`` holds; 1 one does not, or the implementation
raised something other than ``ValueError``; 2 a bad file or a bad ``--impl``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fencepost.spec.checkers.deadline import CallTimeout, SchedulerFault, Watch, run_watched, watched_factory
from fencepost.spec.arguments import (
    UsageError,
)
from fencepost.spec.checkers.renaming import Renaming
from fencepost.spec.variants import DEFAULT, Variants
from fencepost.spec.protocol import BATCH_OPERATIONS, RESTART
from fencepost.spec.formats.scenario import (
    Scenario,
    Step,
    StepResult,
    first_restart,
)
from fencepost.spec.checkers.steps import (
    apply_step,
    check_expect,
    check_state,
    describe_call,
    describe_result,
)
from fencepost.spec.protocol import offers_batches, offers_restart


@dataclass(frozen=True)
class ReplayedStep:
    """One step as replayed: what was called, what came back, and whether ``expect`` held."""

    number: int  # 1-based
    step: Step
    result: StepResult
    now: object  # the scheduler's ``now`` after the step ("?" if it could not be read)
    mismatch: str | None  # one line, or None when the step is fine


def replay(scenario: Scenario, scheduler: object, replayed: list[ReplayedStep] | None = None,
           variants: Variants = DEFAULT) -> list[ReplayedStep]:
    """Apply every step of ``scenario`` to ``scheduler`` in order and check each ``expect``.

    An exception other than ``ValueError`` is caught and reported as a
    mismatch, since the protocol allows only ``ValueError``; the replay goes
    on, except after a ``SchedulerFault`` (a hang, a program that broke the
    adapter protocol): that step is the last, since the scheduler is gone.
    A ``restart`` step replaces ``scheduler`` with its ``reopen()`` for every
    later step (the caller checks up front that it has one).
    Steps are appended to ``replayed`` as they finish (a new list by default),
    so a caller that gives up on a hung call still has the steps before it.
    Steps are judged under ``variants`` (see the module docstring).
    """
    replayed = [] if replayed is None else replayed
    submitted = 0
    renaming = Renaming() if variants.tokens == "opaque" else None
    for number, step in enumerate(scenario.steps, start=1):
        try:
            sent = step if renaming is None else _renamed(step, renaming)
            result = apply_step(scheduler, sent)
            if step.op == RESTART:
                scheduler = result.value
            if step.op == "submit" and result.error is None and result.value == submitted + 1:
                submitted += 1  # the ids task() must know from here on (a duplicate by key issues none)
            elif step.op == "submit_many" and result.error is None and isinstance(result.value, (list, tuple)):
                for task_id in result.value:
                    submitted += task_id == submitted + 1
            if renaming is None:
                mismatch = check_expect(step, result)
            else:
                mismatch = check_renamed(step, result, renaming)
            if variants.views == "none":
                mismatch = mismatch or check_clock(step, scheduler)
            else:
                mismatch = mismatch or check_state(step, scheduler, submitted)
        except SchedulerFault as exc:
            replayed.append(ReplayedStep(number, step, StepResult(error=_fault_words(exc)), "?", str(exc)))
            break
        except Exception as exc:  # noqa: BLE001 - a non-conforming implementation, reported, not raised
            result = StepResult(error=f"{type(exc).__name__}: {exc}")
            mismatch = f"raised {type(exc).__name__}, but the protocol allows only ValueError"
        try:
            now = scheduler.now
        except SchedulerFault as exc:
            replayed.append(ReplayedStep(number, step, result, "?", mismatch or f"after this step, {exc}"))
            break
        except Exception:  # noqa: BLE001 - the clock of a broken implementation is shown as unknown
            now = "?"
        replayed.append(ReplayedStep(number, step, result, now, mismatch))
    return replayed


def _renamed(step: Step, renaming: Renaming) -> Step:
    """The step as sent to the scheduler: its tokens renamed to the scheduler's own."""
    args = renaming.args_to_scheduler(step.op, step.args)
    return step if args is step.args else Step(op=step.op, args=args, note=step.note, expect=step.expect,
                                               expect_state=step.expect_state, question=step.question)


def check_renamed(step: Step, result: StepResult, renaming: Renaming) -> str | None:
    """``check_expect`` with a dispatch's token compared up to renaming; numbers the lease's token.

    ``expect = { token = N }`` holds for the N-th distinct token seen, or for
    a token never seen when N is the next number; every other field as
    ``check_expect`` compares it.
    """
    lease = result.value if step.op == "dispatch" and result.error is None else None
    token = getattr(lease, "token", None)
    expect = step.expect
    wrong = None
    if lease is not None and isinstance(expect, dict) and "token" in expect:
        want = expect["token"]
        known = renaming.known(token)
        if type(want) is int and want == len(renaming.tokens) + 1:  # a fresh token
            if known:
                wrong = f"expected a fresh token (the model's {want}), got the token of lease {renaming.number_of(token)}"
        elif not (known and renaming.number_of(token) == want):
            have = f"the token of lease {renaming.number_of(token)}" if known else "a fresh token"
            wrong = f"expected the token of lease {want}, got {have}"
        step = Step(op=step.op, args=step.args, expect={k: v for k, v in expect.items() if k != "token"})
    if lease is not None and token is not None:
        renaming.saw(token)
    return check_expect(step, result) or wrong


def check_clock(step: Step, scheduler: object) -> str | None:
    """Under ``views=none``: the clock an ``expect_state`` names, and nothing about tasks
    (``check_state`` for a scheduler whose views cannot be read)."""
    if not step.expect_state or "now" not in step.expect_state:
        return None
    return check_state(Step(op=step.op, args=step.args, expect_state={"now": step.expect_state["now"]}), scheduler)


def refuse_restart_without_reopen(scenario: Scenario, scheduler: object, name: str) -> None:
    """Raise ``UsageError`` when ``scenario`` has a restart step and ``scheduler`` no ``reopen()``,
    or a batch step and ``scheduler`` not every batch operation (``spec.protocol.BATCH_OPERATIONS``)."""
    restart = first_restart(scenario)
    if restart is not None and not offers_restart(scheduler):
        raise UsageError(f"step {restart} is a restart, but {name} "
                         f"makes a {type(scheduler).__name__} without reopen(); replay it against a durable scheduler")
    batch = next((n for n, step in enumerate(scenario.steps, 1) if step.op in BATCH_OPERATIONS), None)
    if batch is not None and not offers_batches(scheduler):
        raise UsageError(f"step {batch} is a {scenario.steps[batch - 1].op}, but {name} makes a "
                         f"{type(scheduler).__name__} without the batch operations ({', '.join(BATCH_OPERATIONS)})")


def _fault_words(fault: SchedulerFault) -> str:
    return f"no answer within {fault.seconds:g} s" if isinstance(fault, CallTimeout) else "a protocol fault"


def replay_watched(scenario: Scenario, factory: object, call_timeout: float, name: str = "--impl",
                   variants: Variants = DEFAULT) -> list[ReplayedStep]:
    """``replay`` on a fresh scheduler from ``factory``, every call under ``call_timeout``.

    The replay runs on a watched thread (``spec.checkers.deadline``); a call
    that hangs ends it with a mismatch at its step, the steps before it kept.

    Raises:
        UsageError: the scenario restarts and the scheduler has no ``reopen()``.
    """
    watch = Watch(call_timeout)
    replayed: list[ReplayedStep] = []

    def work() -> list[ReplayedStep]:
        scheduler = watched_factory(factory, watch)()
        refuse_restart_without_reopen(scenario, scheduler, name)
        return replay(scenario, scheduler, replayed, variants)

    try:
        return run_watched(work, watch)
    except CallTimeout as exc:
        if exc.call == "factory()":
            raise
        steps = list(replayed)
        number = len(steps) + 1
        if number <= len(scenario.steps):
            steps.append(ReplayedStep(number, scenario.steps[number - 1], StepResult(error=_fault_words(exc)), "?", str(exc)))
        return steps


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


def summary(replayed: list[ReplayedStep], total: int | None = None) -> str:
    """The last line: how many expectations held, and the first step that did not."""
    checked = sum(1 for r in replayed if r.step.expect is not None)
    failed = [r for r in replayed if r.mismatch]
    steps = _count(len(replayed), "step")
    if failed and total is not None and len(replayed) < total:
        first = failed[0]
        return (f"FAILED at step {first.number} of {total}: {first.mismatch}; "
                f"the scheduler cannot go on, so the {_count(total - len(replayed), 'step')} after it did not run")
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
