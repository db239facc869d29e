"""The history view (``tui/history.py``): lanes, the checker's order as points, the failing stretch."""

from __future__ import annotations

import json

from fencepost.spec.checkers.linearize import check_history
from fencepost.spec.formats.history import loads_history
from fencepost.story.history import SCALE, linearization_points, picture
from fencepost.tui.history import HistoryApp, Lanes
from fencepost.spec.formats.history import is_history

LEASE_1 = {"task_id": 1, "worker": "w1", "token": 1, "started_at": 0, "expires_at": 5}
LEASE_2 = {"task_id": 1, "worker": "w1", "token": 2, "started_at": 5, "expires_at": 10}

#: A zombie's late completion accepted: not linearizable.
ZOMBIE = [
    ("c0", "invoke", "add_worker", {"worker": "w1", "capacity": 1}), ("c0", "ok", None),
    ("c1", "invoke", "submit", {}), ("c1", "ok", 1),
    ("c1", "invoke", "dispatch", {"worker": "w1", "now": 0, "duration": 5}), ("c1", "ok", LEASE_1),
    ("c2", "invoke", "dispatch", {"worker": "w1", "now": 5, "duration": 5}),
    ("c1", "invoke", "complete", {"task_id": 1, "token": 1, "now": 6}),
    ("c2", "ok", LEASE_2),
    ("c1", "ok", {"accepted": True}),
]

#: Overlapping submits answered out of invocation order, and a client that died mid-call.
OVERLAPS = [
    ("c1", "invoke", "submit", {}), ("c2", "invoke", "submit", {}), ("c3", "invoke", "submit", {}),
    ("c1", "ok", 3), ("c2", "ok", 1), ("c3", "info"),
    ("c2", "invoke", "advance", {"now": 2}), ("c1", "invoke", "submit", {"priority": 1}),
    ("c2", "ok", None), ("c1", "ok", 4),
]


def load(events):
    def obj(process, kind, *rest):
        if kind == "invoke":
            return {"process": process, "type": kind, "op": rest[0], "args": rest[1]}
        if kind == "ok":
            return {"process": process, "type": kind, "result": rest[0]}
        return {"process": process, "type": kind}

    return loads_history("".join(json.dumps(obj(*e)) + "\n" for e in events), "history.jsonl")


def app_for(events) -> HistoryApp:
    history = load(events)
    return HistoryApp(history, check_history(history))


def test_points_follow_the_order_and_stay_on_their_intervals():
    history = load(OVERLAPS)
    verdict = check_history(history)
    assert verdict.order[:2] == (1, 2)  # c2's submit (task 1), then the unknown one (task 2), then c1's
    points = linearization_points(history, verdict.order)
    placed = [points[i] for i in verdict.order]
    assert placed == sorted(placed) and len(set(placed)) == len(placed)
    for index, column in points.items():
        call = history.calls[index]
        assert call.invoked * SCALE < column
        assert call.completed is None or column < call.completed * SCALE


def test_the_failing_stretch_and_call_come_from_the_verdict():
    history = load(ZOMBIE)
    shown = picture(history, check_history(history))
    assert shown.failing == 4 and shown.stretch == (6 * SCALE, 9 * SCALE)
    assert shown.lanes == ("c0", "c1", "c2")


def test_a_history_is_told_from_a_scenario_by_extension_or_content(tmp_path):
    lines = tmp_path / "run.log"
    lines.write_text('\n{"process": "c1", "type": "invoke", "op": "submit", "args": {}}\n')
    scenario = tmp_path / "s.json"
    scenario.write_text('{"title": "one process", "description": "\\"process\\"", "steps": []}')
    assert is_history("anything.jsonl") and is_history(str(lines))
    assert not is_history(str(scenario)) and not is_history(str(tmp_path / "missing.toml"))


def test_the_launcher_refuses_a_bad_history_with_one_line(tmp_path, capsys):
    from fencepost.cli import main

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"process": "c1", "type": "ok", "result": 1}\n')
    assert main(["tui", str(bad)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


async def test_keys_move_the_selection_between_calls_and_lanes():
    app = app_for(OVERLAPS)
    async with app.run_test(size=(80, 24)) as pilot:
        lanes = app.query_one(Lanes)
        assert app.selected == 0 and lanes.selected == 0
        await pilot.press("right", "right")
        assert app.selected == 2
        assert "#3 c3  submit() -> unknown (info)" in str(app.query_one("#history-call").render())
        await pilot.press("up")
        assert app.history_call(app.selected).process == "c2"
        await pilot.press("left")
        assert app.selected == 0
        await pilot.press("f")  # nothing fails here: the selection stays
        assert app.selected == 0


async def test_f_goes_to_the_failing_call_and_pages_scroll_the_lanes():
    app = app_for(ZOMBIE * 1)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.selected == 4
        await pilot.press("home", "left", "left")
        assert app.selected == 2
        await pilot.press("f")
        assert app.selected == 4
        lanes = app.query_one(Lanes)
        assert lanes.offset == 0  # the whole history fits at 80 columns
        await pilot.press("]")
        assert lanes.offset == 0


def test_a_history_that_is_not_linearizable(snap_compare):
    assert snap_compare(app_for(ZOMBIE), terminal_size=(120, 40))


def test_a_linearizable_history_at_80_by_24(snap_compare):
    assert snap_compare(app_for(OVERLAPS), terminal_size=(80, 24), press=["right"])


#: Task 1 completed and then forgotten by a prune; a cancel of it afterwards answered as if it
#: were still known (rejected), which no order explains: the model refuses a forgotten id.
FORGOTTEN = [
    ("c0", "invoke", "add_worker", {"worker": "w1", "capacity": 1}), ("c0", "ok", None),
    ("c1", "invoke", "submit", {}), ("c1", "ok", 1),
    ("c1", "invoke", "dispatch", {"worker": "w1", "now": 0, "duration": 5}), ("c1", "ok", LEASE_1),
    ("c1", "invoke", "complete", {"task_id": 1, "token": 1, "now": 2}), ("c1", "ok", {"accepted": True}),
    ("c2", "invoke", "prune", {"before": 3, "now": 3}), ("c2", "ok", 1),
    ("c1", "invoke", "cancel", {"task_id": 1, "now": 4}), ("c1", "ok", {"accepted": False}),
]


async def test_a_prune_is_shown_in_the_protocols_words_and_a_forgotten_task_as_forgotten():
    app = app_for(FORGOTTEN)
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.selected == 5  # the cancel no order explains
        detail = "\n".join(str(app.query_one(f"#history-{name}").render()) for name in ("verdict", "model", "lead-up"))
        assert "ValueError: task_id 1 was forgotten" in detail  # what the model would have answered
        assert "task 1: forgotten by a prune: every call naming it is refused" in detail
        assert "tasks: 1 forgotten" in detail
        assert "prune(before=3, now=3)" in detail and "-> forgot 1 task   <-- a prune (it forgets final tasks)" in detail
        await pilot.press("left")
        assert "#5 c2  prune(before=3, now=3) -> forgot 1 task" in str(app.query_one("#history-call").render())
