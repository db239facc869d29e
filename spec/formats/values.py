"""The JSON forms of the protocol's values: one codec for histories and the ``--exec`` adapter.

Each operation answers with one kind of value, and each kind has one JSON form:

=====================================  ===========================================================
operation                              JSON form of its result
=====================================  ===========================================================
``dispatch``                           a Lease as ``{"task_id", "worker", "token", "started_at",
                                       "expires_at"}`` (all five), or ``null`` when nothing leased
``complete``, ``fail``, ``cancel``,    an Outcome as ``{"accepted": true}`` or
``renew``                              ``{"accepted": false, "reason": "stale_token"}``
                                       (``reason`` optional, a string or ``null``)
``submit``                             the task id, an int
``add_worker``, ``advance``            ``null``
=====================================  ===========================================================

Ints are JSON integers, never a bool or a float; ``accepted`` is a JSON bool.
Errors are not values: each format says how it carries them.

``to_json`` reads a value through attribute names only, so any scheduler's
objects encode; ``from_json`` builds ``spec.protocol`` values and is strict, since
its input is a file or another program. Both are O(1).
"""

from __future__ import annotations

from fencepost.spec.protocol import OPERATIONS, Lease, Outcome

#: The five Lease fields, in the order the protocol declares them.
LEASE_FIELDS = ("task_id", "worker", "token", "started_at", "expires_at")

#: Operations that answer with an Outcome.
OUTCOME_OPS = frozenset({"complete", "fail", "cancel", "renew"})

#: Operations that answer with nothing (``None`` / ``null``).
NONE_OPS = frozenset({"add_worker", "advance"})


class ValueFormError(ValueError):
    """A value that does not have its operation's JSON form; the message is one line."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _known(op: object) -> str:
    if op not in OPERATIONS:
        raise ValueFormError(f"op must be one of {', '.join(OPERATIONS)}, got {op!r}")
    return op


def to_json(op: str, value: object) -> object:
    """The JSON form of ``value``, the result of operation ``op``.

    Raises:
        ValueFormError: ``op`` is not a protocol operation, or ``value`` is not
            that operation's kind of value (a missing attribute, an ``accepted``
            that is not a bool, an int field holding a bool or a float).
    """
    _known(op)
    if op in NONE_OPS:
        if value is not None:
            raise ValueFormError(f"{op} answers None, got {value!r}")
        return None
    if op == "submit":
        if not _is_int(value):
            raise ValueFormError(f"submit answers a task id (an int), got {value!r}")
        return value
    if op == "dispatch":
        if value is None:
            return None
        obj = {}
        for name in LEASE_FIELDS:
            field = getattr(value, name, None)
            if not (isinstance(field, str) if name == "worker" else _is_int(field)):
                raise ValueFormError(f"dispatch answers a Lease or None; its {name} is {field!r} in {value!r}")
            obj[name] = field
        return obj
    accepted = getattr(value, "accepted", None)
    reason = getattr(value, "reason", None)
    if type(accepted) is not bool or not (reason is None or isinstance(reason, str)):
        raise ValueFormError(f"{op} answers an Outcome (accepted a bool, reason a str or None), got {value!r}")
    return {"accepted": accepted} if reason is None else {"accepted": accepted, "reason": reason}


def from_json(op: str, obj: object) -> object:
    """The protocol value whose JSON form is ``obj``, for a result of ``op``.

    Returns ``None``, an int task id, a ``Lease`` or an ``Outcome``.

    Raises:
        ValueFormError: ``op`` is unknown or ``obj`` is not its JSON form (a
            missing or unknown field, a wrong type); the message names the
            field and the rule.
    """
    _known(op)
    if op in NONE_OPS:
        if obj is not None:
            raise ValueFormError(f"{op} answers null, got {_show(obj)}")
        return None
    if op == "submit":
        if not _is_int(obj):
            raise ValueFormError(f"submit answers a task id (an int), got {_show(obj)}")
        return obj
    if op == "dispatch":
        if obj is None:
            return None
        if not isinstance(obj, dict) or set(obj) != set(LEASE_FIELDS):
            raise ValueFormError(f"dispatch answers null or an object with exactly {', '.join(LEASE_FIELDS)}, got {_show(obj)}")
        for name in LEASE_FIELDS:
            if not (isinstance(obj[name], str) if name == "worker" else _is_int(obj[name])):
                kind = "a string" if name == "worker" else "an int"
                raise ValueFormError(f"dispatch result field {name!r} must be {kind}, got {_show(obj[name])}")
        return Lease(**obj)
    if not isinstance(obj, dict) or "accepted" not in obj or not set(obj) <= {"accepted", "reason"}:
        raise ValueFormError(f'{op} answers an object with "accepted" (and optionally "reason"), got {_show(obj)}')
    if type(obj["accepted"]) is not bool:
        raise ValueFormError(f"{op} result field 'accepted' must be a bool, got {_show(obj['accepted'])}")
    reason = obj.get("reason")
    if not (reason is None or isinstance(reason, str)):
        raise ValueFormError(f"{op} result field 'reason' must be a string or null, got {_show(reason)}")
    return Outcome(obj["accepted"], reason)


def same_result(op: str, have: object, want: object) -> bool:
    """Whether two results of ``op`` agree as the spec compares them: Lease fields, task ids,
    ``accepted`` only for an Outcome (reason wording is not part of the contract). O(1)."""
    a, b = to_json(op, have), to_json(op, want)
    if op in OUTCOME_OPS:
        return a["accepted"] is b["accepted"]
    return a == b


#: The longest value an error message quotes, in characters.
_SHOW_LIMIT = 60


def _show(obj: object) -> str:
    text = repr(obj)
    return text if len(text) <= _SHOW_LIMIT else text[: _SHOW_LIMIT - 3] + "..."
