"""Histories recorded from real concurrent runs: the locked scheduler passes, the broken ones do not."""

from __future__ import annotations

import random
import threading

import pytest

from fencepost.impl import Scheduler
from fencepost.spec.checkers.linearize import check_history
from fencepost.spec.checkers.linearize_command import report
from fencepost.spec.formats.history import HistoryLog, load_history
from concurrent_schedulers import WAIT_SECONDS, Locked, StatusFencedCompletion, UnlockedClaim


def run_clients(*clients) -> None:
    """Run each client function in its own thread, all starting together; fail if one raises or
    does not finish in time."""
    errors = []
    start = threading.Barrier(len(clients), timeout=WAIT_SECONDS)

    def guarded(client):
        try:
            start.wait()
            client()
        except BaseException as exc:  # noqa: BLE001 - reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(client,), daemon=True) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_SECONDS)
        assert not thread.is_alive(), "a client did not finish in time"
    if errors:
        raise errors[0]


def recorded(log: HistoryLog, tmp_path):
    """The log written out and read back, as fencepost linearize reads it."""
    log.write(tmp_path / "h.jsonl")
    return load_history(tmp_path / "h.jsonl")


# ---------------------------------------------------------------- a zombie's late completion


def zombie_run(scheduler, tmp_path):
    """c1 leases task 1 for [0, 5), stalls past its lease; c2 takes the task over at 5; then c1 completes."""
    log = HistoryLog()
    setup = log.recorder(scheduler, "c0")
    setup.add_worker("w1", 1)
    setup.add_worker("w2", 1)
    setup.submit()
    leased, replaced = threading.Event(), threading.Event()

    def zombie():
        me = log.recorder(scheduler, "c1")
        lease = me.dispatch("w1", 0, 5)
        leased.set()
        assert replaced.wait(WAIT_SECONDS)
        me.complete(lease.task_id, lease.token, 6)

    def replacement():
        me = log.recorder(scheduler, "c2")
        assert leased.wait(WAIT_SECONDS)
        me.advance(5)
        me.dispatch("w2", 5, 5)
        replaced.set()

    run_clients(zombie, replacement)
    return recorded(log, tmp_path)


def test_a_zombies_completion_fenced_by_status_is_not_linearizable(tmp_path):
    h = zombie_run(StatusFencedCompletion(), tmp_path)
    assert h.calls[-1].result.accepted  # the broken scheduler took it
    verdict = check_history(h)
    assert verdict.linearizable is False
    assert h.calls[verdict.failure.call].op == "complete"
    assert "rejected (stale_token)" in "\n".join(report(h, verdict))


def test_a_zombies_completion_on_the_real_scheduler_is_linearizable(tmp_path):
    h = zombie_run(Locked(Scheduler()), tmp_path)
    assert not h.calls[-1].result.accepted
    assert check_history(h).linearizable


# ---------------------------------------------------------------- two clients claim one task


def claim_race(make, tmp_path):
    """Two tasks, two workers; c1 and c2 dispatch at once."""
    race = threading.Barrier(2, timeout=WAIT_SECONDS)
    scheduler = make(race)
    log = HistoryLog()
    setup = log.recorder(scheduler, "c0")
    for worker in ("w1", "w2"):
        setup.add_worker(worker, 1)
    setup.submit()
    setup.submit()

    def client(name, worker):
        def go():
            log.recorder(scheduler, name).dispatch(worker, 0, 5)
        return go

    run_clients(client("c1", "w1"), client("c2", "w2"))
    return recorded(log, tmp_path)


def test_a_claim_without_a_lock_gives_one_task_twice_and_is_not_linearizable(tmp_path):
    h = claim_race(lambda race: UnlockedClaim(between=race.wait), tmp_path)
    leases = [c.result for c in h.calls if c.op == "dispatch"]
    assert [lease.task_id for lease in leases] == [1, 1]
    verdict = check_history(h)
    assert verdict.linearizable is False
    assert "lease task 2 to" in "\n".join(report(h, verdict))  # what the model would have given the second


def test_two_claims_on_the_real_scheduler_are_linearizable(tmp_path):
    def make(race):
        locked = Locked(Scheduler())
        return _StartTogether(locked, race)

    h = claim_race(make, tmp_path)
    assert sorted(c.result.task_id for c in h.calls if c.op == "dispatch") == [1, 2]
    assert check_history(h).linearizable


class _StartTogether:
    """Both dispatches wait at the barrier first, so their calls overlap in the history."""

    def __init__(self, inner, race):
        self._inner, self._race = inner, race

    def dispatch(self, **args):
        self._race.wait()
        return self._inner.dispatch(**args)

    def __getattr__(self, name):
        return getattr(self._inner, name)


# ---------------------------------------------------------------- many clients at once


def random_client(scheduler, log, number: int, clock: list[int], seed: int, calls: int):
    """A client making ``calls`` random protocol calls on its own tasks and leases, as process c<number>."""
    rng = random.Random(seed * 100 + number)
    me = log.recorder(scheduler, f"c{number}")
    worker = f"w{number}"
    mine, leases = [], []

    def now():
        clock[0] += rng.choice((0, 0, 1))  # a shared logical clock; a client may read it late and be refused
        return clock[0]

    def go():
        for _ in range(calls):
            verb = rng.choice(("submit", "submit", "dispatch", "dispatch", "complete", "fail", "renew", "cancel", "advance"))
            try:
                if verb == "submit":
                    mine.append(me.submit(priority=rng.randrange(3), max_attempts=rng.choice((None, 2))))
                elif verb == "dispatch":
                    lease = me.dispatch(worker, now(), rng.randrange(1, 4))
                    if lease is not None:
                        leases.append(lease)
                elif verb in ("complete", "fail") and leases:
                    lease = leases.pop(rng.randrange(len(leases)))
                    getattr(me, verb)(lease.task_id, lease.token, now())
                elif verb == "renew" and leases:
                    lease = rng.choice(leases)
                    me.renew(lease.task_id, lease.token, now(), rng.randrange(1, 4))
                elif verb == "cancel" and mine:
                    me.cancel(rng.choice(mine), now())
                elif verb == "advance":
                    me.advance(now())
            except ValueError:
                pass  # recorded; a late clock reading is the usual cause

    return go


@pytest.mark.parametrize("seed", range(3))
def test_four_clients_on_the_real_scheduler_give_linearizable_histories(tmp_path, seed):
    scheduler = Locked(Scheduler())
    log = HistoryLog()
    setup = log.recorder(scheduler, "setup")
    for number in range(1, 5):
        setup.add_worker(f"w{number}", 2)
    clock = [0]
    run_clients(*(random_client(scheduler, log, number, clock, seed, calls=60) for number in range(1, 5)))
    h = recorded(log, tmp_path)
    assert set(h.processes) == {"setup", "c1", "c2", "c3", "c4"}
    verdict = check_history(h)
    assert verdict.linearizable, "\n".join(report(h, verdict))
    assert sorted(verdict.order) == list(range(len(h.calls)))
