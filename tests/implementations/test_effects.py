"""EffectLedger: the seed's repeated effect, shown with a real SIGKILL, and prevented by the ledger.

"If a worker performs an effect and crashes before recording success,
retrying can repeat that effect." A worker process leases a task from a
DurableScheduler file, performs the task's effect, and is killed before it
can ``complete``; after the lease expires a second worker retries. Without
the ledger the effect happens twice; through the ledger, once. A zombie's
late effect is fenced off. Every wait on the worker process is bounded.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest

from fencepost.impl.durable import DurableScheduler
from fencepost.impl.runner.effects import ALREADY_APPLIED, EffectLedger
from fencepost.spec.protocol import Outcome

#: The longest the test waits for the worker process to report or to die.
WAIT_S = 20.0
#: The task's lease; the retry comes at its end.
LEASE = 10


@pytest.fixture
def folder() -> Path:
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="fencepost-effects-", dir=base))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def charge(destination: sqlite3.Connection, task_id: int) -> None:
    """The task's effect: one row in the destination's own table (say, a card charged)."""
    destination.execute("INSERT INTO charges (task_id) VALUES (?)", (task_id,))


def open_destination(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE IF NOT EXISTS charges (n INTEGER PRIMARY KEY, task_id INTEGER)")
    return conn


def worker_that_dies_before_complete(folder: Path, use_ledger: bool, report) -> None:
    """Lease the task, perform its effect, tell the parent, then wait to be killed (never completes)."""
    scheduler = DurableScheduler(folder / "scheduler.db")
    lease = scheduler.dispatch("w1", 0, LEASE)
    if use_ledger:
        ledger = EffectLedger(folder / "destination.db")
        ledger.apply(f"charge-task-{lease.task_id}", lease.token, lambda: charge(ledger.connection, lease.task_id))
    else:
        charge(open_destination(folder / "destination.db"), lease.task_id)
    report.send("effect done")
    report.recv()  # the parent kills us here, before complete()


def run_the_seeds_failure(folder: Path, use_ledger: bool) -> int:
    """The whole story; returns how many times the task's effect happened."""
    setup = DurableScheduler(folder / "scheduler.db")
    setup.add_worker("w1", 1)
    setup.add_worker("w2", 1)
    setup.submit()
    setup.close()
    open_destination(folder / "destination.db").close()
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe()
    worker = context.Process(target=worker_that_dies_before_complete, args=(folder, use_ledger, child), daemon=True)
    worker.start()
    try:
        assert parent.poll(WAIT_S), "the worker never reported its effect"
        assert parent.recv() == "effect done"
    finally:
        worker.kill()  # SIGKILL: after the effect, before complete()
        worker.join(WAIT_S)
    assert not worker.is_alive()

    scheduler = DurableScheduler(folder / "scheduler.db")  # a new process's view
    assert scheduler.task(1).status == "running"  # the dead worker still holds the lease...
    retry = scheduler.dispatch("w2", LEASE, LEASE)  # ...until it expires at its end: recovery
    assert retry is not None and retry.task_id == 1 and retry.token == 2
    if use_ledger:
        ledger = EffectLedger(folder / "destination.db")
        outcome = ledger.apply("charge-task-1", retry.token, lambda: charge(ledger.connection, 1))
        assert outcome.accepted and outcome.reason == ALREADY_APPLIED
        ledger.close()
    else:
        charge(open_destination(folder / "destination.db"), 1)
    assert scheduler.complete(1, retry.token, LEASE + 1).accepted
    scheduler.close()
    return open_destination(folder / "destination.db").execute("SELECT count(*) FROM charges").fetchone()[0]


def test_without_the_ledger_a_retry_after_a_crash_repeats_the_effect(folder: Path) -> None:
    assert run_the_seeds_failure(folder, use_ledger=False) == 2


def test_through_the_ledger_the_effect_happens_once(folder: Path) -> None:
    assert run_the_seeds_failure(folder, use_ledger=True) == 1


def test_a_zombies_late_effect_is_refused(folder: Path) -> None:
    """Worker 1's lease (token 1) expired; worker 2 (token 2) acted; worker 1 wakes up and tries."""
    ledger = EffectLedger(folder / "destination.db")
    ran: list[int] = []
    assert ledger.apply("report-7", 2, lambda: ran.append(2)) == Outcome(True)
    late = ledger.apply("report-7", 1, lambda: ran.append(1))
    assert late.accepted is False and late.reason == "stale_token"
    assert ran == [2]
    assert ledger.record("report-7") == (2, 2)
    # A later lease retrying is accepted without running it again, and raises the fence.
    assert ledger.apply("report-7", 5, lambda: ran.append(5)) == Outcome(True, ALREADY_APPLIED)
    assert not ledger.apply("report-7", 4, lambda: ran.append(4)).accepted
    assert ran == [2]
    ledger.close()
    reopened = EffectLedger(folder / "destination.db")  # durable: the fence survives a restart
    assert not reopened.apply("report-7", 2, lambda: ran.append(2)).accepted
    assert reopened.record("report-7") == (5, 2)
    reopened.close()


def test_a_zombie_that_writes_before_the_new_holder_passes_the_fence_and_the_key_keeps_it_single(folder: Path) -> None:
    """What at-least-once step 8 says: fencing refuses only tokens below one already seen, so
    token 1 acting first is accepted; the idempotency key is what keeps token 2 from acting again."""
    ledger = EffectLedger(folder / "destination.db")
    ran: list[int] = []
    assert ledger.apply("add-10-task-1", 1, lambda: ran.append(1)) == Outcome(True)
    assert ledger.apply("add-10-task-1", 2, lambda: ran.append(2)) == Outcome(True, ALREADY_APPLIED)
    assert ran == [1] and ledger.record("add-10-task-1") == (2, 1)
    ledger.close()


def worker_that_dies_inside_an_outside_call(folder: Path, report) -> None:
    """Through the ledger, call a card provider (outside the ledger's file), then wait to be killed
    before the ledger commits its record."""
    ledger = EffectLedger(folder / "destination.db")

    def charge_card() -> None:
        with open(folder / "provider.log", "a", encoding="utf-8") as provider:  # the provider's own books
            provider.write("charged order 42\n")
        report.send("charged")
        report.recv()  # the parent kills us here, inside apply, before its commit

    ledger.apply("charge-order-42", 1, charge_card)


def test_an_outside_call_is_repeated_by_the_retry_even_through_the_ledger(folder: Path) -> None:
    """What the durability walkthrough says at step 11: the ledger covers writes to its own
    database only; a card charged at a provider, done and not recorded when the worker dies, is
    charged again by the retry, unless the provider checks a key itself."""
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe()
    worker = context.Process(target=worker_that_dies_inside_an_outside_call, args=(folder, child), daemon=True)
    worker.start()
    try:
        assert parent.poll(WAIT_S), "the worker never reported its charge"
        assert parent.recv() == "charged"
    finally:
        worker.kill()  # SIGKILL: after the outside call, before the ledger's commit
        worker.join(WAIT_S)
    assert not worker.is_alive()
    ledger = EffectLedger(folder / "destination.db")
    assert ledger.record("charge-order-42") is None  # the record died with the transaction

    def charge_card_again() -> None:
        with open(folder / "provider.log", "a", encoding="utf-8") as provider:
            provider.write("charged order 42\n")

    assert ledger.apply("charge-order-42", 2, charge_card_again) == Outcome(True)  # run again, not already_applied
    ledger.close()
    assert (folder / "provider.log").read_text(encoding="utf-8").count("charged order 42") == 2


def test_an_effect_that_raises_is_not_recorded_and_its_writes_roll_back(folder: Path) -> None:
    ledger = EffectLedger(folder / "destination.db")
    ledger.connection.execute("CREATE TABLE charges (n INTEGER PRIMARY KEY, task_id INTEGER)")

    def half_done() -> None:
        charge(ledger.connection, 3)
        raise RuntimeError("the effect failed half way")

    with pytest.raises(RuntimeError):
        ledger.apply("charge-task-3", 1, half_done)
    assert ledger.record("charge-task-3") is None
    assert ledger.connection.execute("SELECT count(*) FROM charges").fetchone()[0] == 0
    assert ledger.apply("charge-task-3", 1, lambda: charge(ledger.connection, 3)) == Outcome(True)
    assert ledger.connection.execute("SELECT count(*) FROM charges").fetchone()[0] == 1
    ledger.close()


@pytest.mark.parametrize(
    ("key", "token", "effect", "name"),
    [("", 1, print, "key"), (7, 1, print, "key"), ("k", True, print, "token"), ("k", 1.0, print, "token"),
     ("k", 2**63, print, "token"), ("k", 1, "print", "effect")],
)
def test_bad_arguments_are_refused_by_name_and_record_nothing(folder: Path, key, token, effect, name: str) -> None:
    ledger = EffectLedger(folder / "destination.db")
    with pytest.raises(ValueError, match=f"^{name} must"):
        ledger.apply(key, token, effect)
    assert ledger.connection.execute("SELECT count(*) FROM fencepost_effects").fetchone()[0] == 0
    ledger.close()
