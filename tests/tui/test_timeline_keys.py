"""The timeline with idempotency keys and restarts: what the event log and the columns say."""

from __future__ import annotations

import copy

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.formats.scenario import Scenario, Step
from fencepost.story import timeline as tl
from fencepost.story.timeline import build_timeline


class Reopenable(SimpleScheduler):
    """Reopens as a new object over a copy of the same in-memory state."""

    def reopen(self) -> Reopenable:
        return copy.deepcopy(self)


class ForgetsKeys(Reopenable):
    def reopen(self) -> ForgetsKeys:
        reopened = copy.deepcopy(self)
        reopened._keys.clear()
        return reopened


STEPS = (
    Step("add_worker", {"worker": "w1", "capacity": 1}),
    Step("submit", {"key": "order-7"}),
    Step("submit", {"priority": 1, "key": "a-very-long-idempotency-key"}),
    Step("dispatch", {"worker": "w1", "now": 1, "duration": 4}),
    Step("restart", {}),
    Step("submit", {"key": "order-7"}, expect={"task_id": 1}),
    Step("advance", {"now": 5}),
)


def texts(timeline: tl.Timeline, index: int) -> list[str]:
    return [event.text for event in timeline.frames[index].events]


def test_a_restart_says_what_was_recovered_and_agrees_with_the_model() -> None:
    timeline = build_timeline(Scenario("t", STEPS), Reopenable)
    assert texts(timeline, 5) == ["restart: the scheduler was reopened at t=1; 2 tasks recovered (1 pending, 1 running)"]
    assert timeline.frames[5].events[0].kind == "restart"
    assert timeline.frames[5].result == "reopened"
    assert timeline.divergences == [] and timeline.mismatches == []
    assert texts(timeline, 7)[0].startswith("lease [1, 5) of task 2 on w1 (token 1) expired at t=5")  # the reopened one expires it


def test_a_duplicate_submit_by_key_says_it_returned_the_first_task() -> None:
    timeline = build_timeline(Scenario("t", STEPS), Reopenable)
    assert texts(timeline, 2) == ["task 1 submitted with key 'order-7': priority 0, due t=0"]
    assert texts(timeline, 6) == ["submit with key 'order-7' returned task 1: already submitted"]
    assert timeline.frames[6].changed == frozenset()


def test_the_columns_know_each_tasks_key_and_cut_long_ones_short() -> None:
    timeline = build_timeline(Scenario("t", STEPS), Reopenable)
    board = timeline.board(timeline.last)
    assert board.keys == {1: "order-7", 2: "a-very-long-idempotency-key"}
    assert tl.short_key("order-7") == "order-7"
    assert tl.short_key("a-very-long-idempotency-key") == "a-very-lo…"
    assert len(tl.short_key("x" * 50)) == tl.KEY_SHOWN


def test_a_scheduler_that_forgets_keys_on_reopen_parts_from_the_model_at_the_duplicate() -> None:
    timeline = build_timeline(Scenario("t", STEPS), ForgetsKeys)
    assert timeline.divergences == [6] and timeline.mismatches == [6]
    assert "task 3 submitted with key 'order-7'" in texts(timeline, 6)[0]


def test_a_restart_on_a_scheduler_without_reopen_is_a_mismatch_and_the_rest_still_runs() -> None:
    timeline = build_timeline(Scenario("t", STEPS), SimpleScheduler)
    assert timeline.mismatches == [5]
    assert texts(timeline, 5)[0] == "restart raised: SimpleScheduler has no reopen(), so it cannot restart"
    assert timeline.last == len(STEPS)
