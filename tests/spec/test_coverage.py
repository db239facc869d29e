"""Outcome and boundary classification, and the vacuity check built on it."""

from __future__ import annotations

from fencepost.spec import model
from fencepost.spec.checkers.coverage import REQUIRED_BOUNDARIES, REQUIRED_OUTCOMES, Coverage, classify


def run(calls):
    """Apply calls to the model, classifying each; return the last classification."""
    state = model.initial()
    for op, args in calls:
        before = state
        try:
            state, result = model.apply(state, op, args)
            raised = False
        except ValueError:
            result, raised = None, True
        last = classify(op, args, before, state, result, raised)
    return last


BASE = [("add_worker", {"worker": "w1", "capacity": 1}), ("submit", {}), ("dispatch", {"worker": "w1", "now": 5, "duration": 5})]


def test_a_completion_at_exactly_expires_at_is_its_own_boundary():
    outcome, boundaries = run(BASE + [("complete", {"task_id": 1, "token": 1, "now": 10})])
    assert outcome == "lease_expired"
    assert {"completion_at_expiry", "time_at_expiry", "expiry_to_pending"} <= boundaries


def test_one_before_expiry_is_accepted_and_marked():
    outcome, boundaries = run(BASE + [("complete", {"task_id": 1, "token": 1, "now": 9})])
    assert outcome == "accepted"
    assert boundaries == {"time_one_before_expiry"}


def test_a_full_worker_is_distinguished_from_an_empty_queue():
    assert run(BASE + [("submit", {}), ("dispatch", {"worker": "w1", "now": 6, "duration": 1})]) == (
        "none:worker_full", {"capacity_exactly_full"})
    assert run(BASE + [("dispatch", {"worker": "w1", "now": 6, "duration": 1})])[0] == "none:worker_full"
    assert run(BASE[:1] + [("dispatch", {"worker": "w1", "now": 6, "duration": 1})])[0] == "none:nothing_eligible"


def test_ids_past_9_and_equal_due_times_are_seen_at_dispatch():
    calls = [("add_worker", {"worker": "w1", "capacity": 1})] + [("submit", {"priority": 0})] * 9
    calls += [("submit", {"priority": 1}), ("dispatch", {"worker": "w1", "now": 0, "duration": 1})]
    outcome, boundaries = run(calls)
    assert outcome == "lease" and "ids_past_9" in boundaries
    _, boundaries = run(BASE[:2] + [("submit", {})] + BASE[2:])
    assert "equal_due_times" in boundaries


def test_a_fail_names_where_the_task_went():
    fail = ("fail", {"task_id": 1, "token": 1, "now": 6})
    assert run(BASE + [fail])[0] == "accepted:retry_wait"
    assert run(BASE + [("cancel", {"task_id": 1, "now": 6}), fail])[0] == "accepted:cancelled"
    spent = [BASE[0], ("submit", {"max_attempts": 1}), BASE[2], fail]
    assert run(spent)[0] == "accepted:failed"


def test_raised_calls_are_counted_as_raised():
    assert run(BASE + [("advance", {"now": 1})])[0] == "raised"


def test_missing_names_every_unreached_outcome_and_boundary():
    coverage = Coverage()
    everything = sum(len(v) for v in REQUIRED_OUTCOMES.values()) + len(REQUIRED_BOUNDARIES)
    assert len(coverage.missing()) == everything
    coverage.record("complete", "accepted", {"time_at_expiry"})
    missing = coverage.missing()
    assert "complete -> accepted" not in missing and len(missing) == everything - 2
    assert any(m.startswith("boundary completion_at_expiry") for m in missing)
    report = coverage.report()
    assert "complete   accepted=1" in report and "time_at_expiry" in report
