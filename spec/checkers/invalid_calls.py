"""The calls the protocol refuses, one kind of fault at a time, for the machine's ``invalid_call`` rule.

Each kind (``INVALID_CALLS``) puts its fault into every operation and
argument where it can occur; every other argument is valid, so each call is
refused for the fault its kind names.
"""

from __future__ import annotations

from fencepost.spec import model
from fencepost.spec.formats.values import BATCH_OF
from fencepost.spec.protocol import Status
from fencepost.spec.variants import DEFAULT, Variants


#: The faults ``invalid_call`` makes. One step puts its fault into every
#: operation and argument where it can occur, one call each, so a lapse in a
#: single place (``cancel`` alone coercing a float time) is met within one
#: check's budget; refused calls change nothing, so the extra calls cost no
#: exploration.
INVALID_CALLS = (
    "wrong_type",  # every int argument of every operation, a valid value in a non-int disguise
    "bad_time",  # every timed operation: a negative or backwards time
    "bad_task_id",  # every operation that names a task: zero, negative or never issued
    "below_minimum",  # duration, capacity, due_at, max_attempts, retry_delay below their minimum
    "bad_worker",  # not a str, empty, already added, or (on dispatch) never added
    "several_faults",  # two or more bad arguments at once: any may be reported, nothing changes
)
#: Every int argument of every operation, in the order a ``wrong_type`` step tries them.
INT_ARGUMENTS = (
    ("dispatch", "now"), ("dispatch", "duration"),
    ("complete", "task_id"), ("complete", "token"), ("complete", "now"),
    ("fail", "task_id"), ("fail", "token"), ("fail", "now"),
    ("cancel", "task_id"), ("cancel", "now"),
    ("renew", "task_id"), ("renew", "token"), ("renew", "now"), ("renew", "duration"),
    ("advance", "now"),
    ("submit", "priority"), ("submit", "due_at"), ("submit", "max_attempts"), ("submit", "retry_delay"),
    ("add_worker", "capacity"),
)
#: The forms a wrong-typed int argument takes, each made from a valid value
#: (``"7"``, ``7.0``, ``[7]``) or next to one (``7.5``, ``True``), so an
#: implementation that coerces with ``int()`` or lets ``isinstance(True,
#: int)`` through answers where it must refuse. Only forms both TOML and JSON
#: can write, so any counterexample saves.
NON_INT_FORMS = ("str", "float", "fraction", "bool", "list")
#: Values a worker name must refuse; a list is unhashable, so no dict lookup may see it.
NON_STRS = (1, ["w1"], 1.5, True)
TIMED_OPS = ("dispatch", "complete", "fail", "cancel", "renew", "advance")
def disguise(value: int | str, form: str) -> object:
    """``value`` in one of the ``NON_INT_FORMS``; ``bool`` gives True (equal to 1, never an int here).

    An opaque token (a str, under ``tokens=opaque``) is already not an int and
    a str is a valid token there, so its wrong types are a float, a bool or a
    list, whatever the form.
    """
    if isinstance(value, str):
        return {"str": [value], "float": 1.5, "fraction": 0.5, "bool": True, "list": [value]}[form]
    return {"str": str(value), "float": float(value), "fraction": value + 0.5, "bool": True, "list": [value]}[form]


def invalid_calls(
    state: model.State, kind: str, pick: int, now: int | None = None, shape: int = 0, form: str = "str",
    variants: Variants = DEFAULT,
) -> list[tuple[str, dict]]:
    """The calls of one kind of fault (see ``INVALID_CALLS``) against ``state``, as ``(op, args)``.

    ``now`` (default: the current time) is the instant used where the fault
    is not the time itself. ``pick`` chooses the task and worker named and
    the size of a bad value, ``shape`` which bad value, and ``form`` (one of
    ``NON_INT_FORMS``) how a wrong type disguises a valid value. Every other
    argument is valid, so each call is refused for the fault its kind names
    (``several_faults`` aside; with no task submitted yet, a named task is
    unknown too). Under ``variants`` only what the queue offers is called
    (see ``offered_calls``).

    Raises:
        ValueError: ``kind`` is not one of ``INVALID_CALLS``.
    """
    calls = _invalid_calls(state, kind, pick, now, shape, form, variants.lease_length() or 1)
    return calls if variants == DEFAULT else offered_calls(calls, variants)


def offered_calls(calls: list[tuple[str, dict]], variants: Variants) -> list[tuple[str, dict]]:
    """``calls`` without those the queue does not offer under ``variants``.

    Drops a call to an operation in ``without`` (``fail_many`` with ``fail``),
    a submit passing an argument the queue does not take (``priority`` under
    ``order=fifo``, ``due_at``, ``max_attempts``, ``key``) and a
    ``submit_many`` with an entry passing one, and under ``tokens=opaque`` a
    token disguised as a str (a str is a token there), alone or in a report.
    """
    kept = []
    for op, args in calls:
        single = BATCH_OF.get(op, op)  # without=fail leaves out fail_many too
        if single in ("fail", "cancel", "renew") and not variants.offers(single):
            continue
        entries = [args] if op == "submit" else args.get("tasks") if op == "submit_many" else None
        if isinstance(entries, (list, tuple)) and any(
            isinstance(entry, dict) and name in entry and not variants.offers(part)
            for entry in entries for name, part in _SUBMIT_PARTS
        ):
            continue
        if variants.tokens == "opaque" and (isinstance(args.get("token"), str) or _str_token_reported(args.get("reports"))):
            continue
        kept.append((op, args))
    return kept


def _str_token_reported(reports: object) -> bool:
    """Whether a batch's ``reports`` names a token as a str (a pair whose second item is one)."""
    return isinstance(reports, (list, tuple)) and any(
        isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[1], str) for pair in reports
    )


#: submit's optional arguments and the ``without`` part each belongs to.
_SUBMIT_PARTS = (("priority", "priority"), ("due_at", "due_at"), ("max_attempts", "max_attempts"), ("key", "keys"))


def _invalid_calls(
    state: model.State, kind: str, pick: int, now: int | None, shape: int, form: str, length: int,
) -> list[tuple[str, dict]]:
    now = state.now if now is None else now
    tasks = len(state.tasks)
    task_id = 1 + pick % tasks if tasks else 1
    token = (state.tasks[task_id - 1].token if tasks else None) or 1  # the task's current token, if it has one
    worker = state.workers[pick % len(state.workers)][0] if state.workers else "w1"

    def call(op: str, **fault: object) -> tuple[str, dict]:
        return op, {**valid_call(op, task_id, token, worker, now, length), **fault}

    if kind == "wrong_type":
        valid = {
            "now": now, "duration": 1 + pick % 3 if length == 1 else length, "task_id": task_id, "token": token, "priority": pick,
            "due_at": now, "max_attempts": 1 + pick % 3, "retry_delay": 1 + pick % 3, "capacity": 1 + pick % 2,
        }
        return [call(op, **{name: disguise(valid[name], form)}) for op, name in INT_ARGUMENTS]
    if kind == "bad_time":
        negative, backwards = -1 - pick, state.now - 1 - pick % max(state.now, 1)
        wrong = backwards if shape % 2 and state.now > 0 else negative
        return [call(op, now=wrong) for op in (TIMED_OPS if tasks else ("dispatch", "advance"))]
    if kind == "bad_task_id":
        wrong = (0, -1 - pick, tasks + 1 + pick)[shape % 3]
        return [call(op, task_id=wrong) for op in ("complete", "fail", "cancel", "renew")]
    if kind == "below_minimum":
        low = -1 - pick % 3 if shape % 2 else 0
        return [
            call("dispatch", duration=low), call("renew", duration=low), call("add_worker", capacity=low),
            call("submit", due_at=-1 - pick), call("submit", max_attempts=low), call("submit", retry_delay=low),
        ]
    if kind == "bad_worker":
        non_str = NON_STRS[pick % len(NON_STRS)]
        again = [call("add_worker", worker=worker)] if state.workers else []  # a worker added already
        return [
            call("add_worker", worker=non_str), call("add_worker", worker=""), *again,
            call("dispatch", worker=non_str), call("dispatch", worker="nobody"),
        ]
    if kind == "several_faults":
        return [
            ("dispatch", {"worker": "nobody", "now": -1, "duration": 0}),
            ("complete", {"task_id": 0, "token": "1", "now": now}),
            ("renew", {"task_id": tasks + 1, "token": [1], "now": 1.5, "duration": 0}),
            ("submit", {"priority": "1", "due_at": -1}),
            ("add_worker", {"worker": "", "capacity": 0}),
            ("cancel", {"task_id": "x", "now": -1}),
            ("fail", {"task_id": task_id, "token": 1.5, "now": -1}),
            ("add_worker", {"worker": worker, "capacity": True}),
        ]
    raise ValueError(f"kind must be one of {', '.join(INVALID_CALLS)}: {kind!r}")


def valid_call(op: str, task_id: int, token: int, worker: str, now: int, duration: int = 1) -> dict:
    """Arguments for ``op`` with every type and range right, for a kind to put one fault into.

    (The task may still not exist and the token may be stale: those are refusals, not faults.)
    """
    return {
        "submit": {},
        "add_worker": {"worker": "w9", "capacity": 1},
        "dispatch": {"worker": worker, "now": now, "duration": duration},
        "complete": {"task_id": task_id, "token": token, "now": now},
        "fail": {"task_id": task_id, "token": token, "now": now},
        "cancel": {"task_id": task_id, "now": now},
        "renew": {"task_id": task_id, "token": token, "now": now, "duration": duration},
        "advance": {"now": now},
    }[op]


#: The faults ``invalid_batch`` makes, each in a batch that is otherwise valid, so a scheduler
#: that is not all or nothing keeps the good entries before the bad one and is seen.
INVALID_BATCHES = (
    "bad_entry",  # a submit_many whose last entry is an invalid submit, after valid ones
    "not_a_list",  # tasks or reports that are not a list, or an entry of the wrong shape
    "bad_limit",  # dispatch_many with a limit below 1 or not an int
    "bad_report",  # complete_many / fail_many with an unknown id or a wrong-typed token after valid pairs
)


def invalid_batches(state: model.State, kind: str, pick: int, now: int | None = None,
                    form: str = "str") -> list[tuple[str, dict]]:
    """The batch calls of one kind of fault (see ``INVALID_BATCHES``) against ``state``, as ``(op, args)``.

    Raises:
        ValueError: ``kind`` is not one of ``INVALID_BATCHES``.
    """
    now = state.now if now is None else now
    tasks = len(state.tasks)
    worker = state.workers[pick % len(state.workers)][0] if state.workers else "w1"
    running = [(t.id, t.token) for t in state.tasks if t.status is Status.RUNNING]
    good = [list(pair) for pair in running[: 1 + pick % 2]] or ([[1, 1]] if tasks else [])
    if kind == "bad_entry":
        bad = ({"retry_delay": 0}, {"priority": disguise(pick, form)}, {"due_at": -1}, {"max_attempts": 0},
               {"colour": 1}, {"key": ""})[pick % 6]
        return [("submit_many", {"tasks": [{}, {"priority": 1}][: 1 + pick % 2] + [bad]})]
    if kind == "not_a_list":
        return [
            ("submit_many", {"tasks": {"priority": 1}}), ("submit_many", {"tasks": [{}, 1]}),
            ("complete_many", {"reports": good[0] if good else 1, "now": now}),
            ("fail_many", {"reports": [*good, [1]], "now": now}),
        ]
    if kind == "bad_limit":
        limit = (0, -1 - pick, disguise(1 + pick % 3, form))[pick % 3]
        return [("dispatch_many", {"worker": worker, "now": now, "duration": 1, "limit": limit})]
    if kind == "bad_report":
        bad = ([tasks + 1 + pick, 1], [0, 1], [1 if tasks else 0, disguise(1, form)])[pick % 3]
        return [(op, {"reports": [*good, bad], "now": now}) for op in ("complete_many", "fail_many")]
    raise ValueError(f"kind must be one of {', '.join(INVALID_BATCHES)}: {kind!r}")
