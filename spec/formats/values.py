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
``task`` (``--exec`` only)             a TaskView as ``{"id", "status", "priority", "due_at",
                                       "attempts", "worker", "token", "expires_at",
                                       "cancel_requested"}``, ``status`` as its string
``now`` (``--exec`` only)              the clock, an int
``reset``, ``restart`` (``--exec``)    ``null``
``submit_many``, ``dispatch_many``,    a list of what the single call answers, one per entry
``complete_many``, ``fail_many``       (``dispatch_many``: leases only, never ``null``)
=====================================  ===========================================================

Ints are JSON integers, never a bool or a float; ``accepted`` is a JSON bool.
Errors are not values: each format says how it carries them.

``to_json`` reads a value through attribute names only, so any scheduler's
objects encode; ``from_json`` builds ``spec.protocol`` values and is strict, since
its input is a file or another program: every field present and no other,
ints from ``INT_MIN`` to ``INT_MAX`` (the contract's), strings within ``MAX_WIRE_STRING``. Both are
O(1).
"""

from __future__ import annotations

from fencepost.spec.formats.limits import MAX_WIRE_STRING
from fencepost.spec.protocol import INT_MAX, INT_MIN, BATCH_OPERATIONS, OPERATIONS, PRUNE_OPERATIONS, Lease, Outcome, Status, TaskView

#: The five Lease fields, in the order the protocol declares them.
LEASE_FIELDS = ("task_id", "worker", "token", "started_at", "expires_at")

#: Operations that answer with an Outcome.
OUTCOME_OPS = frozenset({"complete", "fail", "cancel", "renew"})

#: Operations that answer with nothing (``None`` / ``null``).
NONE_OPS = frozenset({"add_worker", "advance"})

#: The reads and controls only the ``--exec`` adapter carries: ``task`` and
#: ``now`` answer a view and the clock; ``reset`` and ``restart`` answer null.
ADAPTER_OPS = ("task", "now", "reset", "restart")
#: Each batch operation and the single call its entries are: its result is a list of those results.
BATCH_OF = dict(zip(BATCH_OPERATIONS, ("submit", "dispatch", "complete", "fail")))
#: Every operation with a JSON form here (``prune`` answers how many tasks it forgot, an int).
OPS = (*OPERATIONS, *PRUNE_OPERATIONS, *BATCH_OPERATIONS, *ADAPTER_OPS)

#: The nine TaskView fields, in the order the protocol declares them.
VIEW_FIELDS = ("id", "status", "priority", "due_at", "attempts", "worker", "token", "expires_at", "cancel_requested")
STATUS_VALUES = tuple(status.value for status in Status)


class ValueFormError(ValueError):
    """A value that does not have its operation's JSON form; the message is one line."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _known(op: object) -> str:
    if op not in OPS:
        raise ValueFormError(f"op must be one of {', '.join(OPS)}, got {op!r}")
    return op


def token_form(value: object, opaque: bool) -> bool:
    """Whether ``value`` is a token's form: an int, or under ``tokens=opaque`` (``opaque``) also a non-empty str."""
    return _is_int(value) or (opaque and isinstance(value, str) and value != "")


def to_json(op: str, value: object, opaque: bool = False) -> object:
    """The JSON form of ``value``, the result of operation ``op``.

    With ``opaque`` (``tokens=opaque``) a lease's token may be a non-empty str.

    Raises:
        ValueFormError: ``op`` is not a protocol operation, or ``value`` is not
            that operation's kind of value (a missing attribute, an ``accepted``
            that is not a bool, an int field holding a bool or a float).
    """
    _known(op)
    if op in BATCH_OF:
        single = BATCH_OF[op]
        if not isinstance(value, (list, tuple)):
            raise ValueFormError(f"{op} answers a list of what {single} answers, got {value!r}")
        if single == "dispatch" and any(item is None for item in value):
            raise ValueFormError(f"dispatch_many answers a list of leases, never None in it: {value!r}")
        return [to_json(single, item, opaque) for item in value]
    if op in ("reset", "restart"):
        return None
    if op == "now":
        if not _is_int(value):
            raise ValueFormError(f"now answers the clock (an int), got {value!r}")
        return value
    if op == "task":
        form = {name: getattr(value, name, None) for name in VIEW_FIELDS}
        form["status"] = getattr(form["status"], "value", form["status"])
        return form
    if op in NONE_OPS:
        if value is not None:
            raise ValueFormError(f"{op} answers None, got {value!r}")
        return None
    if op == "submit":
        if not _is_int(value):
            raise ValueFormError(f"submit answers a task id (an int), got {value!r}")
        return value
    if op == "prune":
        if not _is_int(value):
            raise ValueFormError(f"prune answers how many tasks it forgot (an int), got {value!r}")
        return value
    if op == "dispatch":
        if value is None:
            return None
        obj = {}
        for name in LEASE_FIELDS:
            field = getattr(value, name, None)
            if not (isinstance(field, str) if name == "worker" else token_form(field, opaque) if name == "token" else _is_int(field)):
                raise ValueFormError(f"dispatch answers a Lease or None; its {name} is {field!r} in {value!r}")
            obj[name] = field
        return obj
    accepted = getattr(value, "accepted", None)
    reason = getattr(value, "reason", None)
    if type(accepted) is not bool or not (reason is None or isinstance(reason, str)):
        raise ValueFormError(f"{op} answers an Outcome (accepted a bool, reason a str or None), got {value!r}")
    return {"accepted": accepted} if reason is None else {"accepted": accepted, "reason": reason}


def from_json(op: str, obj: object, opaque: bool = False) -> object:
    """The protocol value whose JSON form is ``obj``, for a result of ``op``.

    With ``opaque`` (``tokens=opaque``) a token may be a non-empty str.

    Returns ``None``, an int task id or clock, a ``Lease``, an ``Outcome``
    or a ``TaskView`` (its ``status`` a ``Status``).

    Raises:
        ValueFormError: ``op`` is unknown or ``obj`` is not its JSON form (a
            missing or unknown field, a wrong type); the message names the
            field and the rule.
    """
    _known(op)
    if op in BATCH_OF:
        single = BATCH_OF[op]
        if not isinstance(obj, list):
            raise ValueFormError(f"{op} answers a list of what {single} answers, got {_show(obj)}")
        if single == "dispatch" and any(item is None for item in obj):
            raise ValueFormError(f"dispatch_many answers a list of leases, never null in it: {_show(obj)}")
        try:
            return [from_json(single, item, opaque) for item in obj]
        except ValueFormError as exc:
            raise ValueFormError(f"{op}: {exc}") from None
    if op in NONE_OPS or op in ("reset", "restart"):
        if obj is not None:
            raise ValueFormError(f"{op} answers null, got {_show(obj)}")
        return None
    if op in ("submit", "now", "prune"):
        if not _is_int(obj):
            what = {"submit": "a task id", "now": "the clock", "prune": "how many tasks it forgot"}[op]
            raise ValueFormError(f"{op} answers {what} (an int), got {_show(obj)}")
        _check_size(op, "result", obj)
        return obj
    if op == "task":
        return _view_from_json(obj, opaque)
    if op == "dispatch":
        if obj is None:
            return None
        if not isinstance(obj, dict) or set(obj) != set(LEASE_FIELDS):
            raise ValueFormError(f"dispatch answers null or an object with exactly {', '.join(LEASE_FIELDS)}, got {_show(obj)}")
        for name in LEASE_FIELDS:
            if not (isinstance(obj[name], str) if name == "worker" else token_form(obj[name], opaque) if name == "token" else _is_int(obj[name])):
                kind = "a string" if name == "worker" else "an int or a non-empty string" if name == "token" and opaque else "an int"
                raise ValueFormError(f"dispatch result field {name!r} must be {kind}, got {_show(obj[name])}")
            _check_size("dispatch", name, obj[name])
        return Lease(**obj)
    if not isinstance(obj, dict) or "accepted" not in obj or not set(obj) <= {"accepted", "reason"}:
        raise ValueFormError(f'{op} answers an object with "accepted" (and optionally "reason"), got {_show(obj)}')
    if type(obj["accepted"]) is not bool:
        raise ValueFormError(f"{op} result field 'accepted' must be a bool, got {_show(obj['accepted'])}")
    reason = obj.get("reason")
    if not (reason is None or isinstance(reason, str)):
        raise ValueFormError(f"{op} result field 'reason' must be a string or null, got {_show(reason)}")
    _check_size(op, "reason", reason)
    return Outcome(obj["accepted"], reason)


def _view_from_json(obj: object, opaque: bool = False) -> TaskView:
    if not isinstance(obj, dict) or set(obj) != set(VIEW_FIELDS):
        raise ValueFormError(f"task answers an object with exactly {', '.join(VIEW_FIELDS)}, got {_show(obj)}")
    if obj["status"] not in STATUS_VALUES:
        raise ValueFormError(f"task result field 'status' must be one of {', '.join(STATUS_VALUES)}, got {_show(obj['status'])}")
    for name in ("id", "priority", "due_at", "attempts", "token", "expires_at"):
        if not (_is_int(obj[name]) or (obj[name] is None and name in ("token", "expires_at"))
                or (name == "token" and token_form(obj[name], opaque))):
            rule = "an int or null" if name in ("token", "expires_at") else "an int"
            raise ValueFormError(f"task result field {name!r} must be {rule}, got {_show(obj[name])}")
        _check_size("task", name, obj[name])
    if not (obj["worker"] is None or isinstance(obj["worker"], str)):
        raise ValueFormError(f"task result field 'worker' must be a string or null, got {_show(obj['worker'])}")
    _check_size("task", "worker", obj["worker"])
    if type(obj["cancel_requested"]) is not bool:
        raise ValueFormError(f"task result field 'cancel_requested' must be a bool, got {_show(obj['cancel_requested'])}")
    return TaskView(**{**obj, "status": Status(obj["status"])})


def _check_size(op: str, name: str, value: object) -> None:
    """Refuse an int outside the contract's ``INT_MIN..INT_MAX`` or a string past ``MAX_WIRE_STRING``."""
    if _is_int(value) and not INT_MIN <= value <= INT_MAX:
        raise ValueFormError(f"{op} result field {name!r} must fit a signed 64-bit integer, got one of about {int(value.bit_length() * 0.30103) + 1} digits")
    if isinstance(value, str) and len(value) > MAX_WIRE_STRING:
        raise ValueFormError(f"{op} result field {name!r} is longer than {MAX_WIRE_STRING} characters ({len(value)})")


def same_result(op: str, have: object, want: object, opaque: bool = False) -> bool:
    """Whether two results of ``op`` agree as the spec compares them: Lease fields, task ids,
    ``accepted`` only for an Outcome (reason wording is not part of the contract). O(1).
    With ``opaque`` a token may be a str (and a str never equals an int)."""
    if op in BATCH_OF:
        if not isinstance(have, (list, tuple)) or not isinstance(want, (list, tuple)) or len(have) != len(want):
            return False
        return all(same_result(BATCH_OF[op], h, w, opaque) for h, w in zip(have, want))
    a, b = to_json(op, have, opaque), to_json(op, want, opaque)
    if op in OUTCOME_OPS:
        return a["accepted"] is b["accepted"]
    return a == b


#: The longest value an error message quotes, in characters.
_SHOW_LIMIT = 60


def _show(obj: object) -> str:
    text = repr(obj)
    return text if len(text) <= _SHOW_LIMIT else text[: _SHOW_LIMIT - 3] + "..."
