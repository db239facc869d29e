"""The linearizability search's model states: canonical forms and states kept as differences.

``canonical`` erases what no later compared result can show, so that orders
differing only there meet in the search's memo; ``_State`` keeps a state as
differences from a shared base and applies the model's own transitions to a
view holding only the tasks a call can read or change, so a step costs about
the same whatever the number of tasks. The search is
``spec.checkers.linearize``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import replace

from fencepost.spec import model
from fencepost.spec.protocol import (
    BATCH_OPERATIONS, DISPATCHABLE_STATUSES, FINAL_STATUSES, PRUNE_OPERATIONS, Lease, Status,
)
from fencepost.spec.variants import DEFAULT, Variants


#: What a final task is kept as: every later call on a final task is refused
#: (only the reason's wording differs, which is not compared), and no dispatch
#: or load count looks at it, so final tasks answer alike whatever their fields.
#: Fields the model may add later (an idempotency key, say) are kept as they are.
#: ``retry_delay=0``, which the model never holds, marks a task already erased.
_FINAL = dict(
    priority=0, due_at=0, max_attempts=None, retry_delay=0, status=Status.SUCCEEDED, attempts=0,
    worker=None, token=None, started_at=None, expires_at=None, cancel_requested=False, expired_token=None,
    # When it ended matters only to a later prune: erased when the history holds none
    # (``bounds`` None), or every order that ends the same tasks at other times would miss
    # the memo; otherwise kept as far as the history's prunes can tell (``prune_bounds``).
    ended_at=0,
)

#: What a forgotten task is kept as: every call naming it raises, and nothing else reads it
#: (prune forgets a task once), so only its id and that it was forgotten remain.
_FORGOTTEN = dict(_FINAL, tokens=())

#: A final task's canonical ``ended_at`` when it ended before every prune bound: below any
#: valid ``before`` (which is >= 0), so every prune of the history forgets it.
BEFORE_EVERY_BOUND = -1


def prune_bounds(befores: Iterable[object]) -> tuple[int, ...] | None:
    """The canonical form's prune bounds: the distinct int ``before`` arguments of a history's
    prune calls, sorted; None when it holds no prune call. O(P log P) for P prunes.

    A prune compares a final task's ``ended_at`` with its ``before`` only (``t.ended_at <
    before``), so a final task's ``ended_at`` is kept as the greatest bound at or below it
    (``BEFORE_EVERY_BOUND`` when none is): for every bound b, ``ended_at < b`` exactly when the
    kept value is ``< b``. A ``before`` that is not an int makes the call invalid before it
    reads any task, so it needs no bound (and a history with only such prunes needs none).
    """
    return tuple(sorted({b for b in befores if _is_int(b)})) or None


def canonical(state: model.State, bounds: tuple[int, ...] | None = None) -> model.State:
    """``state`` with what no later call's compared result can show erased, so that
    orders differing only there meet in the memo. O(T log P) for T tasks, P ``bounds``.

    Erased: a final task's fields (but its id and any the model adds), its ``ended_at``
    as far as the prunes to come cannot tell it apart (``bounds``, from ``prune_bounds``:
    None when no prune will come, then erased; see there), a forgotten task's every field
    but its id and ``forgotten``, ``expired_token`` and ``started_at`` (they only shape a
    rejection's reason or a task view, and a history records neither), and the order
    workers were added in. Two states with the same canonical form give the same results
    to every sequence of calls whose prunes have their ``before`` in ``bounds``, so the
    search stays exact. The search keeps its states canonical task by task
    (``_State.apply``), which gives the same states as this.
    """
    tasks = tuple(_canonical_task(t, state.variants, bounds) for t in state.tasks)
    workers = tuple(sorted(state.workers))
    if workers == state.workers and all(a is b for a, b in zip(tasks, state.tasks)):
        return state
    return replace(state, tasks=tasks, workers=workers)


def _canonical_task(task: model.Task, variants: Variants = DEFAULT, bounds: tuple[int, ...] | None = None) -> model.Task:
    """One task's canonical form. Under ``repeat=accept`` a final task keeps its status
    (a complete of a succeeded one may be accepted); under ``late=accept-unclaimed``
    a pending task keeps ``expired_token`` (a late report with it is accepted); with
    ``bounds`` a final task keeps ``ended_at`` as the greatest bound at or below it."""
    if task.status in FINAL_STATUSES:
        if task.forgotten:
            if task.retry_delay == 0 and task.ended_at == 0 and not task.tokens and task.status is Status.SUCCEEDED:
                return task
            return replace(task, **_FORGOTTEN)
        ended = 0 if bounds is None else _bound_at_or_below(bounds, task.ended_at)
        if task.retry_delay == 0 and task.ended_at == ended:
            return task
        erased = _FINAL if variants.repeat == "refuse" else _FINAL_KEEPING_STATUS
        return replace(task, **erased) if ended == 0 else replace(task, **{**erased, "ended_at": ended})
    keep_expired = variants.late == "accept-unclaimed"
    if (task.expired_token is None or keep_expired) and task.started_at is None:
        return task
    return replace(task, expired_token=task.expired_token if keep_expired else None, started_at=None)


def _bound_at_or_below(bounds: tuple[int, ...], ended_at: int) -> int:
    """The greatest of ``bounds`` at or below ``ended_at``, or ``BEFORE_EVERY_BOUND``. O(log P)."""
    at = bisect.bisect_right(bounds, ended_at)
    return bounds[at - 1] if at else BEFORE_EVERY_BOUND


#: ``_FINAL`` less the status, for ``repeat=accept`` (its tokens are kept too: not in ``_FINAL``).
_FINAL_KEEPING_STATUS = {k: v for k, v in _FINAL.items() if k != "status"}


def index_key(variants: Variants):
    """The key the search's ready indexes sort by: the declared order's key (``model.order_key``),
    then the due time (so ``best_eligible`` can tell whether an entry is due). The task id is at [2]."""
    order = model.order_key(variants)
    return lambda task: (*order(task), task.due_at)


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
_TIMED_OPS = _TASK_OPS | {"dispatch", "advance", *PRUNE_OPERATIONS}


def _is_int(value: object) -> bool:
    """What the model's ``require_int`` accepts."""
    return isinstance(value, int) and not isinstance(value, bool)


def _prunable(task: model.Task) -> bool:
    """Whether a prune may forget ``task`` (if it ended early enough): final and not forgotten yet."""
    return task.status in FINAL_STATUSES and not task.forgotten


def _due_at(entry: tuple[int, int]) -> int:
    return entry[0]


class _Base:
    """A canonical model state, materialised, with the indexes a view is built from. Never changed.

    ``eligible``: ``index_key`` keys (the declared order, then due time) of the dispatchable tasks due by the
    base's time, sorted; ``future``: (due_at, id) of those due later, sorted. Only with prune ``bounds``
    (a history that holds a prune): ``finals``, (ended_at, id) of the final tasks not forgotten, sorted,
    and ``keyed``, each key record by the id of its task, so a prune finds what it forgets without a scan.
    """

    __slots__ = ("state", "tasks_hash", "keys", "keys_hash", "eligible", "future", "variants", "key", "late", "bounds",
                 "finals", "keyed")

    def __init__(self, state: model.State, tasks_hash: int, keys: dict[str, model.KeyRecord], keys_hash: int,
                 eligible: list[tuple[int, ...]], future: list[tuple[int, int]],
                 bounds: tuple[int, ...] | None = None, finals: list[tuple[int, int]] | None = None) -> None:
        self.state, self.tasks_hash, self.keys, self.keys_hash = state, tasks_hash, keys, keys_hash
        self.eligible, self.future = eligible, future
        self.finals = finals if finals is not None else []
        self.keyed = {record.task_id: record for record in keys.values()} if bounds is not None else {}
        self.variants = state.variants  # constant for the run: every base of one search shares them
        self.bounds = bounds  # the history's prune bounds (``prune_bounds``), constant for the run too
        self.key = index_key(state.variants)
        self.late = 1 if state.variants.due == "after" else 0  # due=after: eligible from due_at + 1

    @classmethod
    def of(cls, state: model.State, bounds: tuple[int, ...] | None = None) -> _Base:
        """``state`` (canonical under ``bounds``) with its indexes built. O(T log T)."""
        ready = [t for t in state.tasks if t.status in DISPATCHABLE_STATUSES]
        key, variants = index_key(state.variants), state.variants
        return cls(
            state,
            sum(map(hash, state.tasks)) & _HASH_MASK,
            {record.key: record for record in state.keys},
            sum(map(hash, state.keys)) & _HASH_MASK,
            sorted(key(t) for t in ready if model.is_due(variants, t.due_at, state.now)),
            sorted((t.due_at, t.id) for t in ready if not model.is_due(variants, t.due_at, state.now)),
            bounds,
            sorted((t.ended_at, t.id) for t in state.tasks if _prunable(t)) if bounds is not None else None,
        )

    def due_by(self, now: int) -> int:
        """How many of ``future`` are due by ``now``. O(log T)."""
        return bisect.bisect_right(self.future, now - self.late, key=_due_at)


class _State:
    """A canonical model state as the search holds it: a base and the tasks that differ from it.

    Plain data, never changed once built (``apply`` builds a new one). Equal
    when the model states they stand for are equal, and hashed alike then,
    so it is the memo's key for the state. The hash of the task table is
    kept as a sum over tasks, so building a state costs O(tasks changed).
    """

    __slots__ = ("base", "delta", "size", "running", "ready", "keys", "now", "last_token", "workers",
                 "tasks_hash", "keys_hash", "hash", "issued")

    base: _Base
    delta: dict[int, model.Task]  # id -> the task, for every task that differs from the base (or is newer)
    size: int  # tasks in all: ids are 1..size
    running: dict[int, model.Task]  # id -> the task, for every running task
    ready: list[tuple[int, ...]]  # index_key keys of the dispatchable tasks in delta, sorted
    keys: dict[str, model.KeyRecord | None]  # idempotency keys submitted since the base; None: a base key a prune forgot
    now: int
    last_token: int
    workers: tuple[tuple[str, int], ...]  # sorted by name (canonical)
    tasks_hash: int  # sum of the tasks' hashes, modulo 2^64
    keys_hash: int  # sum of the key records' hashes, modulo 2^64
    hash: int
    issued: frozenset  # every token handed out, under tokens=opaque (else empty): the model's State.issued

    @classmethod
    def of(cls, state: model.State, bounds: tuple[int, ...] | None = None) -> _State:
        """The search's form of ``state``, canonical under ``bounds`` (``canonical``), which
        every state reached from it keeps. O(T log T)."""
        base = _Base.of(state, bounds)
        running = {t.id: t for t in state.tasks if t.status is Status.RUNNING}
        return cls(base, {}, len(state.tasks), running, [], {}, state.now, state.last_token, state.workers,
                   base.tasks_hash, base.keys_hash, state.issued)

    def __init__(self, base, delta, size, running, ready, keys, now, last_token, workers, tasks_hash, keys_hash,
                 issued=frozenset()):
        self.base, self.delta, self.size, self.running, self.ready, self.keys = base, delta, size, running, ready, keys
        self.now, self.last_token, self.workers = now, last_token, workers
        self.tasks_hash, self.keys_hash = tasks_hash, keys_hash
        self.issued = issued
        if issued:
            self.hash = hash((now, last_token, workers, size, tasks_hash, keys_hash, issued))
        else:
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
        if self.issued != other.issued:
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
        keys = self._records()
        return model.State(now=self.now, tasks=tuple(tasks), workers=self.workers, last_token=self.last_token, keys=keys,
                           variants=self.base.variants, issued=self.issued)

    def rebased(self) -> _State:
        """The same state on a base of its own, with no differences.

        The new base's indexes are the old ones with the changed tasks
        moved, and the parked tasks due by now made eligible: O(D log T) for
        D changed tasks, besides copying the task table and the indexes
        (O(T), but a memory copy).
        """
        base, delta = self.base, self.delta
        key, variants = base.key, base.variants
        old_tasks = base.state.tasks
        tasks = list(old_tasks)
        tasks.extend([None] * (self.size - len(tasks)))
        eligible, future = list(base.eligible), list(base.future)
        for task_id, task in delta.items():
            tasks[task_id - 1] = task
            old = old_tasks[task_id - 1] if task_id <= len(old_tasks) else None
            if old is not None and old.status in DISPATCHABLE_STATUSES:
                if model.is_due(variants, old.due_at, base.state.now):
                    del eligible[bisect.bisect_left(eligible, key(old))]
                else:
                    del future[bisect.bisect_left(future, (old.due_at, old.id))]
        due = bisect.bisect_right(future, self.now - base.late, key=_due_at)
        for _, task_id in future[:due]:  # unchanged since the old base: the changed ones left above
            bisect.insort(eligible, key(old_tasks[task_id - 1]))
        del future[:due]
        for task in delta.values():
            if task.status in DISPATCHABLE_STATUSES:
                if model.is_due(variants, task.due_at, self.now):
                    bisect.insort(eligible, key(task))
                else:
                    bisect.insort(future, (task.due_at, task.id))
        keys = base.keys
        if self.keys:
            keys = {**keys, **self.keys}
            if base.bounds is not None:  # only a prune marks a base key forgotten (None)
                keys = {k: r for k, r in keys.items() if r is not None}
        records = self._records()
        finals = None
        if base.bounds is not None:  # a history with prunes: the final tasks that changed move too
            finals = list(base.finals)
            for task_id, task in delta.items():
                old = old_tasks[task_id - 1] if task_id <= len(old_tasks) else None
                if old is not None and _prunable(old):
                    del finals[bisect.bisect_left(finals, (old.ended_at, task_id))]
                if _prunable(task):
                    bisect.insort(finals, (task.ended_at, task_id))
        state = model.State(now=self.now, tasks=tuple(tasks), workers=self.workers, last_token=self.last_token,
                            keys=records, variants=variants, issued=self.issued)
        new_base = _Base(state, self.tasks_hash, keys, self.keys_hash, eligible, future, base.bounds, finals)
        return _State(new_base, {}, self.size, self.running, [], {}, self.now, self.last_token, self.workers,
                      self.tasks_hash, self.keys_hash, self.issued)

    def _records(self) -> tuple[model.KeyRecord, ...]:
        """The key records, in submit order: the base's (less those changed since), then the newer ones. O(K)."""
        records = self.base.state.keys
        if not self.keys:
            return records
        if self.base.bounds is not None:  # only a prune removes or replaces a base key
            records = tuple(r for r in records if r.key not in self.keys)
        return records + tuple(sorted((r for r in self.keys.values() if r is not None), key=lambda r: r.task_id))

    def forgettable(self, before: int) -> list[int]:
        """The ids of the final tasks not forgotten that ended before ``before`` (canonical
        ``ended_at``, exact for every prune bound): what a prune with ``before`` forgets.
        O(F + D + log T) for F such tasks in the base and D tasks changed since it."""
        base, delta = self.base, self.delta
        found = [i for _, i in base.finals[:bisect.bisect_left(base.finals, (before,))] if i not in delta]
        found.extend(i for i, t in delta.items() if _prunable(t) and t.ended_at < before)
        return found

    def record_of(self, task_id: int) -> model.KeyRecord | None:
        """The key record of task ``task_id``, if it was submitted with a key not forgotten. O(1)
        for a task of the base (``_Base.keyed``), O(keys submitted since) for a newer one."""
        record = self.base.keyed.get(task_id)
        if record is not None and self.keys.get(record.key, record) is record:
            return record
        return next((r for r in self.keys.values() if r is not None and r.task_id == task_id), None)

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
                key = base.key(tasks[task_id - 1])
                if best is None or key < best:
                    best = key
        # ``ready`` is sorted by the whole key, so its first entry due by now is its best.
        due_by = now - base.late
        key = next((key for key in self.ready if key[3] <= due_by), None)
        if key is not None and (best is None or key < best):
            best = key
        return None if best is None else best[2]

    def follow(self, op: str, args: dict[str, object], observed: object) -> tuple[_State, object] | None:
        """``model.follow`` on the state this stands for: where the scheduler's ``observed`` answer
        leads, or None when the model does not allow it (``order=any``, ``tokens=opaque``).

        Raises:
            ValueError: where ``model.apply`` does. O(R + D + log T), as ``apply``.
        """
        return self.apply(op, args, observed, follow=True)

    def apply(self, op: str, args: dict[str, object], observed: object = None, follow: bool = False) -> tuple[_State, object] | None:
        """``model.apply`` on the state this stands for: the same answer, the next state (canonical).

        The model is applied to a view: a State with this one's time, workers,
        token count, and only the tasks the call can read or change, numbered
        1..k in id order -- the leases that expire by the call's time, the
        named task, and for a dispatch the worker's running tasks and the best
        task eligible before expiry (the model picks the best of these and the
        expired ones, as it would of all) -- and, for a submit, the record of
        its key; for a prune, see below. Every argument check the model makes reads only the
        arguments, time, workers and keys, or (an unknown task id) the number
        of tasks, which is checked here against the full table (so is a
        forgotten id, which the model refuses naming it).

        Raises:
            ValueError: where ``model.apply`` does, with its message (nothing changes).

        With ``follow``, ``model.follow`` of ``observed`` instead (see
        ``follow``): a dispatch's view then holds the observed lease's task
        too, and None comes back when the model does not allow it. Under
        ``exhaust=at-dispatch`` a dispatch's view holds every task (it may end
        any spent one): O(T) then.

        A prune's view holds the leases that expire by its time and the tasks it
        forgets (``forgettable``), with their key records, and the keys it
        forgets leave this state's keys (as None where the base has them).

        O(R + D + log T): R running leases, D tasks changed since the base; a
        prune O(R + D + F + log T) for F tasks it forgets; a batch O(T log T)
        (applied to the whole state, which becomes a new base).
        """
        variants, bounds = self.base.variants, self.base.bounds
        if op in BATCH_OPERATIONS:
            # A batch reads and changes many tasks: applied to the whole state, which becomes a new base
            # (O(T)); still one call, so one linearization point.
            whole = self.materialise()
            if follow:
                followed = model.follow(whole, op, dict(args), observed)
                if followed is None:
                    return None
                after, value = followed
            else:
                after, value = model.apply(whole, op, args)
            return _State.of(canonical(after, bounds), bounds), value
        ids: set[int] = set()
        records: tuple[model.KeyRecord, ...] = ()
        if op in _TASK_OPS:
            task_id = args.get("task_id")
            if not _is_int(task_id) or not 1 <= task_id <= self.size or self.task(task_id).forgotten:
                model.apply(self.materialise(), op, args)  # raises, with the model's words for the id
                raise AssertionError(f"the model accepted {op} of unknown or forgotten task {task_id!r}")
            ids.add(task_id)
        if op in _TIMED_OPS:
            now = args.get("now")
            if _is_int(now) and now >= self.now:  # otherwise the model refuses the time before expiring
                if variants.interval == "half-open":
                    ids.update(i for i, t in self.running.items() if t.expires_at <= now)
                else:
                    ids.update(i for i, t in self.running.items() if not model.lease_live(variants, t.expires_at, now))
                if op == "renew" and variants.heartbeat == "worker" and task_id in self.running:
                    worker = self.running[task_id].worker  # a renew extends every lease of its worker
                    ids.update(i for i, t in self.running.items() if t.worker == worker)
                if op == "dispatch":
                    worker = args.get("worker")
                    ids.update(i for i, t in self.running.items() if t.worker == worker)
                    best = self.best_eligible(now)
                    if best is not None:
                        ids.add(best)
                    chosen = getattr(observed, "task_id", None) if follow else None
                    if _is_int(chosen) and 1 <= chosen <= self.size:
                        ids.add(chosen)  # under order=any the scheduler's own pick
                    if variants.exhaust == "at-dispatch":
                        ids.update(range(1, self.size + 1))
                elif op == "prune":
                    before = args.get("before")
                    if _is_int(before) and 0 <= before <= now:  # otherwise the model refuses it
                        if self.base.bounds is None:
                            raise AssertionError("a prune needs the history's prune bounds (prune_bounds): "
                                                 "without them when tasks ended is erased")
                        gone = self.forgettable(before)
                        ids.update(gone)
                        records = tuple(r for r in map(self.record_of, gone) if r is not None)
        elif op == "submit":
            key = args.get("key")
            if isinstance(key, str):
                record = self.keys[key] if key in self.keys else self.base.keys.get(key)
                if record is not None:
                    records = (record,)  # with its real task id, which the model hands back as it is
        order = sorted(ids)
        view_tasks = tuple(replace(self.task(i), id=n) for n, i in enumerate(order, 1))
        if op in _TASK_OPS:
            args = {**args, "task_id": order.index(args["task_id"]) + 1}
        if op == "prune":  # the records of the tasks it may forget, under their numbers in the view
            records = tuple(replace(r, task_id=order.index(r.task_id) + 1) for r in records)
        view = model.State(now=self.now, tasks=view_tasks, workers=self.workers, last_token=self.last_token,
                           keys=records, variants=variants, issued=self.issued)
        if follow:
            if isinstance(observed, Lease):
                chosen = observed.task_id
                renamed = replace(observed, task_id=order.index(chosen) + 1) if chosen in order else observed
            else:
                renamed = observed
            followed = model.follow(view, op, args, renamed)
            if followed is None:
                return None
            after, value = followed
        else:
            after, value = model.apply(view, op, args)
        if after is view:
            return self, value
        changes = {order[n]: _canonical_task(replace(t, id=order[n]), variants, bounds)
                   for n, t in enumerate(after.tasks[:len(order)]) if t is not view_tasks[n]}
        size = self.size
        if len(after.tasks) > len(order):  # a submit made one task
            size += 1
            changes[size] = _canonical_task(replace(after.tasks[-1], id=size), variants, bounds)
            if op == "submit":
                value = size
        if isinstance(value, Lease):
            value = replace(value, task_id=order[value.task_id - 1])
        keys, keys_hash = self.keys, self.keys_hash
        if op == "prune" and len(after.keys) < len(records):  # the keys of the tasks it forgot
            keys = dict(keys)
            kept = {r.key for r in after.keys}
            for record in records:
                if record.key not in kept:
                    real = self.keys[record.key] if record.key in self.keys else self.base.keys[record.key]
                    keys_hash = (keys_hash - hash(real)) & _HASH_MASK
                    if record.key in self.base.keys:
                        keys[record.key] = None  # forgotten since the base
                    else:
                        del keys[record.key]
        if len(after.keys) > len(records):
            keys = dict(keys)
            for record in after.keys[len(records):]:
                record = model.KeyRecord(record.key, size, record.arguments)
                keys[record.key] = record
                keys_hash = (keys_hash + hash(record)) & _HASH_MASK
        workers = after.workers if after.workers == self.workers else tuple(sorted(after.workers))
        if not changes:
            return _State(self.base, self.delta, size, self.running, self.ready, keys, after.now, after.last_token,
                          workers, self.tasks_hash, keys_hash, after.issued), value
        delta, running, ready, tasks_hash = dict(self.delta), self.running, self.ready, self.tasks_hash
        copied_running = copied_ready = False
        for task_id, task in changes.items():
            old = self.task(task_id) if task_id <= self.size else None
            if old is not None:
                tasks_hash -= hash(old)
                if task_id in self.delta and old.status in DISPATCHABLE_STATUSES:
                    if not copied_ready:
                        ready, copied_ready = list(ready), True
                    del ready[bisect.bisect_left(ready, self.base.key(old))]
            tasks_hash += hash(task)
            delta[task_id] = task
            if task.status in DISPATCHABLE_STATUSES:
                if not copied_ready:
                    ready, copied_ready = list(ready), True
                bisect.insort(ready, self.base.key(task))
            if task.status is Status.RUNNING or task_id in running:
                if not copied_running:
                    running, copied_running = dict(running), True
                if task.status is Status.RUNNING:
                    running[task_id] = task
                else:
                    del running[task_id]
        following = _State(self.base, delta, size, running, ready, keys, after.now, after.last_token, workers,
                           tasks_hash & _HASH_MASK, keys_hash, after.issued)
        return (following.rebased() if len(delta) > REBASE_IN_WINDOW else following), value
