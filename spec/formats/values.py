"""The JSON forms of the protocol's values: one codec for every file and wire format.

The ``--exec`` adapter's answers and the history files carry the results of
protocol calls as plain JSON. This module is the one place that says what
those forms are, in both directions:

=====================================  ==========================================================
operation                              JSON form of its result
=====================================  ==========================================================
``submit``                             the task id, an int
``dispatch``                           ``null``, or ``{"task_id", "worker", "token", "started_at",
                                       "expires_at"}``
``complete``, ``fail``, ``cancel``,    ``{"accepted": true|false, "reason": string|null}``
``renew``                              (``reason`` may be left out: null)
``task``                               ``{"id", "status", "priority", "due_at", "attempts",
                                       "worker", "token", "expires_at", "cancel_requested"}``,
                                       ``status`` as its string
``now``                                the clock, an int
``add_worker``, ``advance``,           ``null``
``reset``, ``restart``
=====================================  ==========================================================

``from_json`` is strict, because what it reads may come from a program that
is wrong or hostile: every field present and no other, ints that are JSON
integers (never ``true``, never ``1.0``) within ``WIRE_INT_LIMIT``, bools
that are JSON ``true``/``false``, strings no longer than ``MAX_WIRE_STRING``.
Any departure is a ``ValueFormError`` naming the operation, the field, the
value and the rule. O(size of the value) each way.
"""

from __future__ import annotations

from fencepost.spec.protocol import Lease, Outcome, Status, TaskView

#: Largest magnitude an int may have on the wire: a signed 64-bit integer,
#: which is what most languages' JSON readers can hold exactly.
WIRE_INT_LIMIT = 2**63 - 1
#: Longest string (a worker name, a reason) accepted from the wire.
MAX_WIRE_STRING = 10_000

LEASE_FIELDS = ("task_id", "worker", "token", "started_at", "expires_at")
VIEW_FIELDS = ("id", "status", "priority", "due_at", "attempts", "worker", "token", "expires_at", "cancel_requested")
OUTCOME_OPS = ("complete", "fail", "cancel", "renew")
#: Operations whose result is ``null``.
NULL_OPS = ("add_worker", "advance", "reset", "restart")
#: Every operation this codec has a form for.
OPS = ("submit", "dispatch", *OUTCOME_OPS, "task", "now", *NULL_OPS)
STATUS_VALUES = tuple(status.value for status in Status)


class ValueFormError(Exception):
    """A JSON value that is not the form the protocol gives its operation's result.

    Deliberately not a ``ValueError``: a ``ValueError`` is what a scheduler
    raises for a refused call, and a malformed answer must never pass for one.
    """


def to_json(op: str, value: object) -> object:
    """The JSON form (dicts, lists, str, int, bool, None) of ``op``'s result ``value``.

    ``value`` may be any object with the protocol's attribute names.

    Raises:
        ValueFormError: ``op`` is not one of ``OPS``.
    """
    if op in NULL_OPS:
        return None
    if op in ("submit", "now"):
        return value
    if op == "dispatch":
        return None if value is None else {name: getattr(value, name) for name in LEASE_FIELDS}
    if op in OUTCOME_OPS:
        return {"accepted": value.accepted, "reason": getattr(value, "reason", None)}
    if op == "task":
        form = {name: getattr(value, name) for name in VIEW_FIELDS}
        form["status"] = getattr(value.status, "value", value.status)
        return form
    raise ValueFormError(f"op must be one of {', '.join(OPS)}: got {op!r}")


def from_json(op: str, obj: object) -> object:
    """The protocol value that ``obj``, the JSON form of ``op``'s result, stands for.

    Returns an ``int`` (submit, now), ``None``, a ``Lease`` or ``None``
    (dispatch), an ``Outcome``, or a ``TaskView`` whose ``status`` is a ``Status``.

    Raises:
        ValueFormError: ``obj`` is not that form (see the module docstring);
            the message names ``op``, the field, the value and the rule.
    """
    if op in NULL_OPS:
        if obj is not None:
            raise ValueFormError(f"the result of {op} must be null, got {_show(obj)}")
        return None
    if op in ("submit", "now"):
        return _int(op, "result", obj)
    if op == "dispatch":
        if obj is None:
            return None
        fields = _object(op, obj, LEASE_FIELDS, ())
        return Lease(
            task_id=_int(op, "task_id", fields["task_id"]), worker=_str(op, "worker", fields["worker"]),
            token=_int(op, "token", fields["token"]), started_at=_int(op, "started_at", fields["started_at"]),
            expires_at=_int(op, "expires_at", fields["expires_at"]),
        )
    if op in OUTCOME_OPS:
        fields = _object(op, obj, ("accepted",), ("reason",))
        reason = fields.get("reason")
        return Outcome(_bool(op, "accepted", fields["accepted"]), None if reason is None else _str(op, "reason", reason))
    if op == "task":
        fields = _object(op, obj, VIEW_FIELDS, ())
        status = fields["status"]
        if status not in STATUS_VALUES:
            raise ValueFormError(f"the result of task: status must be one of {', '.join(STATUS_VALUES)}, got {_show(status)}")
        return TaskView(
            id=_int(op, "id", fields["id"]), status=Status(status), priority=_int(op, "priority", fields["priority"]),
            due_at=_int(op, "due_at", fields["due_at"]), attempts=_int(op, "attempts", fields["attempts"]),
            worker=_optional(_str, op, "worker", fields["worker"]), token=_optional(_int, op, "token", fields["token"]),
            expires_at=_optional(_int, op, "expires_at", fields["expires_at"]),
            cancel_requested=_bool(op, "cancel_requested", fields["cancel_requested"]),
        )
    raise ValueFormError(f"op must be one of {', '.join(OPS)}: got {op!r}")


def _object(op: str, obj: object, required: tuple[str, ...], optional: tuple[str, ...]) -> dict:
    if not isinstance(obj, dict):
        raise ValueFormError(f"the result of {op} must be an object with {', '.join(required)}, got {_show(obj)}")
    missing = [name for name in required if name not in obj]
    if missing:
        raise ValueFormError(f"the result of {op} lacks the field{'s' if len(missing) > 1 else ''} {', '.join(missing)}: got {_show(obj)}")
    extra = [name for name in obj if name not in required and name not in optional]
    if extra:
        raise ValueFormError(f"the result of {op} has a field the protocol does not know: {_show(extra[0])}")
    return obj


def _int(op: str, name: str, value: object) -> int:
    if type(value) is not int:
        raise ValueFormError(f"the result of {op}: {name} must be an integer, got {_show(value)}")
    if abs(value) > WIRE_INT_LIMIT:
        raise ValueFormError(f"the result of {op}: {name} must fit a signed 64-bit integer, got {_show(value)}")
    return value


def _bool(op: str, name: str, value: object) -> bool:
    if type(value) is not bool:
        raise ValueFormError(f"the result of {op}: {name} must be true or false, got {_show(value)}")
    return value


def _str(op: str, name: str, value: object) -> str:
    if not isinstance(value, str):
        raise ValueFormError(f"the result of {op}: {name} must be a string, got {_show(value)}")
    if len(value) > MAX_WIRE_STRING:
        raise ValueFormError(f"the result of {op}: {name} is longer than {MAX_WIRE_STRING} characters ({len(value)})")
    return value


def _optional(kind, op: str, name: str, value: object) -> object:
    return None if value is None else kind(op, name, value)


def _show(value: object, limit: int = 80) -> str:
    """``value`` as JSON-ish text, cut to ``limit`` characters (an int by its size when huge)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = {True: "true", False: "false", None: "null"}.get(value, None) if isinstance(value, (bool, type(None))) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
