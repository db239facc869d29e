"""The lanes view: one lane per worker slot, leases as bars, marks where leases end, the cursor at the step's time."""

from __future__ import annotations

from tui_helpers import LANE_STEPS, app_for

from fencepost.impl import Scheduler
from fencepost.spec.formats.scenario import Scenario, Step
from fencepost.tui.lanes import Lanes, LanesView
from fencepost.story.timeline import build_timeline


def text_of(lanes: Lanes, index: int, width: int = 20) -> list[str]:
    return ["".join(part for part, _ in parts).rstrip() for _, parts in lanes.lines(index, width)]


def classes_at(lanes: Lanes, index: int, lane: int, column: int, width: int = 20) -> str | None:
    _, parts = lanes.lines(index, width)[lane + 1]
    cells = [name for part, name in parts for _ in part]
    return cells[column]


def test_each_lease_is_a_bar_on_its_workers_lane_as_known_at_the_step() -> None:
    lanes = Lanes(build_timeline(Scenario("lanes", LANE_STEPS), Scheduler, model=False))
    assert [lane.name for lane in lanes.lanes] == ["w1", "w2.1", "w2.2"]
    assert text_of(lanes, 6) == ["t    ▼         10", "w1", "w2.1", "w2.2"]
    # At step 10 (t=3): task 2's lease runs to 8 after its renewal; nothing has ended yet.
    assert text_of(lanes, 10)[1:] == ["w1   #1·1", "w2.1  #2·2", "w2.2   #3·3"]
    assert classes_at(lanes, 10, 1, 5 + 7) == "bar-running"  # [1, 8): column of tick 7 is in the bar
    assert classes_at(lanes, 10, 1, 5 + 8) is None
    # At the end: ✓ at 3 for task 1 (its bar [0, 3) too short for #1·1: #1), × in task 2's
    # last tick (7), ! at 9 for its late completion, ✗ at 10 for task 3.
    assert text_of(lanes, 14)[1:] == ["w1   #1 ✓", "w2.1  #2·2  × !", "w2.2   #3·3    ✗"]
    assert classes_at(lanes, 14, 0, 5 + 3) == "complete" and classes_at(lanes, 14, 1, 5 + 9) == "rejected"


def test_the_cursor_is_the_steps_time() -> None:
    lanes = Lanes(build_timeline(Scenario("lanes", LANE_STEPS), Scheduler, model=False))
    assert text_of(lanes, 12)[0] == "t    0       ▼ 10"  # t=8
    assert classes_at(lanes, 12, 0, 5 + 8) == "cursor"  # an empty cell at the cursor
    assert classes_at(lanes, 12, 2, 5 + 8) == "bar-running-at-cursor"


def test_a_long_run_scrolls_with_the_cursor_and_visits_only_the_window() -> None:
    steps = [Step("add_worker", {"worker": "w1", "capacity": 1})]
    for n in range(1, 2001):
        steps += [Step("submit", {}), Step("dispatch", {"worker": "w1", "now": 2 * n, "duration": 2}),
                  Step("complete", {"task_id": n, "token": n, "now": 2 * n + 1})]
    lanes = Lanes(build_timeline(Scenario("long", tuple(steps)), Scheduler, model=False))
    assert len(lanes.lanes[0].bars) == 2000
    axis, lane = text_of(lanes, len(steps), width=43)
    first = int(axis.split()[1])
    assert 3000 < first < 4002 and "▼" in axis and "✓" in lane


async def test_t_toggles_the_lanes_in_place_of_the_board() -> None:
    app = app_for(Scenario("lanes", LANE_STEPS))
    async with app.run_test(size=(80, 24)) as pilot:
        board, lanes = app.query_one("#board"), app.query_one(LanesView)
        assert board.display and not lanes.display
        await pilot.press("t")
        assert lanes.display and not board.display
        assert lanes._count == 4  # the axis and three lanes
        await pilot.press("end")
        assert any("✗" in part for part, _ in lanes.line(3)[1])
        await pilot.press("t")
        assert board.display and not lanes.display


def test_snapshot_of_the_lanes_at_80x24(snap_compare) -> None:
    assert snap_compare(app_for(Scenario("Lanes: a renewal, an expiry, a late completion", LANE_STEPS)),
                        terminal_size=(80, 24), press=["t", "end", "left"])


def test_a_batchs_leases_and_reports_are_drawn_as_its_single_calls_would_be() -> None:
    """dispatch_many's leases are bars on the worker's lanes, and complete_many / fail_many end
    them or mark a refusal, each report as its own call would: the same lanes as the singles'."""
    setup = (Step("add_worker", {"worker": "w2", "capacity": 2}), *(Step("submit", {}) for _ in range(2)))
    batched = (*setup,
               Step("dispatch_many", {"worker": "w2", "now": 1, "duration": 5, "limit": 2}),
               Step("complete_many", {"reports": [[1, 1], [2, 9]], "now": 3}),  # the second refused: a token never issued
               Step("fail_many", {"reports": [[2, 2]], "now": 4}))
    singles = (*setup,
               Step("dispatch", {"worker": "w2", "now": 1, "duration": 5}),
               Step("dispatch", {"worker": "w2", "now": 1, "duration": 5}),
               Step("complete", {"task_id": 1, "token": 1, "now": 3}),
               Step("complete", {"task_id": 2, "token": 9, "now": 3}),
               Step("fail", {"task_id": 2, "token": 2, "now": 4}))
    many = Lanes(build_timeline(Scenario("batched", batched), Scheduler, model=False))
    one = Lanes(build_timeline(Scenario("singles", singles), Scheduler, model=False))
    assert text_of(many, 4)[1:] == text_of(one, 5)[1:] == ["w2.1   #1·1", "w2.2   #2·2"]
    assert text_of(many, len(batched))[1:] == text_of(one, len(singles))[1:]
    assert text_of(many, len(batched))[1:] == ["w2.1   #1·1✓", "w2.2   #2·2  ✗"]


def test_a_lease_that_starts_as_the_last_one_ends_keeps_its_whole_label() -> None:
    """priority-order's lane: each lease starts at the tick the last one completed. The ``✓`` of one
    must not run into the next one's label (``✓10·2`` read as "task 10 done")."""
    steps = [Step("add_worker", {"worker": "w1", "capacity": 1}), *(Step("submit", {}) for _ in range(9)),
             Step("submit", {"priority": 5})]
    for now, (task, token) in enumerate(((10, 1), (1, 2), (2, 3))):
        steps += [Step("dispatch", {"worker": "w1", "now": now, "duration": 5}),
                  Step("complete", {"task_id": task, "token": token, "now": now + 1})]
    lanes = Lanes(build_timeline(Scenario("adjacent", steps), Scheduler, model=False))
    assert text_of(lanes, len(steps), width=40)[1] == "w1 #10·1✓#1·2✓#2·3✓"
    assert text_of(lanes, len(steps), width=80)[1] == "w1 #10·1      ✓#1·2      ✓#2·3      ✓"
    assert text_of(lanes, len(steps), width=20)[1] == "w1   ✓ ✓ ✓"  # no room for a label: none, never a cut one
