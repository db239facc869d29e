"""The shared JSON codec of protocol values (``spec/formats/values.py``)."""

from __future__ import annotations

import pytest

from fencepost.spec.formats.values import ValueFormError, from_json, same_result, to_json
from fencepost.spec.protocol import Lease, Outcome

LEASE = Lease(task_id=3, worker="w1", token=7, started_at=5, expires_at=10)


@pytest.mark.parametrize(
    ("op", "value", "obj"),
    [
        ("dispatch", LEASE, {"task_id": 3, "worker": "w1", "token": 7, "started_at": 5, "expires_at": 10}),
        ("dispatch", None, None),
        ("complete", Outcome(True), {"accepted": True}),
        ("renew", Outcome(False, "stale_token"), {"accepted": False, "reason": "stale_token"}),
        ("submit", 12, 12),
        ("prune", 3, 3),
        ("prune", 0, 0),
        ("add_worker", None, None),
        ("advance", None, None),
    ],
)
def test_each_kind_of_value_round_trips(op, value, obj):
    assert to_json(op, value) == obj
    assert from_json(op, obj) == value


@pytest.mark.parametrize(
    ("op", "obj", "words"),
    [
        ("dispatch", {"task_id": 3, "worker": "w1", "token": 7, "started_at": 5}, "exactly task_id"),
        ("dispatch", {"task_id": True, "worker": "w1", "token": 7, "started_at": 5, "expires_at": 10}, "'task_id' must be an int"),
        ("dispatch", {"task_id": 3, "worker": 1, "token": 7, "started_at": 5, "expires_at": 10}, "'worker' must be a string"),
        ("complete", {"accepted": 1}, "'accepted' must be a bool"),
        ("complete", {"accepted": True, "why": "x"}, 'with "accepted"'),
        ("cancel", {"accepted": False, "reason": 3}, "'reason' must be a string or null"),
        ("submit", 1.0, "task id (an int)"),
        ("submit", False, "task id (an int)"),
        ("advance", 0, "advance answers null"),
        ("prune", True, "how many tasks it forgot (an int)"),
        ("prune", None, "how many tasks it forgot (an int)"),
        ("prune", {"forgotten": 1}, "how many tasks it forgot (an int)"),
        ("reboot", None, "op must be one of"),
    ],
)
def test_a_value_not_of_its_form_is_refused_by_name(op, obj, words):
    with pytest.raises(ValueFormError, match=words.replace("(", r"\(").replace(")", r"\)")):
        from_json(op, obj)


def test_an_outcome_with_a_non_bool_accepted_does_not_encode():
    with pytest.raises(ValueFormError, match="accepted a bool"):
        to_json("complete", Outcome(1))


def test_results_agree_on_accepted_only_for_outcomes():
    assert same_result("complete", Outcome(False, "stale_token"), Outcome(False, "lease_expired"))
    assert not same_result("complete", Outcome(True), Outcome(False))
    assert not same_result("dispatch", LEASE, Lease(3, "w1", 8, 5, 10))
    assert same_result("dispatch", None, None)
