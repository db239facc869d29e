"""Results in comparable form and in words: what the lockstep compares and what a counterexample prints.

``normalize`` reads any protocol result through attribute names only, so any
object with the protocol's fields can be compared; ``comparable`` drops what
the spec does not compare (reason wording); ``describe`` and ``format_trace``
print a trace for a person.
"""

from __future__ import annotations

from fencepost.spec.checkers.steps import bool_field, int_field
from fencepost.spec.formats.trace import format_call, TraceStep
from fencepost.spec.formats.values import BATCH_OF
from fencepost.spec.variants import show_span, show_token


class Divergence(AssertionError):
    """The implementation answered differently from the model."""


# ---------------------------------------------------------------- normalizing results


def normalize(result: object, opaque: bool = False) -> object:
    """A comparable form of any protocol result, read through attribute names only.

    Types are compared where ``==`` would blur them: ``True == 1`` and
    ``1.0 == 1``, so a bool or a float where the protocol has an int (or an
    int where it has a bool) becomes a marker that equals nothing the model
    returns. With ``opaque`` (``tokens=opaque``) a lease's token may also be
    a non-empty str, kept as it is.
    """
    if result is None:
        return result
    if isinstance(result, (list, tuple)):  # a batch's results, one per entry
        return ("batch", tuple(normalize(item, opaque) for item in result))
    if isinstance(result, int):
        return int_field(result)
    if hasattr(result, "accepted"):
        return ("outcome", bool_field(result.accepted), getattr(result, "reason", None))
    if hasattr(result, "token") and hasattr(result, "expires_at"):
        token = result.token if opaque and isinstance(result.token, str) and result.token else int_field(result.token)
        return ("lease", int_field(result.task_id), result.worker, token,
                int_field(result.started_at), int_field(result.expires_at))
    return ("other", repr(result))


def comparable(value: object) -> object:
    """``normalize`` without the parts the spec does not compare (reason wording)."""
    if isinstance(value, tuple) and value and value[0] == "outcome":
        return value[:2]
    if isinstance(value, tuple) and value and value[0] == "error":
        return ("error",)
    if isinstance(value, tuple) and value and value[0] == "batch":
        return ("batch", tuple(comparable(item) for item in value[1]))
    return value


def describe(value: object, op: str = "dispatch", interval: str = "half-open") -> str:
    """A normalized result of ``op`` in words, for counterexample listings; a lease's span as
    ``interval`` (the variant in force) has it: ``[0, 5)``, or ``[0, 5]`` under ``closed``."""
    if value is None:
        return "none" if op == "dispatch" else "ok"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"forgot {value}" if op == "prune" else f"task {value}"  # prune answers a count, not a task
    if isinstance(value, tuple) and value:
        kind = value[0]
        if kind == "outcome":
            if type(value[1]) is not bool:
                return f"an outcome with accepted={value[1][1]!r}, not a bool"
            return "accepted" if value[1] else f"rejected ({value[2]})"
        if kind == "lease":
            _, task_id, worker, token, start, end = value
            return f"lease task {task_id} to {worker}, token {show_token(token)}, {show_span(start, end, interval)}"
        if kind == "error":
            return f"error: {value[1]}"
        if kind == "hang":
            return f"no answer within {value[1]:g} s"
        if kind == "fault":
            return "a protocol fault (below)"
        if kind == "other":
            return value[1]
        if kind == "batch":
            single = BATCH_OF.get(op, op)
            return "[" + "; ".join(describe(item, single, interval) for item in value[1]) + "]"
    return repr(value)


def view_tuple(view: object) -> tuple:
    """A task view as a tuple, status by its string value."""
    status = getattr(view.status, "value", view.status)
    return (
        int_field(view.id), status, int_field(view.priority), int_field(view.due_at), int_field(view.attempts),
        view.worker, int_field(view.token), int_field(view.expires_at), bool_field(view.cancel_requested),
    )


VIEW_FIELDS = ("id", "status", "priority", "due_at", "attempts", "worker", "token", "expires_at", "cancel_requested")


def _reason_only(expected: object, got: object) -> bool:
    """Whether two normalized results differ only in a rejection's reason (of an outcome, or of a batch's outcomes)."""
    if isinstance(expected, tuple) and isinstance(got, tuple) and expected[:1] == got[:1] == ("batch",):
        pairs = list(zip(expected[1], got[1]))
        return len(expected[1]) == len(got[1]) and any(_reason_only(w, h) for w, h in pairs) \
            and all(comparable(w) == comparable(h) for w, h in pairs)
    return (isinstance(expected, tuple) and isinstance(got, tuple) and expected[:1] == got[:1] == ("outcome",)
            and comparable(expected) == comparable(got) and expected != got)


#: What ``format_trace`` adds where two answers differ only in a rejection's reason, which the spec does not compare.
REASONS_NOT_COMPARED = "reasons are not compared"


def format_trace(trace: list[TraceStep], interval: str = "half-open") -> str:
    """Numbered steps: call, expected, got; the diverging step is marked.

    Where the answers differ only in a rejection's reason (advice, never
    compared), the ``got`` says so: the step diverged for what the line
    below it says, not for the reason's wording. Leases' spans as ``interval`` has them.
    """
    lines = []
    width = max((len(format_call(s.op, s.args)) for s in trace), default=0)
    for number, step in enumerate(trace, 1):
        mark = "   <-- diverges" if step.problem else ""
        expected, got = describe(step.expected, step.op, interval), describe(step.got, step.op, interval)
        if expected != got and _reason_only(step.expected, step.got):
            got += f" ({REASONS_NOT_COMPARED})"  # so the mark is not read as being about the wording
        lines.append(
            f"{number:>3}. {format_call(step.op, step.args):<{width}}  "
            f"expected: {expected}; got: {got}{mark}"
        )
        if step.problem:
            lines.append(f"     {step.problem}")
    return "\n".join(lines)
