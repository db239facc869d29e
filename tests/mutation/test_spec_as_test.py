"""The spec as the test, for mutation testing of ``impl/`` (issue 4, "Strength").

``mutmut run`` (configured in pyproject.toml's ``[tool.mutmut]``) copies
``impl/`` into ``mutants/``, makes one mutant per small change, and runs the
tests that reach the changed function -- this module and the spec's example
tests -- against each; a mutant that passes survives.

The main test is the conformance check of ``fencepost check``, split in two so
a mutant costs a second or two instead of a whole Hypothesis run:

* the corpus: the conformance machine (``spec.checkers.machine``) runs once per
  process, derandomized with the ``ci`` profile's examples and steps, against
  the reference model itself, and every call of every run is recorded. The
  machine chooses each argument from the model's state alone, so these are
  exactly the calls the first batch of ``fencepost check`` makes to any
  scheduler that conforms.
* the check: each recorded run is replayed into a fresh scheduler in lockstep
  with the model (``spec.checkers.lockstep.run_calls``, what ``fencepost check`` uses to
  shrink): results, every task view and the clock compared after every call,
  every invariant of ``spec.invariants`` and the scheduler's own
  ``check_invariants()`` checked after every call.

Three more kinds of test close what that check leaves open, on purpose or by
its scope; each is checked in lockstep with the model like a machine run:

* exact answers: ``fencepost check`` lets a third-party scheduler word its
  refusals and errors its own way. The shipped schedulers answer exactly as
  the model does -- the protocol's ``Reason`` for each refusal, the model's
  ``ValueError`` messages -- and every test here demands that too, over the
  same corpus.
* every invalid argument: the machine's invalid calls put each kind of fault
  into every argument it fits, with one bad value per step. Here every
  argument of every operation gets every wrong type and out-of-range value,
  alone and two at a time (the first one in the model's order is named), at
  the instant a lease expires, so an invalid call that still moved time
  would show.
* scenarios the machine's scope does not reach: its runs have at most 16
  tasks and 50 steps and small times, so ``IndexedScheduler``'s heap rebuilds
  (more than 64 stale entries) never run, and a token or a task id larger
  than the current time is rare. Short call sequences reach each of them.

Under mutmut the corpus is built in mutmut's main process while it collects
its stats, and every per-mutant process forked from it inherits it.

Budget: under mutmut (``MUTANT_UNDER_TEST`` is set) the ``ci`` profile's
count per batch, about 450 runs in two batches, replayed in a few seconds;
``FENCEPOST_MUTATION_EXAMPLES`` overrides it. In the normal ``python -m
pytest`` run the corpus is a few runs and the module takes a second or two:
tests/spec/test_check.py already runs the full check there.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import os
from typing import NamedTuple

import hypothesis
import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

import fencepost.impl.indexed
from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec import model, profiles
from fencepost.spec.protocol import INT_MAX, INT_MIN, MAX_TEXT_BYTES
from fencepost.spec.checkers.check import COVERAGE_BATCHES
from fencepost.spec.checkers.coverage import Coverage
from fencepost.spec.checkers.machine import conformance_machine
from fencepost.spec.formats.trace import format_call
from fencepost.spec.checkers.results import format_trace
from fencepost.spec.checkers.lockstep import run_calls

SHIPPED = [SimpleScheduler, IndexedScheduler]

Call = tuple[str, dict]


def under_mutmut() -> bool:
    """Read when needed, not at import: mutmut may import this module before it sets the variable."""
    return "MUTANT_UNDER_TEST" in os.environ


def examples() -> int:
    """Runs per batch of the corpus: the ``ci`` profile's under mutmut, a smoke test's otherwise."""
    return int(os.environ.get("FENCEPOST_MUTATION_EXAMPLES", profiles.CI_EXAMPLES if under_mutmut() else 10))


def _name(factory: type) -> str:
    return factory.__name__


# ---------------------------------------------------------------- the corpus


class _RecordingModel:
    """The reference model behind the protocol's methods, recording every call it gets."""

    def __init__(self, runs: list[list[Call]]) -> None:
        self.state = model.initial()
        self.calls: list[Call] = []
        runs.append(self.calls)

    @property
    def now(self) -> int:
        return self.state.now

    def task(self, task_id: int) -> object:
        return model.task(self.state, task_id)

    def __getattr__(self, op: str):
        if op not in model.TRANSITIONS:  # e.g. check_invariants: the model has none
            raise AttributeError(op)

        def call(**args: object) -> object:
            self.calls.append((op, dict(args)))
            self.state, result = model.apply(self.state, op, dict(args))
            return result

        return call


class Corpus(NamedTuple):
    runs: tuple[tuple[Call, ...], ...]
    missing: list[str]  # declared outcomes and boundaries no batch reached


def corpus() -> Corpus:
    return _corpus(examples())


@functools.cache
def _corpus(per_batch: int) -> Corpus:
    """Every run ``fencepost check`` makes, as calls: its batches, as ``spec.checkers.check.check_factory`` runs them.

    The first batch is derandomized; while a declared outcome or boundary is
    still unreached another batch runs with the next seed, up to
    ``spec.checkers.check.COVERAGE_BATCHES``.
    """
    runs: list[list[Call]] = []
    coverage = Coverage()
    for batch in range(COVERAGE_BATCHES):
        machine = conformance_machine(lambda: _RecordingModel(runs), coverage=coverage)
        if batch:
            machine = hypothesis.seed(batch)(machine)
        run_settings = settings(
            settings.get_profile("ci"),
            max_examples=per_batch,
            stateful_step_count=profiles.CI_STEPS,
            derandomize=not batch,
            database=None,
            print_blob=False,
            phases=(Phase.explicit, Phase.generate),
        )
        run_state_machine_as_test(machine, settings=run_settings)
        if not coverage.missing():
            break
    return Corpus(tuple(tuple(run) for run in runs if run), coverage.missing())


if under_mutmut():
    corpus()  # at import: in mutmut's main process, which every mutant's process forks from


# ---------------------------------------------------------------- exact answers


@functools.cache
def _fields(cls: type) -> tuple[str, ...] | None:
    return tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else None


def _exact(value: object) -> object:
    """A value with the type of every part: ``Outcome(None)`` is not ``Outcome(False)`` here."""
    names = _fields(type(value))
    if names is None:
        return (type(value), value)
    return (type(value), tuple((type(part), part) for part in map(value.__getattribute__, names)))


def exact_difference(factory: type, calls: list[Call]) -> str | None:
    """Replay ``calls`` into the model and ``factory()``; the first inexact answer, else None."""
    scheduler, state = factory(), model.initial()
    for number, (op, args) in enumerate(calls, 1):
        try:
            state, result = model.apply(state, op, dict(args))
            want: object = _exact(result)
        except ValueError as exc:
            want = ("ValueError", str(exc))
        try:
            got: object = _exact(getattr(scheduler, op)(**args))
        except ValueError as exc:
            got = ("ValueError", str(exc))
        where = f"step {number}, {format_call(op, args)}"
        if got != want:
            return f"{where}: the model answers {want}, the scheduler {got}"
        for task in state.tasks:
            if task.forgotten:  # pruned: the scheduler must refuse it, saying so
                try:
                    scheduler.task(task.id)
                except ValueError as exc:
                    if "forgot" in str(exc).lower():
                        continue
                return f"{where}: afterwards task({task.id}) still answers, but the model forgot it"
            want, got = _exact(model.task(state, task.id)), _exact(scheduler.task(task.id))
            if got != want:
                return f"{where}: afterwards task({task.id}) is {got}, the model says {want}"
    return None


# ---------------------------------------------------------------- compaction scenarios


class _Script:
    """Builds a call sequence, applying each call to the model so later calls can use its answers."""

    def __init__(self) -> None:
        self.state = model.initial()
        self.calls: list[Call] = []

    def __call__(self, op: str, **args: object) -> object:
        self.calls.append((op, args))
        self.state, result = model.apply(self.state, op, dict(args))
        return result

    def refused(self, op: str, **args: object) -> str:
        """Add a call the model refuses (it changes nothing); return the model's message."""
        with pytest.raises(ValueError) as refusal:
            model.apply(self.state, op, dict(args))
        self.calls.append((op, args))
        return str(refusal.value)

    def dispatch_or_report(self, op: str, task_id: int, token: int, now: int) -> None:
        """``dispatch`` to w1 at ``now``, or the lease call ``op`` on the given task and token."""
        if op == "dispatch":
            self("dispatch", worker="w1", now=now, duration=1)
        else:
            self(op, task_id=task_id, token=token, now=now)

    def drain(self, worker: str, now: int, most: int = 1_000) -> None:
        """Dispatch to ``worker`` and complete at once until nothing is eligible (or ``most`` times)."""
        for _ in range(most):
            lease = self("dispatch", worker=worker, now=now, duration=5)
            if lease is None:
                break
            self("complete", task_id=lease.task_id, token=lease.token, now=now)


def cancel_most_waiting_tasks(not_yet_due: bool) -> list[Call]:
    """66 of 130 waiting tasks cancelled: the ready heap rebuilds, or the due heap if they are not yet due.

    After 65 cancels exactly half the heap is stale: allowed, not yet rebuilt.
    """
    s = _Script()
    s("add_worker", worker="w1", capacity=2)
    for i in range(130):
        s("submit", priority=i % 3, due_at=20 + i % 7 if not_yet_due else 0)
    for task_id in range(1, 67):
        s("cancel", task_id=task_id, now=task_id // 10)
    s.drain("w1", now=30, most=5)
    return s.calls


def renew_one_lease_many_times() -> list[Call]:
    """70 renewals of one lease, each to a new end: the expiration heap rebuilds."""
    s = _Script()
    s("add_worker", worker="w1", capacity=2)
    s("submit")
    s("submit")
    first = s("dispatch", worker="w1", now=0, duration=50)
    other = s("dispatch", worker="w1", now=0, duration=40)
    for k in range(70):
        s("renew", task_id=first.task_id, token=first.token, now=k // 4, duration=60 + k % 9)
    s("advance", now=39)
    s("complete", task_id=other.task_id, token=other.token, now=39)
    s("advance", now=200)  # the renewed lease expires once, at its last end
    s.drain("w1", now=200)
    return s.calls


def end_leases_out_of_order() -> list[Call]:
    """70 leases ended latest-expiring first (complete, fail, cancel then fail): the expiration heap rebuilds."""
    s = _Script()
    s("add_worker", worker="w1", capacity=70)
    for _ in range(70):
        s("submit", max_attempts=2)
    leases = [s("dispatch", worker="w1", now=0, duration=200 - k) for k in range(70)]
    for k, lease in enumerate(leases):  # the first lease ends last, so it is never the heap's head
        if k % 3 == 0:
            s("complete", task_id=lease.task_id, token=lease.token, now=1)
        elif k % 3 == 1:
            s("fail", task_id=lease.task_id, token=lease.token, now=1)
        else:
            s("cancel", task_id=lease.task_id, now=1)
            s("fail", task_id=lease.task_id, token=lease.token, now=1)
    s.drain("w1", now=10)
    return s.calls


COMPACTION_SCENARIOS = {
    "cancel_most_ready_tasks": functools.partial(cancel_most_waiting_tasks, False),
    "cancel_most_tasks_not_yet_due": functools.partial(cancel_most_waiting_tasks, True),
    "renew_one_lease_many_times": renew_one_lease_many_times,
    "end_leases_out_of_order": end_leases_out_of_order,
}


# ---------------------------------------------------------------- every invalid argument

#: A worker w1 of capacity 1; task 1 running under token 1 for [5, 10); task 2 pending; now 5.
BUSY: list[Call] = [
    ("add_worker", {"worker": "w1", "capacity": 1}),
    ("submit", {}),
    ("submit", {}),
    ("dispatch", {"worker": "w1", "now": 5, "duration": 5}),
]
#: A valid call of each operation against ``BUSY``, at now 10: the instant task 1's lease expires.
#: ``submit`` three times: due at once (``IndexedScheduler``'s fast path), due later, and keyed
#: (its own path, which checks every argument before the key). The batches and ``prune`` too.
VALID_CALLS: list[Call] = [
    ("add_worker", {"worker": "w2", "capacity": 1}),
    ("submit", {"priority": 1, "max_attempts": 2, "retry_delay": 2}),
    ("submit", {"priority": 1, "due_at": 7, "max_attempts": 2, "retry_delay": 2}),
    ("submit", {"priority": 1, "due_at": 7, "max_attempts": 2, "retry_delay": 2, "key": "k"}),
    ("dispatch", {"worker": "w1", "now": 10, "duration": 3}),
    ("complete", {"task_id": 1, "token": 1, "now": 10}),
    ("fail", {"task_id": 1, "token": 1, "now": 10}),
    ("cancel", {"task_id": 2, "now": 10}),
    ("renew", {"task_id": 1, "token": 1, "now": 10, "duration": 3}),
    ("advance", {"now": 10}),
    ("prune", {"before": 10, "now": 10}),
    ("submit_many", {"tasks": [{"priority": 1}, {"due_at": 7, "key": "k"}]}),
    ("dispatch_many", {"worker": "w1", "now": 10, "duration": 3, "limit": 2}),
    ("complete_many", {"reports": [[1, 1]], "now": 10}),
    ("fail_many", {"reports": [[1, 1]], "now": 10}),
]
#: Texts no worker name or key may be (``spec.protocol.text_problem``): a control character, a lone
#: surrogate, one character past the limit, and a text whose characters fit but whose UTF-8 does not.
BAD_TEXTS = ("w\x00", "\ud800", "k" * (MAX_TEXT_BYTES + 1), "\u00e9" * (MAX_TEXT_BYTES // 2 + 1))
#: Values each argument must refuse against ``BUSY``: out of range first, then wrong types.
BAD_VALUES: dict[str, tuple[object, ...]] = {
    "capacity": (0, -1, True, 1.5, "1", None),
    "priority": (True, 1.5, "1", INT_MAX + 1, INT_MIN - 1, None),
    "due_at": (-1, True, 1.5, INT_MAX + 1, "7"),
    "max_attempts": (0, -1, True, 1.5, "2"),
    "retry_delay": (0, -1, True, 1.5, "2", None),
    "now": (4, -1, True, 10.0, "10", None),
    "duration": (0, -1, True, 1.5, "3", None),
    "task_id": (0, 3, -1, True, 1.0, "1", None),
    "token": (True, 1.0, "1", INT_MAX + 1, INT_MIN - 1, None),
    "key": ("", 1, ["k"], *BAD_TEXTS),
    "before": (-1, 11, True, 1.5, "10", None),
    "limit": (0, -1, True, 1.5, "2", None),
    "tasks": ({"priority": 1}, [1], [{"colour": 1}], [{"colour": 1, 1: 0}], [{}, {"retry_delay": 0}], [{"key": ""}], None),
    "reports": ([[3, 1]], [[0, 1]], [[1, "1"]], [[1]], [1, 1], None),
}
BAD_WORKERS = {
    "add_worker": ("", "w1", 1, ["w2"], *BAD_TEXTS, None),
    "dispatch": ("nobody", "", 1, ["w1"], *BAD_TEXTS, None),
    "dispatch_many": ("nobody", "", 1, ["w1"], *BAD_TEXTS, None),
}


def invalid_calls() -> list[Call]:
    """Each argument of each operation bad alone (every bad value), then every two bad at once."""
    calls: list[Call] = []
    for op, valid in VALID_CALLS:
        bad = {name: BAD_WORKERS[op] if name == "worker" else BAD_VALUES[name] for name in valid}
        for name, values in bad.items():
            calls += [(op, {**valid, name: value}) for value in values]
        names = list(valid)
        for i, first in enumerate(names):
            for second in names[i + 1 :]:
                calls.append((op, {**valid, first: bad[first][0], second: bad[second][-1]}))
    return calls


# ---------------------------------------------------------------- scenarios past the machine's reach


def submit_with_every_default() -> list[Call]:
    """``submit()`` with no argument at all: priority 0, due now, unlimited attempts, retry_delay 1."""
    s = _Script()
    s("add_worker", worker="w1", capacity=1)
    s("advance", now=3)
    s("submit", priority=1)
    s("submit")
    lease = s("dispatch", worker="w1", now=3, duration=2)
    s("fail", task_id=lease.task_id, token=lease.token, now=4)
    s.drain("w1", now=9)
    return s.calls


def expiry_of_a_token_above_now(op: str) -> list[Call]:
    """The lease that expires first holds token 3 and ends at 2: a token larger than the instant."""
    s = _Script()
    s("add_worker", worker="w1", capacity=3)
    for duration in (9, 9, 2):
        s("submit")
        s("dispatch", worker="w1", now=0, duration=duration)
    s.dispatch_or_report(op, task_id=3, token=3, now=2)  # lease_expired; its slot is free again
    return s.calls


def due_time_below_the_task_id(op: str) -> list[Call]:
    """Task 4 falls due at 2, with an id above its due time and nothing else waiting."""
    s = _Script()
    s("add_worker", worker="w1", capacity=2)
    s("submit")
    lease = s("dispatch", worker="w1", now=0, duration=10)
    for task_id in (2, 3):
        s("submit")
        s("cancel", task_id=task_id, now=0)
    s("submit", due_at=2)
    s.dispatch_or_report(op, task_id=lease.task_id, token=lease.token, now=2)
    s.drain("w1", now=2)
    return s.calls


def a_cancelled_task_due_first() -> list[Call]:
    """The earliest due entry belongs to a cancelled task; the one behind it must still fall due."""
    s = _Script()
    s("add_worker", worker="w1", capacity=1)
    s("submit", due_at=3)
    s("submit", due_at=4)
    s("submit", due_at=4)
    s("cancel", task_id=1, now=0)
    s("advance", now=5)
    s.drain("w1", now=5)
    return s.calls


class _Level(enum.IntEnum):
    """Ints of a subclass: valid arguments (only ``bool`` is refused), kept as given."""

    ONE = 1
    TWO = 2


def int_subclass_arguments() -> list[Call]:
    """Every int argument of ``submit``, ``add_worker`` and ``dispatch`` as an ``IntEnum``, due at once and later."""
    s = _Script()
    s("add_worker", worker="w1", capacity=_Level.ONE)
    s("advance", now=2)
    s("submit", priority=1)
    s("submit", priority=_Level.TWO)
    s("submit", priority=_Level.TWO, due_at=_Level.ONE, max_attempts=_Level.TWO, retry_delay=_Level.ONE)
    s("submit", priority=_Level.ONE, due_at=_Level.TWO)
    s("submit", due_at=4)
    lease = s("dispatch", worker="w1", now=_Level.TWO, duration=_Level.ONE)
    s("fail", task_id=lease.task_id, token=lease.token, now=2)
    s.drain("w1", now=5)
    return s.calls


def every_way_to_end_then_prune() -> list[Call]:
    """Six tasks end at 1 to 6, one by each way there is; prunes with ``before`` 2 to 7 forget one each.

    A task's end time is read only by ``prune``, so a way of ending that
    records the wrong time (or none) shows only here.
    """
    s = _Script()
    s("add_worker", worker="w1", capacity=5)
    for max_attempts in (None, 1, None, None, 1, None):
        s("submit", max_attempts=max_attempts)
    leases = [s("dispatch", worker="w1", now=0, duration=duration) for duration in (10, 10, 10, 4, 5)]
    s("complete", task_id=1, token=leases[0].token, now=1)  # succeeded at 1
    s("fail", task_id=2, token=leases[1].token, now=2)  # failed at 2: its one attempt spent
    s("cancel", task_id=3, now=2)
    s("fail", task_id=3, token=leases[2].token, now=3)  # cancelled at 3: a failure after a cancel request
    s("cancel", task_id=4, now=3)
    s("advance", now=4)  # cancelled at 4: its lease expires after a cancel request
    s("advance", now=5)  # failed at 5: its lease expires with its one attempt spent
    s("cancel", task_id=6, now=6)  # cancelled at 6, waiting
    for before in range(2, 8):
        assert s("prune", before=before, now=max(before, 6)) == 1, f"the model forgets one task before {before}"
    return s.calls


def known_keys_in_a_batch() -> list[Call]:
    """A batch entry repeats a key known from a single submit: each argument it leaves out is the default.

    ``submit(key=...)`` binds the key to the arguments as passed, defaults
    included; a batch entry that gives fewer names the same task, and one
    that gives another ``due_at`` (even the current time, for ``None``) is
    refused; a conflict between two entries names the id the first would
    have had. The corpus's batches rarely repeat a single submit's key.
    """
    s = _Script()
    s("add_worker", worker="w1", capacity=1)
    s("submit", key="a")
    s("submit", priority=2, due_at=5, max_attempts=2, retry_delay=3, key="b")
    same = {"priority": 2, "due_at": 5, "max_attempts": 2, "retry_delay": 3, "key": "b"}
    assert s("submit_many", tasks=[{"key": "a"}, same, {"key": "c"}, {"key": "c", "priority": 0}]) == [1, 2, 3, 3]
    for other in ({"due_at": 0}, {"max_attempts": 1}, {"retry_delay": 2}, {"priority": 1}):
        assert "already submitted" in s.refused("submit_many", tasks=[{"priority": 1}, {"key": "a", **other}])
    without_due = {name: value for name, value in same.items() if name != "due_at"}
    assert "due_at 5 then None" in s.refused("submit_many", tasks=[without_due])
    # a conflict inside the batch names the id the entry before would have had: 4, 5, then 6 for "e"
    assert "as task 6 " in s.refused("submit_many", tasks=[{"key": "d"}, {}, {"key": "e"}, {"key": "e", "priority": 1}])
    assert s("submit_many", tasks=[{"key": "c"}, {"priority": 1}]) == [3, 4]
    s.drain("w1", now=5)
    return s.calls


def at_the_latest_time() -> list[Call]:
    """Leases and retries that end exactly at ``INT_MAX`` are accepted; one tick later they are refused.

    A lease's end ``now + duration`` and a retry time ``now + retry_delay *
    2 ** (attempts - 1)`` are sums: every argument is in range alone, so only
    a call whose sum passes ``INT_MAX`` reaches the rule, and the corpus's
    small times never do. Priorities at both ends of the range are kept as given.
    """
    s = _Script()
    s("add_worker", worker="w1", capacity=3)
    s("submit")
    s("submit", retry_delay=2**62)
    s("submit")
    first = s("dispatch", worker="w1", now=0, duration=INT_MAX)  # ends at INT_MAX exactly
    s.refused("dispatch", worker="w1", now=1, duration=INT_MAX)
    s.refused("dispatch_many", worker="w1", now=1, duration=INT_MAX, limit=2)
    s.refused("renew", task_id=first.task_id, token=first.token, now=1, duration=INT_MAX)
    s("renew", task_id=first.task_id, token=first.token, now=1, duration=INT_MAX - 1)  # INT_MAX again
    second = s("dispatch", worker="w1", now=2**62 - 1, duration=1)
    s("fail", task_id=second.task_id, token=second.token, now=2**62 - 1)  # retry at INT_MAX exactly
    third = s("dispatch", worker="w1", now=2**62 - 1, duration=1)
    s("complete", task_id=third.task_id, token=third.token, now=2**62 - 1)
    s("advance", now=INT_MAX)
    s.refused("dispatch", worker="w1", now=INT_MAX, duration=1)  # due, but no lease can start at the latest time
    s("cancel", task_id=second.task_id, now=INT_MAX)
    s("submit", priority=INT_MIN)
    s("submit", priority=INT_MAX)
    return s.calls


def retry_past_the_latest_time(op: str) -> list[Call]:
    """A failure whose backoff would retry after ``INT_MAX`` is refused and changes nothing: on the first
    attempt (``retry_delay`` alone too long) and on the second (the doubled delay too long)."""
    s = _Script()

    def refuse_fail(lease: object, now: int) -> None:
        if op == "fail":
            s.refused("fail", task_id=lease.task_id, token=lease.token, now=now)
        else:
            s.refused("fail_many", reports=[[lease.task_id, lease.token]], now=now)

    s("add_worker", worker="w1", capacity=1)
    s("submit", retry_delay=INT_MAX)
    lease = s("dispatch", worker="w1", now=1, duration=1)
    refuse_fail(lease, now=1)  # 1 + INT_MAX
    s("complete", task_id=lease.task_id, token=lease.token, now=1)
    s("submit", retry_delay=2**61)
    lease = s("dispatch", worker="w1", now=1, duration=1)
    s("fail", task_id=lease.task_id, token=lease.token, now=1)  # retry at 1 + 2**61
    lease = s("dispatch", worker="w1", now=2**62, duration=1)
    refuse_fail(lease, now=2**62)  # 2**62 + 2**61 * 2 = 2**63
    s("complete", task_id=lease.task_id, token=lease.token, now=2**62)
    return s.calls


BOUNDARY_SCENARIOS = {
    "submit_with_every_default": submit_with_every_default,
    "dispatch_when_a_token_above_now_expires": functools.partial(expiry_of_a_token_above_now, "dispatch"),
    "complete_when_a_token_above_now_expires": functools.partial(expiry_of_a_token_above_now, "complete"),
    "dispatch_when_an_id_above_now_falls_due": functools.partial(due_time_below_the_task_id, "dispatch"),
    "complete_when_an_id_above_now_falls_due": functools.partial(due_time_below_the_task_id, "complete"),
    "a_cancelled_task_due_first": a_cancelled_task_due_first,
    "int_subclass_arguments": int_subclass_arguments,
    "every_way_to_end_then_prune": every_way_to_end_then_prune,
    "known_keys_in_a_batch": known_keys_in_a_batch,
    "at_the_latest_time": at_the_latest_time,
    "fail_retrying_past_the_latest_time": functools.partial(retry_past_the_latest_time, "fail"),
    "fail_many_retrying_past_the_latest_time": functools.partial(retry_past_the_latest_time, "fail_many"),
}


def check_calls(factory: type, calls: list[Call], what: str) -> None:
    """Fail the test unless ``calls`` conform in lockstep and every answer is exactly the model's."""
    trace = run_calls(factory, calls)
    if trace is not None:
        pytest.fail(f"{what} diverges from the spec:\n{format_trace(trace[-3:])}", pytrace=False)
    difference = exact_difference(factory, calls)
    if difference is not None:
        pytest.fail(f"{what}: {difference}", pytrace=False)


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize("factory", SHIPPED, ids=_name)
def test_conforms_to_the_spec(factory: type) -> None:
    runs, missing = corpus()
    assert len(runs) >= examples()
    if examples() >= profiles.CI_EXAMPLES:  # the full budget reaches all that fencepost check must
        assert not missing, f"the corpus never reached: {'; '.join(missing)}"
    for number, calls in enumerate(runs, 1):
        trace = run_calls(factory, list(calls))
        if trace is not None:
            pytest.fail(f"run {number} of {len(runs)} diverges from the spec:\n{format_trace(trace)}", pytrace=False)


@pytest.mark.parametrize("factory", SHIPPED, ids=_name)
def test_answers_exactly_as_the_model(factory: type) -> None:
    for number, calls in enumerate(corpus().runs, 1):
        difference = exact_difference(factory, list(calls))
        if difference is not None:
            pytest.fail(f"run {number}: {difference}", pytrace=False)


def test_every_operation_gets_its_invalid_arguments() -> None:
    assert {op for op, _ in VALID_CALLS} == set(model.TRANSITIONS)


@pytest.mark.parametrize("factory", SHIPPED, ids=_name)
def test_every_invalid_argument_is_refused_as_the_model_refuses_it(factory: type) -> None:
    for call in invalid_calls():
        check_calls(factory, [*BUSY, call], f"the invalid call {format_call(*call)}")


@pytest.mark.parametrize("factory", SHIPPED, ids=_name)
@pytest.mark.parametrize("name", list(BOUNDARY_SCENARIOS))
def test_boundary_scenario_conforms(name: str, factory: type) -> None:
    check_calls(factory, BOUNDARY_SCENARIOS[name](), name)


@pytest.mark.parametrize("name", list(COMPACTION_SCENARIOS))
def test_compaction_scenario_conforms(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On ``IndexedScheduler`` only: ``SimpleScheduler`` has no heaps, and the corpus checks it."""
    rebuilt: list[int] = []
    real = fencepost.impl.indexed._rebuild
    monkeypatch.setattr(fencepost.impl.indexed, "_rebuild", lambda heap, tasks: (rebuilt.append(len(heap)), real(heap, tasks)))
    check_calls(IndexedScheduler, COMPACTION_SCENARIOS[name](), name)
    assert rebuilt, f"{name} never rebuilt a heap: it is not worth its time"
