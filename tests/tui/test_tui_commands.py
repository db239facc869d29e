"""The interactive command line: protocol verbs and names, nothing else."""

from __future__ import annotations

import pytest

from fencepost.spec.protocol import Lease, Outcome
from fencepost.spec.formats.scenario import Step, StepResult
from fencepost.tui.commands import CommandError, expect_from, parse_command, usage


@pytest.mark.parametrize(
    "line, step",
    [
        ("dispatch worker=w1 now=5 duration=5", Step("dispatch", {"worker": "w1", "now": 5, "duration": 5})),
        ("dispatch w1 5 5", Step("dispatch", {"worker": "w1", "now": 5, "duration": 5})),
        ("dispatch duration=5 w1", Step("dispatch", {"worker": "w1", "now": 7, "duration": 5})),
        ("complete 1 2", Step("complete", {"task_id": 1, "token": 2, "now": 7})),
        ("renew 1 1 8 5", Step("renew", {"task_id": 1, "token": 1, "now": 8, "duration": 5})),
        ("submit", Step("submit", {})),
        ("submit priority=-2 due_at=none", Step("submit", {"priority": -2})),
        ("add_worker w1 2", Step("add_worker", {"worker": "w1", "capacity": 2})),
        ("advance", Step("advance", {"now": 7})),
    ],
)
def test_a_line_is_one_call_with_now_defaulting_to_the_current_time(line, step):
    assert parse_command(line, now=7) == step


def test_a_value_of_the_wrong_type_is_left_for_the_scheduler_to_refuse():
    assert parse_command("add_worker w1 many", 0).args == {"worker": "w1", "capacity": "many"}


@pytest.mark.parametrize(
    "line, message",
    [
        ("", "type a call"),
        ("launch w1", "unknown operation 'launch'"),
        ("dispatch w1 5 5 5", "too many values for dispatch: dispatch worker now duration"),
        ("dispatch lane=3 w1 5", "dispatch has no argument 'lane'"),
        ("cancel now=3", "cancel needs task_id: cancel task_id now"),
        ("submit priority=1 priority=2", "priority given twice"),
    ],
)
def test_a_line_that_is_not_a_call_says_what_is_wrong(line, message):
    with pytest.raises(CommandError, match=message):
        parse_command(line, now=0)


def test_usage_marks_the_optional_arguments():
    assert usage("submit") == "submit [priority] [due_at] [max_attempts] [retry_delay] [key]"


def test_a_result_becomes_the_expect_that_replays_it():
    lease = Lease(task_id=1, worker="w1", token=3, started_at=5, expires_at=10)
    dispatch = Step("dispatch", {"worker": "w1", "now": 5, "duration": 5})
    assert expect_from(dispatch, StepResult(lease)) == {
        "task_id": 1, "worker": "w1", "token": 3, "started_at": 5, "expires_at": 10,
    }
    assert expect_from(dispatch, StepResult(None)) == "none"
    assert expect_from(Step("complete", {}), StepResult(Outcome(False, "stale_token"))) == {"accepted": False}
    assert expect_from(Step("submit", {}), StepResult(4)) == {"task_id": 4}
    assert expect_from(Step("advance", {"now": 1}), StepResult(None)) is None
    assert expect_from(dispatch, StepResult(error="bad")) == "error"
