"""The seeds' worked examples, as plain example tests on the model and both implementations."""

from __future__ import annotations

from schedulers import every_scheduler

from fencepost.spec.protocol import Reason


@every_scheduler
def test_capacity_one_worker_and_the_lease_5_to_10(make):
    s = make()
    s.add_worker("w1", 1)
    s.submit()
    s.submit()
    lease = s.dispatch("w1", now=5, duration=5)
    assert (lease.task_id, lease.token, lease.started_at, lease.expires_at) == (1, 1, 5, 10)
    assert s.dispatch("w1", now=9, duration=5) is None  # full at 9
    assert s.task(2).status == "pending"
    late = s.complete(1, 1, now=10)  # [5, 10): at 10 the lease is over
    assert not late.accepted
    assert late.reason == Reason.LEASE_EXPIRED
    assert s.task(1).status == "pending" and s.task(1).worker is None
    again = s.dispatch("w1", now=10, duration=5)  # the slot is free again
    assert (again.task_id, again.token) == (1, 2)


@every_scheduler
def test_completion_one_before_expiry_is_accepted_and_frees_the_slot_at_once(make):
    s = make()
    s.add_worker("w1", 1)
    s.submit()
    s.submit()
    s.dispatch("w1", now=5, duration=5)
    assert s.complete(1, 1, now=9).accepted
    assert s.task(1).status == "succeeded"
    assert s.dispatch("w1", now=9, duration=5).task_id == 2


@every_scheduler
def test_reassignment_to_the_same_worker_issues_a_fresh_token(make):
    s = make()
    s.add_worker("w1", 1)
    s.submit()
    first = s.dispatch("w1", now=0, duration=10)
    second = s.dispatch("w1", now=10, duration=10)
    assert (first.task_id, second.task_id) == (1, 1)
    assert (first.worker, second.worker) == ("w1", "w1")
    assert (first.token, second.token) == (1, 2)
    stale = s.complete(1, first.token, now=19)  # the delayed completion of the old attempt
    assert not stale.accepted and stale.reason == Reason.STALE_TOKEN
    assert s.task(1).status == "running" and s.task(1).token == 2
    assert s.complete(1, second.token, now=19).accepted


@every_scheduler
def test_task_10_is_dispatched_after_task_2_numeric_not_string_order(make):
    s = make()
    s.add_worker("w1", 20)
    for _ in range(12):
        s.submit(priority=1)
    order = [s.dispatch("w1", now=0, duration=5).task_id for _ in range(12)]
    assert order == list(range(1, 13))  # "task_10" < "task_2" as strings; not here


@every_scheduler
def test_priority_first_then_due_time_then_id(make):
    s = make()
    s.add_worker("w1", 10)
    s.submit(priority=0, due_at=0)  # 1
    s.submit(priority=5, due_at=3)  # 2
    s.submit(priority=5, due_at=1)  # 3
    s.submit(priority=5, due_at=1)  # 4
    order = [s.dispatch("w1", now=3, duration=5).task_id for _ in range(4)]
    assert order == [3, 4, 2, 1]


@every_scheduler
def test_a_and_b_due_at_12_and_c_at_20_with_one_worker(make):
    s = make()
    s.add_worker("w1", 1)
    s.advance(10)
    a = s.submit(due_at=12)
    b = s.submit(due_at=12)
    c = s.submit(due_at=20)
    assert s.dispatch("w1", now=11, duration=5) is None  # nothing due yet
    lease = s.dispatch("w1", now=12, duration=5)
    assert lease.task_id == a  # equal due times: insertion order
    assert s.dispatch("w1", now=13, duration=5) is None  # B waits for the worker
    assert s.task(b).status == "pending"
    assert s.fail(a, lease.token, now=14).accepted  # A fails: retry later, not a sleeping worker
    assert s.task(a).status == "retry_wait" and s.task(a).due_at == 15
    assert s.dispatch("w1", now=14, duration=5).task_id == b
    assert s.task(c).status == "pending" and s.task(c).due_at == 20


@every_scheduler
def test_cancellation_before_claim_means_it_never_starts(make):
    s = make()
    s.add_worker("w1", 1)
    t = s.submit()
    assert s.cancel(t, now=0).accepted
    assert s.task(t).status == "cancelled"
    assert s.dispatch("w1", now=1, duration=5) is None
    refused = s.cancel(t, now=1)
    assert not refused.accepted and refused.reason == Reason.ALREADY_FINAL


@every_scheduler
def test_cooperative_cancellation_of_running_work(make):
    s = make()
    s.add_worker("w1", 2)
    t1, t2 = s.submit(), s.submit()
    l1 = s.dispatch("w1", now=0, duration=10)
    l2 = s.dispatch("w1", now=0, duration=10)
    assert s.cancel(t1, now=1).accepted and s.cancel(t1, now=1).accepted  # again accepted
    assert s.task(t1).status == "running" and s.task(t1).cancel_requested
    refused = s.renew(t1, l1.token, now=2, duration=10)
    assert not refused.accepted and refused.reason == Reason.CANCEL_REQUESTED
    assert s.complete(t1, l1.token, now=3).accepted  # the work did finish
    assert s.task(t1).status == "succeeded"
    assert s.cancel(t2, now=4).accepted
    s.advance(10)  # its lease ends: cancelled, not pending
    assert s.task(t2).status == "cancelled"
    assert not s.complete(t2, l2.token, now=10).accepted


@every_scheduler
def test_retry_backoff_doubles_and_the_budget_runs_out(make):
    s = make()
    s.add_worker("w1", 1)
    t = s.submit(max_attempts=3, retry_delay=2)
    dues = []
    for attempt in range(3):
        lease = s.dispatch("w1", now=s.task(t).due_at, duration=5)
        assert lease is not None and s.task(t).attempts == attempt + 1
        assert s.fail(t, lease.token, now=lease.started_at + 1).accepted
        dues.append(s.task(t).due_at - (lease.started_at + 1))
    assert dues[:2] == [2, 4]  # retry_delay * 2 ** (attempts - 1)
    assert s.task(t).status == "failed" and s.task(t).attempts == 3


@every_scheduler
def test_expiry_with_the_budget_spent_ends_failed(make):
    s = make()
    s.add_worker("w1", 1)
    t = s.submit(max_attempts=1)
    s.dispatch("w1", now=0, duration=3)
    s.advance(3)
    assert s.task(t).status == "failed"


@every_scheduler
def test_capacity_saturation_across_workers(make):
    s = make()
    s.add_worker("w1", 2)
    s.add_worker("w2", 1)
    for _ in range(5):
        s.submit()
    got = [s.dispatch(w, now=0, duration=5) for w in ("w1", "w1", "w1", "w2", "w2")]
    assert [g.task_id if g else None for g in got] == [1, 2, None, 3, None]
    assert [s.task(i).status for i in range(1, 6)] == ["running"] * 3 + ["pending"] * 2


@every_scheduler
def test_a_task_that_submits_another_task(make):
    s = make()
    s.add_worker("w1", 1)
    parent = s.submit()
    lease = s.dispatch("w1", now=2, duration=5)
    child = s.submit(due_at=4)  # submitted by the running work: untimed, expires nothing
    assert child == parent + 1 and s.now == 2
    assert s.complete(parent, lease.token, now=3).accepted
    assert s.dispatch("w1", now=3, duration=5) is None  # the child is not due yet
    assert s.dispatch("w1", now=4, duration=5).task_id == child


@every_scheduler
def test_a_failed_dispatch_consumes_nothing_but_still_expires_old_leases(make):
    s = make()
    s.add_worker("w1", 1)
    s.add_worker("w2", 1)
    s.submit()
    s.dispatch("w1", now=0, duration=5)
    assert s.dispatch("w2", now=1, duration=5) is None  # nothing eligible
    assert s.dispatch("w2", now=5, duration=5).token == 2  # task 1 expired at 5; no token was used by the None
    assert s.submit() == 2  # and no id was used either
