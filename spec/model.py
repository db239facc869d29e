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

Declared variants (``spec.variants``) live in the state (``State.variants``,
set by ``initial(variants)`` and constant for a run), so every transition
reads the rule in force and no signature changes; the safety core holds
whatever they say. Where a variant allows several answers to one call
(``order=any``: any eligible task; ``tokens=opaque``: any fresh token), the
transition itself gives the contract's pick, and ``follow`` says whether a
scheduler's own answer is allowed and where it leads.

Optional operations: ``prune`` (forget final tasks that ended before a time;
``Task.ended_at`` records when each became final) and the batches
``submit_many``, ``dispatch_many``, ``complete_many``, ``fail_many``, each
defined as the fold of the single calls it stands for, all or nothing on an
invalid argument, one atomic call.

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

from collections.abc import Callable
from dataclasses import dataclass, replace

from fencepost.spec.protocol import (
    ACCEPTED,
    BACKWARDS,
    INT_MAX,
    INT_MIN,
    RESTART,
    DISPATCHABLE_STATUSES,
    FINAL_STATUSES,
    Lease,
    Outcome,
    Reason,
    Status,
    TaskView,
    WORKER_EXISTS,
    int_shown, text_problem,  # the value rules' words (docs/contract.md, "Values")
)
from fencepost.spec.variants import DEFAULT, Variants, show_token


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
    token: int | str | None = None  # set exactly while running (a str only under tokens=opaque)
    started_at: int | None = None  # set exactly while running
    expires_at: int | None = None  # set exactly while running
    cancel_requested: bool = False  # only ever set while running
    expired_token: int | str | None = None  # the token whose lease expired last, for the rejection reason
    expired_worker: str | None = None  # under revive=unclaimed: the worker of the lease that expired last
    tokens: tuple[int | str, ...] = ()  # every token issued for this task; kept only under repeat=accept or late=accept-unclaimed
    ended_at: int | None = None  # the time of the transition that made the task final; set exactly while final
    forgotten: bool = False  # pruned: only its id (never reused) and ended_at remain meaningful


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
    keys: tuple[KeyRecord, ...] = ()  # every idempotency key submitted and not forgotten, in submit order
    variants: Variants = DEFAULT  # the declared contract variants; constant for a run
    issued: frozenset[int | str] = frozenset()  # every token handed out; kept only under tokens=opaque


# ---------------------------------------------------------------- guards


def require_int(name: str, value: object) -> int:
    """Return ``value`` if it is an ``int`` (``bool`` excluded) from ``INT_MIN`` to ``INT_MAX``, else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, not {type(value).__name__}: {value!r}")
    if not INT_MIN <= value <= INT_MAX:
        raise ValueError(f"{name} must be a signed 64-bit int, from {INT_MIN} to {INT_MAX}: {int_shown(value)}")
    return value


def require_text(name: str, value: str) -> str:
    """Return the str ``value`` if it may be a worker name or key (``spec.protocol.text_problem``), else raise ValueError."""
    if problem := text_problem(value, name):
        raise ValueError(problem)
    return value


def require_lease_end(now: int, duration: int) -> int:
    """A lease's end ``now + duration``, if it is not after ``INT_MAX``, else raise ValueError."""
    if now + duration > INT_MAX:
        raise ValueError(f"duration {duration} would end the lease at now + duration = {now + duration}, after the latest time {INT_MAX}")
    return now + duration


def require_retry_time(now: int, task: Task) -> int:
    """An accepted ``fail``'s retry time ``now + retry_delay * 2 ** (attempts - 1)``, if it is not after ``INT_MAX``."""
    due = now + task.retry_delay * 2 ** (task.attempts - 1)
    if due > INT_MAX:
        raise ValueError(f"now {now}: the retry time now + retry_delay * 2 ** (attempts - 1) = {int_shown(due)} (retry_delay {task.retry_delay}, attempt {task.attempts}) is after the latest time {INT_MAX}")
    return due


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
        raise ValueError(f"{BACKWARDS}: now={now} < current time {state.now}")
    return now


def require_task(state: State, task_id: object) -> Task:
    require_int("task_id", task_id)
    if not 1 <= task_id <= len(state.tasks):
        known = f"ids issued so far are 1..{len(state.tasks)}" if len(state.tasks) else "no task has been submitted yet"
        raise ValueError(f"task_id {task_id!r} is unknown: {known}")
    found = state.tasks[task_id - 1]
    if found.forgotten:
        raise ValueError(f"task_id {task_id} was forgotten: it was final and pruned since (its id is never reused)")
    return found


def require_token(state: State, token: object) -> int | str:
    """A report's token: an ``int`` (``bool`` excluded), or under ``tokens=opaque`` also a non-empty ``str``."""
    if state.variants.tokens == "opaque" and isinstance(token, str):
        if not token:
            raise ValueError("token must be a non-empty str or an int, not the empty str")
        return token
    if state.variants.tokens == "opaque":
        if isinstance(token, bool) or not isinstance(token, int):
            raise ValueError(f"token must be a non-empty str or an int, not {type(token).__name__}: {token!r}")
        return token
    return require_int("token", token)


def require_key(key: object) -> str | None:
    """Return ``key`` if it is None or a non-empty ``str``, else raise ValueError."""
    if key is not None and (not isinstance(key, str) or not key):
        raise ValueError(f"key must be None or a non-empty str, not {type(key).__name__}: {key!r}")
    return key if key is None else require_text("key", key)


def capacity_of(state: State, worker: object) -> int:
    if not isinstance(worker, str):
        raise ValueError(f"worker must be a str, not {type(worker).__name__}: {worker!r}")
    for name, capacity in state.workers:
        if name == worker:
            return capacity
    raise ValueError(text_problem(worker, "worker") or f"worker {worker!r} is unknown: add it with add_worker first")


# ---------------------------------------------------------------- queries


def load(state: State, worker: str) -> int:
    """How many tasks ``worker`` is running now."""
    return sum(1 for t in state.tasks if t.status is Status.RUNNING and t.worker == worker)


def dispatch_order(task: Task) -> tuple[int, int, int]:
    """Sort key: highest priority, then earliest due time, then lowest numeric id."""
    return (-task.priority, task.due_at, task.id)


def priority_id_order(task: Task) -> tuple[int, int, int]:
    """Sort key under ``order=priority-id``: highest priority, then lowest numeric id (the due time breaks no tie)."""
    return (-task.priority, 0, task.id)


def fifo_order(task: Task) -> tuple[int, int, int]:
    """Sort key under ``order=fifo``: earliest due time, then lowest numeric id (priority ignored)."""
    return (0, task.due_at, task.id)


def order_key(variants: Variants) -> Callable[[Task], tuple[int, int, int]]:
    """The sort key a dispatch picks the least of. Under ``order=any`` any eligible task may go;
    ``dispatch`` (the model's own pick, for scenarios and views) then takes the contract's best."""
    if variants.order == "priority-id":
        return priority_id_order
    return fifo_order if variants.order == "fifo" else dispatch_order


def is_due(variants: Variants, due_at: int, now: int) -> bool:
    """Whether a task due at ``due_at`` may be dispatched at ``now``: ``due_at <= now``, or under
    ``due=after`` only ``due_at < now``. Never before its due time, whatever the variants."""
    return due_at < now if variants.due == "after" else due_at <= now


def require_duration(state: State, duration: object) -> int:
    """A lease length: an int >= 1, and under ``duration=N`` exactly N."""
    require_at_least("duration", duration, 1)
    length = state.variants.lease_length()
    if length is not None and duration != length:
        raise ValueError(f"duration must be {length} under duration={length} (one lease length for the queue): {duration!r}")
    return duration


def _keeps_tokens(variants: Variants) -> bool:
    """Whether tasks remember every token issued for them (``Task.tokens``): only where a rule asks."""
    return variants.repeat == "accept" or variants.late == "accept-unclaimed"


def eligible(state: State) -> list[Task]:
    """Tasks a dispatch at ``state.now`` may pick, best first."""
    ready = [t for t in state.tasks if t.status in DISPATCHABLE_STATUSES and is_due(state.variants, t.due_at, state.now)]
    return sorted(ready, key=order_key(state.variants))


def lease_live(variants: Variants, expires_at: int, now: int) -> bool:
    """Whether a lease ending at ``expires_at`` is live at ``now``: ``now < expires_at``, or under
    ``interval=closed`` ``now <= expires_at``. Its start is always ``<= now``."""
    return now <= expires_at if variants.interval == "closed" else now < expires_at


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


def _release(task: Task, status: Status, now: int, **changes: object) -> Task:
    """End the task's assignment at ``now``: clear every lease field and move to ``status``
    (a final one records ``ended_at=now``)."""
    return replace(
        task,
        status=status,
        worker=None,
        token=None,
        started_at=None,
        expires_at=None,
        cancel_requested=False,
        ended_at=now if status in FINAL_STATUSES else None,
        **changes,
    )


def _budget_spent(task: Task) -> bool:
    return task.max_attempts is not None and task.attempts >= task.max_attempts


def expire(state: State, now: int) -> State:
    """Move time to ``now`` and end every lease with ``expires_at <= now``.

    An expired task goes back to ``pending`` (eligible at once: its due time
    has passed), unless a cancellation was requested (``cancelled``) or its
    attempt budget is spent (``failed``; under ``exhaust=at-dispatch`` it goes
    back to ``pending`` and the next dispatch ends it). Expiry proves nothing
    about the work. Under ``interval=closed`` a lease expires once
    ``expires_at < now``.
    """
    variants = state.variants
    for t in state.tasks:
        if t.status is Status.RUNNING and not lease_live(variants, t.expires_at, now):
            if t.cancel_requested:
                status = Status.CANCELLED
            elif _budget_spent(t) and variants.exhaust == "at-expiry":
                status = Status.FAILED
            else:
                status = Status.PENDING
            revivable = {"expired_worker": t.worker} if variants.revive == "unclaimed" else {}
            state = _put(state, _release(t, status, now, expired_token=t.token, **revivable))
    return replace(state, now=now)


def _rejection(task: Task, token: object, variants: Variants = DEFAULT, late: bool = False) -> Outcome | None:
    """Why a token may not act on ``task`` now, or None if it is the current lease.

    Called after ``expire``, so a running task's lease is alive. With
    ``late`` (a ``complete`` or ``fail`` under ``late=accept-unclaimed``), the
    token of any earlier, expired lease of this task also acts while the task
    is pending (not handed out again since): SQS deletes a message on any
    receipt handle it ever had while nobody holds it.
    """
    if late and variants.late == "accept-unclaimed" and task.status is Status.PENDING \
            and ((task.expired_token is not None and task.expired_token == token) or token in task.tokens):
        return None
    if task.status is Status.RUNNING:
        return None if task.token == token else Outcome(False, Reason.STALE_TOKEN)
    if task.expired_token is not None and task.expired_token == token:
        return Outcome(False, Reason.LEASE_EXPIRED)
    if task.status in FINAL_STATUSES:
        return Outcome(False, Reason.ALREADY_FINAL)
    return Outcome(False, Reason.NOT_RUNNING)


# ---------------------------------------------------------------- operations


def initial(variants: Variants = DEFAULT) -> State:
    """A scheduler with no workers, no tasks, time 0 and no token issued, under ``variants``."""
    return State(variants=variants)


def add_worker(state: State, worker: str, capacity: int) -> tuple[State, None]:
    """Register ``worker`` with room for ``capacity`` simultaneous leases. Untimed."""
    if not isinstance(worker, str) or not worker:
        raise ValueError(f"worker must be a non-empty str: {worker!r}")
    require_text("worker", worker)
    require_at_least("capacity", capacity, 1)
    if any(name == worker for name, _ in state.workers):
        raise ValueError(f"worker {worker!r} {WORKER_EXISTS}")
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
    is eligible; a None issues no token and assigns nothing. Under
    ``order=any`` this is the contract's pick, one of those allowed (see
    ``follow``); under ``exhaust=at-dispatch`` a dispatch with room first ends
    every eligible task whose budget is spent ``failed``.
    """
    return _dispatch(state, worker, now, duration, _MODEL_PICKS)


def _dispatch(state: State, worker: str, now: int, duration: int,
              observed: object) -> tuple[State, object]:
    """``dispatch``. Given ``observed`` (a scheduler's answer: a lease or None) instead of
    ``_MODEL_PICKS``, the model follows it: the next state with the lease it chose, or
    ``_NOT_ALLOWED`` as the result when the model allows no such answer here."""
    capacity = capacity_of(state, worker)
    require_time(state, now)
    require_duration(state, duration)
    require_lease_end(now, duration)
    state = expire(state, now)
    variants = state.variants
    full = variants.capacity == "per-worker" and load(state, worker) >= capacity
    if not full and variants.exhaust == "at-dispatch":
        for t in state.tasks:
            if t.status in DISPATCHABLE_STATUSES and is_due(variants, t.due_at, now) and _budget_spent(t):
                state = _put(state, _release(t, Status.FAILED, now))
    ready = [t for t in state.tasks if t.status in DISPATCHABLE_STATUSES and is_due(variants, t.due_at, now)]
    if full or not ready:
        if observed is not None and observed is not _MODEL_PICKS:
            return state, _NOT_ALLOWED
        return state, None  # unchanged: last_token, issued, every task
    if observed is None:
        return state, _NOT_ALLOWED  # the scheduler handed out nothing where the model must
    if observed is _MODEL_PICKS:
        chosen = min(ready, key=order_key(variants))
        token: int | str = state.last_token + 1
    else:
        chosen, token = _allowed_lease(state, ready, worker, now, duration, observed)
        if chosen is None:
            return state, _NOT_ALLOWED
    if observed is _MODEL_PICKS and variants.tokens == "opaque":
        # the model's own pick must not collide with a token a scheduler chose
        while token in state.issued:
            token += 1
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
        expired_worker=None,
        tokens=chosen.tokens + (token,) if _keeps_tokens(variants) else (),
    )
    issued = state.issued | {token} if variants.tokens == "opaque" else state.issued
    last_token = token if isinstance(token, int) and token > state.last_token else state.last_token
    # unchanged: workers, keys, every other task
    return replace(_put(state, running), last_token=last_token, issued=issued), lease


#: ``follow``'s marker for an answer the model does not allow.
_NOT_ALLOWED = object()
#: ``_dispatch``'s marker for "no scheduler's answer to follow: pick as the model does".
_MODEL_PICKS = object()


def _allowed_lease(state: State, ready: list[Task], worker: str, now: int, duration: int,
                   observed: object) -> tuple[Task | None, int | str]:
    """The task and token of a scheduler's lease, if the model allows that lease here; (None, 0) if not."""
    variants = state.variants
    try:
        task_id, token = observed.task_id, observed.token
        fields = (observed.worker, observed.started_at, observed.expires_at)
    except AttributeError:
        return None, 0
    if fields != (worker, now, now + duration) or type(fields[1]) is not int or type(fields[2]) is not int:
        return None, 0
    if variants.order == "any":
        chosen = next((t for t in ready if t.id == task_id and type(task_id) is int), None)
    else:
        chosen = min(ready, key=order_key(variants))
        if type(task_id) is not int or task_id != chosen.id:
            chosen = None
    if chosen is None:
        return None, 0
    if variants.tokens == "opaque":
        fresh = (isinstance(token, str) and token) or (isinstance(token, int) and not isinstance(token, bool))
        if not fresh or token in state.issued:
            return None, 0
    elif type(token) is not int or token != state.last_token + 1:
        return None, 0
    return chosen, token


def complete(state: State, task_id: int, token: int, now: int) -> tuple[State, Outcome]:
    """Accept the current lease's completion: ``succeeded``, slot freed at once.

    Accepted even when a cancellation was requested: the work did finish.
    Under ``late=accept-unclaimed`` also accepted from an earlier, expired
    lease's token while nobody took the task since. Under ``repeat=accept``
    a complete of a succeeded task with a token it had is accepted and
    changes nothing (deleting a deleted message succeeds).
    """
    require_task(state, task_id)
    require_token(state, token)
    require_time(state, now)
    state = expire(state, now)
    current = state.tasks[task_id - 1]
    if state.variants.repeat == "accept" and current.status is Status.SUCCEEDED and token in current.tokens:
        return state, ACCEPTED  # unchanged: everything but the clock
    refused = _rejection(current, token, state.variants, late=True)
    if refused:
        return state, refused
    return _put(state, _release(current, Status.SUCCEEDED, now)), ACCEPTED


def fail(state: State, task_id: int, token: int, now: int) -> tuple[State, Outcome]:
    """Accept the current lease's explicit failure.

    The task ends ``cancelled`` if a cancellation was requested, ``failed`` if
    its attempt budget is spent, and otherwise waits in ``retry_wait`` until
    ``now + retry_delay * 2 ** (attempts - 1)``. Late reports as ``complete``.
    """
    require_task(state, task_id)
    require_token(state, token)
    require_time(state, now)
    state = expire(state, now)
    current = state.tasks[task_id - 1]
    refused = _rejection(current, token, state.variants, late=True)
    if refused:
        return state, refused
    if current.cancel_requested:
        ended = _release(current, Status.CANCELLED, now)
    elif _budget_spent(current):
        ended = _release(current, Status.FAILED, now)
    else:
        ended = _release(current, Status.RETRY_WAIT, now, due_at=require_retry_time(now, current))
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
    return _put(state, _release(current, Status.CANCELLED, now)), ACCEPTED


def renew(state: State, task_id: int, token: int, now: int, duration: int) -> tuple[State, Outcome]:
    """Move the current lease's end to ``now + duration``, keeping its token.

    Refused once a cancellation was requested, so a cancelled task cannot be
    kept alive by its worker. A late token never renews (not even under
    ``late=accept-unclaimed``): a lease that ended stays ended; except under
    ``revive=unclaimed``, where the token of the lease that expired last
    revives it (same token, same worker, ``[now, now + duration)``) while
    the task is pending and nobody took it since, room permitting.
    """
    require_task(state, task_id)
    require_token(state, token)
    require_time(state, now)
    require_duration(state, duration)
    require_lease_end(now, duration)
    state = expire(state, now)
    current = state.tasks[task_id - 1]
    if _revives(state, current, token):
        revived = replace(current, status=Status.RUNNING, worker=current.expired_worker, token=token, started_at=now,
                          expires_at=now + duration, expired_token=None, expired_worker=None)
        return _put(state, revived), ACCEPTED  # unchanged: attempts (no new dispatch), every other task
    refused = _rejection(current, token)
    if refused:
        return state, refused
    if current.cancel_requested:
        return state, Outcome(False, Reason.CANCEL_REQUESTED)
    return _put(state, replace(current, expires_at=now + duration)), ACCEPTED


def _revives(state: State, task: Task, token: object) -> bool:
    """Under ``revive=unclaimed``: whether ``token`` revives ``task``'s lapsed lease (see ``renew``)."""
    if state.variants.revive != "unclaimed" or task.status is not Status.PENDING or task.expired_worker is None:
        return False
    if task.expired_token is None or task.expired_token != token:
        return False
    full = state.variants.capacity == "per-worker" and load(state, task.expired_worker) >= capacity_of(state, task.expired_worker)
    return not full


def prune(state: State, before: int, now: int) -> tuple[State, int]:
    """Forget every final task that ended at a time ``< before``; return how many were forgotten.

    Timed: ``now`` follows the clock rules and due leases expire first (a
    task that this expiry ends at ``now`` is kept, since ``now >= before``).
    ``before`` is an int with ``0 <= before <= now``. A forgotten task's
    idempotency key is forgotten with it (the key may make a new task);
    its id is never reused, and ``task`` of it raises ValueError saying it was
    forgotten. O(T).
    """
    require_int("before", before)
    require_time(state, now)
    if not 0 <= before <= now:
        raise ValueError(f"before must be >= 0 and <= now: before={before!r}, now={now!r}")
    state = expire(state, now)
    gone = [t for t in state.tasks if not t.forgotten and t.status in FINAL_STATUSES and t.ended_at < before]
    if not gone:
        return state, 0  # unchanged: everything but the clock and expired leases
    forgotten_ids = {t.id for t in gone}
    for t in gone:
        state = _put(state, replace(t, forgotten=True))
    keys = tuple(r for r in state.keys if r.task_id not in forgotten_ids)
    # unchanged: workers, last_token, issued, every other task
    return replace(state, keys=keys), len(gone)


# ---------------------------------------------------------------- batches
#
# A batch is the sequence of single calls it stands for, as one atomic call:
# the model folds the single transitions over the state, and since it is pure
# an invalid entry anywhere raises before anything is kept (all or nothing).


def _require_list(name: str, value: object) -> list:
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{name} must be a list, not {type(value).__name__}: {value!r}")
    return list(value)


def _entry_error(name: str, number: int, exc: ValueError) -> ValueError:
    return ValueError(f"{name}[{number}]: {exc} (nothing in the batch was done)")


def submit_many(state: State, tasks: list[dict]) -> tuple[State, list[int]]:
    """``submit(**entry)`` for each entry of ``tasks`` in order, all or nothing; the list of ids.

    Each entry is a dict of ``submit``'s keyword arguments. Untimed.
    """
    entries = _require_list("tasks", tasks)
    ids = []
    for number, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"tasks[{number}] must be a dict of submit's arguments, not {type(entry).__name__}: {entry!r}")
        unknown = sorted(set(entry) - set(SUBMIT_ARGUMENTS), key=str)  # by str: a non-str name compares too
        if unknown:
            raise ValueError(f"tasks[{number}]: submit takes no argument {unknown[0]!r} (it takes {', '.join(SUBMIT_ARGUMENTS)})")
        try:
            state, task_id = submit(state, **entry)
        except ValueError as exc:
            raise _entry_error("tasks", number, exc) from None
        ids.append(task_id)
    return state, ids


#: ``submit``'s keyword arguments, which a ``submit_many`` entry may give.
SUBMIT_ARGUMENTS = ("priority", "due_at", "max_attempts", "retry_delay", "key")


def dispatch_many(state: State, worker: str, now: int, duration: int, limit: int) -> tuple[State, list[Lease]]:
    """Up to ``limit`` dispatches of ``worker`` at ``now``, stopping at the first that hands out nothing.

    ``limit`` is an int >= 1. Returns the leases, possibly none.
    """
    return _dispatch_many(state, worker, now, duration, limit, _MODEL_PICKS)


def _dispatch_many(state: State, worker: str, now: int, duration: int, limit: int,
                   observed: object) -> tuple[State, object]:
    capacity_of(state, worker)
    require_time(state, now)
    require_duration(state, duration)
    require_lease_end(now, duration)
    require_at_least("limit", limit, 1)
    leases: list[Lease] = []
    seen = None
    if observed is not _MODEL_PICKS:
        if not isinstance(observed, (list, tuple)) or len(observed) > limit:
            return expire(state, now), _NOT_ALLOWED
        seen = list(observed)
    for number in range(limit):
        # past the scheduler's last lease it must be that the model hands out nothing either
        want = _MODEL_PICKS if seen is None else (seen[number] if number < len(seen) else None)
        state, lease = _dispatch(state, worker, now, duration, want)
        if lease is _NOT_ALLOWED:
            return state, _NOT_ALLOWED
        if lease is None:
            break
        leases.append(lease)
    return state, leases


def _reports(name: str, reports: object, state: State) -> list[tuple[int, int | str]]:
    """``reports`` validated whole (before any change): a list of ``(task_id, token)`` pairs."""
    pairs = []
    for number, pair in enumerate(_require_list(name, reports)):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"{name}[{number}] must be a (task_id, token) pair, not {pair!r}")
        try:
            # the id's type and range here; a forgotten id is refused by its single call in the fold
            require_int("task_id", pair[0])
            if not 1 <= pair[0] <= len(state.tasks):
                require_task(state, pair[0])  # raises, with the words for an unknown id
            require_token(state, pair[1])
        except ValueError as exc:
            raise _entry_error(name, number, exc) from None
        pairs.append((pair[0], pair[1]))
    return pairs


def complete_many(state: State, reports: list, now: int) -> tuple[State, list[Outcome]]:
    """``complete(task_id, token, now)`` for each pair of ``reports`` in order, all or nothing."""
    return _reports_batch(complete, "reports", state, reports, now)


def fail_many(state: State, reports: list, now: int) -> tuple[State, list[Outcome]]:
    """``fail(task_id, token, now)`` for each pair of ``reports`` in order, all or nothing."""
    return _reports_batch(fail, "reports", state, reports, now)


def _reports_batch(single: Callable, name: str, state: State, reports: object, now: int) -> tuple[State, list[Outcome]]:
    pairs = _reports(name, reports, state)
    require_time(state, now)
    outcomes = []
    for number, (task_id, token) in enumerate(pairs):
        try:
            state, outcome = single(state, task_id, token, now)
        except ValueError as exc:  # a forgotten id: the whole batch is invalid
            raise _entry_error(name, number, exc) from None
        outcomes.append(outcome)
    if not pairs:
        state = expire(state, now)
    return state, outcomes


def advance(state: State, now: int) -> tuple[State, None]:
    """Move time to ``now``, expiring every lease no longer live (``expires_at <= now``)."""
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
    "prune": prune,
    "submit_many": submit_many,
    "dispatch_many": dispatch_many,
    "complete_many": complete_many,
    "fail_many": fail_many,
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


def follow(state: State, op: str, args: dict[str, object], observed: object) -> tuple[State, object] | None:
    """Whether the model allows a scheduler's answer ``observed`` to this call, and where it leads.

    For a deterministic call that is ``apply`` and ``same_answer``. A dispatch
    may have several allowed answers under ``order=any`` (any eligible task)
    and ``tokens=opaque`` (any token never handed out before): the model then
    takes the scheduler's choice, checked against the rules, so the next state
    holds the scheduler's task and token. ``dispatch_many`` follows each lease
    in turn. The core holds whatever the variants: only an eligible task, only
    a worker with room (unless ``capacity=none``), only a fresh token.

    Returns:
        ``(next state, the model's result)`` when ``observed`` is allowed,
        else None (the state the caller holds is unchanged either way).

    Raises:
        ValueError: exactly where ``apply`` does: the call is invalid.
    """
    if op in ("dispatch", "dispatch_many"):
        transition = _dispatch if op == "dispatch" else _dispatch_many
        try:
            after, result = transition(state, **args, observed=observed)
        except TypeError as exc:
            raise ValueError(f"bad arguments for {op}: {exc}") from None
        return None if result is _NOT_ALLOWED else (after, result)
    after, result = apply(state, op, args)
    return (after, result) if same_answer(result, observed) else None


def why_not(state: State, op: str, args: dict[str, object], observed: object) -> str:
    """Why the model allows no answer like ``observed`` to this call, in one clause ("" when it does).

    For a dispatch it names the first rule the observed lease breaks: a task
    not eligible (running under another lease, final, not yet due), a
    worker with no room, a task that is not first in the declared order, a
    token issued before; for a batch, the first lease that breaks one. Other
    operations are deterministic: the caller prints both answers. Never
    raises for a valid call; ValueError where ``apply`` raises. O(T) per lease.
    """
    if op == "dispatch_many":
        leases = list(observed) if isinstance(observed, (list, tuple)) else None
        if leases is None:
            return f"a dispatch_many answers a list of leases, not {type(observed).__name__}"
        if len(leases) > args.get("limit", 0):
            return f"{len(leases)} leases is more than limit={args.get('limit')}"
        single = {k: v for k, v in args.items() if k != "limit"}
        for number in range(args["limit"]):
            want = leases[number] if number < len(leases) else None
            step = _dispatch(state, **single, observed=want)
            if step[1] is _NOT_ALLOWED:
                return f"lease {number + 1}: " + why_not(state, "dispatch", single, want)
            state = step[0]
            if step[1] is None:
                break
        return ""
    if op != "dispatch":
        return ""
    worker, now, duration = args["worker"], args["now"], args["duration"]
    _dispatch(state, worker, now, duration, _MODEL_PICKS)  # raises where apply does
    seen = expire(state, now)
    variants = seen.variants
    capacity = capacity_of(seen, worker)
    full = variants.capacity == "per-worker" and load(seen, worker) >= capacity
    ready = eligible(seen)
    if observed is None:
        if full or not ready:
            return ""
        return f"task {ready[0].id} is eligible and {worker} has room ({load(seen, worker)} of {capacity})"
    try:
        task_id, token = observed.task_id, observed.token
        fields = (observed.worker, observed.started_at, observed.expires_at)
    except AttributeError:
        return f"a dispatch answers a lease or None, not {type(observed).__name__}"
    if fields != (worker, now, now + duration):
        return f"a lease of this call is to {worker} for [{now}, {now + duration}), not {fields[0]} for [{fields[1]}, {fields[2]})"
    if full:
        return f"{worker} is full ({load(seen, worker)} of {capacity})"
    if type(task_id) is not int or not 1 <= task_id <= len(seen.tasks):
        return f"task {task_id!r} does not exist"
    chosen = seen.tasks[task_id - 1]
    if chosen.status is Status.RUNNING:
        end = f"{chosen.expires_at}{']' if variants.interval == 'closed' else ')'}"
        span = f"[{chosen.started_at}, {end}" if chosen.started_at is not None else f"[..., {end}"  # linearize forgets starts
        return f"task {task_id} is running under {chosen.worker}'s lease {span} (token {show_token(chosen.token)})"
    if chosen.forgotten:
        return f"task {task_id} is final and was pruned"
    if chosen.status in FINAL_STATUSES:
        if chosen.retry_delay == 0:  # a search state's erased final task: its status and end are not kept
            return f"task {task_id} is final"
        return f"task {task_id} is final ({chosen.status.value} since t={chosen.ended_at})"
    if not is_due(variants, chosen.due_at, now):
        return f"task {task_id} is not due before t={chosen.due_at + (1 if variants.due == 'after' else 0)}"
    if chosen not in ready:
        return f"task {task_id} is not eligible ({chosen.status.value})"
    if variants.order != "any" and ready[0].id != task_id:
        return f"task {ready[0].id} comes first under order={variants.order}"
    if variants.tokens == "opaque":
        if isinstance(token, bool) or not isinstance(token, (int, str)) or token == "":
            return f"a token is a non-empty str or an int, not {token!r}"
        if token in seen.issued:
            holder = next((t.id for t in seen.tasks if token in t.tokens or t.token == token or t.expired_token == token), None)
            return f"token {show_token(token)} was issued before" + (f" (for task {holder})" if holder else "")
    elif type(token) is not int or token != seen.last_token + 1:
        return f"the next token is {seen.last_token + 1}, not {show_token(token)}"
    return ""


def same_answer(want: object, have: object) -> bool:
    """Whether ``have`` (a scheduler's answer, read by attribute names) is the model's answer ``want``.

    Compared as the spec compares: every Lease field, a task id or count,
    ``accepted`` only for an Outcome (reason wording is advice), element by
    element for a batch. Types count where ``==`` would blur them: ``True``
    is not ``1`` and ``1.0`` is not ``1``. O(size of the answer).
    """
    if want is None:
        return have is None
    if isinstance(want, bool) or have is None:
        return False
    if isinstance(want, int):
        return type(have) is int and have == want
    if isinstance(want, Outcome):
        return type(getattr(have, "accepted", None)) is bool and have.accepted == want.accepted
    if isinstance(want, Lease):
        try:
            got = (have.task_id, have.worker, have.token, have.started_at, have.expires_at)
        except AttributeError:
            return False
        return all(type(g) is type(w) and g == w for g, w in zip(got, (
            want.task_id, want.worker, want.token, want.started_at, want.expires_at)))
    if isinstance(want, list):
        return isinstance(have, (list, tuple)) and len(have) == len(want) and all(
            same_answer(w, h) for w, h in zip(want, have))
    return want == have

