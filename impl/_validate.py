"""Argument checks shared by both implementations.

Every check raises ``ValueError`` naming the argument, the value and the rule,
and runs before a scheduler changes anything, so an invalid call leaves it
exactly as it was. (The spec's model has its own copy of these rules on
purpose: the contract must not share code with what it checks.)
"""

from __future__ import annotations


def check_int(name: str, value: object) -> int:
    """Return ``value`` if it is an ``int``; ``bool`` is refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, not {type(value).__name__}: {value!r}")
    return value


def check_min(name: str, value: object, minimum: int) -> int:
    check_int(name, value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}: {value!r}")
    return value


def check_time(current: int, now: object) -> int:
    check_int("now", now)
    if now < 0:
        raise ValueError(f"now must be >= 0: {now!r}")
    if now < current:
        raise ValueError(f"time can't go backwards: now={now} < current time {current}")
    return now


def check_task_id(task_id: object, issued: int) -> int:
    check_int("task_id", task_id)
    if not 1 <= task_id <= issued:
        known = f"ids issued so far are 1..{issued}" if issued else "no task has been submitted yet"
        raise ValueError(f"task_id {task_id!r} is unknown: {known}")
    return task_id


def forgotten_task(task_id: int) -> ValueError:
    """The error for an id that ``prune`` forgot (the word "forgotten" is the contract's)."""
    return ValueError(f"task_id {task_id} was forgotten: it was final and pruned since (its id is never reused)")


def check_prune(current: int, before: object, now: object) -> None:
    """``prune``'s rules, in the model's order: ``before`` an int, ``now`` a valid time, ``0 <= before <= now``."""
    check_int("before", before)
    check_time(current, now)
    if not 0 <= before <= now:
        raise ValueError(f"before must be >= 0 and <= now: before={before!r}, now={now!r}")


def check_worker_name(worker: object) -> str:
    if not isinstance(worker, str):
        raise ValueError(f"worker must be a str, not {type(worker).__name__}: {worker!r}")
    return worker


def check_new_worker(worker: object, capacity: object, existing: object) -> None:
    """``add_worker``'s rules: a non-empty str name not in ``existing``, capacity >= 1."""
    if not isinstance(worker, str) or not worker:
        raise ValueError(f"worker must be a non-empty str: {worker!r}")
    check_min("capacity", capacity, 1)
    if worker in existing:
        raise ValueError(f"worker {worker!r} already exists")


def check_submit(priority: object, due_at: object, max_attempts: object, retry_delay: object) -> None:
    """``submit``'s rules, in the contract's order; raise on the first bad argument."""
    check_int("priority", priority)
    if due_at is not None:
        check_min("due_at", due_at, 0)
    if max_attempts is not None:
        check_min("max_attempts", max_attempts, 1)
    check_min("retry_delay", retry_delay, 1)


def check_key(key: object) -> str | None:
    """An idempotency key: None or a non-empty ``str``."""
    if key is not None and (not isinstance(key, str) or not key):
        raise ValueError(f"key must be None or a non-empty str, not {type(key).__name__}: {key!r}")
    return key


#: The ``submit`` arguments a key is bound to, in the order ``keyed_task`` compares them.
KEYED_ARGUMENTS = ("priority", "due_at", "max_attempts", "retry_delay")


def keyed_task(keys: dict[str, tuple[int, tuple]], key: str | None, arguments: tuple) -> int | None:
    """The id a known ``key`` already names, None for a new key (or None); raise on a conflict.

    ``keys`` maps each key to ``(task id, arguments as passed)``. Arguments are
    compared by type and value, so ``due_at=None`` differs from an int.
    Complexity: O(1).
    """
    if key is None or key not in keys:
        return None
    task_id, first = keys[key]
    diffs = [f"{name} {old!r} then {new!r}" for name, old, new in zip(KEYED_ARGUMENTS, first, arguments)
             if type(old) is not type(new) or old != new]
    if diffs:
        raise ValueError(f"key {key!r} was already submitted as task {task_id} with other arguments: "
                         + ", ".join(diffs))
    return task_id


def unknown_worker(worker: str) -> ValueError:
    return ValueError(f"worker {worker!r} is unknown: add it with add_worker first")
