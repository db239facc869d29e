"""The contract's argument checks, with its exact errors: the one place their rules live.

Every check raises ``ValueError`` naming the argument, the value and the rule,
and runs before a scheduler changes anything, so an invalid call leaves it
exactly as it was. Every shipped scheduler and adapter calls these (through
``fencepost.impl.kit``), so a rule changed here changes everywhere at once.
(The spec's model has its own copy of these rules on purpose: the contract
must not share code with what it checks.)

Each check is O(1) unless it says otherwise. The values every argument may
take are the contract's (``spec.protocol``: ``INT_MIN``/``INT_MAX`` for every
int, ``text_problem`` for worker names and keys): a scheduler that stores
ints or texts needs no range check of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping

from fencepost.spec.protocol import BACKWARDS, INT_MAX, INT_MIN, WORKER_EXISTS, int_shown, text_problem


def check_int(name: str, value: object) -> int:
    """Return ``value`` if it is an ``int`` from ``INT_MIN`` to ``INT_MAX`` (a signed 64-bit int); ``bool`` is refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, not {type(value).__name__}: {value!r}")
    if not INT_MIN <= value <= INT_MAX:
        raise ValueError(f"{name} must be a signed 64-bit int, from {INT_MIN} to {INT_MAX}: {int_shown(value)}")
    return value


def check_text(name: str, value: str) -> str:
    """Return the str ``value`` if it may be a worker name or key: no ``FORBIDDEN_TEXT`` character,
    at most ``MAX_TEXT_BYTES`` bytes of UTF-8 (``spec.protocol.text_problem``). O(len(value))."""
    if problem := text_problem(value, name):
        raise ValueError(problem)
    return value


def check_lease_end(now: int, duration: int) -> int:
    """The end ``now + duration`` of a lease (``dispatch``, ``renew``), if it is not after ``INT_MAX``."""
    if now + duration > INT_MAX:
        raise ValueError(f"duration {duration} would end the lease at now + duration = {now + duration}, "
                         f"after the latest time {INT_MAX}")
    return now + duration


def check_retry_time(now: int, retry_delay: int, attempts: int) -> int:
    """The retry time ``now + retry_delay * 2 ** (attempts - 1)`` of an accepted ``fail``, if it is not after
    ``INT_MAX``. A scheduler calls it before any change, for the fail that would be accepted and retry."""
    due = now + retry_delay * 2 ** (attempts - 1)
    if due > INT_MAX:
        raise ValueError(f"now {now}: the retry time now + retry_delay * 2 ** (attempts - 1) = {int_shown(due)} "
                         f"(retry_delay {retry_delay}, attempt {attempts}) is after the latest time {INT_MAX}")
    return due


def check_min(name: str, value: object, minimum: int) -> int:
    check_int(name, value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}: {value!r}")
    return value


def check_time(current: int | None, now: object) -> int:
    """Return ``now`` if it is a valid time: an int >= 0 and, unless ``current`` is None,
    not before ``current`` (the scheduler's clock). ``current=None`` is for a scheduler
    whose clock lives elsewhere (a server's), which refuses a time going backwards itself."""
    check_int("now", now)
    if now < 0:
        raise ValueError(f"now must be >= 0: {now!r}")
    if current is not None and now < current:
        raise ValueError(f"{BACKWARDS}: now={now} < current time {current}")
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
    """Return ``worker`` if it is a ``str`` (a call naming a worker; ``add_worker`` has its own rule)."""
    if not isinstance(worker, str):
        raise ValueError(f"worker must be a str, not {type(worker).__name__}: {worker!r}")
    return worker


def check_dispatch(worker: object, now: object, duration: object, *, current: int | None,
                   workers: Mapping[str, int] | None = None,
                   fits: Callable[[str, int], int] | None = None) -> int | None:
    """``dispatch``'s (and ``dispatch_many``'s) argument checks, in the contract's order.

    The order: ``worker`` a ``str`` (and a valid text, ``check_text``, unless
    known); known, when ``workers`` (name -> capacity) is given; ``now`` a valid time (``check_time(current, now)``; with
    ``fits``, also ``fits("now", now)``); ``duration`` an int >= 1 (with
    ``fits``, also ``fits("duration", duration)``); the lease's end ``now +
    duration`` not after ``INT_MAX`` (``check_lease_end``). ``workers=None`` is for a
    scheduler that keeps its workers elsewhere (a server) and refuses an
    unknown one itself; ``fits`` is a storage's range check, which raises
    ``ValueError`` for a value the storage cannot hold.

    Returns:
        The worker's capacity, ``workers[worker]``, or None without ``workers``.

    Raises:
        ValueError: on the first bad argument, with the contract's words.
    """
    check_worker_name(worker)
    if workers is None or worker not in workers:
        check_text("worker", worker)  # known workers were checked when added
    if workers is not None and worker not in workers:
        raise unknown_worker(worker)
    check_time(current, now)
    if fits is not None:
        fits("now", now)
    check_min("duration", duration, 1)
    if fits is not None:
        fits("duration", duration)
    check_lease_end(now, duration)
    return None if workers is None else workers[worker]


def check_token(token: object, opaque: bool = False) -> int | str:
    """A report's token: an ``int`` (``bool`` refused), or with ``opaque`` (``tokens=opaque``)
    also a non-empty ``str``. A token of the right type that matches nothing is not an
    invalid argument: the call is refused (an ``Outcome``), never raised."""
    if opaque and isinstance(token, str):
        if not token:
            raise ValueError("token must be a non-empty str or an int, not the empty str")
        return token
    if opaque and (isinstance(token, bool) or not isinstance(token, int)):
        raise ValueError(f"token must be a non-empty str or an int, not {type(token).__name__}: {token!r}")
    return check_int("token", token)


def check_report(task_id: object, token: object, now: object, *, issued: int, current: int | None,
                 opaque: bool = False) -> int:
    """``complete``/``fail``'s arguments in the contract's order (``renew`` adds ``check_min("duration", ...)``):
    ``task_id`` one of ``1..issued``, the token (``check_token``), then ``now``. Returns ``task_id``."""
    check_task_id(task_id, issued)
    check_token(token, opaque)
    check_time(current, now)
    return task_id


def not_offered(name: str, value: object, queue: str, why: str = "") -> ValueError:
    """The error for a submit argument or call the queue does not offer (what its ``without=`` declares):
    ``max_attempts is not offered by pgqueuer (its executors retry): 3``."""
    return ValueError(f"{name} is not offered by {queue}{f' ({why})' if why else ''}: {value!r}")


def check_fits(name: str, value: int, bits: int, column: str) -> int:
    """``value`` when a signed int of ``bits`` bits holds it, else the ValueError naming the queue's
    ``column``: ``priority must fit pgqueuer's int column (-2**31 .. 2**31-1): 2147483648``. For a
    queue narrower than the contract's 64 bits, which says so rather than fail in its driver. O(1)."""
    if not -2 ** (bits - 1) <= value < 2 ** (bits - 1):
        raise ValueError(f"{name} must fit {column} (-2**{bits - 1} .. 2**{bits - 1}-1): {value!r}")
    return value


def check_new_worker(worker: object, capacity: object, existing: Container[str]) -> None:
    """``add_worker``'s rules: a non-empty str name (``check_text``) not in ``existing``, capacity >= 1."""
    if not isinstance(worker, str) or not worker:
        raise ValueError(f"worker must be a non-empty str: {worker!r}")
    check_text("worker", worker)
    check_min("capacity", capacity, 1)
    if worker in existing:
        raise ValueError(f"worker {worker!r} {WORKER_EXISTS}")


def check_submit(priority: object, due_at: object, max_attempts: object, retry_delay: object) -> None:
    """``submit``'s rules, in the contract's order; raise on the first bad argument."""
    check_int("priority", priority)
    if due_at is not None:
        check_min("due_at", due_at, 0)
    if max_attempts is not None:
        check_min("max_attempts", max_attempts, 1)
    check_min("retry_delay", retry_delay, 1)


def check_key(key: object) -> str | None:
    """An idempotency key: None or a non-empty ``str`` (``check_text``)."""
    if key is not None and (not isinstance(key, str) or not key):
        raise ValueError(f"key must be None or a non-empty str, not {type(key).__name__}: {key!r}")
    return key if key is None else check_text("key", key)


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
    """The error for a worker name never given to ``add_worker``."""
    return ValueError(f"worker {worker!r} is unknown: add it with add_worker first")


# ------------------------------------------------------------------ batches

#: ``submit``'s keyword arguments: the keys a ``submit_many`` entry may have.
SUBMIT_ARGUMENTS = ("priority", "due_at", "max_attempts", "retry_delay", "key")


def check_list(name: str, value: object) -> list:
    """A batch's list argument (a list or tuple), as a new list."""
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{name} must be a list, not {type(value).__name__}: {value!r}")
    return list(value)


def entry_error(name: str, number: int, exc: ValueError) -> ValueError:
    """Entry ``number`` of batch argument ``name`` is invalid: so is the whole call."""
    return ValueError(f"{name}[{number}]: {exc} (nothing in the batch was done)")


def check_submit_entries(tasks: object, keys: dict[str, tuple[int, tuple]] | None, first_id: int) -> list[dict]:
    """``submit_many``'s ``tasks``, every entry checked as ``submit`` would, before anything is done.

    Each entry is a dict of ``submit``'s keyword arguments. With ``keys`` (the
    scheduler's known idempotency keys, ``keyed_task``'s map) a key is also
    checked against them and against the entries before it, as the submits
    in order would see them; ``first_id`` is the id the first new task gets.
    Without ``keys`` (None) the caller checks keys itself (inside a
    transaction it can roll back). Complexity: O(len(tasks)).
    """
    entries = check_list("tasks", tasks)
    seen: dict[str, tuple[int, tuple]] = {}
    next_id = first_id
    for number, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"tasks[{number}] must be a dict of submit's arguments, not {type(entry).__name__}: {entry!r}")
        unknown = sorted(set(entry) - set(SUBMIT_ARGUMENTS), key=str)
        if unknown:
            raise ValueError(f"tasks[{number}]: submit takes no argument {unknown[0]!r} "
                             f"(it takes {', '.join(SUBMIT_ARGUMENTS)})")
        try:
            check_submit(entry.get("priority", 0), entry.get("due_at"), entry.get("max_attempts"),
                         entry.get("retry_delay", 1))
            key = check_key(entry.get("key"))
            if key is not None and keys is not None:
                arguments = (entry.get("priority", 0), entry.get("due_at"), entry.get("max_attempts"),
                             entry.get("retry_delay", 1))
                known = keyed_task(seen, key, arguments) if key in seen else keyed_task(keys, key, arguments)
                if known is None:
                    seen[key] = (next_id, arguments)
                    next_id += 1
                continue
        except ValueError as exc:
            raise entry_error("tasks", number, exc) from None
        next_id += 1
    return entries


def check_reports(reports: object, issued: int) -> list[tuple[int, int]]:
    """``complete_many``/``fail_many``'s ``reports``: ``(task_id, token)`` pairs, each checked whole.

    ``issued`` is the number of task ids issued so far. Complexity: O(len(reports)).
    """
    pairs = []
    for number, pair in enumerate(check_list("reports", reports)):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"reports[{number}] must be a (task_id, token) pair, not {pair!r}")
        try:
            check_task_id(pair[0], issued)
            check_int("token", pair[1])
        except ValueError as exc:
            raise entry_error("reports", number, exc) from None
        pairs.append((pair[0], pair[1]))
    return pairs
