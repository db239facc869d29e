"""The adapter protocol's codec (``spec.formats.adapter``) and the JSON value forms (``spec.formats.values``)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fencepost.spec.formats.limits import MAX_ANSWER_NESTING
from fencepost.spec.formats.adapter import ProtocolError, parse_answer, request_line
from fencepost.spec.formats.values import OPS, ValueFormError, from_json, to_json
from fencepost.spec.protocol import Lease, Outcome, Status, TaskView

VIEW = TaskView(3, Status.RUNNING, 2, 0, 1, "w1", 7, 12, True)
LEASE = Lease(3, "w1", 7, 5, 12)


@pytest.mark.parametrize(
    ("op", "value", "form"),
    [
        ("dispatch", LEASE, {"task_id": 3, "worker": "w1", "token": 7, "started_at": 5, "expires_at": 12}),
        ("dispatch", None, None),
        ("complete", Outcome(False, "stale_token"), {"accepted": False, "reason": "stale_token"}),
        ("complete", Outcome(True), {"accepted": True}),
        ("submit", 4, 4),
        ("now", 9, 9),
        ("advance", None, None),
        ("task", VIEW, {"id": 3, "status": "running", "priority": 2, "due_at": 0, "attempts": 1, "worker": "w1",
                        "token": 7, "expires_at": 12, "cancel_requested": True}),
    ],
)
def test_each_value_has_one_json_form_and_reads_back_as_itself(op, value, form):
    assert to_json(op, value) == form
    assert from_json(op, json.loads(json.dumps(form))) == value


@pytest.mark.parametrize(
    ("op", "obj", "words"),
    [
        ("now", True, "now answers the clock (an int), got True"),
        ("now", 2**64, "'result' must fit a signed 64-bit integer"),
        ("task", {**to_json("task", VIEW), "status": "done"}, "'status' must be one of pending"),
        ("task", {**to_json("task", VIEW), "colour": "red"}, "exactly id, status"),
        ("task", {**to_json("task", VIEW), "token": 1.0}, "'token' must be an int or null, got 1.0"),
        ("task", {**to_json("task", VIEW), "cancel_requested": 0}, "'cancel_requested' must be a bool"),
        ("task", {**to_json("task", VIEW), "worker": "w" * 10_001}, "'worker' is longer than 10000 characters"),
        ("reset", 0, "reset answers null, got 0"),
        ("renew", [True], 'with "accepted"'),
    ],
)
def test_a_value_not_in_its_form_is_refused_naming_op_field_and_value(op, obj, words):
    with pytest.raises(ValueFormError) as refused:
        from_json(op, obj)
    assert words in str(refused.value)


def test_request_lines_are_one_json_line_and_unfaithful_values_are_never_sent():
    assert json.loads(request_line(4, "submit", {"priority": 5})) == {"id": 4, "op": "submit", "args": {"priority": 5}}
    assert request_line(1, "task", {"task_id": "1"}).count(b"\n") == 1
    for bad in (7.0, float("nan"), object(), {1: 2}):
        with pytest.raises(ValueError, match="refused by the --exec adapter"):
            request_line(1, "advance", {"now": bad})


def test_an_error_answer_is_a_value_error_only_when_it_says_value_error():
    with pytest.raises(ValueError, match="now must be >= 0"):
        parse_answer(b'{"id": 2, "error": "ValueError", "message": "now must be >= 0"}\n', 2, "advance")
    with pytest.raises(ProtocolError, match="raised KeyError"):
        parse_answer(b'{"id": 2, "error": "KeyError", "message": "x"}\n', 2, "advance")


def test_nesting_inside_strings_does_not_count():
    deep_text = json.dumps({"id": 1, "result": {"accepted": True, "reason": "[" * (MAX_ANSWER_NESTING * 4)}})
    assert parse_answer(deep_text.encode(), 1, "complete") == Outcome(True, "[" * (MAX_ANSWER_NESTING * 4))


@given(line=st.binary(max_size=300) | st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["id", "result", "error", "message", "x"]), inner, max_size=4),
    max_leaves=20,
).map(lambda obj: json.dumps(obj).encode()), op=st.sampled_from(("hello", *OPS)))
def test_any_answer_line_is_a_value_a_value_error_or_a_protocol_error(line, op):
    try:
        parse_answer(line, 1, op)
    except (ValueError, ProtocolError):
        pass
