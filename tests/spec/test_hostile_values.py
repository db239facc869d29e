"""One contract for values: the same hostile arguments get one verdict from the model and every shipped scheduler.

Each case below makes a few valid calls on a fresh scheduler, then one call
with a hostile argument: NUL, a lone surrogate, a direction override, 10 MB
of text, a text of exactly ``MAX_TEXT_BYTES`` and one byte more, ints at and
just past the ends of ``INT_MIN..INT_MAX``, a lease end or a retry time past
``INT_MAX``, a bool where an int goes, an int of thousands of digits. The
model (``spec.model``), ``SimpleScheduler``, ``IndexedScheduler``,
``DurableScheduler`` and ``PostgresScheduler`` (skipped, with the reason,
without ``FENCEPOST_PG_DSN``) must each give the verdict the contract states
(docs/contract.md, "Values"): the call is accepted, or it raises
``ValueError`` and changes nothing. Never another exception (a driver's
error, an ``OverflowError``). The argument-only cases also go through the
adapter kit's checks (``impl.kit``), which any third-party adapter uses.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable

import pytest

from fencepost.impl import kit
from fencepost.impl.durable import temporary as durable_temporary
from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import INT_MAX, INT_MIN, MAX_TEXT_BYTES
from schedulers import ModelScheduler

ACCEPTED, REFUSED = "accepted", "ValueError"

#: A text of exactly MAX_TEXT_BYTES bytes of UTF-8 in 4-byte characters, and one a byte longer.
WIDE_AT_LIMIT = "\U0001d11e" * (MAX_TEXT_BYTES // 4)
WIDE_PAST_LIMIT = "\u00e9" * (MAX_TEXT_BYTES // 2) + "a"
TEN_MB = "u" * 10_000_000


def _dispatched(s, now: int = 0, duration: int = 10, **submit) -> tuple[int, int]:
    """A worker ``w``, one task submitted with ``submit`` and leased at ``now``: (task id, token)."""
    s.add_worker("w", 2)
    task_id = s.submit(**submit)
    lease = s.dispatch("w", now, duration)
    return task_id, lease.token


class _Level(enum.IntEnum):
    """A client's own names for ints, as an application passes its priorities."""

    HIGH = 7


def _nothing(s) -> None:
    """No set-up: the call is the scheduler's first."""


def _worker(s) -> None:
    """A worker ``w`` of capacity 2."""
    s.add_worker("w", 2)


#: name -> (valid set-up calls, the hostile call, the contract's verdict). The set-up returns
#: what the call needs; ``argument_only`` cases need no state and also go through the kit.
CASES: dict[str, tuple[Callable, Callable, str]] = {
    # texts: worker names and keys
    "worker holding NUL": (_nothing, lambda s, _: s.add_worker("a\x00b", 1), REFUSED),
    "key holding NUL": (_nothing, lambda s, _: s.submit(key="k\x00"), REFUSED),
    "worker holding a lone surrogate": (_nothing, lambda s, _: s.add_worker("w\ud800", 1), REFUSED),
    "key holding a lone surrogate": (_nothing, lambda s, _: s.submit(key="\udfffk"), REFUSED),
    "key holding escape": (_nothing, lambda s, _: s.submit(key="\x1b[2J"), REFUSED),
    "key holding a direction override": (_nothing, lambda s, _: s.submit(key="abc\u202edef"), REFUSED),
    "key holding tab and newline": (_nothing, lambda s, _: s.submit(key="a\tb\nc"), ACCEPTED),
    "key of 10 MB": (_nothing, lambda s, _: s.submit(key=TEN_MB), REFUSED),
    "worker of 10 MB": (_nothing, lambda s, _: s.add_worker(TEN_MB, 1), REFUSED),
    "key of exactly the limit": (_nothing, lambda s, _: s.submit(key="k" * MAX_TEXT_BYTES), ACCEPTED),
    "key of one byte past the limit": (_nothing, lambda s, _: s.submit(key="k" * (MAX_TEXT_BYTES + 1)), REFUSED),
    "wide key of exactly the limit": (_nothing, lambda s, _: s.submit(key=WIDE_AT_LIMIT), ACCEPTED),
    "wide key of one byte past the limit": (_nothing, lambda s, _: s.submit(key=WIDE_PAST_LIMIT), REFUSED),
    "URL key of 3 kB": (_nothing, lambda s, _: s.submit(key="https://example.com/?q=" + "x%20" * 750), ACCEPTED),
    "worker of exactly the limit": (_nothing, lambda s, _: s.add_worker("w" * MAX_TEXT_BYTES, 1), ACCEPTED),
    "wide worker of exactly the limit": (_nothing, lambda s, _: s.add_worker(WIDE_AT_LIMIT, 1), ACCEPTED),
    "worker of one byte past the limit": (_nothing, lambda s, _: s.add_worker("w" * (MAX_TEXT_BYTES + 1), 1), REFUSED),
    "dispatch to a worker holding NUL": (_worker, lambda s, _: s.dispatch("w\x00", 1, 1), REFUSED),
    "dispatch to a worker of 10 MB": (_worker, lambda s, _: s.dispatch(TEN_MB, 1, 1), REFUSED),
    # ints at and past the ends of the range
    "priority INT_MAX": (_nothing, lambda s, _: s.submit(priority=INT_MAX), ACCEPTED),
    "priority INT_MAX + 1": (_nothing, lambda s, _: s.submit(priority=INT_MAX + 1), REFUSED),
    "priority INT_MIN": (_nothing, lambda s, _: s.submit(priority=INT_MIN), ACCEPTED),
    "priority INT_MIN - 1": (_nothing, lambda s, _: s.submit(priority=INT_MIN - 1), REFUSED),
    "priority of 5,000 digits": (_nothing, lambda s, _: s.submit(priority=10**5000), REFUSED),
    "due_at INT_MAX": (_nothing, lambda s, _: s.submit(due_at=INT_MAX), ACCEPTED),
    "due_at INT_MAX + 1": (_nothing, lambda s, _: s.submit(due_at=INT_MAX + 1), REFUSED),
    "max_attempts INT_MAX": (_nothing, lambda s, _: s.submit(max_attempts=INT_MAX), ACCEPTED),
    "max_attempts INT_MAX + 1": (_nothing, lambda s, _: s.submit(max_attempts=INT_MAX + 1), REFUSED),
    "retry_delay INT_MAX": (_nothing, lambda s, _: s.submit(retry_delay=INT_MAX), ACCEPTED),
    "retry_delay INT_MAX + 1": (_nothing, lambda s, _: s.submit(retry_delay=INT_MAX + 1), REFUSED),
    "capacity INT_MAX": (_nothing, lambda s, _: s.add_worker("big", INT_MAX), ACCEPTED),
    "capacity INT_MAX + 1": (_nothing, lambda s, _: s.add_worker("big", INT_MAX + 1), REFUSED),
    "advance to INT_MAX": (_nothing, lambda s, _: s.advance(INT_MAX), ACCEPTED),
    "advance to INT_MAX + 1": (_nothing, lambda s, _: s.advance(INT_MAX + 1), REFUSED),
    "task(2**63)": (lambda s: s.submit(), lambda s, _: s.task(2**63), REFUSED),
    "task(2**64)": (lambda s: s.submit(), lambda s, _: s.task(2**64), REFUSED),
    "task(INT_MIN - 1)": (lambda s: s.submit(), lambda s, _: s.task(INT_MIN - 1), REFUSED),
    "cancel(2**64)": (lambda s: s.submit(), lambda s, _: s.cancel(2**64, 1), REFUSED),
    "complete with token 2**64": (lambda s: _dispatched(s), lambda s, a: s.complete(a[0], 2**64, 1), REFUSED),
    "complete with token INT_MAX": (lambda s: _dispatched(s), lambda s, a: s.complete(a[0], INT_MAX, 1), ACCEPTED),
    "complete at now INT_MAX + 1": (lambda s: _dispatched(s), lambda s, a: s.complete(a[0], a[1], INT_MAX + 1), REFUSED),
    "prune before INT_MAX + 1": (_nothing, lambda s, _: s.prune(INT_MAX + 1, INT_MAX + 1), REFUSED),
    # a lease end or a retry time past INT_MAX
    "lease ending at INT_MAX": (_worker, lambda s, _: s.dispatch("w", INT_MAX - 5, 5), ACCEPTED),
    "lease ending past INT_MAX": (_worker, lambda s, _: s.dispatch("w", INT_MAX - 5, 6), REFUSED),
    "duration INT_MAX at time 1": (_worker, lambda s, _: s.dispatch("w", 1, INT_MAX), REFUSED),
    "dispatch_many ending past INT_MAX": (_worker, lambda s, _: s.dispatch_many("w", 1, INT_MAX, 2), REFUSED),
    "renew to INT_MAX": (lambda s: _dispatched(s), lambda s, a: s.renew(a[0], a[1], 5, INT_MAX - 5), ACCEPTED),
    "renew past INT_MAX": (lambda s: _dispatched(s), lambda s, a: s.renew(a[0], a[1], 5, INT_MAX - 4), REFUSED),
    "retry time at INT_MAX": (lambda s: _dispatched(s, now=2**62 - 1, retry_delay=2**62),
                              lambda s, a: s.fail(a[0], a[1], 2**62 - 1), ACCEPTED),
    "retry time past INT_MAX": (lambda s: _dispatched(s, now=2**62, retry_delay=2**62),
                                lambda s, a: s.fail(a[0], a[1], 2**62), REFUSED),
    "fail_many with a retry time past INT_MAX": (lambda s: _dispatched(s, now=2**62, retry_delay=2**62),
                                                 lambda s, a: s.fail_many([(a[0], a[1])], 2**62), REFUSED),
    "retry past INT_MAX of a cancelled task": (
        lambda s: (*_dispatched(s, now=2**62, retry_delay=2**62), s.cancel(1, 2**62)),
        lambda s, a: s.fail(a[0], a[1], 2**62), ACCEPTED),  # it ends cancelled: no retry time
    "retry past INT_MAX of an expired lease": (lambda s: _dispatched(s, now=2**62, duration=1, retry_delay=2**62),
                                               lambda s, a: s.fail(a[0], a[1], 2**62 + 1), ACCEPTED),  # refused, an Outcome
    "submit_many with a NUL key": (_nothing, lambda s, _: s.submit_many([{}, {"key": "\x00"}]), REFUSED),
    # an int subclass where an int goes: an int to the contract (``require_int``), so to every scheduler and recorder
    "priority an IntEnum": (_nothing, lambda s, _: s.submit(priority=_Level.HIGH), ACCEPTED),
    "capacity an IntEnum": (_nothing, lambda s, _: s.add_worker("e", _Level.HIGH), ACCEPTED),
    # a bool where an int goes
    "priority True": (_nothing, lambda s, _: s.submit(priority=True), REFUSED),
    "capacity True": (_nothing, lambda s, _: s.add_worker("b", True), REFUSED),
    "now True": (_worker, lambda s, _: s.dispatch("w", True, 1), REFUSED),
}


def _pg():
    if not os.environ.get("FENCEPOST_PG_DSN"):
        pytest.skip("FENCEPOST_PG_DSN is not set: no PostgreSQL server to test against")
    from fencepost.impl.postgres.scheduler import temporary

    return temporary()


#: The model and every shipped scheduler kept in this process, by name (PostgreSQL's below).
SCHEDULERS: dict[str, Callable[[], object]] = {
    "model": ModelScheduler,
    "simple": SimpleScheduler,
    "indexed": IndexedScheduler,
    "durable": durable_temporary,
}


def verdict(make: Callable[[], object], name: str) -> str:
    """The verdict of case ``name`` on a fresh scheduler; a refusal must change nothing."""
    setup, call, _ = CASES[name]
    s = make()
    try:
        given = setup(s)
        before = _state(s)
        try:
            call(s, given)
        except ValueError:
            assert _state(s) == before, f"{name}: the refused call changed the scheduler"
            return REFUSED
        except Exception as exc:  # noqa: BLE001 (any other exception is the finding)
            return f"{type(exc).__name__}: {exc}"[:300]
        return ACCEPTED
    finally:
        getattr(s, "close", lambda: None)()


def _state(s) -> tuple:
    """The clock and the views of the first tasks: what a refused call must leave as it was."""
    views = []
    for task_id in range(1, 4):
        try:
            views.append(s.task(task_id))
        except ValueError:
            break
    return s.now, views


@pytest.mark.parametrize("name", CASES)
def test_one_verdict_per_argument(name: str) -> None:
    """Accepted by all, or ValueError by all: the contract's verdict, from the model and every scheduler."""
    got = {label: verdict(make, name) for label, make in SCHEDULERS.items()}
    assert got == dict.fromkeys(SCHEDULERS, CASES[name][2]), f"{name}: {got}"


@pytest.mark.parametrize("name", CASES)
def test_postgres_gives_the_same_verdict(name: str) -> None:
    """``PostgresScheduler``: the contract's verdict (the one the test above holds the others to), never a driver error."""
    if not os.environ.get("FENCEPOST_PG_DSN"):
        pytest.skip("FENCEPOST_PG_DSN is not set: no PostgreSQL server to test against")
    from fencepost.impl.postgres.scheduler import temporary

    assert verdict(temporary, name) == CASES[name][2]


# ---------------------------------------------------------------- the adapter kit


class KitScheduler:
    """Only the adapter kit's checks (``impl.kit``), as an adapter makes them before calling its queue.

    Every call checks its arguments with the kit and then does nothing but
    move a ``Book``'s clock: enough to hold the kit's verdicts on the
    argument-only cases to the model's.
    """

    def __init__(self) -> None:
        self.book = kit.Book()

    @property
    def now(self) -> int:
        return self.book.now

    def add_worker(self, worker, capacity):
        self.book.add_worker(worker, capacity)

    def submit(self, priority=0, due_at=None, max_attempts=None, retry_delay=1, key=None):
        kit.check_submit(priority, due_at, max_attempts, retry_delay)
        kit.check_key(key)
        return self.book.add_task(object())

    def submit_many(self, tasks):
        kit.check_submit_entries(tasks, {}, self.book.issued + 1)

    def dispatch(self, worker, now, duration):
        self.book.check_dispatch(worker, now, duration)
        self.book.move_to(now)

    def dispatch_many(self, worker, now, duration, limit):
        self.book.check_dispatch(worker, now, duration)
        kit.check_min("limit", limit, 1)
        self.book.move_to(now)

    def advance(self, now):
        self.book.move_to(now)

    def task(self, task_id):
        return self.book.job(task_id)

    def cancel(self, task_id, now):
        self.book.job(task_id)
        self.book.move_to(now)

    def prune(self, before, now):
        kit.check_prune(self.book.now, before, now)
        self.book.move_to(now)


#: The cases that need no state beyond the set-up's workers: an argument's value alone decides.
ARGUMENT_ONLY = [name for name, (setup, _, _) in CASES.items() if setup in (_nothing, _worker)]


def test_the_argument_only_cases_are_most_of_them() -> None:
    assert len(ARGUMENT_ONLY) >= 35, ARGUMENT_ONLY


@pytest.mark.parametrize("name", ARGUMENT_ONLY)
def test_the_kit_checks_give_the_contract_verdict(name: str) -> None:
    assert verdict(KitScheduler, name) == CASES[name][2]


# ---------------------------------------------------------------- histories


@pytest.mark.parametrize("label", ["simple", "durable"])
def test_a_recorded_history_of_every_case_is_read_back_and_linearizable(label: str, tmp_path) -> None:
    """Whatever a client passes, a recorder writes a history ``linearize`` reads and decides.

    One process per case (each on its own fresh scheduler and log would not
    test the file): every case's calls on one scheduler, as one client.
    """
    from fencepost.spec.checkers.linearize import check_history
    from fencepost.spec.formats.history import HistoryLog, load_history

    refused = 0
    for number, name in enumerate(CASES):
        log = HistoryLog()
        scheduler = SCHEDULERS[label]()
        recorder = log.recorder(scheduler, "c1")
        setup, call, want = CASES[name]
        try:
            given = setup(recorder)
            try:
                call(recorder, given)
            except ValueError:
                refused += 1
        finally:
            getattr(scheduler, "close", lambda: None)()
        path = tmp_path / f"{number}.jsonl"
        log.write(path)
        verdict_ = check_history(load_history(path))  # a HistoryError would fail here: the file is unreadable
        assert verdict_.linearizable, f"{name}: {verdict_.failure}"
    assert refused == sum(1 for _, _, want in CASES.values() if want == REFUSED)


# ---------------------------------------------------------------- fencepost check's boundary probes


class _Wider(SimpleScheduler):
    """Accepts a capacity past INT_MAX: wider than the contract."""

    def add_worker(self, worker, capacity):
        if isinstance(capacity, int) and capacity > INT_MAX:
            self._capacity[worker] = capacity
            return
        super().add_worker(worker, capacity)


def test_the_boundary_probes_pass_the_shipped_schedulers_and_catch_a_narrower_and_a_wider_one() -> None:
    from fencepost.impl.mutants.narrow_ints import Scheduler as Narrower
    from fencepost.spec.checkers.boundaries import check_boundaries
    from fencepost.spec.checkers.capabilities import detect

    for factory in (SimpleScheduler, IndexedScheduler, durable_temporary):
        assert check_boundaries(factory, detect(factory)) is None, factory
    for factory, wrong in ((Narrower, "expected ok, got error: capacity must be below 2**53"),
                           (_Wider, "expected error: capacity must be a signed 64-bit int")):
        trace = check_boundaries(factory, detect(factory))
        assert trace and len(trace) == 1 and trace[0].args == {"worker": "w1", "capacity": INT_MAX + (factory is _Wider)}
        assert wrong in trace[0].problem, trace[0].problem
