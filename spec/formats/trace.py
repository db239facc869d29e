"""Counterexamples as scenarios: a failing trace, kept as a replayable file.

A trace (a ``TraceStep`` list, as the checkers record it) becomes a scenario in the pinned
format with the model's result as ``expect`` on every step, and the model's
whole state as ``expect_state`` on the diverging step. So ``fencepost replay
FILE --impl MODULE:FACTORY`` fails at exactly the step that diverged, and
``fencepost replay FILE`` on a correct implementation passes. Reasons are
left out of ``expect`` on purpose: the spec does not compare their wording,
and a correct third-party implementation must replay the file clean.

The Hypothesis version and seed are recorded in ``meta``; replaying needs
neither. The declared variants the run checked under are recorded there too
(``[meta] variants = {...}``, only when there are any), so replaying the
file judges it by the same rules without a flag. Under ``tokens=opaque`` the
trace names tokens by number (``spec.checkers.renaming``), and so does the file.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import hypothesis

from fencepost.spec import model
from fencepost.spec.formats.scenario import BATCH_OF, Scenario, Step, dump_scenario
from fencepost.spec.protocol import Lease
from fencepost.spec.variants import DEFAULT, Variants


@dataclass
class TraceStep:
    """One call as both sides saw it; ``expected`` is the model's answer."""

    op: str
    args: dict
    expected: object  # the model's normalized result, or ("error", message)
    got: object  # the implementation's normalized result, ("error", message), ("fault", message) or ("hang", seconds)
    problem: str | None = None  # why this step diverged, if it did


#: How a counterexample's diverging step's note begins: the rest is the problem check printed under it.
DIVERGES_NOTE = "**The implementation diverges here.**"


def format_call(op: str, args: dict) -> str:
    return f"{op}({', '.join(f'{k}={v!r}' for k, v in args.items())})"


def expect_of(step: TraceStep) -> object:
    """The model's result of one step as a scenario ``expect`` (None when there is nothing to match)."""
    expected = step.expected
    if isinstance(expected, tuple) and expected[0] == "error":
        return "error"
    if step.op in BATCH_OF and isinstance(expected, tuple) and expected[:1] == ("batch",):
        return [expect_of(TraceStep(BATCH_OF[step.op], {}, item, None)) for item in expected[1]]
    if step.op == "dispatch":
        if expected is None:
            return "none"
        _, task_id, worker, token, started_at, expires_at = expected
        return {"task_id": task_id, "worker": worker, "token": token, "started_at": started_at, "expires_at": expires_at}
    if step.op in ("complete", "fail", "cancel", "renew"):
        return {"accepted": bool(expected[1])}
    if step.op == "submit":
        return {"task_id": expected}
    return None


def state_of(state: model.State) -> dict:
    """The model's state as ``expect_state``: the clock and every task's view.

    Under ``views=none`` only the clock (the queue shows no task); under
    ``tokens=opaque`` no token (the scheduler's own are not the file's numbers).
    """
    if state.variants.views == "none":
        return {"now": state.now}
    tasks = {}
    for task in state.tasks:
        view = model.view(task)
        fields = {
            "status": view.status.value, "priority": view.priority, "due_at": view.due_at,
            "attempts": view.attempts, "cancel_requested": view.cancel_requested,
        }
        for name in ("worker", "token", "expires_at"):
            if name == "token" and state.variants.tokens == "opaque":
                continue
            if getattr(view, name) is not None:
                fields[name] = getattr(view, name)
        tasks[str(task.id)] = fields
    return {"now": state.now, "tasks": tasks}


def trace_to_scenario(trace: list[TraceStep], title: str, description: str | None = None, meta: dict | None = None,
                      variants: Variants = DEFAULT) -> Scenario:
    """The trace as a scenario; the diverging step gets a note and the model's full state.

    The model's state is rebuilt under ``variants``, following each dispatch
    the model allowed the scheduler (``model.follow``: under ``order=any`` its task).
    """
    steps = []
    state = model.initial(variants)
    for number, record in enumerate(trace, 1):
        try:
            followed = None
            if record.op == "dispatch" and isinstance(record.expected, tuple) and record.expected[0] == "lease":
                _, task_id, worker, token, started_at, expires_at = record.expected
                followed = model.follow(state, "dispatch", dict(record.args), Lease(task_id, worker, token, started_at, expires_at))
            state, _ = followed or model.apply(state, record.op, dict(record.args))
        except ValueError:
            pass  # an invalid call changes nothing
        note = None
        expect_state = None
        if record.problem:
            note = f"{DIVERGES_NOTE} {record.problem[:1].upper()}{record.problem[1:]}"
            expect_state = state_of(state)
        steps.append(Step(record.op, dict(record.args), note=note, expect=expect_of(record), expect_state=expect_state))
    return Scenario(title=title, steps=tuple(steps), description=description, meta=dict(meta or {}))


def diverging_step(trace: list[TraceStep]) -> int | None:
    """The 1-based number of the first step marked with a problem."""
    return next((n for n, s in enumerate(trace, 1) if s.problem), None)


def write_trace(trace: list[TraceStep], path: str | Path, title: str, description: str | None = None, meta: dict | None = None,
                variants: Variants = DEFAULT) -> Path:
    """Write the trace as a scenario (JSON if ``path`` ends ``.json``, else TOML); return the path.

    ``variants`` other than the contract are recorded as ``meta.variants``.
    """
    meta = {"hypothesis_version": hypothesis.__version__, **(meta or {})}
    if variants != DEFAULT:
        meta["variants"] = variants.declared()
    number = diverging_step(trace)
    if number is not None:
        meta.setdefault("diverging_step", number)
    path = Path(path)
    dump_scenario(trace_to_scenario(trace, title, description, meta, variants), path)
    return path


def write_counterexample(result: object, path: str | Path, factory_spec: str | None, exec_command: str | None = None) -> Path:
    """Write a failed ``spec.checkers.check.CheckResult`` as a scenario file; return the path.

    The scheduler is recorded in ``meta`` as ``impl`` (a factory) or ``exec``
    (a command), for people to read: nothing fencepost runs is taken from a file.
    """
    checked = f"--exec {shlex.quote(exec_command)}" if exec_command else factory_spec
    last = result.trace[-1] if result.trace else None
    description = (
        f"A counterexample found by `fencepost check {checked}`: {len(result.trace)} steps, "
        f"diverging at `{format_call(last.op, last.args)}` -- {result.failure}"
        if last else f"A counterexample found by `fencepost check {checked}`."
    )
    meta = {"generated_by": "fencepost check"}
    meta.update({"exec": exec_command} if exec_command else {"impl": factory_spec})
    meta["seed"] = "derandomized" if result.seed is None else result.seed
    return write_trace(result.trace, path, title=f"Counterexample: {checked}", description=description, meta=meta,
                       variants=getattr(result, "variants", DEFAULT))
