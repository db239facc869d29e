"""Submits that go around the lock: a runner alone on the scheduler it made queues them (``_queue_submit``).

What must hold, whatever the threads do: each submit gets the id the
scheduler then issues for exactly its options, in one order; every call on the
runner that could see a task sees it once its submit returned; a refused
option is refused with the scheduler's own message and consumes no id; an
idle pool is woken by a queued submit (never a lost wake-up); ``wait_idle``
does not return while a submit is queued. A runner given a scheduler submits
under the lock, as before; both meet the same checks here. Every wait is
bounded; nothing asserts how long anything took.
"""

from __future__ import annotations

import threading

import pytest
from runner_helpers import BOUND, Gate, replay_mismatches

from fencepost.impl import Scheduler
from fencepost.impl.runner.core import ManualClock, MonotonicClock, Runner
from fencepost.spec.protocol import Status

#: Threads submitting at once, and submits each, in the concurrent test.
SUBMITTERS, EACH = 4, 150


def own(**options: object) -> Runner:
    """A runner on the scheduler it makes itself: its submits are queued."""
    runner = Runner(**options)
    assert runner._submits is not None
    return runner


def given(**options: object) -> Runner:
    """A runner given its scheduler: its submits are made under the lock."""
    runner = Runner(scheduler=Scheduler(), **options)
    assert runner._submits is None
    return runner


def task_id_of(ctx) -> int:
    return ctx.task_id


@pytest.mark.parametrize("make", [own, given], ids=["queued", "locked"])
def test_concurrent_submitters_get_distinct_ids_each_naming_its_own_options(make, tmp_path) -> None:
    """Four threads submit at once while the pool runs: the ids are 1..N, each task has the options its
    submitter gave (its priority says which submit it was), ran once, and returned its own id."""
    runner = make(workers=3, clock=MonotonicClock(), trace=True)
    start = threading.Barrier(SUBMITTERS)
    mine: dict[int, int] = {}  # task id -> the priority its submit gave
    lock = threading.Lock()

    def submitter(n: int) -> None:
        start.wait(BOUND)
        for k in range(EACH):
            priority = n * EACH + k
            task_id = runner.submit(task_id_of, priority=priority)
            with lock:
                mine[task_id] = priority

    with runner:
        threads = [threading.Thread(target=submitter, args=(n,)) for n in range(SUBMITTERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(BOUND)
        runner.wait_idle(BOUND)
        assert sorted(mine) == list(range(1, SUBMITTERS * EACH + 1))
        for task_id, priority in mine.items():
            view = runner.task(task_id)
            assert (view.status, view.priority, view.attempts) == (Status.SUCCEEDED, priority, 1)
            assert runner.result(task_id) == task_id
        assert runner.submitted() == SUBMITTERS * EACH
    assert replay_mismatches(runner.save_trace(tmp_path / "trace.toml")) == []


@pytest.mark.parametrize("make", [own, given], ids=["queued", "locked"])
def test_a_submit_is_seen_by_every_call_once_it_returned(make) -> None:
    """Before start (nothing drains but the calls themselves): task, result, error, cancel, wait."""
    clock = ManualClock()
    runner = make(workers=1, clock=clock)
    first, second, third = (runner.submit(task_id_of) for _ in range(3))
    assert (first, second, third) == (1, 2, 3)
    assert runner.task(first).status is Status.PENDING
    with pytest.raises(ValueError, match="has no result: it is pending"):
        runner.result(second)
    assert runner.error(second) is None
    assert runner.cancel(third).accepted
    assert runner.submitted() == 3
    with runner:
        assert runner.wait(first, BOUND).status is Status.SUCCEEDED
        assert runner.wait(second, BOUND).status is Status.SUCCEEDED
        assert runner.wait(third, BOUND).status is Status.CANCELLED
        assert runner.result(second) == second


@pytest.mark.parametrize(
    "options",
    [{"priority": 1.5}, {"priority": True}, {"due_at": -1}, {"due_at": "5"}, {"max_attempts": 0},
     {"max_attempts": 2.0}, {"retry_delay": 0}, {"retry_delay": None}],
    ids=str,
)
def test_a_refused_option_says_what_the_scheduler_says_and_consumes_no_id(options) -> None:
    queued, locked = own(clock=ManualClock()), given(clock=ManualClock())
    with pytest.raises(ValueError) as by_queue:
        queued.submit(task_id_of, **options)
    with pytest.raises(ValueError) as by_scheduler:
        locked.submit(task_id_of, **options)
    assert str(by_queue.value) == str(by_scheduler.value)
    assert queued.submit(task_id_of) == locked.submit(task_id_of) == 1


def test_keyed_submits_go_under_the_lock_in_the_same_order_as_queued_ones() -> None:
    runner = own(workers=1, clock=ManualClock())
    ids = [runner.submit(task_id_of, priority=1), runner.submit(task_id_of, priority=2, key="k"),
           runner.submit(task_id_of, priority=3), runner.submit(task_id_of, priority=2, key="k"),
           runner.submit(task_id_of, priority=4)]
    assert ids == [1, 2, 3, 2, 4]
    assert [runner.task(i).priority for i in (1, 2, 3, 4)] == [1, 2, 3, 4]


def test_a_queued_submit_wakes_an_idle_pool_every_time() -> None:
    """Each submit comes when every slot has gone idle: a lost wake-up would leave its task pending."""
    with own(workers=2, clock=ManualClock()) as runner:
        for _ in range(200):
            runner.wait_idle(BOUND)
            task_id = runner.submit(task_id_of)
            assert runner.wait(task_id, BOUND).status is Status.SUCCEEDED


def test_wait_idle_waits_for_what_user_work_queued() -> None:
    """A task submits a child from user work (queued) and returns: wait_idle returns only once the child ran."""
    gate = Gate(BOUND)
    ran: list[int] = []

    def child(ctx) -> None:
        ran.append(ctx.task_id)

    def parent(ctx) -> int:
        gate.enter("parent")
        return ctx.submit(child)

    with own(workers=1, clock=ManualClock()) as runner:
        parent_id = runner.submit(parent)
        assert gate.next_start() == "parent"
        gate.release("parent")
        runner.wait_idle(BOUND)
        child_id = runner.result(parent_id)
        assert ran == [child_id] and runner.task(child_id).status is Status.SUCCEEDED


def test_a_queued_task_due_later_runs_when_its_time_comes_and_stop_leaves_the_rest_pending() -> None:
    clock = ManualClock()
    with own(workers=2, clock=clock) as runner:
        later = runner.submit(task_id_of, due_at=5)
        runner.wait_idle(BOUND)
        assert runner.task(later).status is Status.PENDING
        clock.advance_to(5)
        assert runner.wait(later, BOUND).status is Status.SUCCEEDED
        never = runner.submit(task_id_of, due_at=100)
    assert runner._scheduler.task(never).status is Status.PENDING  # stop made the queued submit first
    with pytest.raises(RuntimeError, match="the runner is stopped"):
        runner.submit(task_id_of)
