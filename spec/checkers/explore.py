"""Bounded exhaustive exploration: every call sequence in a small scope, breadth first.

``fencepost explore`` does for the fencepost model what TLC does for a TLA+
spec: from ``model.initial()`` it applies every call the scope allows to every
reachable state, breadth first, keeps each distinct state once, and checks
every invariant of ``spec.invariants`` on every transition. With ``--impl
MODULE:FACTORY`` it also drives that implementation along every explored path
and compares it with the model on every transition. Where ``fencepost check``
samples, this is a guarantee: no sequence of calls inside the scope breaks
the contract. Outside it, nothing is claimed.

The scope (``Scope``; ``--workers``, ``--capacity``, ``--tasks``,
``--horizon``, ``--depth``, ``--priorities``, ``--max-attempts``,
``--durations``, ``--prune``, ``--batches``) fixes every argument domain,
invalid values included:

* ``add_worker``: the next unused name of ``w1..wN`` with capacity C (names
  come in order: all workers have the same capacity, so adding ``w2`` before
  ``w1`` is only a renaming), plus a duplicate, capacity 0 and an empty name.
* ``submit``, while fewer than ``--tasks`` exist: every priority, ``due_at``
  None or any time ``0..T``, every ``max_attempts``, ``retry_delay`` 1; in any
  state also ``due_at=-1``, ``max_attempts=0``, ``retry_delay=0`` and
  ``priority=True``.
* timed calls: every time from ``now`` to the horizon T, and one invalid time
  (``now - 1``, or -1 at time 0); every added worker and the next, unknown,
  name; every duration and 0; task ids ``1..submitted+1``; tokens
  ``1..issued+1``; ``advance(now=True)``. Each invalid argument is tried at
  every valid time, so a scheduler that expires leases before validating is
  caught.
* with ``--prune``, ``prune(before, now)`` for every ``before`` up to ``now + 1``.
* with ``--batches``, the batch operations (``batch_calls``): ``submit_many``
  of two tasks, ``dispatch_many`` with every limit up to one more than it
  can hand out, ``complete_many`` and ``fail_many`` of the live reports, a
  duplicated one and a stale one, empty batches and an invalid batch of each.
  Each is one transition. Made of calls the scope already has, they add
  transitions but no states. Against an implementation that does not offer
  them (capability ``batch``) they are left out, and the output says so.

Distinct states are kept by ``state_key``. Two states with the same key give
the same result to every later call and the same later views of every task
that is not final; the key drops a running task's ``started_at`` (nothing
reads it after the dispatch that returned it) and, of a final task,
everything but its status and ``expired_token``. The model never changes a
final task again, so the rest of its view stays what it was when the task
became final, where it was checked; status and ``expired_token`` decide how a
later call naming it is refused. A test runs a small scope with the whole
state as the key and finds the same outcomes, boundaries and views.

Invariants run over the model's task views on every transition that changes
the state, with a ``History`` rebuilt from the parent state (the model keeps
no history and needs none); a call the model rejects with ``ValueError``
leaves its state as it was by construction. Every transition is classified
with ``spec.checkers.coverage.classify``; a run whose scope covers the default one
fails if it misses a declared outcome or a boundary its scope can reach.

With ``--impl``, each transition runs on a fresh implementation that replays
the parent state's path (this needs nothing of a third-party scheduler but
the protocol, and measured faster than copying one: see
``ImplementationCheck``). Its result, clock and every task view must equal
the model's, after a refused call ``task()`` must refuse the id past the
model's last, and its own ``check_invariants()`` must pass when it has one;
equal views mean the invariants hold over its views too. A failing transition
is replayed in ``spec.checkers.lockstep.Lockstep`` (``run_calls``) for the
counterexample, so it reads exactly like ``fencepost check``'s. Dedup is by
the model's state, so an implementation is driven along one path to each
model state, the first in breadth-first order: a bug that needs the
implementation's own internals to differ between two paths to the same model
state can hide from this (``fencepost check``'s random paths complement it).

An implementation whose objects have ``reopen()`` (see
``spec.checkers.capabilities``) is checked across restarts too: every
transition is also taken after a restart at its parent state (the path
replayed, then ``reopen()``, then the call), and after every transition the
implementation is reopened and must still show the model's clock and views.
A restart leaves the model's state as it was, so it adds no states, only
checks (about twice the implementation's work).

Large levels are split over ``--jobs`` forked processes; the result is the
same for any number of jobs.

Exit status: 0 nothing violated; 1 a violation, with a shortest
counterexample (breadth-first order finds one first), or a coverage gap at the
default scope or above; 2 bad arguments.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from fencepost.spec import invariants, model
from fencepost.spec.checkers.boundaries import check_boundaries
from fencepost.spec.checkers.capabilities import BATCH, Capabilities, detect
from fencepost.spec.checkers.deadline import CallTimeout, Watch, run_watched, watched_factory
from fencepost.spec.checkers.coverage import Coverage, classify
from fencepost.spec.formats.trace import TraceStep
from fencepost.spec.checkers.results import comparable, normalize, view_tuple
from fencepost.spec.checkers.invalid_calls import offered_calls
from fencepost.spec.checkers.lockstep import run_calls
from fencepost.spec.checkers.renaming import Renaming
from fencepost.spec.checkers import levels
from fencepost.spec.variants import DEFAULT, Variants
from fencepost.spec.protocol import BATCH_OPERATIONS, FINAL_STATUSES, OPERATIONS, PRUNE_OPERATIONS, RESTART, Status, says_forgotten

Call = tuple[str, dict]


@dataclass(frozen=True)
class Scope:
    """The bounds of one exploration; every argument domain follows from them."""

    workers: int = 1  # names w1..wN, added in order
    capacity: int = 1  # every worker's capacity
    tasks: int = 2  # at most this many submits succeed
    horizon: int = 2  # times 0..horizon; due_at None or 0..horizon
    depth: int | None = None  # most calls on a path; None: until no new state appears
    priorities: tuple[int, ...] = (0, 1)  # submit's priority
    max_attempts: tuple[int | None, ...] = (None, 1, 2)  # submit's max_attempts (None: unlimited)
    durations: tuple[int, ...] = (1, 2)  # dispatch's and renew's duration (0 is tried too, as invalid)
    prune: bool = False  # also prune(before, now) for every before in 0..now (and before = now + 1, invalid)
    batches: bool = False  # also submit_many, dispatch_many, complete_many, fail_many (see batch_calls)

    def describe(self) -> str:
        depth = "unbounded" if self.depth is None else str(self.depth)
        return (
            f"{self.workers} worker(s) of capacity {self.capacity}, up to {self.tasks} task(s), "
            f"times 0..{self.horizon}, priorities {_listed(self.priorities)}, "
            f"max_attempts {_listed(self.max_attempts)}, durations {_listed(self.durations)}, depth {depth}"
            + (", prune" if self.prune else "")
            + (", batches" if self.batches else "")
        )

    def covers(self, other: Scope) -> bool:
        """True when every call sequence of ``other`` is also one of this scope."""
        deeper = self.depth is None or (other.depth is not None and self.depth >= other.depth)
        return (
            deeper
            and self.workers >= other.workers
            and self.capacity == other.capacity
            and self.tasks >= other.tasks
            and self.horizon >= other.horizon
            and set(self.priorities) >= set(other.priorities)
            and set(self.max_attempts) >= set(other.max_attempts)
            and set(self.durations) >= set(other.durations)
            and self.prune >= other.prune
            and self.batches >= other.batches
        )

    def unreachable(self) -> dict[str, str]:
        """Declared boundaries and outcomes no call sequence in this scope can reach, with what would.

        A boundary goes by its name, an outcome as ``Coverage.missing`` names it (``op -> outcome``).
        """
        out = {}
        if self.tasks < 10:
            out["ids_past_9"] = "needs --tasks 10"
        if self.tasks < 2:
            out["equal_due_times"] = "needs --tasks 2"
        if self.batches and (self.capacity < 2 or self.tasks < 2):
            out["dispatch_many -> leases"] = "needs --capacity 2 and --tasks 2"  # two leases in one call
        return out


def _listed(values: tuple) -> str:
    return ",".join("none" if v is None else str(v) for v in values)


#: The default scope: every declared outcome and every boundary but
#: ``ids_past_9`` is reached, in under a minute on two cores.
DEFAULT_SCOPE = Scope()


# ---------------------------------------------------------------- the calls of one state


def calls(state: model.State, scope: Scope) -> Iterator[Call]:
    """Every call the scope allows in ``state``, valid and invalid, in a fixed order."""
    names = [name for name, _ in state.workers]
    unknown = f"w{len(names) + 1}"
    times = range(state.now, scope.horizon + 1)
    bad_time = state.now - 1 if state.now > 0 else -1
    count = len(state.tasks)
    ids = range(1, count + 1)
    tokens = range(1, state.last_token + 2)
    durations = scope.durations
    # add_worker
    if len(names) < scope.workers:
        yield "add_worker", {"worker": unknown, "capacity": scope.capacity}
    if names:
        yield "add_worker", {"worker": names[0], "capacity": scope.capacity}
    yield "add_worker", {"worker": unknown, "capacity": 0}
    yield "add_worker", {"worker": "", "capacity": scope.capacity}
    # submit
    if count < scope.tasks:
        for priority in scope.priorities:
            for due_at in (None, *range(scope.horizon + 1)):
                for max_attempts in scope.max_attempts:
                    yield "submit", _submit_args(priority, due_at, max_attempts)
    yield "submit", {"due_at": -1}
    yield "submit", {"max_attempts": 0}
    yield "submit", {"retry_delay": 0}
    yield "submit", {"priority": True}
    # dispatch
    for worker in names:
        for now in times:
            for duration in (*durations, 0):
                yield "dispatch", {"worker": worker, "now": now, "duration": duration}
        yield "dispatch", {"worker": worker, "now": bad_time, "duration": durations[0]}
    for now in times:
        yield "dispatch", {"worker": unknown, "now": now, "duration": durations[0]}
    # complete, fail
    for op in ("complete", "fail"):
        for task_id in ids:
            for token in tokens:
                for now in times:
                    yield op, {"task_id": task_id, "token": token, "now": now}
            yield op, {"task_id": task_id, "token": 1, "now": bad_time}
        for now in times:
            yield op, {"task_id": count + 1, "token": 1, "now": now}
    # cancel
    for task_id in (*ids, count + 1):
        for now in times:
            yield "cancel", {"task_id": task_id, "now": now}
    if count:
        yield "cancel", {"task_id": 1, "now": bad_time}
    # renew
    for task_id in ids:
        for token in tokens:
            for now in times:
                for duration in durations:
                    yield "renew", {"task_id": task_id, "token": token, "now": now, "duration": duration}
        current = state.tasks[task_id - 1].token or state.last_token or 1
        for now in times:
            yield "renew", {"task_id": task_id, "token": current, "now": now, "duration": 0}
        yield "renew", {"task_id": task_id, "token": current, "now": bad_time, "duration": durations[0]}
    for now in times:
        yield "renew", {"task_id": count + 1, "token": 1, "now": now, "duration": durations[0]}
    # advance
    for now in times:
        yield "advance", {"now": now}
    yield "advance", {"now": bad_time}
    yield "advance", {"now": True}
    # prune: every bound up to now, so each final task's end time is met exactly and passed
    if scope.prune:
        for now in times:
            for before in range(now + 2):  # now + 1: invalid
                yield "prune", {"before": before, "now": now}
    # batches last, so that a state a single call reaches at the same depth keeps its single-call path
    if scope.batches:
        yield from batch_calls(state, scope)


def _submit_args(priority: int, due_at: int | None, max_attempts: int | None) -> dict:
    """``submit``'s arguments for these values, each left out where it is the default."""
    args: dict = {"priority": priority} if priority else {}
    if due_at is not None:
        args["due_at"] = due_at
    if max_attempts is not None:
        args["max_attempts"] = max_attempts
    return args


#: The one invalid ``submit_many`` explore makes: a valid entry, then one ``submit`` refuses,
#: so a batch that keeps the entries before the bad one is seen.
INVALID_SUBMIT_MANY = ({}, {"retry_delay": 0})


def batch_calls(state: model.State, scope: Scope) -> Iterator[Call]:
    """The batch calls ``calls`` adds under ``scope.batches``, valid and invalid, in a fixed order.

    Each batch is made of single calls the scope already has, so batches add
    transitions, never states (a batch reaches what its single calls reach
    one by one), and the distinct states are as many as without them; only
    the depth at which a state is first met can shrink. Per state:

    * ``submit_many``: while at least two more tasks may be submitted, two
      entries from ``submit``'s domain: the first of it (the scope's first
      priority and ``max_attempts``, due now) twice, and with each single
      change of it the scope allows (another priority, ``due_at`` at the
      horizon, another ``max_attempts``) in both orders; in any state the
      empty batch and ``INVALID_SUBMIT_MANY``.
    * ``dispatch_many``, per added worker, time and duration: every
      ``limit`` from 1 to one more than the leases the batch can hand out
      there (the worker's room after expiry, or the eligible tasks if
      fewer), so a batch is cut short by a full worker or by nothing left
      to lease. Invalid: ``limit=0``, ``duration=0`` and an unknown worker
      at every time (as for ``dispatch``, so a batch that expires leases
      before validating is seen), and one time going backwards.
    * ``complete_many`` and ``fail_many``, at every time: the live reports
      (every running task with its current token, in id order); those with
      the first repeated (a duplicated report); the first live report
      followed by each stale one (a running task with the newest token
      issued that is not its own, a task with the token of its last expired
      lease), so a stale report of a task still running comes after an
      accepted one; and the empty batch. At a later time the live reports
      are the late ones of expired leases. Invalid: a live report followed
      by an unknown id at every time (nothing in the batch may be done), and
      the live reports at a time going backwards.

    Why these bounds: an exhaustive product (every list of every pair, every
    pair of submits) would multiply the transitions per state by tens; these
    lists are the cases the contract singles out (a batch cut short, a
    duplicate, a stale report after an accepted one, all or nothing), and
    since batches add no states they cost transitions only.
    """
    names = [name for name, _ in state.workers]
    times = range(state.now, scope.horizon + 1)
    bad_time = state.now - 1 if state.now > 0 else -1
    count = len(state.tasks)
    # submit_many
    if count + 2 <= scope.tasks:
        base = _submit_args(scope.priorities[0], None, scope.max_attempts[0])
        others = [_submit_args(p, None, scope.max_attempts[0]) for p in scope.priorities[1:]]
        others.append(_submit_args(scope.priorities[0], scope.horizon, scope.max_attempts[0]))
        others += [_submit_args(scope.priorities[0], None, m) for m in scope.max_attempts[1:]]
        yield "submit_many", {"tasks": [base, dict(base)]}
        for other in others:
            yield "submit_many", {"tasks": [dict(base), other]}
            yield "submit_many", {"tasks": [dict(other), dict(base)]}
    yield "submit_many", {"tasks": []}
    yield "submit_many", {"tasks": [dict(entry) for entry in INVALID_SUBMIT_MANY]}
    # dispatch_many
    duration = scope.durations[0]
    for worker in names:
        for now in times:
            most = _most_leases(state, worker, now)
            for length in scope.durations:
                for limit in range(1, most + 2):
                    yield "dispatch_many", {"worker": worker, "now": now, "duration": length, "limit": limit}
            yield "dispatch_many", {"worker": worker, "now": now, "duration": duration, "limit": 0}
            yield "dispatch_many", {"worker": worker, "now": now, "duration": 0, "limit": 1}
        yield "dispatch_many", {"worker": worker, "now": bad_time, "duration": duration, "limit": 1}
    for now in times:
        yield "dispatch_many", {"worker": f"w{len(names) + 1}", "now": now, "duration": duration, "limit": 1}
    # complete_many, fail_many
    live = [[t.id, t.token] for t in state.tasks if t.status is Status.RUNNING]
    stale = _stale_reports(state)
    lists = [live, [*live, live[0]]] if live else []
    lists += [[*live[:1], report] for report in stale]  # an accepted report first, when there is one
    lists.append([])
    unknown = [*live[:1], [count + 1, 1]]
    for op in ("complete_many", "fail_many"):
        for now in times:
            for reports in lists:
                yield op, {"reports": [list(pair) for pair in reports], "now": now}
            yield op, {"reports": [list(pair) for pair in unknown], "now": now}
        yield op, {"reports": [list(pair) for pair in live], "now": bad_time}


def _most_leases(state: model.State, worker: str, now: int) -> int:
    """How many leases one ``dispatch_many`` of ``worker`` at ``now`` can hand out at most."""
    seen = model.expire(state, now)
    ready = len(model.eligible(seen))
    if seen.variants.capacity == "none":
        return ready
    room = dict(seen.workers)[worker] - model.load(seen, worker)
    return max(0, min(room, ready))


def _stale_reports(state: model.State) -> list[list]:
    """A stale ``[task_id, token]`` per task that has one: a running task with the newest other token
    issued, a task not running with the token of its last expired lease."""
    out = []
    for t in state.tasks:
        if t.status is Status.RUNNING:
            other = state.last_token if state.last_token != t.token else state.last_token - 1
            if other >= 1:
                out.append([t.id, other])
        elif t.expired_token is not None:
            out.append([t.id, t.expired_token])
    return out


# ---------------------------------------------------------------- the state key


def _task_key(task: model.Task) -> tuple:
    if task.status in FINAL_STATUSES:
        # A final task never changes again; only these decide how a later call naming it is
        # refused, and, for prune, when it ended and whether it was forgotten (both stay as they
        # were set unless prune is explored, so they split no states otherwise).
        return (task.status, task.expired_token, task.ended_at, task.forgotten)
    # Everything but started_at, which nothing reads after the dispatch that set it.
    return (
        task.status, task.priority, task.due_at, task.max_attempts, task.retry_delay, task.attempts,
        task.worker, task.token, task.expires_at, task.cancel_requested, task.expired_token,
    )


def state_key(state: model.State, prune: bool = False) -> tuple:
    """What identifies a state for deduplication; see the module docstring for what it drops.

    Without ``prune`` explored, a final task's end time changes nothing any later call
    can show, so it is dropped (as ``started_at`` is), and the states stay as many as before.
    """
    tasks = tuple(map(_task_key, state.tasks))
    if not prune:
        tasks = tuple(t[:2] if t[0] in FINAL_STATUSES else t for t in tasks)
    return (state.now, state.last_token, state.workers, tasks)


# ---------------------------------------------------------------- invariants over model states


def observation(state: model.State) -> invariants.Observation:
    """The model's state as the invariants read an implementation's."""
    return invariants.Observation(
        now=state.now,
        tasks=[model.view(t) for t in state.tasks],
        capacities=dict(state.workers),
        max_attempts={t.id: t.max_attempts for t in state.tasks},
        variants=state.variants,
    )


def history_at(state: model.State) -> invariants.History:
    """What the invariants remember after seeing ``state``, rebuilt from the state alone.

    The model keeps no history, and needs none: every task that ever became
    final, or cancelled, still is, and ``last_token`` counts every token issued
    (each was seen on a running task the step it was issued). Running the
    invariants once over ``state`` with an empty history records the rest.
    """
    history = invariants.History()
    invariants.check_all(observation(state), history)
    history.last_token = state.last_token
    return history


def _copy_history(history: invariants.History) -> invariants.History:
    return invariants.History(
        last_token=history.last_token,
        final=dict(history.final),
        cancelled_at=dict(history.cancelled_at),
        prev_tokens=dict(history.prev_tokens),
    )


# ---------------------------------------------------------------- results


@dataclass
class Violation:
    """The shortest counterexample: numbered steps, the last one marked."""

    trace: list[TraceStep]
    problem: str


@dataclass
class Result:
    """What one exploration found, with TLC's statistics."""

    scope: Scope
    generated: int = 0  # transitions computed, duplicates and rejected calls included
    distinct: int = 0  # distinct states, the initial one included
    depth: int = 0  # calls on the longest shortest path to a state
    queued: int = 0  # states found but not expanded (depth bound or a violation)
    seconds: float = 0.0
    taken: Counter = field(default_factory=Counter)  # op -> transitions computed
    found: Counter = field(default_factory=Counter)  # op -> distinct states it reached first
    coverage: Coverage = field(default_factory=Coverage)
    violation: Violation | None = None
    skipped: tuple[str, ...] = ()  # optional capabilities asked for that the implementation does not offer
    over_budget: bool = False  # the search stopped at its budget of transitions (see ``explore``)

    @property
    def missing(self) -> list[str]:
        """Declared outcomes and boundaries not reached that this scope can reach."""
        skip = self.scope.unreachable()
        return [gap for gap in self.coverage.missing()
                if not any(gap == name or gap.startswith(f"boundary {name} (") for name in skip)]


# ---------------------------------------------------------------- implementation checks


def _replay(factory: Callable[[], object], path: list[Call]) -> object:
    """A fresh implementation that has made the calls of ``path`` (each already checked)."""
    impl = factory()
    for op, args in path:
        if op == RESTART:
            impl = impl.reopen()
            continue
        try:
            getattr(impl, op)(**args)
        except ValueError:
            pass
    return impl


class ImplementationCheck:
    """Drives an implementation along explored paths and compares it with the model.

    Each transition gets its own implementation, fresh from the factory,
    replaying the parent state's path: it needs nothing of a third-party
    scheduler but the protocol. Copying one scheduler per parent state
    instead was measured slower here: ``copy.deepcopy`` of an
    ``IndexedScheduler`` costs as much as replaying thirty calls, and even
    ``pickle.loads`` of a snapshot taken once per parent state made the
    default-scope exploration 10-20% slower than replaying.
    """

    def __init__(self, factory: Callable[[], object], watch: Watch | None = None, variants: Variants = DEFAULT) -> None:
        self.variants = variants
        # under order=any or tokens=opaque the scheduler may answer otherwise than the model's own pick:
        # each transition is then judged by replaying its path in lockstep, the model following it
        self.follows = variants.order == "any" or variants.tokens == "opaque" or variants.views == "none"
        self.factory = factory if watch is None else watched_factory(factory, watch)
        self.unwatched = factory
        self.watch = watch
        self._views: dict[model.Task, tuple] = {}  # the model's view of a task, as view_tuple gives it
        self.capabilities = detect(factory)
        self.restarts = self.capabilities.restart  # objects have reopen(): check across restarts too

    def expected_view(self, task: model.Task) -> tuple:
        view = self._views.get(task)
        if view is None:
            view = self._views[task] = view_tuple(model.view(task))
        return view

    def disagreement(self, path: list[Call], op: str, args: dict, expected: object, after: model.State) -> list[Call] | None:
        """None when one call at the end of ``path`` matches the model's result, clock and views;
        else the calls (restarts included) on which the implementation disagreed.

        With restarts, the call is also made on an implementation reopened
        after ``path``, and each implementation is reopened after the call
        and compared again.
        """
        if self.watch is not None:
            self.watch.context = (path, op, args)  # what to replay if a call hangs
        if self.follows:
            calls_ = [*path, (op, args)]
            try:
                return None if self._follows(calls_) else calls_
            except Exception:  # noqa: BLE001 - any other exception, or an invariant of its own, is a disagreement
                return calls_
        refused = comparable(expected) == ("error",)
        ways = [[*path, (op, args)]]
        if self.restarts:
            ways.append([*path, (RESTART, {}), (op, args)])
        for calls_ in ways:
            try:
                impl = _replay(self.factory, calls_[:-1])
                try:
                    got = normalize(getattr(impl, op)(**args))
                except ValueError as exc:
                    got = ("error", str(exc))
                if comparable(got) != comparable(expected) or not self._shows(impl, after, refused=refused):
                    return calls_
                if self.restarts and not self._shows(impl.reopen(), after, refused=refused):
                    return [*calls_, (RESTART, {})]
            except Exception:  # noqa: BLE001 - any other exception, or an invariant of its own, is a disagreement
                return calls_
        return None

    def _follows(self, calls_: list[Call]) -> bool:
        """Whether a fresh implementation answers ``calls_`` as the model allows, the model following its
        choices (``model.follow``, tokens renamed as ``Lockstep`` does), and then shows the model's state.

        As cheap as the contract's replay plus one model step per call; ``counterexample``
        then replays a failing path in lockstep for the report.
        """
        impl, state = self.factory(), model.initial(self.variants)
        renaming = Renaming() if self.variants.tokens == "opaque" else None
        refused = False
        for op, args in calls_:
            sent = args if renaming is None else renaming.args_to_scheduler(op, args)
            try:
                expected_state, value = model.apply(state, op, dict(sent))
                expected = normalize(value, renaming is not None)
            except ValueError as exc:
                expected_state, value, expected = state, None, ("error", str(exc))
            refused = comparable(expected) == ("error",)
            try:
                raw = getattr(impl, op)(**sent)
            except ValueError:
                if comparable(expected) != ("error",):
                    return False
                continue
            if comparable(normalize(raw, renaming is not None)) != comparable(expected):
                followed = model.follow(state, op, dict(sent), raw) if comparable(expected) != ("error",) else None
                if followed is None:
                    return False
                expected_state, value = followed
            state = expected_state
            if renaming is not None:
                for lease in _leases(op, value):
                    renaming.saw(lease.token)
        if self.variants.views == "none":
            return impl.now == state.now
        return self._shows(impl, state, fresh=True, refused=refused)

    def _shows(self, impl: object, after: model.State, fresh: bool = False, refused: bool = False) -> bool:
        """True when ``impl``'s clock and views are the model's, and its own invariants hold; after
        a ``refused`` call, also ``task()`` refuses the id past the model's last.

        A refused call leads to no new state, so no later call would see a task it added (a
        ``submit_many`` that kept the entries before an invalid one). After an accepted call
        the next ``submit`` along the path shows it, by its id, as it shows any other hidden
        difference (within the limit of one path per state); asked after every call, it cost
        1.11x the CPU of a default-scope ``--impl`` run (docs/exploration.md).

        Raises:
            Exception: whatever the implementation raises (a disagreement to the caller).
        """
        if impl.now != after.now:
            return False
        if refused:
            try:
                impl.task(len(after.tasks) + 1)
                return False
            except ValueError:
                pass
        for task in after.tasks:
            if task.forgotten:  # prune forgot it: task() must raise, saying so
                try:
                    impl.task(task.id)
                except ValueError as exc:
                    if says_forgotten(exc):
                        continue
                return False
            want = view_tuple(model.view(task)) if fresh else self.expected_view(task)
            if view_tuple(impl.task(task.id)) != want:
                return False
        check = getattr(impl, "check_invariants", None)
        if check is not None:
            check()
        return True

    def counterexample(self, calls_: list[Call]) -> Violation | None:
        """The failing calls replayed in lockstep, as ``fencepost check`` reports them."""
        trace = run_calls(self.unwatched, calls_, None if self.watch is None else self.watch.seconds, self.variants)
        if trace is None:
            return None
        problems = [step.problem for step in trace if step.problem]
        return Violation(trace, problems[-1] if problems else "the implementation diverged")


def _leases(op: str, value: object) -> list:
    """The leases a dispatch or a dispatch_many the model accepted handed out (none for other calls)."""
    if op == "dispatch" and value is not None:
        return [value]
    if op == "dispatch_many" and isinstance(value, list):
        return value
    return []


# ---------------------------------------------------------------- the search


def _path(parents: dict, key: tuple) -> list[Call]:
    calls_: list[Call] = []
    while parents[key] is not None:
        key, op, args = parents[key]
        calls_.append((op, args))
    calls_.reverse()
    return calls_


def _model_trace(calls_: list[Call], problem: str, variants: Variants = DEFAULT) -> Violation:
    """The model's own steps along ``calls_`` (expected = got), the last one marked."""
    state = model.initial(variants)
    trace = []
    for op, args in calls_:
        try:
            state, result = model.apply(state, op, dict(args))
            expected = normalize(result)
        except ValueError as exc:
            expected = ("error", str(exc))
        trace.append(TraceStep(op, dict(args), expected, expected))
    if trace:
        trace[-1].problem = problem
    return Violation(trace, problem)


@dataclass
class _Level:
    """What expanding part of one breadth-first level found, in frontier order."""

    generated: int = 0
    taken: Counter = field(default_factory=Counter)
    coverage: Coverage = field(default_factory=Coverage)
    new: list = field(default_factory=list)  # (after_key, (key, op, args), after), first discovery first
    violation: Violation | None = None
    expanded: int = 0  # frontier states fully expanded before a violation stopped it


def _expand_all(
    frontier: list, scope: Scope, parents: dict, impl: ImplementationCheck | None,
    superseded: Callable[[], bool] = lambda: False, budget: int | None = None, sent: set | None = None,
) -> _Level:
    """Expand ``frontier`` in order against the states known in ``parents``.

    Stops at a violation, as soon as ``superseded()`` says an earlier part
    of the level found one (which makes the rest of this part irrelevant), or
    once ``budget`` transitions were generated (a state is expanded whole).
    ``sent``, when given, holds the keys of new states an earlier part of the
    level already reported: they are left out of ``_Level.new`` (the merge
    keeps a state's first discovery only, so a later part's copy is never
    used) and the set gains this part's new keys. Time: the calls of every
    state expanded.
    """
    level = _Level()
    fresh: set = set() if sent is None else sent
    for state, key in frontier:
        if superseded() or (budget is not None and level.generated >= budget):
            break
        level.violation = _expand(state, key, scope, parents, impl, level, fresh)
        if level.violation is not None:
            break
        level.expanded += 1
    return level


def _expand(
    state: model.State, key: tuple, scope: Scope, parents: dict, impl: ImplementationCheck | None,
    level: _Level, fresh: set,
) -> Violation | None:
    """Apply every call to ``state``; record new states in ``level``; return a violation, if any."""
    history = history_at(state)
    path = _path(parents, key) if impl is not None else []
    checked = {key}  # the invariants judge (parent, child); a child reached twice is judged once
    record = level.coverage.record
    taken = level.taken
    variants = state.variants
    for op, args in calls(state, scope):
        if variants != DEFAULT and not offered_calls([(op, args)], variants):
            continue  # the queue does not offer it
        level.generated += 1
        taken[op] += 1
        try:
            after, value = model.apply(state, op, args)
            expected = normalize(value)
            raised = False
        except ValueError as exc:
            after, value, expected, raised = state, None, ("error", str(exc)), True
        outcome, boundaries = classify(op, args, state, after, value, raised)
        record(op, outcome, boundaries)
        after_key = key if raised else (state_key(after, True) if scope.prune else state_key(after))
        if after_key not in checked:
            checked.add(after_key)
            try:
                invariants.check_all(observation(after), _copy_history(history))
            except invariants.InvariantViolation as exc:
                return _model_trace([*_path(parents, key), (op, args)], str(exc), variants)
        failing = impl.disagreement(path, op, args, expected, after) if impl is not None else None
        if failing is not None:
            return impl.counterexample(failing) or _model_trace(
                failing, "the implementation disagreed once, but not when replayed again: is it deterministic?", variants
            )
        if after_key not in parents and after_key not in fresh:
            fresh.add(after_key)
            level.new.append((after_key, (key, op, args), after))
    return None


def _expand_level(frontier: list, scope: Scope, parents: dict, impl: ImplementationCheck | None, jobs: int,
                  budget: int | None = None) -> list[_Level]:
    """Expand one level: in this process, or, when it is large enough, cut into parts that ``jobs``
    forked processes take as they free up (``spec.checkers.levels``).

    Merged in order, the parts give what one process would. A ``budget``
    (transitions left) is kept in one process only, so the states it
    reaches are the same whatever ``jobs`` is.
    """
    if jobs <= 1 or len(frontier) < levels.PARALLEL_MIN or budget is not None:
        return [_expand_all(frontier, scope, parents, impl, budget=budget)]
    return levels.expand_level(
        frontier,
        lambda part, superseded, sent: _expand_all(part, scope, parents, impl, superseded=superseded, sent=sent),
        jobs,
    )


def default_jobs() -> int:
    """Processes ``explore`` uses by default: one per core, where processes can fork."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return os.cpu_count() or 1


def explore(
    scope: Scope = DEFAULT_SCOPE,
    factory: Callable[[], object] | None = None,
    jobs: int = 1,
    progress: Callable[[int, Result], None] | None = None,
    call_timeout: float | None = None,
    variants: Variants = DEFAULT,
    budget: int | None = None,
) -> Result:
    """Explore every call sequence of ``scope`` breadth first; stop at the first violation.

    Args:
        scope: the bounds; see ``Scope``.
        factory: when given, a zero-argument callable returning a fresh
            implementation to compare with the model on every transition.
        jobs: processes to expand large levels with (forked; 1 on platforms
            that cannot fork). The result does not depend on it, except the
            counts of a run that stops at a violation.
        progress: called after each level with its number and the counts so far.
        call_timeout: seconds one call into the implementation may take; a
            call that takes longer ends the search with a counterexample
            ending in that call. Enforced on a watched thread when ``jobs``
            is 1 (forked shares run without it), and by a factory that keeps
            its own deadlines (``--exec``) always.
        variants: the declared contract variants: the model explores under
            them (its own pick where they allow several answers, the calls
            the queue offers), and an implementation is judged in lockstep
            along each path, the model following its choices.
        budget: most transitions to generate (None: no bound); past it the
            search stops with ``Result.over_budget`` set, and what it did not
            reach is not claimed. ``spec.checkers.canonical`` bounds its
            searches so.

    Returns:
        A ``Result``; ``violation`` holds a shortest counterexample, if any:
        the same one whatever ``jobs`` is, since shares are merged in
        frontier order. With ``scope.batches`` and an implementation that
        does not offer them (capability ``batch``), the batches are left
        out: ``Result.scope`` is the scope explored and ``Result.skipped``
        names ``batch``.

    Raises:
        ShardWorkerDied: a forked process ended in the middle of its share
            (the scheduler ended it): there is no verdict.
    """
    watched = factory is not None and call_timeout is not None and jobs <= 1 and not getattr(factory, "keeps_deadlines", False)
    if watched:
        watch = Watch(call_timeout)
        impl = ImplementationCheck(factory, watch, variants)
        scope, skipped = _offered(scope, impl)
        try:
            found = run_watched(lambda: _explore(scope, impl, jobs, progress, variants, skipped, budget), watch)
            return _probe_boundaries(found, ImplementationCheck(factory, None, variants), call_timeout)
        except CallTimeout:
            path, op, args = watch.context
            trace = run_calls(factory, [*path, (op, args)], call_timeout, variants) or []
            result = Result(scope, coverage=_coverage(scope, variants), skipped=skipped)
            problems = [step.problem for step in trace if step.problem]
            result.violation = Violation(trace, problems[-1] if problems else "a call did not return")
            return result
    impl = ImplementationCheck(factory, None, variants) if factory is not None else None
    scope, skipped = _offered(scope, impl)
    return _probe_boundaries(_explore(scope, impl, jobs, progress, variants, skipped, budget), impl, call_timeout)


def _probe_boundaries(result: Result, impl: ImplementationCheck | None, call_timeout: float | None) -> Result:
    """``result``, or, when the search found nothing, the first boundary probe the implementation fails
    (``spec.checkers.boundaries``: the ends of every value's range, which no scope's small values reach)."""
    if impl is None or result.violation is not None or result.over_budget or impl.variants != DEFAULT:
        return result
    trace = check_boundaries(impl.unwatched, impl.capabilities, call_timeout)
    if trace is not None:
        problems = [step.problem for step in trace if step.problem]
        result.violation = Violation(trace, problems[-1] if problems else "the factory failed on a boundary probe")
    return result


def _offered(scope: Scope, impl: ImplementationCheck | None) -> tuple[Scope, tuple[str, ...]]:
    """``scope`` less the optional calls the implementation does not offer, and the capabilities left out."""
    if impl is not None and scope.batches and not impl.capabilities.batch:
        return replace(scope, batches=False), (BATCH,)
    return scope, ()


def _coverage(scope: Scope, variants: Variants) -> Coverage:
    """What the exploration must reach: the batches' declared outcomes too when they are explored."""
    return Coverage(capabilities=Capabilities(batch=scope.batches), variants=variants)


def _explore(scope: Scope, impl: ImplementationCheck | None, jobs: int, progress: Callable[[int, Result], None] | None,
             variants: Variants = DEFAULT, skipped: tuple[str, ...] = (), budget: int | None = None) -> Result:
    result = Result(scope, coverage=_coverage(scope, variants), skipped=skipped)
    started = time.perf_counter()
    root = model.initial(variants)
    root_key = state_key(root, True) if scope.prune else state_key(root)
    parents: dict[tuple, tuple | None] = {root_key: None}
    try:
        invariants.check_all(observation(root), invariants.History())
    except invariants.InvariantViolation as exc:
        result.violation = Violation([], str(exc))
    frontier = [(root, root_key)]
    depth = 0
    while frontier and result.violation is None and (scope.depth is None or depth < scope.depth):
        if budget is not None and result.generated >= budget:
            result.over_budget = True
            break
        following = []
        expanded = 0
        left = None if budget is None else budget - result.generated
        for share in _expand_level(frontier, scope, parents, impl, jobs, left):
            result.generated += share.generated
            result.taken.update(share.taken)
            result.coverage.merge(share.coverage)
            for after_key, parent, after in share.new:
                if after_key not in parents:
                    parents[after_key] = parent
                    result.found[parent[1]] += 1
                    following.append((after, after_key))
            expanded += share.expanded
            if share.violation is not None:
                result.violation = share.violation
                break
        if following:
            depth += 1
        result.queued = len(frontier) - expanded - (result.violation is not None) + len(following)
        frontier = following
        if progress is not None:
            result.distinct = len(parents)
            progress(depth, result)
    result.depth = depth
    result.distinct = len(parents)
    result.seconds = time.perf_counter() - started
    return result


# ---------------------------------------------------------------- report


def report(result: Result) -> list[str]:
    """TLC's summary: counts, depth, speed, then per operation transitions and distinct states."""
    seconds = max(result.seconds, 1e-9)
    complete = result.queued == 0 and result.violation is None
    lines = [
        f"{result.generated} states generated, {result.distinct} distinct states found, "
        f"{result.queued} states left on queue.",
        f"The depth of the {'complete ' if complete else ''}state graph search is {result.depth}.",
        f"{result.seconds:.1f} s: {result.generated / seconds:.0f} states/s generated, "
        f"{result.distinct / seconds:.0f} distinct states/s.",
        f"{'operation':<12}{'transitions':>12}{'distinct':>10}",
    ]
    optional = (PRUNE_OPERATIONS if result.scope.prune else ()) + (BATCH_OPERATIONS if result.scope.batches else ())
    ops = (*OPERATIONS, *optional)
    width = max(_OP_COLUMN, *(len(op) + 1 for op in ops))
    lines[-1] = f"{'operation':<{width}}{'transitions':>12}{'distinct':>10}"
    for op in ops:
        lines.append(f"{op:<{width}}{result.taken[op]:>12}{result.found[op]:>10}")
    return lines


#: The operation column's least width in ``report``'s table (wider when a batch's name needs it).
_OP_COLUMN = 12
