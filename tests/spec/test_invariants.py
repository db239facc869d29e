"""Each invariant holds on real states and catches the violation it is named after."""

from __future__ import annotations

import dataclasses

import pytest

from fencepost.spec import invariants as inv
from fencepost.spec.invariants import History, InvariantViolation, Observation
from fencepost.spec.protocol import TaskView


def view(id=1, status="pending", worker=None, token=None, expires_at=None, attempts=0, cancel_requested=False):
    return TaskView(id, status, 0, 0, attempts, worker, token, expires_at, cancel_requested)


def obs(*tasks, now=0, capacities=None, max_attempts=None):
    return Observation(now, list(tasks), capacities or {"w1": 1}, max_attempts or {})


def running(id=1, token=1, expires_at=10, worker="w1", **kw):
    return view(id, "running", worker, token, expires_at, attempts=kw.pop("attempts", 1), **kw)


GOOD = obs(running(1, token=1), view(2, "succeeded"), view(3, "cancelled"), now=5)


@pytest.mark.parametrize("check", inv.INVARIANTS, ids=lambda f: f.__name__)
def test_every_invariant_holds_on_a_valid_observation(check):
    check(GOOD, History())


CASES = [
    (inv.each_task_has_exactly_one_status, [obs(view(status="done"))]),
    (inv.running_task_has_exactly_one_current_lease, [obs(view(status="running", worker="w1"))]),
    (inv.running_task_has_exactly_one_current_lease, [obs(view(status="pending", token=3))]),
    (inv.no_worker_above_capacity, [obs(running(1, token=1), running(2, token=2))]),
    (inv.no_worker_above_capacity, [obs(running(1, worker="ghost"))]),
    (inv.tokens_are_unique_and_increasing, [obs(running(1, token=4), running(2, token=4), capacities={"w1": 2})]),
    (inv.tokens_are_unique_and_increasing, [obs(running(1, token=4)), obs(view(1)), obs(running(1, token=4))]),
    (inv.no_lease_alive_at_or_past_expiry, [obs(running(expires_at=10), now=10)]),
    (inv.final_states_never_change, [obs(view(status="succeeded")), obs(view(status="pending"))]),
    (inv.final_states_never_change, [obs(view(status="failed", attempts=1)), obs(view(status="failed", attempts=2))]),
    (inv.attempts_never_exceed_max_attempts, [obs(view(attempts=3), max_attempts={1: 2})]),
    (inv.cancelled_task_never_runs_after_cancellation, [obs(view(status="cancelled")), obs(running(1))]),
]


@pytest.mark.parametrize(("check", "steps"), CASES, ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(CASES)])
def test_each_invariant_catches_what_it_names(check, steps):
    history = History()
    *before, last = steps
    for step in before:
        check(step, history)
    with pytest.raises(InvariantViolation) as caught:
        check(last, history)
    assert caught.value.name == check.__name__
    assert check.__name__ in str(caught.value)


def test_check_all_runs_the_type_invariant_first():
    bad = obs(dataclasses.replace(running(1), status="lost"))
    with pytest.raises(InvariantViolation) as caught:
        inv.check_all(bad, History())
    assert caught.value.name == "each_task_has_exactly_one_status"
