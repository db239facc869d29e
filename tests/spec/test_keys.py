"""Idempotency keys: ``submit(..., key=...)`` on the model and both schedulers.

The rules (README, "Idempotency keys"): a key is None or a non-empty str;
every argument is validated first; a known key with the same other
arguments as passed returns the first task's id and changes nothing; with
different ones it raises naming the key and what differs; keys are
remembered for the scheduler's whole life; the task view does not show them.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from fencepost.spec import model
from fencepost.spec.protocol import TaskView

from schedulers import every_scheduler


def views(scheduler, count: int) -> list[TaskView]:
    return [scheduler.task(task_id) for task_id in range(1, count + 1)]


@every_scheduler
def test_a_duplicate_submit_returns_the_first_id_and_consumes_no_id(make) -> None:
    s = make()
    assert s.submit(priority=2, key="order-7") == 1
    before = views(s, 1)
    assert s.submit(priority=2, key="order-7") == 1
    assert views(s, 1) == before
    assert s.submit() == 2  # the duplicate issued no id
    with pytest.raises(ValueError):
        s.task(3)


@every_scheduler
def test_a_key_reused_with_different_arguments_raises_naming_the_key_and_what_differs(make) -> None:
    s = make()
    s.submit(priority=1, max_attempts=2, key="k")
    with pytest.raises(ValueError, match=r"key 'k' was already submitted as task 1 .*priority 1 then 3"):
        s.submit(priority=3, max_attempts=2, key="k")
    with pytest.raises(ValueError, match=r"max_attempts 2 then None"):
        s.submit(priority=1, key="k")
    assert s.submit() == 2  # the refused calls changed nothing


@every_scheduler
def test_due_at_none_and_the_time_it_stands_for_are_different_arguments(make) -> None:
    s = make()
    s.submit(key="k")  # due_at None: due at now, 0
    with pytest.raises(ValueError, match=r"due_at None then 0"):
        s.submit(due_at=0, key="k")
    s.submit(due_at=0, key="j")
    with pytest.raises(ValueError, match=r"due_at 0 then None"):
        s.submit(key="j")


@every_scheduler
@pytest.mark.parametrize("bad", ["", 7, ["k"], True, b"k"])
def test_a_key_that_is_not_a_non_empty_str_raises_naming_key_value_and_rule(make, bad) -> None:
    s = make()
    with pytest.raises(ValueError, match=r"key must be None or a non-empty str, not \w+: " + re.escape(repr(bad))):
        s.submit(key=bad)
    assert s.submit() == 1


@every_scheduler
def test_an_invalid_call_with_a_known_key_still_raises_and_changes_nothing(make) -> None:
    s = make()
    s.submit(key="k")
    with pytest.raises(ValueError, match="priority must be an int"):
        s.submit(priority="0", key="k")
    with pytest.raises(ValueError, match="retry_delay must be >= 1"):
        s.submit(retry_delay=0, key="k")
    assert s.submit(key="k") == 1


@every_scheduler
def test_a_key_is_remembered_after_its_task_is_final(make) -> None:
    s = make()
    s.add_worker("w1", 1)
    s.submit(key="k")
    lease = s.dispatch("w1", now=1, duration=5)
    assert s.complete(1, lease.token, now=2).accepted
    assert s.submit(key="k") == 1
    assert s.task(1).status == "succeeded"
    s.cancel(1, now=3)
    assert s.submit(key="k") == 1
    assert s.submit(key="other") == 2


@every_scheduler
def test_a_duplicate_expires_nothing_and_is_not_timed(make) -> None:
    s = make()
    s.add_worker("w1", 1)
    s.submit(key="k")
    s.dispatch("w1", now=1, duration=2)
    assert s.submit(key="k") == 1
    assert s.task(1).status == "running"  # untimed: the lease is alive until a timed call at 3


def test_the_task_view_keeps_its_nine_fields_and_no_key() -> None:
    assert [f.name for f in dataclasses.fields(TaskView)] == [
        "id", "status", "priority", "due_at", "attempts", "worker", "token", "expires_at", "cancel_requested",
    ]


def test_the_models_keys_live_in_a_hashable_state_and_a_duplicate_returns_the_same_state() -> None:
    state, first = model.submit(model.initial(), priority=1, key="k")
    again, second = model.submit(state, priority=1, key="k")
    assert again is state and first == second == 1
    assert hash(state) == hash(model.submit(model.initial(), priority=1, key="k")[0])
    assert model.key_of(state, 1) == "k" and model.key_of(state, 2) is None
    assert model.key_record(state, None) is None
