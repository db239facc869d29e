"""The runner's helpers, each owning its state: each ``check_invariants`` passes on the state the
runner leaves and fails on a state broken by hand, and ``Runner.check_invariants`` calls them all.

Every runner made through the ``runners`` fixture is also checked at teardown
(``runner_helpers.py``); here the checks run while work is in flight.
"""

from __future__ import annotations

import pytest
from runner_helpers import BOUND, Gate

from fencepost.impl.runner.attempts import Attempt, Cohort, InCohort, TaskRecord
from fencepost.impl.runner.core import ManualClock, Runner
from fencepost.impl.runner.expiry import Expiry
from fencepost.impl.runner.idle import IdleProof
from fencepost.impl.runner.pooled import Pool
from fencepost.impl.runner.reports import QueuedReport, ReportQueue, grouped
from fencepost.impl.runner.retention import NEVER, Retention
from fencepost.impl.runner.submits import SubmitQueue
from fencepost.impl.runner.trace import Trace


def attempt(task_id: int = 1, slot: str = "w1", expires_at: int = 10) -> Attempt:
    return Attempt(task_id, task_id, 1, slot, expires_at, TaskRecord(None))


def test_the_submit_queue_hands_out_ids_in_order_and_refuses_as_the_scheduler_would() -> None:
    submits = SubmitQueue()
    assert [submits.put(print, 0, None, None, 1) for _ in range(3)] == [1, 2, 3]
    submits.check_invariants()
    with pytest.raises(ValueError, match="retry_delay"):
        submits.put(print, 0, None, None, 0)
    assert [entry[0] for entry in submits.take()] == [1, 2, 3] and submits.issued == 3
    submits.saw(7)  # a submit made under the lock got id 7
    assert submits.put(print, 0, None, None, 1) == 8
    submits.check_invariants()
    submits.pending.appendleft((2, print, 0, None, None, 1))  # an id out of its order
    with pytest.raises(AssertionError, match="run on by one"):
        submits.check_invariants()


def test_the_idle_proof_stands_until_work_may_have_come_and_its_due_times_stay_a_heap() -> None:
    idle, clock = IdleProof(), ManualClock(5)
    idle.found_nothing(5)
    assert idle.proven(clock)
    idle.hint(7)
    assert idle.proven(clock)  # due at 7: not yet at 5
    clock.advance_to(7)
    assert not idle.proven(clock)
    idle.version += 1  # a submit
    assert not idle.proven(clock)
    idle.check_invariants()
    idle.hints[:] = [9, 3]
    with pytest.raises(AssertionError, match="not a heap"):
        idle.check_invariants()


def test_retention_forgets_in_the_order_tasks_ended_and_knows_what_it_forgot() -> None:
    kept, records = Retention(10), {1: TaskRecord(None), 2: TaskRecord(None)}
    kept.held(2)
    kept.ended_at(0, 1)
    kept.ended_at(5, 2)
    assert kept.next_forget == 11
    kept.check_invariants()
    kept.forget_before(3, records)
    assert list(records) == [2] and kept.next_forget == 16 and kept.forgotten(1) and not kept.forgotten(3)
    kept.check_invariants()
    kept.next_forget = NEVER
    with pytest.raises(AssertionError):
        kept.check_invariants()
    forever = Retention(None)
    forever.ended_at(0, 1)
    assert not forever.ended
    forever.check_invariants()


def test_the_report_queue_keeps_held_reports_from_a_claim_and_groups_reports_by_kind() -> None:
    reports, first, second, third = ReportQueue(0.0), attempt(1), attempt(2, "w2"), attempt(3, "w3")
    reports.queue(first, ("ok", 1))
    reports.queue(second, ("error", ValueError()))
    held = reports.queue(third, ("ok", 3))
    held.holding = True  # as a slot waiting for its cohort leaves it
    third.cohort = InCohort(Cohort(1), 0.0)
    reports.check_invariants()
    taken = reports.take(held=False)
    assert [q.attempt.task_id for q in taken] == [1, 2] and list(reports.pending) == [held]
    alone, chunks = grouped([*taken, QueuedReport(attempt(4, "w4"), ("killed", "expired"))], batch=1)
    assert [q.attempt.task_id for q in alone] == [4]
    assert [(op, [a.task_id for a, _ in chunk]) for op, chunk in chunks] == [("complete", [1]), ("fail", [2])]
    reports.pending.append(held)  # queued twice
    with pytest.raises(AssertionError, match="queued twice"):
        reports.check_invariants()


def test_the_trace_names_protocol_calls_only() -> None:
    trace = Trace()
    trace.record("submit", (0, None, None, 1), 1, None)
    trace.record("dispatch", ("w1", 0, 5), None, None)
    trace.check_invariants()
    assert len(trace) == 2 and [op for op, *_ in trace] == ["submit", "dispatch"]
    trace.record("dispatch_everything", (), None, None)
    with pytest.raises(AssertionError, match="not a protocol operation"):
        trace.check_invariants()


def test_the_expiry_never_plans_past_a_live_lease() -> None:
    import threading

    expiry = Expiry(threading.Lock())
    expiry.leased(10)
    expiry.leased(20)
    running = {"w1": attempt(1, "w1", 10), "w2": attempt(2, "w2", 20)}
    expiry.check_invariants(running)
    expiry.soonest = 15
    with pytest.raises(AssertionError, match="before soonest"):
        expiry.check_invariants(running)
    running["w1"].expired = True  # an expired lease no longer counts
    expiry.check_invariants(running)


def test_a_pool_hands_leases_only_to_the_slots_that_run_them() -> None:
    pool = Pool("pool2", 2, 0.0, ManualClock(), 10)
    mine = attempt(1, "w2")
    pool.handed["w2"] = mine
    pool.check_invariants({"w2": mine})
    with pytest.raises(AssertionError, match="runs another"):
        pool.check_invariants({"w2": attempt(2, "w2")})


@pytest.mark.parametrize("batch", [1, 2])
def test_the_runner_checks_every_helper_while_work_is_in_flight(batch: int) -> None:
    gate, clock = Gate(), ManualClock()
    with Runner(workers=2, clock=clock, lease=5, batch=batch, trace=True) as runner:
        ids = [runner.submit(lambda ctx: gate.enter(ctx.task_id), due_at=due) for due in (None, None, 3)]
        started = {gate.next_start(), gate.next_start()}
        assert started == {ids[0], ids[1]}
        runner.check_invariants()  # two running, one due later: a due hint, leases, maybe handed ones
        for task_id in started:
            gate.release(task_id)
        clock.advance_to(3)
        gate.release(gate.next_start())
        runner.wait_idle(BOUND)
        runner.check_invariants()
        runner._idle_proof.hints[:] = [9, 3]  # broken by hand: the runner's check finds it
        with pytest.raises(AssertionError, match="not a heap"):
            runner.check_invariants()
        runner._idle_proof.hints[:] = []
