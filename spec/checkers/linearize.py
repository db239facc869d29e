"""``fencepost linearize HISTORY``: could a concurrent history have come from the sequential model?

  fencepost linearize HISTORY [--max-states N] [--order]

HISTORY is a JSON-lines history (spec/formats/history.py). The history is
linearizable when some order of its calls (1) puts a call that completed
before another was invoked first (real-time order), (2) lets each call whose
outcome is unknown (info) take effect at any point after its invocation, or
never, and (3) gives every recorded result when applied to the model one call
at a time: the same Lease fields, task ids, Outcome accepted (reasons are not
compared), a recorded ValueError exactly where the model raises one (such a
call changes nothing).

Exit status: 0 linearizable; 1 not linearizable (the smallest stretch that
cannot be ordered is printed, with the calls in it and what the model would
have answered); 2 a bad file or argument; 3 undecided (the search passed
--max-states before it could decide either way).

The search is Wing and Gong's, with Lowe's memoisation as in Porcupine and
Knossos: walk the calls that may go next (invoked, and not preceded by a call
not yet placed), apply one to the model, recurse; undo on a dead end; never
enter the same (set of calls placed, model state) twice. The history is cut at
quiescent points (no call open) into windows, searched depth first: an order
of one window hands its end state (and the info calls it did not take) to the
next, and another end state of the window is tried only when the next window
cannot go on from it. That is exact, not an approximation: a window is never
checked from a guessed state. The cost is exponential in the number of calls
open at once (at most 2^k sets of placed calls for k overlapping calls, times
the model states they reach), and about linear in the number of windows for a
linearizable history. A step shows the model only the tasks the call can read
or change (``_State``), so it costs about the same whatever the number of tasks.
"""

from __future__ import annotations

import argparse
import bisect
from collections.abc import Iterator
from dataclasses import dataclass, replace

from fencepost.spec import model
from fencepost.spec.cli import EXIT_OK, EXIT_VIOLATION, UsageError, positive_int
from fencepost.spec.formats.history import ERROR, INFO, Call, History, HistoryError, load_history
from fencepost.spec.formats.values import same_result
from fencepost.spec.protocol import DISPATCHABLE_STATUSES, FINAL_STATUSES, Lease, Status

#: Exit status when the search passed its budget before deciding.
EXIT_UNDECIDED = 3

#: Default bound on (placed calls, model state) pairs explored, over the whole
#: history. A pair costs about 300 bytes with few tasks and under 1 KB with a
#: thousand (peak memory over pairs, measured), so the default stays under 2 GB.
DEFAULT_MAX_STATES = 2_000_000

#: How many of the model's different answers to the failing call are shown.
MAX_ANSWERS = 3


class Undecided(Exception):
    """The search explored ``max_states`` pairs without deciding."""


# ---------------------------------------------------------------- results


@dataclass(frozen=True)
class Answer:
    """What the model answered the failing call after the calls ``before`` (call indices, in order)."""

    value: object  # the model's result, or the ValueError it raised
    before: tuple[int, ...]


@dataclass(frozen=True)
class Failure:
    """The smallest stretch that cannot be ordered: from a quiescent point to the completion no order explains."""

    start: int  # event position where the stretch starts (no call open before it, but carried info calls)
    end: int  # event position of the completion that no order explains
    call: int  # the call that completion ends
    involved: tuple[int, ...]  # every call that could be ordered in the stretch
    answers: tuple[Answer, ...]  # what the model answered ``call`` instead


@dataclass(frozen=True)
class Verdict:
    """The checker's decision. ``linearizable`` is None when undecided."""

    linearizable: bool | None
    order: tuple[int, ...]  # call indices in the order found (linearizable only); untaken info calls are absent
    states: int  # (placed calls, model state) pairs explored
    windows: int  # quiescent windows the history was cut into
    failure: Failure | None = None
    undecided_at: int | None = None  # event position of the window the budget ran out in


# ---------------------------------------------------------------- the search


class _Budget:
    """The search's bound on (placed calls, model state) pairs explored."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0

    def spend(self) -> None:
        self.spent += 1
        if self.spent > self.limit:
            raise Undecided


def _step(call: Call, state: _State) -> tuple[_State | None, object]:
    """Apply ``call`` to the model: (next state, the model's answer), next state None on a mismatch."""
    try:
        after, value = state.apply(call.op, call.args)
    except ValueError as exc:
        matches = call.kind == INFO or (call.kind == ERROR and call.error == "ValueError")
        return (state if matches else None), exc
    if call.kind == ERROR or (call.kind != INFO and not same_result(call.op, value, call.result)):
        return None, value
    return after, value


#: What a final task is kept as: every later call on a final task is refused
#: (only the reason's wording differs, which is not compared), and no dispatch
#: or load count looks at it, so final tasks answer alike whatever their fields.
#: Fields the model may add later (an idempotency key, say) are kept as they are.
#: ``retry_delay=0``, which the model never holds, marks a task already erased.
_FINAL = dict(
    priority=0, due_at=0, max_attempts=None, retry_delay=0, status=Status.SUCCEEDED, attempts=0,
    worker=None, token=None, started_at=None, expires_at=None, cancel_requested=False, expired_token=None,
)


def canonical(state: model.State) -> model.State:
    """``state`` with what no later call's compared result can show erased, so that
    orders differing only there meet in the memo. O(T) for T tasks.

    Erased: a final task's fields (but its id and any the model adds), ``expired_token`` and
    ``started_at`` (they only shape a rejection's reason or a task view, and a
    history records neither), and the order workers were added in. Two states
    with the same canonical form give the same results to every sequence of
    calls, so the search stays exact. The search keeps its states canonical
    task by task (``_State.apply``), which gives the same states as this.
    """
    tasks = tuple(_canonical_task(t) for t in state.tasks)
    workers = tuple(sorted(state.workers))
    if workers == state.workers and all(a is b for a, b in zip(tasks, state.tasks)):
        return state
    return replace(state, tasks=tasks, workers=workers)


def _canonical_task(task: model.Task) -> model.Task:
    if task.status in FINAL_STATUSES:
        return task if task.retry_delay == 0 else replace(task, **_FINAL)
    if task.expired_token is None and task.started_at is None:
        return task
    return replace(task, expired_token=None, started_at=None)


# ---------------------------------------------------------------- the search's states
#
# The model's State is a tuple of every task, and each of its transitions scans
# it and copies it: O(T) per step for T tasks, and so is hashing or comparing
# one. The search therefore keeps its states as differences from a shared,
# materialised base, and applies the model's own transition functions to a
# small State holding only the tasks the call can read or change (a view),
# renumbered 1..k in id order. A step then costs O(R + D + log T), for R
# running leases and D tasks changed since the base, instead of O(T).

#: Fold a state's differences into a new base, at the start of a window, once
#: more than this many tasks differ (or this many parked tasks fell due since
#: the base): every step scans or copies the differences, while a new base
#: copies the task table and its indexes (O(T), as memory copies), so each
#: base is paid for by at least this many changes. 16 to 256 measured alike.
REBASE_AT = 64

#: Fold the differences in the middle of a window once they pass this: only
#: a window without a quiescent point for hundreds of calls reaches it.
#: States on different bases are compared task by task (O(T)), so this is
#: kept well above ``REBASE_AT``.
REBASE_IN_WINDOW = 512

#: Hashes of the task table are sums of the tasks' hashes modulo 2^64, so a
#: step updates them by the tasks it changed.
_HASH_MASK = (1 << 64) - 1

#: Operations that name a task (``task_id``), and operations that expire leases (``now``).
_TASK_OPS = frozenset({"complete", "fail", "cancel", "renew"})
_TIMED_OPS = _TASK_OPS | {"dispatch", "advance"}


def _is_int(value: object) -> bool:
    """What the model's ``require_int`` accepts."""
    return isinstance(value, int) and not isinstance(value, bool)


def _due_at(entry: tuple[int, int]) -> int:
    return entry[0]


class _Base:
    """A canonical model state, materialised, with the indexes a view is built from. Never changed.

    ``eligible``: ``dispatch_order`` keys of the dispatchable tasks due by the
    base's time, sorted; ``future``: (due_at, id) of those due later, sorted.
    """

    __slots__ = ("state", "tasks_hash", "keys", "keys_hash", "eligible", "future")

    def __init__(self, state: model.State, tasks_hash: int, keys: dict[str, model.KeyRecord], keys_hash: int,
                 eligible: list[tuple[int, int, int]], future: list[tuple[int, int]]) -> None:
        self.state, self.tasks_hash, self.keys, self.keys_hash = state, tasks_hash, keys, keys_hash
        self.eligible, self.future = eligible, future

    @classmethod
    def of(cls, state: model.State) -> _Base:
        """``state`` (canonical) with its indexes built. O(T log T)."""
        ready = [t for t in state.tasks if t.status in DISPATCHABLE_STATUSES]
        return cls(
            state,
            sum(map(hash, state.tasks)) & _HASH_MASK,
            {record.key: record for record in state.keys},
            sum(map(hash, state.keys)) & _HASH_MASK,
            sorted(model.dispatch_order(t) for t in ready if t.due_at <= state.now),
            sorted((t.due_at, t.id) for t in ready if t.due_at > state.now),
        )

    def due_by(self, now: int) -> int:
        """How many of ``future`` are due by ``now``. O(log T)."""
        return bisect.bisect_right(self.future, now, key=_due_at)


class _State:
    """A canonical model state as the search holds it: a base and the tasks that differ from it.

    Plain data, never changed once built (``apply`` builds a new one). Equal
    when the model states they stand for are equal, and hashed alike then,
    so it is the memo's key for the state. The hash of the task table is
    kept as a sum over tasks, so building a state costs O(tasks changed).
    """

    __slots__ = ("base", "delta", "size", "running", "ready", "keys", "now", "last_token", "workers",
                 "tasks_hash", "keys_hash", "hash")

    base: _Base
    delta: dict[int, model.Task]  # id -> the task, for every task that differs from the base (or is newer)
    size: int  # tasks in all: ids are 1..size
    running: dict[int, model.Task]  # id -> the task, for every running task
    ready: list[tuple[int, int, int]]  # dispatch_order keys of the dispatchable tasks in delta, sorted
    keys: dict[str, model.KeyRecord]  # idempotency keys submitted since the base
    now: int
    last_token: int
    workers: tuple[tuple[str, int], ...]  # sorted by name (canonical)
    tasks_hash: int  # sum of the tasks' hashes, modulo 2^64
    keys_hash: int  # sum of the key records' hashes, modulo 2^64
    hash: int

    @classmethod
    def of(cls, state: model.State) -> _State:
        """The search's form of a canonical ``state``. O(T log T)."""
        base = _Base.of(state)
        running = {t.id: t for t in state.tasks if t.status is Status.RUNNING}
        return cls(base, {}, len(state.tasks), running, [], {}, state.now, state.last_token, state.workers,
                   base.tasks_hash, base.keys_hash)

    def __init__(self, base, delta, size, running, ready, keys, now, last_token, workers, tasks_hash, keys_hash):
        self.base, self.delta, self.size, self.running, self.ready, self.keys = base, delta, size, running, ready, keys
        self.now, self.last_token, self.workers = now, last_token, workers
        self.tasks_hash, self.keys_hash = tasks_hash, keys_hash
        self.hash = hash((now, last_token, workers, size, tasks_hash, keys_hash))

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        """Equal model states. O(tasks changed) on a shared base, O(T) otherwise (rare: see ``REBASE_AT``)."""
        if self is other:
            return True
        if not isinstance(other, _State) or self.hash != other.hash:
            return False
        if (self.now, self.last_token, self.workers, self.size, self.tasks_hash, self.keys_hash) != (
                other.now, other.last_token, other.workers, other.size, other.tasks_hash, other.keys_hash):
            return False
        if self.base is not other.base:
            return self.materialise() == other.materialise()
        if self.keys != other.keys:
            return False
        if self.delta == other.delta:  # the usual memo hit: the same tasks changed, alike (compared in C)
            return True
        # Sibling states share most task objects, so identity settles most comparisons.
        return all((a := self.task(i)) is (b := other.task(i)) or a == b for i in self.delta.keys() | other.delta.keys())

    def task(self, task_id: int) -> model.Task:
        """Task ``task_id`` (1..size). O(1)."""
        found = self.delta.get(task_id)
        return found if found is not None else self.base.state.tasks[task_id - 1]

    def materialise(self) -> model.State:
        """The model state this stands for. O(T)."""
        tasks = list(self.base.state.tasks)
        tasks.extend([None] * (self.size - len(tasks)))
        for task_id, task in self.delta.items():
            tasks[task_id - 1] = task
        keys = self.base.state.keys + tuple(sorted(self.keys.values(), key=lambda r: r.task_id))
        return model.State(now=self.now, tasks=tuple(tasks), workers=self.workers, last_token=self.last_token, keys=keys)

    def rebased(self) -> _State:
        """The same state on a base of its own, with no differences.

        The new base's indexes are the old ones with the changed tasks
        moved, and the parked tasks due by now made eligible: O(D log T) for
        D changed tasks, besides copying the task table and the indexes
        (O(T), but a memory copy).
        """
        base, delta = self.base, self.delta
        old_tasks = base.state.tasks
        tasks = list(old_tasks)
        tasks.extend([None] * (self.size - len(tasks)))
        eligible, future = list(base.eligible), list(base.future)
        for task_id, task in delta.items():
            tasks[task_id - 1] = task
            old = old_tasks[task_id - 1] if task_id <= len(old_tasks) else None
            if old is not None and old.status in DISPATCHABLE_STATUSES:
                if old.due_at <= base.state.now:
                    del eligible[bisect.bisect_left(eligible, model.dispatch_order(old))]
                else:
                    del future[bisect.bisect_left(future, (old.due_at, old.id))]
        due = bisect.bisect_right(future, self.now, key=_due_at)
        for _, task_id in future[:due]:  # unchanged since the old base: the changed ones left above
            bisect.insort(eligible, model.dispatch_order(old_tasks[task_id - 1]))
        del future[:due]
        for task in delta.values():
            if task.status in DISPATCHABLE_STATUSES:
                if task.due_at <= self.now:
                    bisect.insort(eligible, model.dispatch_order(task))
                else:
                    bisect.insort(future, (task.due_at, task.id))
        keys = base.keys
        if self.keys:
            keys = {**keys, **self.keys}
        records = base.state.keys + tuple(sorted(self.keys.values(), key=lambda r: r.task_id))
        state = model.State(now=self.now, tasks=tuple(tasks), workers=self.workers, last_token=self.last_token,
                            keys=records)
        new_base = _Base(state, self.tasks_hash, keys, self.keys_hash, eligible, future)
        return _State(new_base, {}, self.size, self.running, [], {}, self.now, self.last_token, self.workers,
                      self.tasks_hash, self.keys_hash)

    def settled(self) -> _State:
        """This state, rebased if its differences have grown past ``REBASE_AT`` (see there)."""
        return self.rebased() if len(self.delta) > REBASE_AT or self.base.due_by(self.now) > REBASE_AT else self

    def best_eligible(self, now: int) -> int | None:
        """The id of the dispatchable task a dispatch at ``now`` picks first (before expiry), or None.

        O(D + the base's parked tasks due by ``now``), D the tasks changed since the base.
        """
        delta, base = self.delta, self.base
        best = next((key for key in base.eligible if key[2] not in delta), None)
        tasks = base.state.tasks
        for index in range(base.due_by(now)):
            task_id = base.future[index][1]
            if task_id not in delta:
                key = model.dispatch_order(tasks[task_id - 1])
                if best is None or key < best:
                    best = key
        # ``ready`` is sorted by the whole key, so its first entry due by now is its best.
        key = next((key for key in self.ready if key[1] <= now), None)
        if key is not None and (best is None or key < best):
            best = key
        return None if best is None else best[2]

    def apply(self, op: str, args: dict[str, object]) -> tuple[_State, object]:
        """``model.apply`` on the state this stands for: the same answer, the next state (canonical).

        The model is applied to a view: a State with this one's time, workers,
        token count, and only the tasks the call can read or change, numbered
        1..k in id order -- the leases that expire by the call's time, the
        named task, and for a dispatch the worker's running tasks and the best
        task eligible before expiry (the model picks the best of these and the
        expired ones, as it would of all) -- and, for a submit, the record of
        its key. Every argument check the model makes reads only the
        arguments, time, workers and keys, or (an unknown task id) the number
        of tasks, which is checked here against the full table.

        Raises:
            ValueError: where ``model.apply`` does, with its message (nothing changes).

        O(R + D + log T): R running leases, D tasks changed since the base.
        """
        ids: set[int] = set()
        records: tuple[model.KeyRecord, ...] = ()
        if op in _TASK_OPS:
            task_id = args.get("task_id")
            if not _is_int(task_id) or not 1 <= task_id <= self.size:
                model.apply(self.materialise(), op, args)  # raises, with the model's words for the id
                raise AssertionError(f"the model accepted {op} of unknown task {task_id!r}")
            ids.add(task_id)
        if op in _TIMED_OPS:
            now = args.get("now")
            if _is_int(now) and now >= self.now:  # otherwise the model refuses the time before expiring
                ids.update(i for i, t in self.running.items() if t.expires_at <= now)
                if op == "dispatch":
                    worker = args.get("worker")
                    ids.update(i for i, t in self.running.items() if t.worker == worker)
                    best = self.best_eligible(now)
                    if best is not None:
                        ids.add(best)
        elif op == "submit":
            key = args.get("key")
            if isinstance(key, str):
                record = self.keys.get(key) or self.base.keys.get(key)
                if record is not None:
                    records = (record,)  # with its real task id, which the model hands back as it is
        order = sorted(ids)
        view_tasks = tuple(replace(self.task(i), id=n) for n, i in enumerate(order, 1))
        if op in _TASK_OPS:
            args = {**args, "task_id": order.index(args["task_id"]) + 1}
        view = model.State(now=self.now, tasks=view_tasks, workers=self.workers, last_token=self.last_token,
                           keys=records)
        after, value = model.apply(view, op, args)
        if after is view:
            return self, value
        changes = {order[n]: _canonical_task(replace(t, id=order[n]))
                   for n, t in enumerate(after.tasks[:len(order)]) if t is not view_tasks[n]}
        size = self.size
        if len(after.tasks) > len(order):  # a submit made one task
            size += 1
            changes[size] = _canonical_task(replace(after.tasks[-1], id=size))
            if op == "submit":
                value = size
        if isinstance(value, Lease):
            value = replace(value, task_id=order[value.task_id - 1])
        keys, keys_hash = self.keys, self.keys_hash
        if len(after.keys) > len(records):
            keys = dict(keys)
            for record in after.keys[len(records):]:
                record = model.KeyRecord(record.key, size, record.arguments)
                keys[record.key] = record
                keys_hash = (keys_hash + hash(record)) & _HASH_MASK
        workers = after.workers if after.workers == self.workers else tuple(sorted(after.workers))
        if not changes:
            return _State(self.base, self.delta, size, self.running, self.ready, keys, after.now, after.last_token,
                          workers, self.tasks_hash, keys_hash), value
        delta, running, ready, tasks_hash = dict(self.delta), self.running, self.ready, self.tasks_hash
        copied_running = copied_ready = False
        for task_id, task in changes.items():
            old = self.task(task_id) if task_id <= self.size else None
            if old is not None:
                tasks_hash -= hash(old)
                if task_id in self.delta and old.status in DISPATCHABLE_STATUSES:
                    if not copied_ready:
                        ready, copied_ready = list(ready), True
                    del ready[bisect.bisect_left(ready, model.dispatch_order(old))]
            tasks_hash += hash(task)
            delta[task_id] = task
            if task.status in DISPATCHABLE_STATUSES:
                if not copied_ready:
                    ready, copied_ready = list(ready), True
                bisect.insort(ready, model.dispatch_order(task))
            if task.status is Status.RUNNING or task_id in running:
                if not copied_running:
                    running, copied_running = dict(running), True
                if task.status is Status.RUNNING:
                    running[task_id] = task
                else:
                    del running[task_id]
        following = _State(self.base, delta, size, running, ready, keys, after.now, after.last_token, workers,
                           tasks_hash & _HASH_MASK, keys_hash)
        return (following.rebased() if len(delta) > REBASE_IN_WINDOW else following), value


#: Kinds of entries in the search's list.
_CALL, _RETURN, _UNKNOWN_RETURN = 0, 1, 2


@dataclass
class _Found:
    state: _State
    pending: frozenset[int]  # info calls not taken, carried into the next window
    path: tuple[int, ...]  # call indices placed in this window, in order


def _orders(
    start: _State,
    calls: list[Call],
    unknown: set[int],
    budget: _Budget,
    watch: int | None = None,
    answers: list[Answer] | None = None,
) -> Iterator[_Found]:
    """Orders of ``calls`` from ``start``, one per distinct end (state, info calls not taken), found lazily.

    ``calls`` are in invocation order (carried info calls first); those in
    ``unknown`` may take effect at any point after invocation, or never, and
    match any answer. The model's answers to the call at ``watch`` that did
    not match are collected in ``answers``. Raises Undecided past the budget.
    """
    # Entries in real-time order: an invocation, then its completion; unknown completions last.
    entries: list[tuple[float, int, int]] = []  # (position, kind, local call index)
    for local, call in enumerate(calls):
        entries.append((call.invoked, _CALL, local))
        if local in unknown:
            entries.append((float("inf"), _UNKNOWN_RETURN, local))
        else:
            entries.append((call.completed, _RETURN, local))
    entries.sort(key=lambda e: (e[0], e[1], e[2]))
    n = len(entries)
    head, end = n, n + 1
    kind = [e[1] for e in entries]
    local_of = [e[2] for e in entries]
    return_of = {}
    invoke_entry = {}
    for i, (_, k, local) in enumerate(entries):
        if k == _CALL:
            invoke_entry[local] = i
        else:
            return_of[invoke_entry[local]] = i
    nxt, prv = [end] * (n + 2), [head] * (n + 2)  # a doubly linked list: head, entries..., end
    chain = [head, *range(n), end]
    for a, b in zip(chain, chain[1:]):
        nxt[a], prv[b] = b, a

    def lift(i: int) -> None:
        for node in (i, return_of[i]):
            nxt[prv[node]] = nxt[node]
            prv[nxt[node]] = prv[node]

    def unlift(i: int) -> None:
        for node in (return_of[i], i):
            nxt[prv[node]] = node
            prv[nxt[node]] = node

    seen: set[tuple[int, _State]] = set()
    stack: list[tuple[int, _State]] = []  # (entry placed, the state before it)
    ends: set[tuple[_State, frozenset[int]]] = set()
    state, placed = start, 0
    entry = nxt[head]
    while True:
        if entry == end or kind[entry] == _UNKNOWN_RETURN:
            # Every call with a known completion is placed: an order exists.
            pending = frozenset(calls[i].index for i in unknown if not placed >> i & 1 and not inert(calls[i], state))
            end_key = state
            if (end_key, pending) not in ends:
                ends.add((end_key, pending))
                yield _Found(end_key, pending, tuple(calls[local_of[e]].index for e, _ in stack))
        elif kind[entry] == _CALL:
            local = local_of[entry]
            after, answer = _step(calls[local], state)
            if after is not None:
                key = (placed | 1 << local, after)
                if key not in seen:
                    budget.spend()
                    seen.add(key)
                    stack.append((entry, state))
                    state, placed = after, placed | 1 << local
                    lift(entry)
                    entry = nxt[head]
                    continue
            elif local == watch and answers is not None and len(answers) < MAX_ANSWERS:
                if not any(describe(calls[local].op, a.value) == describe(calls[local].op, answer) for a in answers):
                    answers.append(Answer(answer, tuple(calls[local_of[e]].index for e, _ in stack)))
            entry = nxt[entry]
            continue
        # An end was reached, or a completion whose call is not placed (nothing after it
        # may go first): undo the last step and try what comes after it.
        if not stack:
            return
        entry, state = stack.pop()
        placed &= ~(1 << local_of[entry])
        unlift(entry)
        entry = nxt[entry]


def inert(call: Call, state: _State) -> bool:
    """True if ``call`` cannot change the model's state from ``state`` on, whenever it is placed.

    An info call not taken by then may be forgotten instead of carried into
    every later window (each one carried doubles a window's search). Sound
    because every fact used only grows: time never goes back, so a timed call
    behind the clock is refused for ever; a token's lease, once its task is not
    running under it, never comes back; a final task stays final; a key or a
    worker, once there, stays. O(1).
    """
    op, args = call.op, call.args
    if op in _TIMED_OPS:
        now = args.get("now")
        if not _is_int(now) or now > state.now:
            return False  # it would move time (and expire leases)
        if now < state.now or op == "advance":
            return True
        task_id = args.get("task_id")
        if op == "dispatch" or not (_is_int(task_id) and 1 <= task_id <= state.size):
            return False
        task = state.task(task_id)
        if op == "cancel":
            return task.status in FINAL_STATUSES
        token = args.get("token")
        return _is_int(token) and token <= state.last_token and not (task.status is Status.RUNNING and task.token == token)
    if op == "submit":
        key = args.get("key")
        return isinstance(key, str) and (key in state.keys or key in state.base.keys)
    if op == "add_worker":
        return any(name == args.get("worker") for name, _ in state.workers)
    return False


# ---------------------------------------------------------------- windows


def quiescent_windows(history: History) -> list[tuple[int, int]]:
    """Event ranges ``[start, stop)`` cut where no call is open. O(events).

    A call is open from its invocation to its ok or info event; an info call
    is carried into the windows after it by the search, not by the cut.
    """
    windows, start, open_calls = [], 0, 0
    for position, event in enumerate(history.events):
        open_calls += 1 if event.type == "invoke" else -1
        if open_calls == 0:
            windows.append((start, position + 1))
            start = position + 1
    if start < len(history.events):
        windows.append((start, len(history.events)))
    return windows


#: A point between windows: the model state, and the info calls not taken so far.
Config = tuple[_State, frozenset[int]]


def _window_orders(
    history: History,
    config: Config,
    window: tuple[int, int],
    budget: _Budget,
    cut: int | None = None,
    watch: int | None = None,
    answers: list[Answer] | None = None,
) -> Iterator[_Found]:
    """Orders of one window's calls (up to event ``cut``, if given) from ``config``, lazily.

    Info calls not taken before the window are carried in, invoked at its
    start; with ``cut``, a call not completed by then counts as unknown.
    """
    first, stop = window
    last = stop - 1 if cut is None else cut
    state, pending = config
    carried = [_carried(history.calls[i], first) for i in sorted(pending)]
    calls = carried + _invoked_between(history, first, last)
    unknown = {local for local, c in enumerate(calls) if c.kind == INFO or c.completed is None or c.completed > last}
    watch_local = next((i for i, c in enumerate(calls) if c.index == watch), None)
    return _orders(state.settled(), calls, unknown, budget, watch_local, answers)


def _invoked_between(history: History, first: int, last: int) -> list[Call]:
    """The calls invoked at event positions ``first`` to ``last``. O(log n + those calls):
    calls are numbered in invocation order."""
    calls = history.calls
    lo = bisect.bisect_left(calls, first, key=lambda c: c.invoked)
    hi = bisect.bisect_right(calls, last, key=lambda c: c.invoked)
    return list(calls[lo:hi])


def _carried(call: Call, start: int) -> Call:
    """An info call from an earlier window, invoked (for this window's search) at its start."""
    return Call(call.index, call.process, call.op, call.args, INFO, None, None, start - 1, None, call.ended)


@dataclass
class _Frame:
    """One window being searched from one config, and the order chosen in it so far."""

    window: int
    orders: Iterator[_Found]
    path: tuple[int, ...] = ()


def check_history(history: History, max_states: int = DEFAULT_MAX_STATES, start: model.State | None = None) -> Verdict:
    """Decide whether ``history`` is linearizable with respect to the model (see the module docstring).

    ``start`` is the model state before the first call (default: a fresh
    scheduler). The windows are searched depth first: the first order found in
    a window goes on to the next, and another of its end states is tried only
    if the next cannot go on from it, so a linearizable history costs little
    more than one pass. Each window's search is bounded by 2^k sets of placed
    calls times the model states reached, for k calls open at once in it; each
    step costs O(R + D + log T) for R running leases, D tasks changed since the
    state's base and T tasks (``_State.apply``), independent of T in practice.
    """
    budget = _Budget(max_states)
    windows = quiescent_windows(history)
    if not windows:
        return Verdict(True, (), 0, 0)
    origin: Config = (_State.of(canonical(model.initial() if start is None else start)), frozenset())
    # Configs each window was searched from, in the order met (a dict, not a set: the failing
    # window's are tried in that order, so the answers shown do not depend on hash seeds).
    reached: list[dict[Config, None]] = [{} for _ in windows]
    reached[0][origin] = None
    frames = [_Frame(0, _window_orders(history, origin, windows[0], budget))]
    try:
        while frames:
            frame = frames[-1]
            found = next(frame.orders, None)
            if found is None:
                frames.pop()  # no order of this window from this config goes on to the end
                continue
            frame.path = found.path
            if frame.window == len(windows) - 1:
                order = tuple(i for f in frames for i in f.path)
                return Verdict(True, order, budget.spent, len(windows))
            config, following = (found.state, found.pending), frame.window + 1
            if config in reached[following]:
                continue  # searched from there before, and it did not reach the end
            reached[following][config] = None
            frames.append(_Frame(following, _window_orders(history, config, windows[following], budget)))
        deepest = max(i for i, configs in enumerate(reached) if configs)
        failure = _locate(history, reached[deepest], windows[deepest], budget)
    except Undecided:
        stuck = frames[-1].window if frames else 0
        return Verdict(None, (), budget.limit, len(windows), undecided_at=windows[stuck][0])
    return Verdict(False, (), budget.spent, len(windows), failure)


def _locate(history: History, configs: dict[Config, None], window: tuple[int, int], budget: _Budget) -> Failure:
    """The shortest prefix of the failing window that cannot be ordered from any of ``configs``.

    ``configs`` are every state the history before the window can end in, so
    the prefix's failure is exact. Binary search on the prefix's last event.
    """

    def orderable(cut: int) -> bool:
        return any(next(_window_orders(history, c, window, budget, cut), None) for c in configs)

    first, stop = window
    lo, hi = first, stop - 1  # orderable(stop - 1) is False
    while lo < hi:
        mid = (lo + hi) // 2
        if orderable(mid):
            lo = mid + 1
        else:
            hi = mid
    failing = next(c.index for c in history.calls if c.completed == hi)
    answers: list[Answer] = []
    for config in configs:
        for _ in _window_orders(history, config, window, budget, hi, failing, answers):
            pass
    carried = sorted({i for _, pending in configs for i in pending})
    involved = tuple(carried + [c.index for c in _invoked_between(history, first, hi)])
    return Failure(first, hi, failing, involved, tuple(answers))


# ---------------------------------------------------------------- words


def describe(op: str, value: object) -> str:
    """A result or the model's exception, in the words counterexamples use."""
    if isinstance(value, Exception):
        return f"ValueError: {value}" if isinstance(value, ValueError) else f"{type(value).__name__}: {value}"
    if value is None:
        return "none" if op == "dispatch" else "ok"
    if hasattr(value, "accepted"):
        return "accepted" if value.accepted else f"rejected ({value.reason})" if value.reason else "rejected"
    if hasattr(value, "token"):
        return f"lease task {value.task_id} to {value.worker}, token {value.token}, [{value.started_at}, {value.expires_at})"
    return f"task {value}"


def describe_call(call: Call) -> str:
    """``op(arg=value, ...)``."""
    return f"{call.op}({', '.join(f'{k}={v!r}' for k, v in call.args.items())})"


def describe_outcome(call: Call) -> str:
    """What the history says a call returned."""
    if call.kind == INFO:
        return "unknown (info)"
    if call.kind == ERROR:
        return f"raised {call.error}"
    return describe(call.op, call.result)


def report(history: History, verdict: Verdict, show_order: bool = False) -> list[str]:
    """The lines ``fencepost linearize`` prints for ``verdict``."""
    events, calls = history.events, history.calls
    size = f"{len(calls)} calls by {len(history.processes)} processes"
    where = f"{verdict.windows} windows, {verdict.states:,} states explored"
    if verdict.linearizable is None:
        line = events[verdict.undecided_at].line if verdict.undecided_at < len(events) else 0
        return [
            f"{history.source}: undecided ({size}): the search explored --max-states={verdict.states:,} states "
            f"in the window from line {line} without deciding; raise --max-states, or record shorter or less concurrent runs"
        ]
    if verdict.linearizable:
        lines = [f"{history.source}: linearizable ({size}; {where})"]
        if show_order:
            lines += [f"  {n:>4}. line {events[calls[i].invoked].line:>5}  {calls[i].process}  {describe_call(calls[i])}"
                      f" -> {describe_outcome(calls[i])}" for n, i in enumerate(verdict.order, 1)]
        return lines
    f = verdict.failure
    bad = calls[f.call]
    lines = [
        f"{history.source}: NOT linearizable ({size}; {where})",
        f"no order of the calls from line {events[f.start].line} to line {events[f.end].line} gives the recorded results:",
    ]
    rows = []
    for i in f.involved:
        c = calls[i]
        done = c.ended is not None and c.ended <= f.end
        span = f"lines {events[c.invoked].line}-{events[c.ended].line if done else 'open'}"
        mark = "   <-- no order explains this result" if i == f.call else ""
        rows.append((c.process, span, describe_call(c), (describe_outcome(c) if done else "not yet known") + mark))
    widths = [max(len(row[k]) for row in rows) for k in range(3)]
    lines += [f"  {p:<{widths[0]}}  {s:<{widths[1]}}  {call:<{widths[2]}} -> {result}" for p, s, call, result in rows]
    lines.append(f"the model would have answered {describe_call(bad)} by {bad.process} (line {events[f.end].line}):")
    for answer in f.answers:
        after = ", ".join(f"{describe_call(calls[i])} by {calls[i].process}" for i in answer.before) or "nothing else"
        lines.append(f"  {describe(bad.op, answer.value)}   (after {after})")
    if not f.answers:
        lines.append("  nothing: in no order consistent with real time do the calls before it reach it")
    return lines


# ---------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("history", metavar="HISTORY", help="a JSON-lines history file")
    parser.add_argument(
        "--max-states", type=positive_int, default=DEFAULT_MAX_STATES, metavar="N",
        help=f"give up (exit {EXIT_UNDECIDED}, undecided) after exploring N (placed calls, model state) pairs "
             f"(default {DEFAULT_MAX_STATES:,})",
    )
    parser.add_argument("--order", action="store_true", help="print the order found for a linearizable history")


def run(args: argparse.Namespace) -> int:
    try:
        history = load_history(args.history)
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    verdict = check_history(history, max_states=args.max_states)
    for line in report(history, verdict, args.order):
        print(line)
    if verdict.linearizable is None:
        return EXIT_UNDECIDED
    return EXIT_OK if verdict.linearizable else EXIT_VIOLATION
