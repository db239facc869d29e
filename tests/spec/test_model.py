"""The reference model: guards reject bad input without changing anything; transitions are pure."""

from __future__ import annotations

import pytest
from schedulers import every_scheduler

from fencepost.spec import model
from fencepost.spec.protocol import Status


def busy_state() -> model.State:
    state, _ = model.add_worker(model.initial(), "w1", 1)
    state, _ = model.submit(state)
    state, _ = model.submit(state)
    state, _ = model.dispatch(state, "w1", 5, 5)
    return state


INVALID = [
    ("add_worker", {"worker": "", "capacity": 1}, "non-empty"),
    ("add_worker", {"worker": "w1", "capacity": 1}, "already exists"),
    ("add_worker", {"worker": "w2", "capacity": 0}, "capacity must be >= 1: 0"),
    ("add_worker", {"worker": "w2", "capacity": True}, "capacity must be an int, not bool"),
    ("submit", {"priority": 1.5}, "priority must be an int, not float"),
    ("submit", {"due_at": -1}, "due_at must be >= 0: -1"),
    ("submit", {"max_attempts": 0}, "max_attempts must be >= 1: 0"),
    ("submit", {"retry_delay": 0}, "retry_delay must be >= 1: 0"),
    ("dispatch", {"worker": "nobody", "now": 10, "duration": 1}, "worker 'nobody' is unknown"),
    ("dispatch", {"worker": "w1", "now": 10, "duration": 0}, "duration must be >= 1: 0"),
    ("dispatch", {"worker": "w1", "now": 4, "duration": 1}, "time can't go backwards: now=4 < current time 5"),
    ("advance", {"now": -1}, "now must be >= 0: -1"),
    ("advance", {"now": True}, "now must be an int, not bool"),
    ("complete", {"task_id": 3, "token": 1, "now": 10}, "task_id 3 is unknown"),
    ("complete", {"task_id": 1, "token": "1", "now": 10}, "token must be an int, not str"),
    ("fail", {"task_id": 0, "token": 1, "now": 10}, "task_id 0 is unknown"),
    ("cancel", {"task_id": 1, "now": 4}, "time can't go backwards"),
    ("renew", {"task_id": 1, "token": 1, "now": 10, "duration": 0}, "duration must be >= 1: 0"),
    ("submit", {"bogus": 1}, "bad arguments for submit"),
    ("launch", {}, "op must be one of"),
]


@pytest.mark.parametrize(("op", "args", "words"), INVALID, ids=[f"{o}-{w}" for o, _, w in INVALID])
def test_an_invalid_call_names_the_rule_and_changes_nothing(op, args, words):
    state = busy_state()
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        model.apply(state, op, args)
    # now=10 would have expired the lease [5, 10): an invalid call must not.
    assert state == busy_state()


@every_scheduler
@pytest.mark.parametrize(("op", "args", "words"), INVALID[:-2], ids=[f"{o}-{w}" for o, _, w in INVALID[:-2]])
def test_every_scheduler_rejects_the_same_calls_and_keeps_its_state(make, op, args, words):
    s = make()
    s.add_worker("w1", 1)
    s.submit()
    s.submit()
    s.dispatch("w1", 5, 5)
    before = (s.now, s.task(1), s.task(2))
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        getattr(s, op)(**args)
    assert (s.now, s.task(1), s.task(2)) == before


def test_transitions_are_pure_the_old_state_is_untouched():
    state = busy_state()
    snapshot = state
    after, outcome = model.complete(state, 1, 1, 9)
    assert outcome.accepted
    assert state is snapshot and state.tasks[0].status is Status.RUNNING
    assert after.tasks[0].status is Status.SUCCEEDED


def test_expiry_ends_a_lease_by_its_cause():
    state, _ = model.add_worker(model.initial(), "w1", 3)
    state, _ = model.submit(state)  # 1: back to pending
    state, _ = model.submit(state, max_attempts=1)  # 2: budget spent -> failed
    state, _ = model.submit(state, max_attempts=1)  # 3: cancel requested and budget spent -> cancelled wins
    for _ in range(3):
        state, _ = model.dispatch(state, "w1", 0, 4)
    state, _ = model.cancel(state, 3, 1)
    state, _ = model.advance(state, 4)
    assert [t.status for t in state.tasks] == [Status.PENDING, Status.FAILED, Status.CANCELLED]
    assert all(t.worker is None and t.token is None and not t.cancel_requested for t in state.tasks)


def test_fail_with_a_cancel_request_ends_cancelled():
    state = busy_state()
    state, _ = model.cancel(state, 1, 6)
    state, outcome = model.fail(state, 1, 1, 7)
    assert outcome.accepted and state.tasks[0].status is Status.CANCELLED


def test_renew_keeps_the_token_and_moves_the_end():
    state = busy_state()
    state, outcome = model.renew(state, 1, 1, 9, 10)
    assert outcome.accepted
    assert (state.tasks[0].token, state.tasks[0].expires_at) == (1, 19)
    state, _ = model.advance(state, 18)
    assert state.tasks[0].status is Status.RUNNING


def test_submit_without_due_at_is_due_at_the_current_time():
    state, _ = model.advance(model.initial(), 7)
    state, task_id = model.submit(state)
    assert model.task(state, task_id).due_at == 7
