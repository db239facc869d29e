"""The reference model: the scheduler contract as plain data and pure functions.

What this specifies: the safety contract of an in-memory, lease-based task
scheduler driven by caller-supplied logical time -- which calls are invalid,
which task a dispatch picks, when a lease expires, which completion is
accepted, and how failure, retry and cancellation end. What it leaves out:
liveness (nothing forces anyone to call ``advance``), how a durable
scheduler stores its state (a ``restart`` step changes nothing here: see
``apply``), wall-clock time, and anything outside this object (a
token checked here cannot fence an external side effect).

Every operation is a pure function ``op(state, **arguments)`` that returns
the next ``State`` and the operation's result, or raises ``ValueError`` and
returns nothing (so an invalid call changes nothing). Each is written in the
same order: validate every argument (guards), expire due leases (timed
operations only), then the change, then what stays unchanged.

The state is deliberately naive -- tuples scanned in full -- so that it can be
checked by reading. ``impl.simple.SimpleScheduler`` refines this model
directly, and ``impl.indexed.IndexedScheduler`` refines ``SimpleScheduler``:
both must give the same results and the same task views for every sequence of
calls, which is what ``spec.checkers.machine`` checks.

Decisions the issue left open, taken here and documented in the README:

* When a lease ends with both a cancellation requested and the attempt
  budget spent, the task ends ``cancelled`` (the explicit request wins).
* A token is any ``int``; one that does not match is a rejection, not an
  invalid argument.
* A rejection's reason, in order: the task is running under another token
  (``stale_token``); the token is the one whose lease expired last
  (``lease_expired``); the task is final (``already_final``); otherwise
  ``not_running``. ``renew`` of a matching lease after a cancel request is
  ``cancel_requested``.
* A task view shows ``worker``, ``token`` and ``expires_at`` only while the
  task is running.
* An idempotency key (``submit(..., key=...)``) is remembered for the
  scheduler's whole life, whatever its task's status. A known key with the
  same other arguments *as passed* (``due_at=None`` differs from any int)
  returns the first task's id and changes nothing; with different ones it is
  an invalid call. Keys are not part of the task view.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fencepost.spec.protocol import (
    ACCEPTED,
    RESTART,
    DISPATCHABLE_STATUSES,
    FINAL_STATUSES,
    Lease,
    Outcome,
    Reason,
    Status,
    TaskView,
)


@dataclass(frozen=True, slots=True)
class Task:
    """One task's whole record. ``id`` is its position in ``State.tasks`` plus one."""

    id: int
    priority: int  # higher is dispatched first
    due_at: int  # eligible for dispatch once due_at <= now
    max_attempts: int | None  # None: unlimited
    retry_delay: int  # base of the exponential backoff after an explicit failure
    status: Status = Status.PENDING
    attempts: int = 0  # dispatches so far; never above max_attempts
    worker: str | None = None  # set exactly while running
    token: int | None = None  # set exactly while running
    started_at: int | None = None  # set exactly while running
    expires_at: int | None = None  # set exactly while running
    cancel_requested: bool = False  # only ever set while running
    expired_token: int | None = None  # the token whose lease expired last, for the rejection reason


#: The ``submit`` arguments an idempotency key is bound to, in this order and
#: exactly as passed (``due_at=None`` is not the time it stood for).
KEYED_ARGUMENTS = ("priority", "due_at", "max_attempts", "retry_delay")


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """One idempotency key: the task it made and the arguments it was bound to."""

    key: str
    task_id: int
    arguments: tuple[int | None, ...]  # KEYED_ARGUMENTS' values as passed


@dataclass(frozen=True, slots=True)
class State:
    """The whole scheduler. Every field is immutable; transitions build a new State."""

    now: int = 0  # logical time; never decreases
    tasks: tuple[Task, ...] = ()  # indexed by id - 1; ids are 1, 2, 3... in submit order
    workers: tuple[tuple[str, int], ...] = ()  # (name, capacity) in the order added
    last_token: int = 0  # tokens issued so far; the next one is last_token + 1
    keys: tuple[KeyRecord, ...] = ()  # every idempotency key ever submitted, in submit order


# ---------------------------------------------------------------- guards


def require_int(name: str, value: object) -> int:
    """Return ``value`` if it is an ``int`` (``bool`` excluded), else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, not {type(value).__name__}: {value!r}")
    return value


def require_at_least(name: str, value: object, minimum: int) -> int:
    require_int(name, value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}: {value!r}")
    return value


def require_time(state: State, now: object) -> int:
    require_int("now", now)
    if now < 0:
        raise ValueError(f"now must be >= 0: {now!r}")
    if now < state.now:
        raise ValueError(f"time can't go backwards: now={now} < current time {state.now}")
    return now


def require_task(state: State, task_id: object) -> Task:
    require_int("task_id", task_id)
    if not 1 <= task_id <= len(state.tasks):
        known = f"ids issued so far are 1..{len(state.tasks)}" if len(state.tasks) else "no task has been submitted yet"
        raise ValueError(f"task_id {task_id!r} is unknown: {known}")
    return state.tasks[task_id - 1]


def require_key(key: object) -> str | None:
    """Return ``key`` if it is None or a non-empty ``str``, else raise ValueError."""
    if key is not None and (not isinstance(key, str) or not key):
        raise ValueError(f"key must be None or a non-empty str, not {type(key).__name__}: {key!r}")
    return key


def capacity_of(state: State, worker: object) -> int:
    if not isinstance(worker, str):
        raise ValueError(f"worker must be a str, not {type(worker).__name__}: {worker!r}")
    for name, capacity in state.workers:
        if name == worker:
            return capacity
    raise ValueError(f"worker {worker!r} is unknown: add it with add_worker first")


# ---------------------------------------------------------------- queries


def load(state: State, worker: str) -> int:
    """How many tasks ``worker`` is running now."""
    return sum(1 for t in state.tasks if t.status is Status.RUNNING and t.worker == worker)


def dispatch_order(task: Task) -> tuple[int, int, int]:
    """Sort key: highest priority, then earliest due time, then lowest numeric id."""
    return (-task.priority, task.due_at, task.id)


def eligible(state: State) -> list[Task]:
    """Tasks a dispatch at ``state.now`` may pick, best first."""
    ready = [t for t in state.tasks if t.status in DISPATCHABLE_STATUSES and t.due_at <= state.now]
    return sorted(ready, key=dispatch_order)


def view(task: Task) -> TaskView:
    return TaskView(
        id=task.id,
        status=task.status,
        priority=task.priority,
        due_at=task.due_at,
        attempts=task.attempts,
        worker=task.worker,
        token=task.token,
        expires_at=task.expires_at,
        cancel_requested=task.cancel_requested,
    )


def key_record(state: State, key: str | None) -> KeyRecord | None:
    """The record of idempotency key ``key``, or None if it was never submitted (or is None)."""
    for record in state.keys:
        if record.key == key:
            return record
    return None


def key_of(state: State, task_id: int) -> str | None:
    """The idempotency key task ``task_id`` was submitted with, or None."""
    for record in state.keys:
        if record.task_id == task_id:
            return record.key
    return None


def key_conflict(record: KeyRecord, arguments: tuple[int | None, ...]) -> str | None:
    """Why ``arguments`` may not reuse ``record``'s key (what differs), or None if they match.

    Compared by type as well as value, so ``due_at=None`` differs from ``due_at=0``.
    """
    diffs = [
        f"{name} {old!r} then {new!r}"
        for name, old, new in zip(KEYED_ARGUMENTS, record.arguments, arguments)
        if type(old) is not type(new) or old != new
    ]
    if not diffs:
        return None
    return (f"key {record.key!r} was already submitted as task {record.task_id} with other arguments: "
            + ", ".join(diffs))


def task(state: State, task_id: int) -> TaskView:
    """The detached view of one task. Raises ValueError for an unknown id."""
    return view(require_task(state, task_id))


# ---------------------------------------------------------------- helpers for transitions


def _put(state: State, task: Task) -> State:
    tasks = state.tasks[: task.id - 1] + (task,) + state.tasks[task.id :]
    return replace(state, tasks=tasks)


def _release(task: Task, status: Status, **changes: object) -> Task:
    """End the task's assignment: clear every lease field and move to ``status``."""
    return replace(
        task,
        status=status,
        worker=None,
        token=None,
        started_at=None,
        expires_at=None,
        cancel_requested=False,
        **changes,
    )


def _budget_spent(task: Task) -> bool:
    return task.max_attempts is not None and task.attempts >= task.max_attempts


def expire(state: State, now: int) -> State:
    """Move time to ``now`` and end every lease with ``expires_at <= now``.

    An expired task goes back to ``pending`` (eligible at once: its due time
    has passed), unless a cancellation was requested (``cancelled``) or its
    attempt budget is spent (``failed``). Expiry proves nothing about the work.
    """
    for t in state.tasks:
        if t.status is Status.RUNNING and t.expires_at <= now:
            if t.cancel_requested:
                status = Status.CANCELLED
            elif _budget_spent(t):
                status = Status.FAILED
            else:
                status = Status.PENDING
            state = _put(state, _release(t, status, expired_token=t.token))
    return replace(state, now=now)


def _rejection(task: Task, token: int) -> Outcome | None:
    """Why a token may not act on ``task`` now, or None if it is the current lease.

    Called after ``expire``, so a running task's lease is alive: ``now < expires_at``.
    """
    if task.status is Status.RUNNING:
        return None if task.token == token else Outcome(False, Reason.STALE_TOKEN)
    if task.expired_token is not None and task.expired_token == token:
        return Outcome(False, Reason.LEASE_EXPIRED)
    if task.status in FINAL_STATUSES:
        return Outcome(False, Reason.ALREADY_FINAL)
    return Outcome(False, Reason.NOT_RUNNING)


# ---------------------------------------------------------------- operations


def initial() -> State:
    """A scheduler with no workers, no tasks, time 0 and no token issued."""
    return State()


def add_worker(state: State, worker: str, capacity: int) -> tuple[State, None]:
    """Register ``worker`` with room for ``capacity`` simultaneous leases. Untimed."""
    if not isinstance(worker, str) or not worker:
        raise ValueError(f"worker must be a non-empty str: {worker!r}")
    require_at_least("capacity", capacity, 1)
    if any(name == worker for name, _ in state.workers):
        raise ValueError(f"worker {worker!r} already exists")
    # unchanged: now, tasks, last_token
    return replace(state, workers=state.workers + ((worker, capacity),)), None


def submit(
    state: State,
    priority: int = 0,
    due_at: int | None = None,
    max_attempts: int | None = None,
    retry_delay: int = 1,
    key: str | None = None,
) -> tuple[State, int]:
    """Add a pending task; return its id (1, 2, 3... in submit order). Untimed.

    ``due_at=None`` means the current time; an earlier ``due_at`` is eligible at once.
    ``key``, when given, makes the call idempotent: a key submitted before,
    with the same other arguments as passed, returns that task's id and
    changes nothing; with different arguments the call is invalid.
    """
    require_int("priority", priority)
    if due_at is not None:
        require_at_least("due_at", due_at, 0)
    if max_attempts is not None:
        require_at_least("max_attempts", max_attempts, 1)
    require_at_least("retry_delay", retry_delay, 1)
    require_key(key)
    arguments = (priority, due_at, max_attempts, retry_delay)
    known = key_record(state, key)
    if known is not None:
        conflict = key_conflict(known, arguments)
        if conflict:
            raise ValueError(conflict)
        return state, known.task_id  # unchanged: everything (no id consumed)
    task_id = len(state.tasks) + 1
    new = Task(
        id=task_id,
        priority=priority,
        due_at=state.now if due_at is None else due_at,
        max_attempts=max_attempts,
        retry_delay=retry_delay,
    )
    keys = state.keys if key is None else state.keys + (KeyRecord(key, task_id, arguments),)
    # unchanged: now (untimed: no expiry), workers, last_token, every other task
    return replace(state, tasks=state.tasks + (new,), keys=keys), task_id


def dispatch(state: State, worker: str, now: int, duration: int) -> tuple[State, Lease | None]:
    """Lease the best eligible task to ``worker`` for ``[now, now + duration)``.

    Returns None, after expiring due leases, when the worker is full or nothing
    is eligible; a None issues no token and assigns nothing.
    """
    capacity = capacity_of(state, worker)
    require_time(state, now)
    require_at_least("duration", duration, 1)
    state = expire(state, now)
    ready = [t for t in state.tasks if t.status in DISPATCHABLE_STATUSES and t.due_at <= now]
    if load(state, worker) >= capacity or not ready:
        return state, None  # unchanged: last_token, every task
    chosen = min(ready, key=dispatch_order)
    token = state.last_token + 1
    lease = Lease(task_id=chosen.id, worker=worker, token=token, started_at=now, expires_at=now + duration)
    running = replace(
        chosen,
        status=Status.RUNNING,
        attempts=chosen.attempts + 1,
        worker=worker,
        token=token,
        started_at=now,
        expires_at=now + duration,
        expired_token=None,
    )
    # unchanged: workers, every other task
    return replace(_put(state, running), last_token=token), lease


def complete(state: State, task_id: int, token: int, now: int) -> tuple[State, Outcome]:
    """Accept the current lease's completion: ``succeeded``, slot freed at once.

    Accepted even when a cancellation was requested: the work did finish.
    """
    require_task(state, task_id)
    require_int("token", token)
    require_time(state, now)
    state = expire(state, now)
    current = state.tasks[task_id - 1]
    refused = _rejection(current, token)
    if refused:
        return state, refused
    return _put(state, _release(current, Status.SUCCEEDED)), ACCEPTED


def fail(state: State, task_id: int, token: int, now: int) -> tuple[State, Outcome]:
    """Accept the current lease's explicit failure.

    The task ends ``cancelled`` if a cancellation was requested, ``failed`` if
    its attempt budget is spent, and otherwise waits in ``retry_wait`` until
    ``now + retry_delay * 2 ** (attempts - 1)``.
    """
    require_task(state, task_id)
    require_int("token", token)
    require_time(state, now)
    state = expire(state, now)
    current = state.tasks[task_id - 1]
    refused = _rejection(current, token)
    if refused:
        return state, refused
    if current.cancel_requested:
        ended = _release(current, Status.CANCELLED)
    elif _budget_spent(current):
        ended = _release(current, Status.FAILED)
    else:
        backoff = current.retry_delay * 2 ** (current.attempts - 1)
        ended = _release(current, Status.RETRY_WAIT, due_at=now + backoff)
    return _put(state, ended), ACCEPTED


def cancel(state: State, task_id: int, now: int) -> tuple[State, Outcome]:
    """Cancel a task that has not started; ask a running one to stop (cooperative).

    A running task keeps its lease with ``cancel_requested`` set; how it ends is
    up to ``complete``, ``fail`` or expiry. A final task is refused.
    """
    require_task(state, task_id)
    require_time(state, now)
    state = expire(state, now)
    current = state.tasks[task_id - 1]
    if current.status in FINAL_STATUSES:
        return state, Outcome(False, Reason.ALREADY_FINAL)
    if current.status is Status.RUNNING:
        return _put(state, replace(current, cancel_requested=True)), ACCEPTED
    return _put(state, _release(current, Status.CANCELLED)), ACCEPTED


def renew(state: State, task_id: int, token: int, now: int, duration: int) -> tuple[State, Outcome]:
    """Move the current lease's end to ``now + duration``, keeping its token.

    Refused once a cancellation was requested, so a cancelled task cannot be
    kept alive by its worker.
    """
    require_task(state, task_id)
    require_int("token", token)
    require_time(state, now)
    require_at_least("duration", duration, 1)
    state = expire(state, now)
    current = state.tasks[task_id - 1]
    refused = _rejection(current, token)
    if refused:
        return state, refused
    if current.cancel_requested:
        return state, Outcome(False, Reason.CANCEL_REQUESTED)
    return _put(state, replace(current, expires_at=now + duration)), ACCEPTED


def advance(state: State, now: int) -> tuple[State, None]:
    """Move time to ``now``, expiring every lease with ``expires_at <= now``."""
    require_time(state, now)
    return expire(state, now), None


#: Every operation by its protocol name, for drivers that work from data
#: (scenarios, the state machine, the explorer).
TRANSITIONS = {
    "add_worker": add_worker,
    "submit": submit,
    "dispatch": dispatch,
    "complete": complete,
    "fail": fail,
    "cancel": cancel,
    "renew": renew,
    "advance": advance,
}


def apply(state: State, op: str, args: dict[str, object]) -> tuple[State, object]:
    """Apply the operation named ``op`` with keyword ``args``; see ``TRANSITIONS``.

    ``op`` may also be ``RESTART`` (no arguments): a durable scheduler
    reopened from its storage. It returns ``state`` itself, since nothing
    acknowledged may be lost or changed by a restart.

    Raises:
        ValueError: ``op`` is not a protocol operation, or the call is invalid
            (then nothing changes: the caller keeps the old state).
    """
    if op == RESTART:
        if args:
            raise ValueError(f"restart takes no arguments: {sorted(args)}")
        return state, None  # unchanged: everything
    try:
        transition = TRANSITIONS[op]
    except KeyError:
        raise ValueError(f"op must be one of {', '.join(TRANSITIONS)}: {op!r}") from None
    try:
        return transition(state, **args)
    except TypeError as exc:  # an unknown or missing keyword
        raise ValueError(f"bad arguments for {op}: {exc}") from None


def worker_loads(state: State) -> dict[str, tuple[int, int]]:
    """``{worker: (running, capacity)}`` in the order workers were added."""
    return {name: (load(state, name), capacity) for name, capacity in state.workers}
