"""The runner against the second seed's cases, on a ManualClock: no sleeping, every wait bounded.

Every runner made through the ``runners`` fixture has its trace saved and
replayed against the spec's model at the end of the test (see
``runner_helpers``). Nothing here asserts how long anything took.
"""

from __future__ import annotations

import pytest
from runner_helpers import (
    BOUND,
    Gate,
    lock_not_held_case,
    worked_example_case,
    zombie_case,
)

from fencepost.impl.runner.core import Cancelled, ManualClock, MonotonicClock, Runner, TaskContext


def test_equal_due_times_run_in_submission_order(runners) -> None:
    clock = ManualClock()
    runner = runners(workers=1, clock=clock)
    order: list[str] = []
    ids = [runner.submit(lambda ctx, n=name: order.append(n), due_at=5) for name in "abcd"]
    runner.wait_idle(BOUND)
    assert order == []  # not due before 5
    clock.advance_to(5)
    for task_id in ids:
        runner.wait(task_id, BOUND)
    assert order == list("abcd")


def test_cancellation_before_claim_means_the_function_never_runs(runners) -> None:
    clock = ManualClock()
    runner = runners(workers=1, clock=clock)
    calls: list[int] = []
    task_id = runner.submit(lambda ctx: calls.append(ctx.task_id), due_at=5)
    assert runner.cancel(task_id).accepted
    clock.advance_to(5)
    runner.wait_idle(BOUND)
    assert runner.wait(task_id, BOUND).status == "cancelled"
    assert calls == []
    assert runner.cancel(task_id).accepted is False  # already final
    with pytest.raises(ValueError, match="has no result: it is cancelled"):
        runner.result(task_id)


def test_retry_exhaustion_after_repeated_raises(runners) -> None:
    clock = ManualClock()
    runner = runners(workers=1, clock=clock)
    attempts: list[tuple[int, int]] = []

    def always_raises(ctx: TaskContext) -> None:
        attempts.append((ctx.attempt, ctx.now))
        raise ValueError(f"attempt {ctx.attempt} fails")

    task_id = runner.submit(always_raises, max_attempts=3, retry_delay=2)
    for _ in range(3):
        runner.wait_idle(BOUND)
        view = runner.task(task_id)
        if view.status == "retry_wait":
            clock.advance_to(view.due_at)
    view = runner.wait(task_id, BOUND)
    assert (view.status, view.attempts) == ("failed", 3)
    assert attempts == [(1, 0), (2, 2), (3, 6)]  # backoff 2, then 4
    assert str(runner.error(task_id)) == "attempt 3 fails"


def test_capacity_saturation_runs_exactly_workers_at_once(runners) -> None:
    runner = runners(workers=3)
    gate = Gate()
    ids = [runner.submit(lambda ctx: gate.enter(ctx.task_id)) for _ in range(5)]
    assert sorted(gate.next_start() for _ in range(3)) == ids[:3]
    # All three slots are inside user work, so no thread can dispatch: the rest must wait.
    assert [runner.task(t).status for t in ids] == ["running"] * 3 + ["pending"] * 2
    assert gate.started.empty()
    gate.release(ids[1])
    assert gate.next_start() == ids[3]  # the next starts only when a slot frees
    assert runner.task(ids[4]).status == "pending"
    for task_id in ids:
        gate.release(task_id)
    runner.wait_idle(BOUND)
    assert all(runner.task(t).status == "succeeded" for t in ids)


def test_a_task_that_submits_a_task(runners) -> None:
    runner = runners(workers=1)
    parent = runner.submit(lambda ctx: ctx.submit(lambda child: f"child of {ctx.task_id}", priority=3))
    runner.wait(parent, BOUND)
    child = runner.result(parent)
    assert child == parent + 1
    assert runner.wait(child, BOUND).priority == 3
    assert runner.result(child) == f"child of {parent}"


def test_the_worked_example(runners) -> None:
    worked_example_case(runners, BOUND)


def test_user_work_never_runs_under_the_lock(runners) -> None:
    lock_not_held_case(runners, BOUND)


def test_the_zombie_is_rejected_and_the_second_attempt_decides(runners) -> None:
    zombie_case(runners, BOUND)


def test_cooperative_cancellation_is_seen_through_the_context(runners) -> None:
    runner = runners(workers=2)
    gate = Gate()
    seen: dict[str, bool] = {}

    def stops(ctx: TaskContext) -> None:
        gate.enter("stops")
        seen["stops"] = ctx.cancel_requested
        ctx.raise_if_cancelled()

    def finishes_anyway(ctx: TaskContext) -> str:
        gate.enter("finishes")
        seen["finishes"] = ctx.cancel_requested
        return "done anyway"

    stopping, finishing = runner.submit(stops), runner.submit(finishes_anyway)
    assert {gate.next_start(), gate.next_start()} == {"stops", "finishes"}
    assert runner.cancel(stopping).accepted and runner.cancel(finishing).accepted
    assert runner.task(stopping).cancel_requested and runner.task(stopping).status == "running"
    gate.release("stops")
    gate.release("finishes")
    assert runner.wait(stopping, BOUND).status == "cancelled"
    assert isinstance(runner.error(stopping), Cancelled)
    assert runner.wait(finishing, BOUND).status == "succeeded"  # the work did finish
    assert runner.result(finishing) == "done anyway"
    assert seen == {"stops": True, "finishes": True}


def test_forcing_a_cancel_with_threads_is_refused_and_changes_nothing(runners) -> None:
    runner = runners(workers=1, clock=ManualClock())
    task_id = runner.submit(lambda ctx: None, due_at=5)
    with pytest.raises(ValueError, match="force=True needs isolation='process': a thread cannot be killed"):
        runner.cancel(task_id, force=True)
    assert runner.task(task_id).status == "pending"


def test_heartbeat_keeps_a_lease_and_is_refused_once_it_expired(runners) -> None:
    clock = ManualClock()
    runner = runners(workers=2, clock=clock, lease=10)
    gate = Gate()
    beats: list[bool] = []

    def beats_twice(ctx: TaskContext) -> str:
        gate.enter(("beat", ctx.attempt))
        beats.append(ctx.heartbeat())  # at 9: renewed to 19
        gate.enter(("late", ctx.attempt))
        beats.append(ctx.heartbeat(5))  # at 19: expired, refused
        beats.append(ctx.heartbeat(5))  # refused from then on
        return "late"

    task_id = runner.submit(beats_twice, max_attempts=1)
    assert gate.next_start() == ("beat", 1)
    clock.advance_to(9)
    gate.release(("beat", 1))
    assert gate.next_start() == ("late", 1)
    assert runner.task(task_id).expires_at == 19
    clock.advance_to(19)
    gate.release(("late", 1))
    runner.wait_idle(BOUND)
    assert beats == [True, False, False]
    assert runner.task(task_id).status == "failed"  # expired with its one attempt spent


def test_moving_the_clock_expires_a_lease_before_advance_returns(runners) -> None:
    clock = ManualClock()
    runner = runners(workers=1, clock=clock, lease=10)
    gate = Gate()

    def stalls_once(ctx: TaskContext) -> int:
        if ctx.attempt == 1:
            gate.enter("stalled")
        return ctx.attempt

    task_id = runner.submit(stalls_once)
    assert gate.next_start() == "stalled"
    clock.advance(9)
    assert runner.task(task_id).token == 1  # [0, 10) is alive at 9
    clock.advance(1)
    view = runner.task(task_id)  # no waiting: the expiry was handled inside advance
    assert (view.status, view.token) == ("pending", None)  # the only slot is still held by the stalled function
    gate.release("stalled")
    assert runner.wait(task_id, BOUND).attempts == 2  # it runs again once the slot is free
    assert runner.result(task_id) == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"workers": 0}, "workers must be an int >= 1, got 0"),
        ({"workers": True}, "workers must be an int >= 1, got True"),
        ({"lease": 0}, r"lease must be an int >= 1 \(clock ticks\), got 0"),
        ({"isolation": "fiber"}, "isolation must be one of 'thread', 'process', got 'fiber'"),
        ({"clock": object()}, "clock must offer now, subscribe, unsubscribe and seconds_until"),
    ],
)
def test_bad_runner_arguments_are_named_with_their_rule(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Runner(**options)


def test_bad_calls_are_refused_and_change_nothing(runners) -> None:
    runner = runners(workers=1, clock=ManualClock())
    with pytest.raises(ValueError, match="fn must be callable"):
        runner.submit("not a function")
    with pytest.raises(ValueError, match="task_id must be the id of a task this runner submitted, got 1"):
        runner.task(1)
    with pytest.raises(ValueError, match="priority"):
        runner.submit(lambda ctx: None, priority="high")  # the scheduler's own message
    assert runner.submitted() == 0
    task_id = runner.submit(lambda ctx: None, due_at=5)
    with pytest.raises(ValueError, match="timeout must be a number of real seconds > 0, got 0"):
        runner.wait(task_id, 0)
    with pytest.raises(TimeoutError, match="wait: task 1 is still pending after 0.01 s"):
        runner.wait(task_id, 0.01)  # not due until 5: a bounded wait says so instead of hanging


def test_a_stopped_runner_takes_no_more_work(runners) -> None:
    runner = runners(workers=1)
    runner.stop()
    with pytest.raises(RuntimeError, match="cannot submit: the runner is stopped"):
        runner.submit(lambda ctx: None)


def test_a_real_clock_runs_work_and_goes_idle(runners) -> None:
    runner = runners(workers=2, clock=MonotonicClock())
    ids = [runner.submit(lambda ctx: ctx.task_id * 2) for _ in range(5)]
    runner.wait_idle(BOUND)
    assert [runner.result(t) for t in ids] == [2, 4, 6, 8, 10]


def test_a_key_is_passed_on_only_when_given_and_names_the_same_task(runners) -> None:
    runner = runners(workers=1, clock=ManualClock())
    calls: list[str] = []
    first = runner.submit(lambda ctx: calls.append("first"), key="order-7", due_at=5)
    again = runner.submit(lambda ctx: calls.append("again"), key="order-7", due_at=5)
    plain = runner.submit(lambda ctx: calls.append("plain"), due_at=5)
    assert (first, again, plain) == (1, 1, 2)
    runner._clock.advance_to(5)
    runner.wait_idle(BOUND)
    assert calls == ["first", "plain"]
    # read once the pool is idle: a submit without a key reaches the scheduler when the lock is next taken
    assert [len(values) for op, values, _, _ in runner._trace if op == "submit"] == [5, 5, 4]


class _ConnectionLost:
    """A scheduler whose ``dispatch`` raises as a dropped database connection does; the rest is real."""

    def __init__(self) -> None:
        from fencepost.impl import Scheduler

        self.inner = Scheduler()

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def dispatch(self, worker: str, now: int, duration: int) -> None:
        raise ConnectionError("server closed the connection unexpectedly")


def test_a_pool_thread_that_raises_stops_the_runner_and_every_call_says_why() -> None:
    runner = Runner(workers=2, clock=ManualClock(), scheduler=_ConnectionLost())
    runner.start()
    said = "the runner stopped: its thread fencepost-runner-w[12] raised ConnectionError: server closed the connection"
    with pytest.raises(RuntimeError, match=said) as raised:
        runner.wait_idle(BOUND)  # no dispatch ever finds the pool idle: before, this waited out BOUND
    assert isinstance(raised.value.__cause__, ConnectionError)
    with pytest.raises(RuntimeError, match=said):
        runner.submit(lambda ctx: None)
    with pytest.raises(RuntimeError, match=said):
        runner.stop()
