"""How a counterexample's steps read (issue 30): prune's count is a count, and a reason-only difference says so."""

from __future__ import annotations

from fencepost.spec.checkers.results import REASONS_NOT_COMPARED, format_trace
from fencepost.spec.formats.trace import TraceStep


def test_prunes_count_is_not_printed_as_a_task():
    line = format_trace([TraceStep("prune", {"before": 21, "now": 21}, 0, 1, "the result differs")])
    assert "expected: forgot 0; got: forgot 1" in line and "task" not in line.splitlines()[0]


def test_a_rejection_reason_difference_is_said_to_be_not_compared():
    step = TraceStep("complete", {"task_id": 1, "token": 1, "now": 0}, ("outcome", False, "not_running"),
                     ("outcome", False, "stale_token"), "task 1 differs afterwards: status: expected 'pending', got 'running'")
    first = format_trace([step]).splitlines()[0]
    assert f"got: rejected (stale_token) ({REASONS_NOT_COMPARED})   <-- diverges" in first


def test_answers_that_differ_in_what_is_compared_carry_no_such_note():
    step = TraceStep("complete", {"task_id": 1, "token": 1, "now": 0}, ("outcome", False, "stale_token"),
                     ("outcome", True, None), "the result differs")
    assert REASONS_NOT_COMPARED not in format_trace([step])


def test_error_messages_that_differ_carry_no_reason_note():
    step = TraceStep("submit", {"priority": "1"}, ("error", "priority must be an int"), ("error", "bad priority"),
                     "raised TypeError, which is not a ValueError")
    assert REASONS_NOT_COMPARED not in format_trace([step])
