"""Running one scenario step against a scheduler, and judging what it did.

The scenario format (``spec/formats/scenario.py``) reads and writes steps;
this checker runs them (``apply_step``), says what happened in a few words
(``describe_call``, ``describe_result``, ``describe_expect``) and judges it
against the step's ``expect`` and ``expect_state`` (``check_expect``,
``check_state``), including the contract rule on the ids ``task()`` must
refuse (``bad_task_ids``). ``replay``, the conformance machine and the TUI
share these, so a step means the same everywhere.
"""

from __future__ import annotations

from fencepost.spec.formats.scenario import (
    BATCH_OF,
    LEASE_FIELDS,
    OUTCOME_OPS,
    Step,
    StepResult,
    _in_protocol_order,
    _one_line,
)
from fencepost.spec.protocol import RESTART
from fencepost.spec.variants import TOKEN_SHOWN, show_token


def apply_step(scheduler: object, step: Step) -> StepResult:
    """Call ``step.op`` on ``scheduler`` with ``step.args``; a ``ValueError`` becomes ``error``.

    For a ``restart`` step the value is ``scheduler.reopen()``'s result, the
    scheduler every later step must use. Any other exception propagates: the
    protocol allows only ``ValueError``.
    """
    if step.op == RESTART:
        return StepResult(value=scheduler.reopen())
    try:
        value = getattr(scheduler, step.op)(**step.args)
    except ValueError as exc:
        return StepResult(error=_one_line(str(exc)) or type(exc).__name__)
    return StepResult(value=value)


def describe_call(step: Step) -> str:
    """The call as Python, e.g. ``dispatch(worker='w1', now=5, duration=5)``."""
    args = ", ".join(f"{k}={v!r}" for k, v in _in_protocol_order(step).items())
    return f"{step.op}({args})"


def describe_result(step: Step, result: StepResult) -> str:
    """The result in a few words: ``lease task 1 to w1, token 1, [5, 10)``, ``none``,
    ``accepted``, ``rejected: stale_token``, ``task 3``, ``ok``, ``error: ...``;
    a batch's as its entries' in brackets, ``[accepted; rejected: stale_token]``."""
    if result.error is not None:
        return f"error: {result.error}"
    value = result.value
    if step.op == RESTART:
        return "reopened"
    if step.op in BATCH_OF and isinstance(value, (list, tuple)):
        single = Step(op=BATCH_OF[step.op], args={})
        return "[" + "; ".join(describe_result(single, StepResult(value=item)) for item in value) + "]"
    if step.op == "dispatch":
        if value is None:
            return "none"
        if all(hasattr(value, name) for name in LEASE_FIELDS):
            token = value.token if not isinstance(value.token, str) or len(value.token) <= TOKEN_SHOWN else show_token(value.token)
            return (f"lease task {value.task_id} to {value.worker}, token {token}, "
                    f"[{value.started_at}, {value.expires_at})")
    elif step.op in OUTCOME_OPS and hasattr(value, "accepted"):
        if type(value.accepted) is not bool:
            return f"an outcome with accepted={value.accepted!r}, not a bool"
        if value.accepted:
            return "accepted"
        reason = getattr(value, "reason", None)
        return f"rejected: {reason}" if reason else "rejected"
    elif step.op == "submit" and isinstance(value, int) and not isinstance(value, bool):
        return f"task {value}"
    elif step.op == "prune" and isinstance(value, int) and not isinstance(value, bool):
        return f"forgot {value}"
    elif value is None:
        return "ok"
    return repr(value)


def describe_expect(step: Step) -> str:
    """The expectation in the words ``describe_result`` uses ("" when there is none)."""
    expect = step.expect
    if expect is None:
        return ""
    if expect == "error":
        return "an error"
    if expect == "none":
        return "none"
    if step.op in BATCH_OF:
        return "[" + "; ".join(describe_expect(Step(op=BATCH_OF[step.op], args={}, expect=item)) for item in expect) + "]"
    if step.op == "dispatch":
        fields = ", ".join(f"{k}={v!r}" for k, v in expect.items())
        return f"a lease with {fields}" if fields else "a lease"
    if step.op in OUTCOME_OPS:
        if expect["accepted"]:
            return "accepted"
        return f"rejected: {expect['reason']}" if "reason" in expect else "rejected"
    if step.op == "submit":
        return f"task {expect['task_id']}"
    if step.op == "prune":
        return f"forgot {expect['forgotten']}"
    return repr(expect)


def check_expect(step: Step, result: StepResult) -> str | None:
    """None when the result meets ``step.expect`` (or there is none), else one line saying how not."""
    if step.expect is None or _meets(step, result):
        return None
    return f"expected {describe_expect(step)}, got {describe_result(step, result)}"


def _meets(step: Step, result: StepResult) -> bool:
    expect, value = step.expect, result.value
    if expect == "error" or result.error is not None:
        return expect == "error" and result.error is not None
    if expect == "none":
        return value is None
    if step.op in BATCH_OF:
        if not isinstance(value, (list, tuple)) or len(value) != len(expect):
            return False
        return all(_meets(Step(op=BATCH_OF[step.op], args={}, expect=want), StepResult(value=have))
                   for want, have in zip(expect, value))
    if step.op == "dispatch":
        return value is not None and all(same_value(getattr(value, k, _ABSENT), v) for k, v in expect.items())
    if step.op in OUTCOME_OPS:
        if not same_value(getattr(value, "accepted", _ABSENT), expect["accepted"]):
            return False
        return "reason" not in expect or getattr(value, "reason", _ABSENT) == expect["reason"]
    if step.op == "submit":
        return same_value(value, expect["task_id"])
    if step.op == "prune":
        return same_value(value, expect["forgotten"])
    return False


def same_value(have: object, want: object) -> bool:
    """``have == want``, with the types ``==`` blurs told apart.

    ``True == 1`` and ``1.0 == 1``, but a bool answers only where the protocol
    has a bool, and an int only where it has an int (an int subclass counts).
    """
    if isinstance(want, bool):
        return bool_field(have) == want
    if isinstance(want, int):
        return int_field(have) == want
    return have == want


def int_field(value: object) -> object:
    """``value`` if it is an int (an int subclass counts) or None, else a marker: a bool or a float standing in for one."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return ("not an int", value)


def bool_field(value: object) -> object:
    """``value``, unless it is something other than a bool (``1``, ``"yes"``) standing in for one."""
    return value if type(value) is bool else ("not a bool", value)


def bad_task_ids(submitted: int) -> tuple[object, ...]:
    """Ids ``task()`` must refuse once ``submitted`` tasks exist: 0, one past the last, and 1 as a float and a str."""
    return (0, submitted + 1, 1.0, "1")


def check_bad_task_ids(scheduler: object, submitted: int) -> str | None:
    """None when ``scheduler.task()`` raises ValueError for each of ``bad_task_ids``, else one line saying which did not.

    Raises:
        Exception: whatever ``task()`` raises other than ValueError (the caller reports it).
    """
    for bad in bad_task_ids(submitted):
        try:
            view = scheduler.task(bad)
        except ValueError:
            continue
        return f"task({bad!r}) returned {view!r}, but an id never issued, or not an int, must raise ValueError"
    return None


_ABSENT = object()


def check_state(step: Step, scheduler: object, submitted: int | None = None) -> str | None:
    """None when ``scheduler`` shows the state ``step.expect_state`` names, else one line saying how not.

    With ``submitted`` (the tasks submitted so far), ``task()`` must also
    refuse the ``bad_task_ids``: a state names the tasks that exist, and so
    the ids that do not.
    """
    want = step.expect_state
    if not want:
        return None
    if "now" in want and not same_value(getattr(scheduler, "now", _ABSENT), want["now"]):
        return f"expected t={want['now']} afterwards, got t={getattr(scheduler, 'now', '?')}"
    for key, fields in want.get("tasks", {}).items():
        try:
            view = scheduler.task(int(key))
        except ValueError as exc:
            return f"expected task {key} afterwards, but task({key}) raised: {_one_line(str(exc))}"
        for name, value in fields.items():
            have = getattr(view, name, _ABSENT)
            have = getattr(have, "value", have)  # a str enum status compares by its value
            if not same_value(have, value):
                return f"expected task {key} {name}={value!r} afterwards, got {have!r}"
    return None if submitted is None else check_bad_task_ids(scheduler, submitted)

