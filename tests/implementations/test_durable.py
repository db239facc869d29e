"""DurableScheduler: the protocol in one SQLite file, and what the conformance machine cannot see.

The conformance check (with restarts, where the spec offers them) says the
answers are right. These tests look at the file: a reopened scheduler sees
every call that returned, an invalid call writes nothing, leases keep their
end across a restart and recovery is the lease rule, keys survive restarts,
the batch and the effect boundary are all-or-nothing, the dispatch query
walks its index, numbers outside 64 bits are refused by name, and
``check_invariants()`` notices a corrupted file.
"""

from __future__ import annotations

import gc
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import settings

import fencepost.impl.durable as durable
from fencepost.impl.durable import DurableScheduler, temporary
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec import profiles
from fencepost.spec.checkers.check import check_factory, report_failure
from fencepost.spec.protocol import Lease, Status

#: tmpfs, where there is one: the tests exercise SQLite's logic, not the disk's fsync.
FAST_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


@pytest.fixture
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if FAST_DIR is None:
        return tmp_path_factory.mktemp("durable")
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="fencepost-test-", dir=FAST_DIR))
    yield path
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def views(scheduler: object, count: int) -> list:
    return [scheduler.task(i) for i in range(1, count + 1)]


def story(s: object) -> None:
    """A little of everything: a lease, a completion, a retry, a cancel request, a renewal, an expiry."""
    s.add_worker("w1", 2)
    s.add_worker("w2", 1)
    for priority in (0, 2, 1, 0):
        s.submit(priority=priority, max_attempts=3)
    first = s.dispatch("w1", 1, 5)  # task 2
    second = s.dispatch("w1", 1, 3)  # task 3
    s.complete(first.task_id, first.token, 2)
    third = s.dispatch("w2", 2, 4)  # task 1
    s.fail(third.task_id, third.token, 3)
    s.cancel(second.task_id, 3)
    s.renew(second.task_id, second.token, 3, 9)  # refused: a cancel was requested
    s.advance(4)  # task 3's lease [1, 4) ends: cancelled
    s.dispatch("w2", 5, 10)


# ---------------------------------------------------------------- the contract, restarts included


def durable_on_tmpfs() -> DurableScheduler:
    """``impl.durable:temporary``, on tmpfs when there is one: the same SQLite code without the disk's fsync."""
    return temporary(directory=FAST_DIR)


#: ``fencepost check impl.durable:temporary``'s runs, split into this many parts with seeds of their
#: own, each required to reach every outcome on its own: under ``-n auto`` the parts run side by side,
#: where the whole check in one test (about a minute) held up the end of the parallel run.
CONFORMANCE_PARTS = 2

#: Part k's seeds start at k times this (a part runs up to ``COVERAGE_BATCHES`` seeds from its first): none shared.
PART_SEEDS = 1_000


@pytest.mark.parametrize("part", range(CONFORMANCE_PARTS))
def test_durable_conforms_to_the_spec_restarts_included(part: int) -> None:
    """``conformance_test``'s check (at least the ``ci`` profile's runs in all), one part of it."""
    base = settings.default
    runs = max(base.max_examples, profiles.CI_EXAMPLES)
    result = check_factory(durable_on_tmpfs, max_examples=-(-runs // CONFORMANCE_PARTS),
                           seed=None if part == 0 else part * PART_SEEDS, base=base)
    assert result.passed, "\n" + report_failure(result)
    assert not result.missing, "the check never reached: " + "; ".join(result.missing)


def test_a_reopened_scheduler_sees_every_call_that_returned(folder: Path) -> None:
    reference, s = SimpleScheduler(), DurableScheduler(folder / "s.db")
    story(reference)
    story(s)
    again = s.reopen()
    assert again.now == reference.now == 5
    assert views(again, 4) == views(reference, 4)
    # The hidden state too: the next id and token, the workers and their capacities.
    assert again.submit() == reference.submit() == 5
    assert again.dispatch("w1", 5, 1) == reference.dispatch("w1", 5, 1)
    with pytest.raises(ValueError, match="already exists"):
        again.add_worker("w2", 1)
    again.close()


def test_a_lease_keeps_its_end_across_a_restart_and_expiry_recovers_the_task(folder: Path) -> None:
    """The seed's recovery of abandoned work: the worker died, the lease rule takes the task back."""
    s = DurableScheduler(folder / "s.db")
    s.add_worker("w", 1)
    s.submit()
    lease = s.dispatch("w", 5, 5)
    s.close()  # the process dies mid-lease
    s = DurableScheduler(folder / "s.db")
    assert s.task(1).status is Status.RUNNING and s.task(1).expires_at == 10
    assert s.dispatch("w", 9, 5) is None  # still full at 9: the lease is [5, 10)
    assert s.complete(1, lease.token, 10).reason == "lease_expired"  # at 10 it has ended
    assert s.task(1).status is Status.PENDING
    assert s.dispatch("w", 10, 5) == Lease(1, "w", 2, 10, 15)  # a fresh token
    s.close()


def test_an_invalid_call_writes_nothing(folder: Path) -> None:
    s = DurableScheduler(folder / "s.db")
    story(s)
    before = s._conn.total_changes
    for call in (
        lambda: s.dispatch("w1", 4, 1),  # time going backwards
        lambda: s.dispatch("nobody", 9, 1),
        lambda: s.complete(9, 1, 9),
        lambda: s.renew(1, 1, 9, 0),
        lambda: s.submit(priority=True),
        lambda: s.submit(key=""),
        lambda: s.add_worker("w1", 1),
        lambda: s.cancel(1, -1),
    ):
        with pytest.raises(ValueError):
            call()
    assert s._conn.total_changes == before
    assert s.now == 5
    s.check_invariants()
    s.close()


def test_refused_calls_still_commit_their_expiry(folder: Path) -> None:
    """Time advancement is a transition of its own, kept when the call itself is refused."""
    s = DurableScheduler(folder / "s.db")
    s.add_worker("w", 1)
    s.submit()
    lease = s.dispatch("w", 0, 3)
    assert not s.complete(1, lease.token + 1, 3).accepted
    s = s.reopen()
    assert s.now == 3 and s.task(1).status is Status.PENDING
    s.close()


# ---------------------------------------------------------------- idempotency keys


def test_keys_are_remembered_across_restarts(folder: Path) -> None:
    s = DurableScheduler(folder / "s.db")
    assert s.submit(priority=2, key="invoice-7") == 1
    assert s.submit(priority=2, key="invoice-7") == 1  # a duplicate: nothing consumed
    assert s.submit() == 2
    s = s.reopen()
    assert s.submit(priority=2, key="invoice-7") == 1
    with pytest.raises(ValueError, match="invoice-7"):
        s.submit(priority=3, key="invoice-7")
    with pytest.raises(ValueError, match="invoice-7"):
        s.submit(priority=2, due_at=0, key="invoice-7")  # due_at=0 is not due_at=None
    assert s.submit() == 3
    s.close()


# ---------------------------------------------------------------- all or nothing


def test_a_batch_commits_together_and_an_invalid_call_in_it_undoes_only_itself(folder: Path) -> None:
    s = DurableScheduler(folder / "s.db")
    with s.batch():
        s.submit()
        with pytest.raises(ValueError):
            s.submit(max_attempts=0)
        s.submit()
    assert s.submit() == 3
    with pytest.raises(RuntimeError), s.batch():
        s.submit()
        raise RuntimeError("the block fails")
    assert s.submit() == 4  # the failed block's task 4 was rolled back with it
    s = s.reopen()
    assert [t.id for t in views(s, 4)] == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="unknown"):
        s.task(5)
    s.close()


def test_an_effect_commits_with_its_completion_or_not_at_all(folder: Path) -> None:
    """The transactional boundary: the effect's SQL and the completion are one transaction."""
    s = DurableScheduler(folder / "s.db")
    s._conn.execute("CREATE TABLE invoices (task_id INTEGER PRIMARY KEY, amount INTEGER)")
    s.add_worker("w", 1)
    s.submit()
    lease = s.dispatch("w", 0, 10)

    def record(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO invoices VALUES (?, ?)", (lease.task_id, 42))

    def record_then_fail(conn: sqlite3.Connection) -> None:
        record(conn)
        raise RuntimeError("the effect failed half way")

    with pytest.raises(RuntimeError):
        s.complete(1, lease.token, 1, effect=record_then_fail)
    assert s.task(1).status is Status.RUNNING  # neither happened
    assert s._conn.execute("SELECT count(*) FROM invoices").fetchone()[0] == 0
    ran = []
    assert not s.complete(1, lease.token + 1, 1, effect=ran.append).accepted  # refused: no effect
    assert ran == []
    assert s.complete(1, lease.token, 2, effect=record).accepted
    s = s.reopen()
    assert s.task(1).status is Status.SUCCEEDED
    assert s._conn.execute("SELECT * FROM invoices").fetchall() == [(1, 42)]
    s.check_invariants()
    s.close()


# ---------------------------------------------------------------- the file


def test_dispatch_walks_the_dispatch_order_index(folder: Path) -> None:
    s = DurableScheduler(folder / "s.db")
    plan = [row[-1] for row in s._conn.execute("EXPLAIN QUERY PLAN " + durable._DISPATCH, (1, "w", 0, 1, 0))]
    assert any("USING INDEX tasks_waiting" in step for step in plan), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan  # no sort: the index is the order
    s.close()


def test_a_file_of_another_kind_is_refused_by_name(folder: Path) -> None:
    (folder / "notes.txt").write_text("not a database" * 100)
    with pytest.raises(ValueError, match="notes.txt.*not a fencepost durable scheduler file"):
        DurableScheduler(folder / "notes.txt")
    other = sqlite3.connect(folder / "other.db")
    other.execute("CREATE TABLE t (x)")
    other.commit()
    other.close()
    with pytest.raises(ValueError, match="schema version 0"):
        DurableScheduler(folder / "other.db")
    with pytest.raises(ValueError, match="synchronous must be one of FULL, NORMAL"):
        DurableScheduler(folder / "s.db", synchronous="OFF")


def test_a_second_scheduler_on_an_open_file_is_refused(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(durable, "BUSY_TIMEOUT_S", 0.05)  # the bound on the wait, shortened
    first = DurableScheduler(folder / "s.db")
    with pytest.raises(ValueError, match="held by another scheduler"):
        DurableScheduler(folder / "s.db")
    first.close()
    DurableScheduler(folder / "s.db").close()  # free once the first lets go


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda s: s.submit(priority=2**63), "priority"),
        (lambda s: s.submit(due_at=2**63), "due_at"),
        (lambda s: s.advance(2**63), "now"),
        (lambda s: s.dispatch("w", 0, 2**63), "duration"),
        (lambda s: s.add_worker("v", 2**63), "capacity"),
    ],
)
def test_numbers_past_64_bits_are_refused_by_name(folder: Path, call, name: str) -> None:
    s = DurableScheduler(folder / "s.db")
    s.add_worker("w", 1)
    s.submit()
    with pytest.raises(ValueError, match=f"{name} must be a signed 64-bit int"):
        call(s)
    assert s.task(1).status is Status.PENDING and s.now == 0
    with pytest.raises(ValueError, match="token must be a signed 64-bit int"):  # as every int argument, anywhere
        s.complete(1, 2**70, 0)
    s.close()


def test_check_invariants_catches_a_corrupted_file(folder: Path) -> None:
    s = DurableScheduler(folder / "s.db")
    s.add_worker("w", 1)
    s.submit()
    s.submit()
    s.dispatch("w", 0, 5)
    s.check_invariants()
    s._conn.execute("UPDATE tasks SET status = 'running', worker = 'w', token = 9, started_at = 0, expires_at = 5 WHERE id = 2")
    with pytest.raises(AssertionError, match="capacity"):
        s.check_invariants()
    s._conn.execute("UPDATE tasks SET status = 'pending', worker = NULL, started_at = NULL, expires_at = NULL, token = NULL WHERE id = 2")
    s._conn.execute("UPDATE tasks SET worker = NULL WHERE id = 1")
    with pytest.raises(AssertionError, match="lease fields"):
        s.check_invariants()
    s.close()


def test_a_temporary_file_is_removed_once_nothing_uses_it() -> None:
    s = temporary()
    folder = s.path.parent
    s.submit()
    s = s.reopen()  # the reopened scheduler keeps the file alive
    gc.collect()
    assert s.task(1).status is Status.PENDING and folder.exists()
    del s
    gc.collect()
    assert not folder.exists()
