"""The runner's batches (``batch``, ``batch_wait``): claims for every free slot, reports of slots that end together.

On logical time with real threads, every step shown by events (``Gate``) and
every wait bounded: nothing sleeps, nothing asserts how long anything took.
Reports wait for each other only on a clock that runs by itself, so the tests
of that use ``SlowTicks``: a ``ManualClock`` (time moves when the test says)
that tells the runner each tick is a long stretch of real time. Every runner
made through ``runners`` has its trace, batches and all, replayed against the
spec's model at the end of the test. The shared runners on PostgreSQL,
batched by default, are ``test_postgres_runner_batches.py``.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runner_helpers import BOUND, Gate, zombie_case
from runner_workloads import actions, run_workload, tasks

from fencepost.impl import Scheduler
from fencepost.impl.durable import DurableScheduler
from fencepost.impl.runner.core import DEFAULT_BATCH_WAIT, POOL_PREFIX, ManualClock, Runner, default_batch
from fencepost.spec.protocol import OPERATIONS, Status


class SlowTicks(ManualClock):
    """A manual clock that says each tick is a thousand seconds of real time (it still moves only when told)."""

    def seconds_until(self, t: int) -> float:
        return max(0, t - self.now) * 1000.0


class FastTicks(ManualClock):
    """A manual clock that says each tick is a microsecond of real time: a lease of 10 ticks is 10 us."""

    def seconds_until(self, t: int) -> float:
        return max(0, t - self.now) * 1e-6


def calls(runner: Runner, op: str) -> list[tuple]:
    """The runner's recorded ``op`` calls: (argument values, value, error)."""
    return [(values, value, error) for name, values, value, error in runner._trace if name == op]


def blocked_work(gate: Gate, key_of=lambda ctx: ctx.task_id):
    """Work that reports its start and returns its task id once the test releases it."""
    def work(ctx):
        gate.enter(key_of(ctx))
        return ctx.task_id

    return work


# ---------------------------------------------------------------- the setting


def test_the_default_batches_where_a_call_is_a_commit_and_not_in_memory(tmp_path: Path) -> None:
    assert default_batch(Scheduler(), 4) == 1
    with DurableScheduler(tmp_path / "d.db") as durable:
        assert default_batch(durable, 4) == 4
        runner = Runner(workers=3, clock=ManualClock(), scheduler=durable)
        assert runner._pool.worker == f"{POOL_PREFIX}3" and runner._batch == 3
    assert Runner(workers=4, clock=ManualClock())._pool is None  # the default runner: single calls, slots w1..w4
    assert Runner(workers=1, clock=ManualClock(), batch=8)._pool is None  # one slot: nothing to batch
    assert Runner(workers=4, clock=ManualClock(), batch=2)._batch == 2
    assert Runner(workers=2, clock=ManualClock(), batch=8)._batch == 2  # never more than one lease per slot


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batch": 0}, "batch must be None or an int >= 1 \\(leases per claim, reports per call\\), got 0"),
        ({"batch": True}, "batch must be None or an int >= 1.*got True"),
        ({"batch": 2.0}, "batch must be None or an int >= 1.*got 2.0"),
        ({"batch_wait": -1}, "batch_wait must be a number of real seconds >= 0, got -1"),
        ({"batch_wait": float("nan")}, "batch_wait must be a number of real seconds >= 0, got nan"),
        ({"batch_wait": float("inf")}, "batch_wait must be a number of real seconds >= 0, got inf"),
        ({"batch_wait": "1"}, "batch_wait must be a number of real seconds >= 0, got '1'"),
    ],
)
def test_a_bad_batch_setting_is_refused_and_no_worker_is_added(options: dict, message: str) -> None:
    scheduler = Scheduler()
    with pytest.raises(ValueError, match=message):
        Runner(workers=2, clock=ManualClock(), scheduler=scheduler, **options)
    with pytest.raises(ValueError, match="unknown worker|worker"):
        scheduler.dispatch("w1", 0, 5)


class SinglesOnly:
    """A scheduler that offers the protocol's operations and nothing optional (no batches)."""

    def __init__(self) -> None:
        self._inner = Scheduler()

    @property
    def now(self) -> int:
        return self._inner.now

    def task(self, task_id: int):
        return self._inner.task(task_id)

    def __getattr__(self, name: str):
        if name not in OPERATIONS:
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_without_the_schedulers_batches_a_batched_runner_makes_single_calls(runners) -> None:
    runner = runners(workers=3, batch=3, scheduler=SinglesOnly())
    ids = [runner.submit(lambda ctx: ctx.task_id) for _ in range(6)]
    runner.wait_idle(BOUND)
    assert [runner.result(t) for t in ids] == ids
    assert [values for values, _, _ in calls(runner, "add_worker")] == [("w1", 1), ("w2", 1), ("w3", 1)]
    assert not any(op.endswith("_many") for op, *_ in runner._trace)


# ---------------------------------------------------------------- claims and reports in batches


def test_one_claim_takes_a_lease_for_every_free_slot_and_their_reports_go_in_one_call(runners) -> None:
    clock, gate = SlowTicks(), Gate()
    runner = runners(workers=3, batch=3, batch_wait=BOUND, clock=clock, lease=50, start=False)
    ids = [runner.submit(blocked_work(gate)) for _ in range(3)]
    runner.start()  # the first slot to run claims for all three
    assert sorted(gate.next_start() for _ in ids) == ids
    assert calls(runner, "add_worker") == [(("pool3", 3), None, None)]
    claims = calls(runner, "dispatch_many")
    assert len(claims) == 1 and not calls(runner, "dispatch")
    (worker, now, duration, limit), leases, _ = claims[0]
    assert (worker, now, duration, limit) == ("pool3", 0, 50, 3)
    assert [lease.task_id for lease in leases] == ids and [lease.token for lease in leases] == [1, 2, 3]
    for task_id in reversed(ids):  # they end in any order; the reports wait for each other
        gate.release(task_id)
    for task_id in ids:
        assert runner.wait(task_id, BOUND).status == Status.SUCCEEDED
    reports = calls(runner, "complete_many")
    assert len(reports) == 1 and not calls(runner, "complete")
    (pairs, now), outcomes, _ = reports[0]
    assert sorted(map(tuple, pairs)) == [(task_id, task_id) for task_id in ids] and now == 0
    assert all(outcome.accepted for outcome in outcomes)
    assert [runner.result(t) for t in ids] == ids


def test_a_late_report_in_a_batch_is_refused_as_it_would_be_alone_and_the_others_accepted(runners) -> None:
    """Two attempts leased together; one renews its lease, the other's expires; their reports go in one call."""
    clock, gate = SlowTicks(), Gate()
    runner = runners(workers=2, batch=2, batch_wait=BOUND, clock=clock, lease=10, start=False)

    def renews(ctx):
        assert ctx.heartbeat(20)  # until 20
        gate.enter("renews")
        return "kept"

    def stalls(ctx):
        if ctx.attempt == 1:
            gate.enter("stalls")
            return "late"
        return "again"

    kept, late = runner.submit(renews), runner.submit(stalls)
    runner.start()
    assert {gate.next_start(), gate.next_start()} == {"renews", "stalls"}
    clock.advance_to(10)  # the stall's lease [0, 10) ends; the renewed one runs to 20
    assert runner.task(late).status == Status.PENDING and runner.task(kept).status == Status.RUNNING
    gate.release("renews")
    gate.release("stalls")
    assert runner.wait(kept, BOUND).status == Status.SUCCEEDED
    assert runner.wait(late, BOUND).status == Status.SUCCEEDED
    (pairs, now), outcomes, _ = calls(runner, "complete_many")[0]
    judged = {task_id: outcome for (task_id, _), outcome in zip(pairs, outcomes)}
    assert now == 10 and judged[kept].accepted and not judged[late].accepted
    assert judged[late].reason == reason_alone(late, 2, 10)
    assert runner.result(kept) == "kept" and runner.result(late) == "again"  # the late value was discarded
    assert runner.task(late).attempts == 2


def reason_alone(task_id: int, token: int, now: int) -> str:
    """What a single ``complete`` says of a report whose lease [0, 10) ended before ``now`` (two tasks leased at 0)."""
    alone = Scheduler()
    alone.add_worker("w", 2)
    alone.submit()
    alone.submit()
    alone.dispatch("w", 0, 10)
    alone.dispatch("w", 0, 10)
    alone.advance(now)
    return alone.complete(task_id, token, now).reason


def test_a_report_waits_for_its_cohort_no_longer_than_batch_wait(runners) -> None:
    """One of two attempts leased together never ends while the test waits: the other's report goes alone."""
    gate = Gate(BOUND * 2)  # the slow one outlasts the wait below
    runner = runners(workers=2, batch=2, batch_wait=0.05, clock=SlowTicks(), start=False)
    first = runner.submit(lambda ctx: "quick")
    slow = runner.submit(blocked_work(gate))
    runner.start()
    assert gate.next_start() == slow
    assert runner.wait(first, BOUND).status == Status.SUCCEEDED  # after at most batch_wait, not when slow ends
    assert runner.task(slow).status == Status.RUNNING
    assert [values[0] for values, _, _ in calls(runner, "complete")] == [first]
    gate.release(slow)
    runner.wait_idle(BOUND)
    assert not calls(runner, "complete_many")


def test_a_report_never_waits_past_half_of_what_is_left_of_its_lease(runners) -> None:
    """With batch_wait far longer than the lease's real length, a report still goes at once."""
    gate = Gate(BOUND * 2)  # the slow one outlasts the wait below
    runner = runners(workers=2, batch=2, batch_wait=BOUND * 10, clock=FastTicks(), lease=10, start=False)
    first = runner.submit(lambda ctx: "quick")
    slow = runner.submit(blocked_work(gate))
    runner.start()
    assert gate.next_start() == slow
    assert runner.wait(first, BOUND).status == Status.SUCCEEDED  # did not wait for batch_wait
    gate.release(slow)
    runner.wait_idle(BOUND)


def test_failures_of_a_cohort_go_in_one_fail_many_and_retry_as_single_calls_would(runners) -> None:
    clock, gate = SlowTicks(), Gate()
    runner = runners(workers=2, batch=2, batch_wait=BOUND, clock=clock, start=False)

    def fails_once(ctx):
        if ctx.attempt == 1:
            gate.enter(ctx.task_id)
            raise RuntimeError(f"task {ctx.task_id} fails once")
        return ctx.attempt

    ids = [runner.submit(fails_once, retry_delay=3) for _ in range(2)]
    runner.start()
    assert sorted([gate.next_start(), gate.next_start()]) == ids
    for task_id in ids:
        gate.release(task_id)
    runner.wait_idle(BOUND)
    assert [runner.task(t).status for t in ids] == [Status.RETRY_WAIT] * 2
    (failed,) = calls(runner, "fail_many")
    assert all(outcome.accepted for outcome in failed[1])
    clock.advance_to(max(runner.task(t).due_at for t in ids))
    for task_id in ids:
        assert runner.wait(task_id, BOUND).status == Status.SUCCEEDED and runner.result(task_id) == 2
        assert isinstance(runner.error(task_id), RuntimeError)


def test_the_zombie_case_holds_with_batches(runners) -> None:
    zombie_case(lambda **options: runners(batch=2, **options), BOUND)


def test_stop_waits_for_a_cohorts_work_and_makes_its_reports(runners) -> None:
    gate = Gate()
    runner = runners(workers=2, batch=2, batch_wait=BOUND, clock=SlowTicks(), start=False)
    ids = [runner.submit(blocked_work(gate)) for _ in range(2)]
    runner.start()
    assert sorted([gate.next_start(), gate.next_start()]) == ids
    stopping = threading.Thread(target=runner.stop, args=(BOUND,), daemon=True)
    stopping.start()
    for task_id in ids:
        gate.release(task_id)
    stopping.join(BOUND)
    assert not stopping.is_alive()
    assert [runner.task(t).status for t in ids] == [Status.SUCCEEDED] * 2
    assert len(calls(runner, "complete_many")) == 1


# ---------------------------------------------------------------- random workloads, batched

@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    workers=st.integers(2, 3),
    lease=st.integers(1, 5),
    task_specs=st.lists(tasks, min_size=1, max_size=5),
    script=st.lists(actions, max_size=12),
    batch_wait=st.sampled_from([0, DEFAULT_BATCH_WAIT]),
    clock=st.sampled_from([ManualClock, SlowTicks]),
)
def test_random_workloads_with_batches_replay_against_the_model(workers, lease, task_specs, script, batch_wait, clock,
                                                                 tmp_path_factory) -> None:
    """Leases claimed together, and (on ``SlowTicks``) reports waiting for each other while the script moves time."""
    run_workload(Runner, workers, lease, task_specs, script, Path(tmp_path_factory.mktemp("trace")),
                 options={"batch": workers, "batch_wait": batch_wait}, clock=clock())


def test_with_process_isolation_a_child_whose_lease_expired_is_terminated_and_the_other_reported(runners) -> None:
    """Leased together; one child stalls past its lease and is terminated, the other's completion was accepted."""
    import multiprocessing
    from functools import partial

    import runner_work

    clock, started = ManualClock(), multiprocessing.get_context("spawn").Event()
    runner = runners(workers=2, batch=2, clock=clock, lease=10, isolation="process", start=False)
    stalls = runner.submit(partial(runner_work.block_on_first_attempt, started))
    quick = runner.submit(partial(runner_work.constant, "quick"))
    runner.start()
    assert started.wait(BOUND)
    assert runner.wait(quick, BOUND).status == Status.SUCCEEDED  # on logical time a report does not wait
    clock.advance_to(10)  # the stall's lease ends: its child is terminated
    assert runner.wait(stalls, BOUND).status == Status.SUCCEEDED and runner.result(stalls) == "attempt 2"
    assert runner.result(quick) == "quick" and runner.task(quick).attempts == 1
    assert [lease.task_id for lease in calls(runner, "dispatch_many")[0][1]] == [stalls, quick]


# Lost answers (``OutcomeUnknown``): a call that took effect and lost its answer is not in the
# trace (a scenario has no step of unknown effect), so these runners' traces are not replayed.


@pytest.mark.parametrize("applied", [True, False], ids=["took-effect", "did-not"])
def test_a_batch_of_reports_whose_answer_was_lost_is_resolved_task_by_task(applied: bool) -> None:
    from runner_helpers import Losing

    gate, losing = Gate(), Losing("complete_many", applied)
    runner = Runner(workers=2, batch=2, batch_wait=BOUND, clock=SlowTicks(), scheduler=losing, trace=True)
    ids = [runner.submit(blocked_work(gate)) for _ in range(2)]
    with runner:
        assert sorted([gate.next_start(), gate.next_start()]) == ids
        for task_id in ids:
            gate.release(task_id)
        for task_id in ids:
            assert runner.wait(task_id, BOUND).status == Status.SUCCEEDED and runner.result(task_id) == task_id
    assert losing.lost == 1 and [losing.inner.task(t).attempts for t in ids] == [1, 1]
    # made again, one by one, only when it had not taken effect (read from each task)
    assert len(calls(runner, "complete")) == (0 if applied else 2)


def test_a_batch_whose_lost_answer_cannot_be_resolved_breaks_the_runner_and_frees_every_slot() -> None:
    """Reading the first task back raises: the runner breaks, and no attempt of the batch stays running."""
    from runner_helpers import Losing

    class Unreachable(Losing):
        """``Losing``, whose tasks cannot be read once an answer was lost (the connection stays down)."""

        def task(self, task_id: int) -> object:
            if self.lost:
                raise ConnectionError("the test's scheduler stays unreachable")
            return self.inner.task(task_id)

    gate, unreachable = Gate(), Unreachable("complete_many", applied=True)
    runner = Runner(workers=2, batch=2, batch_wait=BOUND, clock=SlowTicks(), scheduler=unreachable)
    ids = [runner.submit(blocked_work(gate)) for _ in range(2)]
    runner.start()
    assert sorted([gate.next_start(), gate.next_start()]) == ids
    for task_id in ids:
        gate.release(task_id)
    with pytest.raises(RuntimeError, match="ConnectionError: the test's scheduler stays unreachable"):
        runner.wait(ids[0], BOUND)
    with pytest.raises(RuntimeError, match="ConnectionError"):
        runner.stop(BOUND)
    assert unreachable.lost == 1 and runner.status().state == "broken"
    assert runner.status().running == 0  # the batch's other attempt is not counted as running for ever
    runner.check_invariants()


def test_a_batched_claim_whose_answer_was_lost_is_left_to_lease_expiry() -> None:
    from runner_helpers import Losing

    clock, losing, ran = ManualClock(), Losing("dispatch_many", applied=True), []
    runner = Runner(workers=2, batch=2, clock=clock, lease=5, scheduler=losing)
    ids = [runner.submit(lambda ctx: ran.append(ctx.task_id)) for _ in range(2)]
    with runner:
        runner.wait_idle(BOUND)
        assert ran == [] and [losing.inner.task(t).status for t in ids] == [Status.RUNNING] * 2  # leased to nobody
        clock.advance(5)  # the lost leases expire; the tasks are eligible again
        for task_id in ids:
            assert runner.wait(task_id, BOUND).status == Status.SUCCEEDED
    assert sorted(ran) == ids and [losing.inner.task(t).attempts for t in ids] == [2, 2]
