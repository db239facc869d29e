"""The timeline: what every frame says, and that any frame can be reached exactly."""

from __future__ import annotations

import random

import pytest

from fencepost.impl import Scheduler
from fencepost.impl.simple import SimpleScheduler
from fencepost.impl.mutants import token_reuse
from fencepost.spec.formats.scenario import Scenario, Step, load_scenario
from fencepost.story.walkthroughs import resolve
from fencepost.story import timeline as tl
from fencepost.story.sorted_rows import SortedRows
from fencepost.story.timeline import build_timeline


def steps(*calls: tuple) -> tuple[Step, ...]:
    """``("dispatch", "w1", 5, 5)``-style tuples, arguments in protocol order."""
    from fencepost.spec.formats.scenario import SIGNATURES

    out = []
    for op, *values in calls:
        expect = None
        if values and isinstance(values[-1], dict) and "expect" in values[-1]:
            expect = values.pop()["expect"]
        names = [p.name for p in SIGNATURES[op]]
        out.append(Step(op, dict(zip(names, values)), expect=expect))
    return tuple(out)


def run(*calls: tuple, factory=Scheduler) -> tl.Timeline:
    return build_timeline(Scenario("test", steps(*calls)), factory)


def texts(timeline: tl.Timeline, index: int, kind: str | None = None) -> list[str]:
    return [e.text for e in timeline.frames[index].events if kind is None or e.kind == kind]


# The seeds' capacity-one example: lease [5, 10), full at 9, completion at exactly 10.
CAPACITY_ONE = (
    ("add_worker", "w1", 1),
    ("submit",),
    ("dispatch", "w1", 5, 5),
    ("submit",),
    ("dispatch", "w1", 9, 5),
    ("complete", 1, 1, 10),
    ("dispatch", "w1", 10, 5),
    ("complete", 1, 1, 11),
)


def test_frame_zero_is_before_any_step():
    timeline = run(*CAPACITY_ONE)
    frame = timeline.frames[0]
    assert (frame.index, frame.now, frame.step, frame.events) == (0, 0, None, ())
    board = timeline.board(0)
    assert (board.pending, board.running, board.done) == ([], [], [])
    assert timeline.last == len(CAPACITY_ONE) == len(timeline.frames) - 1


def test_a_dispatch_says_why_and_a_full_worker_says_so():
    timeline = run(*CAPACITY_ONE)
    assert texts(timeline, 3, "dispatch") == ["task 1 → w1, token 1, lease [5, 10): the only task due"]
    assert texts(timeline, 5, "idle") == ["no dispatch: w1 is full (1/1); no token used"]
    assert timeline.frames[5].workers == (tl.WorkerLoad("w1", 1, 1),)


def test_a_completion_at_exactly_expires_at_is_an_expiry_then_a_rejection():
    timeline = run(*CAPACITY_ONE)
    assert texts(timeline, 6, "expiry") == [
        "lease [5, 10) of task 1 on w1 (token 1) expired at t=10: task 1 is pending again"
    ]
    assert texts(timeline, 6, "rejection") == [
        "rejected complete of task 1 with token 1: lease [5, 10) expired at t=10"
    ]
    assert 6 in timeline.notable
    pending = timeline.board(6).pending
    assert [r.id for r in pending] == [1, 2] and timeline.frames[6].workers[0].used == 0


def test_a_stale_token_names_the_token_the_task_runs_under_now():
    timeline = run(*CAPACITY_ONE)
    assert texts(timeline, 7, "dispatch")[0].startswith("task 1 → w1, token 2, lease [10, 15)")
    assert texts(timeline, 8, "rejection") == [
        "rejected complete of task 1 with token 1: token 1 is stale: task 1 now runs under token 2"
    ]
    assert timeline.notable == [6, 8]
    assert (timeline.next_notable(0), timeline.next_notable(6), timeline.next_notable(8)) == (6, 8, None)
    assert (timeline.previous_notable(8), timeline.previous_notable(6)) == (6, None)


def test_an_expiry_noticed_later_says_both_times():
    timeline = run(("add_worker", "w1", 1), ("submit",), ("dispatch", "w1", 5, 5), ("advance", 12))
    assert texts(timeline, 4) == [
        "lease [5, 10) of task 1 on w1 (token 1) expired at t=10 (noticed at t=12): task 1 is pending again"
    ]


def test_a_dispatch_names_the_task_it_beat_and_the_rule_that_decided():
    timeline = run(
        ("add_worker", "w1", 3),
        *[("submit",)] * 10,  # tasks 1..10, all priority 0, due 0
        ("cancel", 1, 0), *[("cancel", i, 0) for i in range(3, 10)],  # leaves 2 and 10
        ("dispatch", "w1", 0, 5),
        ("submit", 3, 4),  # task 11: priority 3, due 4
        ("submit", 3, 2),  # task 12: priority 3, due 2
        ("submit", 1),  # task 13: priority 1
        ("dispatch", "w1", 5, 5),
        ("dispatch", "w1", 5, 5),
    )
    last = timeline.last
    assert texts(timeline, last - 5, "dispatch") == [
        "task 2 → w1, token 1, lease [0, 5): same priority 0 and due t=0; id 2 comes before 10"
    ]
    assert texts(timeline, last - 1, "dispatch") == [
        "task 12 → w1, token 2, lease [5, 10): same priority 3; due t=2 beats task 11's t=4"
    ]
    assert texts(timeline, last, "dispatch") == ["task 11 → w1, token 3, lease [5, 10): priority 3 beats task 13's 1"]


def test_pending_is_in_dispatch_order_with_not_yet_due_tasks_after_by_due_time():
    timeline = run(
        ("submit", 0, 0), ("submit", 9, 30), ("submit", 5, 0), ("submit", 5, 20), ("submit", 5, 0), ("advance", 10)
    )
    board = timeline.board(timeline.last)
    assert [r.id for r in board.pending] == [3, 5, 1, 4, 2]
    assert all(r.due_at <= board.now for r in board.pending[:3]) and board.now == 10


def test_explicit_failure_waits_out_its_backoff_then_runs_out_of_attempts():
    timeline = run(
        ("add_worker", "w1", 1),
        ("submit", 0, None, 2, 3),  # max_attempts 2, retry_delay 3
        ("dispatch", "w1", 0, 10),
        ("fail", 1, 1, 4),
        ("dispatch", "w1", 5, 10),  # not due until 4 + 3 = 7
        ("dispatch", "w1", 7, 10),
        ("fail", 1, 2, 8),
    )
    assert texts(timeline, 4) == ["task 1 failed attempt 1: retries once due at t=7 (backoff)"]
    row = timeline.board(4).pending[0]
    assert (row.status, row.due_at) == ("retry_wait", 7)
    assert texts(timeline, 5) == ["no dispatch for w1: nothing is due at t=5 (next: task 1 at t=7); no token used"]
    assert texts(timeline, 7) == ["task 1 failed attempt 2 with no attempts left: failed"]
    assert [(r.id, r.status) for r in timeline.board(7).done] == [(1, "failed")]


def test_cancellation_before_claim_and_cooperative_cancellation_of_running_work():
    timeline = run(
        ("add_worker", "w1", 1),
        ("submit",), ("submit",),
        ("cancel", 2, 0),
        ("dispatch", "w1", 1, 5),
        ("cancel", 1, 2),
        ("renew", 1, 1, 3, 5),
        ("advance", 6),
    )
    assert texts(timeline, 4) == ["task 2 cancelled before it was claimed; it never starts"]
    assert texts(timeline, 6)[0].startswith("cancellation requested for running task 1: cooperative")
    assert timeline.board(6).running[0].cancel_requested
    assert texts(timeline, 7, "rejection") == [
        "rejected renew of task 1 with token 1: a cancellation was requested for task 1, so its lease can't be extended"
    ]
    assert texts(timeline, 8) == [
        "lease [1, 6) of task 1 on w1 (token 1) expired at t=6: a cancellation was requested: task 1 cancelled"
    ]
    assert [r.status for r in timeline.board(8).done] == ["cancelled", "cancelled"]


def test_a_cancel_of_a_task_that_has_run_says_so_and_a_cancel_at_the_lease_end_follows_the_expiry():
    """Neither is "before it was claimed", and a lease that had no cancel request did not end by one."""
    timeline = run(
        ("add_worker", "w1", 1),
        ("submit",), ("submit",),
        ("dispatch", "w1", 0, 5),
        ("fail", 1, 1, 1),  # retry_wait, due at 2
        ("cancel", 1, 1),
        ("dispatch", "w1", 1, 5),  # task 2, lease [1, 6)
        ("cancel", 2, 6),  # at exactly its end: the expiry comes first, then a waiting task is cancelled
    )
    assert texts(timeline, 6) == ["task 1 cancelled while waiting, after 1 attempt; it never starts again"]
    assert texts(timeline, 8) == [
        "lease [1, 6) of task 2 on w1 (token 2) expired at t=6: task 2 is pending again",
        "task 2 cancelled while waiting, after 1 attempt; it never starts again",
    ]
    assert [(r.id, r.status) for r in timeline.board(8).done] == [(2, "cancelled"), (1, "cancelled")]


def test_an_invalid_call_is_an_error_event_and_changes_nothing():
    timeline = run(("add_worker", "w1", 1), ("advance", 5), ("advance", 3), ("dispatch", "w9", 6, 1))
    assert timeline.frames[3].error == "time can't go backwards: now=3 < current time 5"
    assert [e.kind for e in timeline.frames[3].events] == ["error"]
    assert timeline.frames[3].now == 5
    assert "unknown" in timeline.frames[4].error


def test_a_broken_expect_is_marked_on_its_frame():
    timeline = run(("submit", {"expect": {"task_id": 2}}), ("submit", {"expect": {"task_id": 2}}))
    assert timeline.frames[1].mismatch == "expected task 2, got task 1"
    assert timeline.frames[2].mismatch is None
    assert timeline.mismatches == [1]
    assert texts(timeline, 1, "mismatch") == ["expect failed: expected task 2, got task 1"]


def test_a_missed_expect_state_is_marked_as_replay_marks_it():
    scenario = Scenario("state", (
        Step("submit", {}, expect_state={"now": 0, "tasks": {"1": {"status": "pending"}}}),
        Step("advance", {"now": 4}, expect_state={"now": 5}),
    ))
    timeline = build_timeline(scenario, Scheduler)
    assert timeline.mismatches == [2]
    assert timeline.frames[2].mismatch == "expected t=5 afterwards, got t=4"


def test_changed_rows_are_the_ones_this_step_touched():
    timeline = run(*CAPACITY_ONE)
    assert timeline.frames[3].changed == {1}
    assert timeline.frames[5].changed == frozenset()
    assert timeline.board(3).changed == {1}


def _all_boards_by_replay(scenario: Scenario) -> list[tl.Board]:
    """The oracle: frame k's board from a fresh timeline of the first k steps."""
    return [build_timeline(Scenario("prefix", scenario.steps[:k]), Scheduler).board(k) for k in range(len(scenario.steps) + 1)]


def _time_passing() -> Scenario:
    """One slow worker and tasks due over time: tasks become due while others wait."""
    sched, steps_ = SimpleScheduler(), []

    def call(op: str, **args):
        steps_.append(Step(op, args))
        return getattr(sched, op)(**args)

    call("add_worker", worker="w1", capacity=1)
    for i in range(12):
        call("submit", priority=i % 3, due_at=(i * 7) % 20)
    for now in range(1, 26):
        if now % 3 == 0:
            lease = call("dispatch", worker="w1", now=now, duration=2)
            if lease is not None and now % 2 == 0:
                call("complete", task_id=lease.task_id, token=lease.token, now=now + 1)
        else:
            call("advance", now=max(now, sched.now))
    return Scenario("time passing", tuple(steps_))


# Walk the diffs and move the rows a clock change makes due (or not) one by one (up to 64 here);
# rebuild the columns and sort Pending's due part again for more than one row moved (or a
# sixteenth of it); rebuild the columns but move any number of rows one by one; walk with
# columns in blocks of one or two rows, so blocks split and empty at every few changes.
@pytest.mark.parametrize("walk_limit, move_share, block", [(64, 16, 512), (1, 16, 512), (1, 1, 512), (64, 16, 1)],
                         ids=["walk", "rebuild", "move-each", "small-blocks"])
@pytest.mark.parametrize("name", ["onboarding", "retry-backoff", "cancellation", "time-passing"])
def test_any_frame_reached_any_way_equals_a_fresh_replay_to_it(monkeypatch, name, walk_limit, move_share, block):
    monkeypatch.setattr(tl, "CHECKPOINT_EVERY", 3)  # so jumps start from checkpoints
    monkeypatch.setattr(tl._Columns, "WALK_LIMIT", walk_limit)
    monkeypatch.setattr(tl._Columns, "MOVE_SHARE", move_share)
    monkeypatch.setattr(SortedRows, "BLOCK", block)
    scenario = _time_passing() if name == "time-passing" else load_scenario(resolve(name))
    expected = _all_boards_by_replay(scenario)
    timeline = build_timeline(scenario, Scheduler)
    order = list(range(timeline.last + 1)) + list(range(timeline.last, -1, -1))
    rng = random.Random(3)
    order += [rng.randrange(timeline.last + 1) for _ in range(60)]
    for index in order:
        timeline._boards.clear()  # no cache: every board is walked to
        assert timeline.board(index) == expected[index], index
        assert timeline.board(index, "model").pending == expected[index].pending


def test_the_full_copies_hold_no_more_rows_than_the_diffs_hold_changes_times_the_share(monkeypatch):
    # A trace that submits first (as the long-trace benchmark's does): a copy every CHECKPOINT_EVERY
    # frames held about n^2 / (2 * CHECKPOINT_EVERY) rows, 3,575 here against 216 changed rows.
    monkeypatch.setattr(tl, "CHECKPOINT_EVERY", 8)
    calls = [("add_worker", "w1", 2)] + [("submit",)] * 200 + [("dispatch", "w1", t, 5) for t in range(1, 40)]
    timeline = run(*calls)
    for side in (timeline._impl, timeline._model):
        copied = sum(len(rows) for rows in side.track.checkpoints.values())
        changed = sum(len(changes) for changes in side.track.diffs)
        assert len(side.track.checkpoints) > 3
        assert copied <= tl.CHECKPOINT_SHARE * changed, (copied, changed)
    for index in (timeline.last, 100, 7, 150, 0):  # far jumps start from the copies: still exact
        assert timeline.board(index) == build_timeline(Scenario("test", steps(*calls[:index])), Scheduler).board(index)


def test_a_step_that_starts_or_ends_no_lease_shares_the_worker_loads_before_it():
    timeline = run(("add_worker", "w1", 2), ("submit",), ("submit",), ("dispatch", "w1", 0, 5), ("submit",), ("advance", 3))
    for index in (2, 3, 5, 6):  # submits and an advance that expires nothing
        assert timeline.frames[index].workers is timeline.frames[index - 1].workers
        assert timeline.checks[index].workers is timeline.checks[index - 1].workers
    assert timeline.checks[4].workers == (tl.WorkerLoad("w1", 1, 2),) != timeline.checks[3].workers


def test_the_big_scenario_shortcut_reads_the_same_frames_as_reading_every_task(monkeypatch):
    scenario = load_scenario(resolve("onboarding"))
    full = build_timeline(scenario, Scheduler)
    monkeypatch.setattr(tl, "FULL_SCAN_LIMIT", 1)
    partial = build_timeline(scenario, Scheduler)
    assert partial.frames == full.frames
    assert partial.checks == full.checks
    for index in range(full.last + 1):
        assert partial.board(index) == full.board(index)


def test_a_divergence_from_the_model_is_marked_with_what_differs():
    calls = (("add_worker", "w1", 1), ("submit",), ("dispatch", "w1", 0, 5), ("advance", 5), ("dispatch", "w1", 5, 5))
    timeline = run(*calls, factory=token_reuse.Scheduler)
    assert timeline.divergences == [5]
    check = timeline.check(5)
    assert check.divergence == (
        "returned lease task 1 to w1, token 1, [5, 10); the model returned lease task 1 to w1, token 2, [5, 10)"
    )
    assert timeline.differences(5) == ["task 1: token 1 (model: 2)"]
    assert timeline.board(5, "model").running[0].token == 2
    assert timeline.board(5).running[0].token == 1
    assert run(*calls).divergences == []


class _IntAccepted(SimpleScheduler):
    def complete(self, task_id, token, now):
        outcome = super().complete(task_id, token, now)
        return type(outcome)(int(outcome.accepted), outcome.reason)


def test_an_accepted_of_1_instead_of_true_parts_from_the_model():
    calls = (("add_worker", "w1", 1), ("submit",), ("dispatch", "w1", 0, 5), ("complete", 1, 1, 2))
    assert run(*calls, factory=_IntAccepted).divergences == [4]
    assert run(*calls).divergences == []


def test_a_re_lease_under_a_reused_token_is_still_an_expiry_and_a_new_lease():
    calls = (("add_worker", "w1", 1), ("submit",), ("dispatch", "w1", 0, 1), ("dispatch", "w1", 9, 1))
    timeline = run(*calls, factory=token_reuse.Scheduler)
    assert texts(timeline, 4, "expiry") == [
        "lease [0, 1) of task 1 on w1 (token 1) expired at t=1 (noticed at t=9): leased again at once to w1 under token 1"
    ]
    reused = timeline.board(4).running[0]
    assert (reused.token, reused.started_at, reused.attempts) == (1, 9, 2)


class _Crashes(SimpleScheduler):
    def dispatch(self, worker, now, duration):
        raise RuntimeError("boom")


def test_an_implementation_that_raises_something_else_is_marked_not_fatal():
    timeline = run(("add_worker", "w1", 1), ("submit",), ("dispatch", "w1", 0, 5), factory=_Crashes)
    frame = timeline.frames[3]
    assert frame.error == "RuntimeError: boom"
    assert frame.mismatch == "raised RuntimeError, but the protocol allows only ValueError"
    assert timeline.divergences == [3]


def test_the_model_can_be_run_later_and_stopped():
    scenario = load_scenario(resolve("onboarding"))
    timeline = build_timeline(scenario, Scheduler, model=False)
    assert not timeline.model_done and timeline.check(1) is None and timeline.board(1, "model") is None
    seen = []
    assert not timeline.run_model(should_stop=lambda: len(timeline.checks) > 4)
    assert len(timeline.checks) == 5
    assert timeline.run_model(progress=seen.append, every=5)
    assert timeline.model_done and seen == [n for n in range(6, len(timeline.frames) + 1) if n % 5 == 0]
    assert timeline.checks == build_timeline(scenario, Scheduler).checks


class _Counted(Scheduler):
    """Counts the calls that make steps, so a test sees which steps ran."""

    calls = 0
    ops = frozenset(step.op for step in load_scenario(resolve("onboarding")).steps)  # the scenario the tests run

    def __getattribute__(self, name: str) -> object:
        if name in _Counted.ops:
            _Counted.calls += 1
        return super().__getattribute__(name)


def test_a_timeline_runs_a_step_only_when_a_frame_at_or_after_it_is_read(monkeypatch):
    monkeypatch.setattr(_Counted, "calls", 0)
    scenario = load_scenario(resolve("onboarding"))
    timeline = tl.Timeline(scenario, _Counted)
    assert timeline.ran == 1 and timeline.last == len(scenario.steps) and _Counted.calls == 0
    assert len(timeline.frames) == timeline.last + 1 and timeline.steps == scenario.steps
    board = timeline.board(3)
    assert timeline.ran == 4 and _Counted.calls == 3 and board.now == timeline.frames[3].now
    timeline.frames[2]  # already run: nothing runs again
    assert timeline.ran == 4 and _Counted.calls == 3
    assert timeline.run_steps(progress=(seen := []).append, every=4)
    assert timeline.ran == timeline.last + 1 and _Counted.calls == timeline.last
    assert seen == [min(n, timeline.last + 1) for n in range(8, timeline.last + 5, 4)]
    whole = build_timeline(scenario, Scheduler)
    assert timeline.frames == whole.frames and timeline.log == whole.log
    assert timeline.notable == whole.notable and timeline.mismatches == whole.mismatches


@pytest.mark.parametrize("block", [1, 512])
def test_a_board_keeps_its_rows_while_later_boards_are_made(monkeypatch, block):
    monkeypatch.setattr(SortedRows, "BLOCK", block)
    scenario = _time_passing()
    expected = _all_boards_by_replay(scenario)
    timeline = build_timeline(scenario, Scheduler)
    boards = [timeline.board(k) for k in range(timeline.last + 1)]  # each made before the columns walk on
    assert boards == expected
    assert [list(board.pending) for board in boards] == [list(board.pending) for board in expected]
    assert boards[5].pending[-1] == list(boards[5].pending)[-1] and boards[5].pending[1:3] == list(boards[5].pending)[1:3]


def test_a_lazy_timeline_reads_the_same_frames_at_every_index_in_any_order():
    scenario = load_scenario(resolve("onboarding"))
    whole = build_timeline(scenario, Scheduler)
    timeline = tl.Timeline(scenario, Scheduler)
    order = list(range(whole.last + 1))
    random.Random(3).shuffle(order)
    for index in order:
        assert timeline.board(index) == whole.board(index)
    assert timeline.run_model() and timeline.checks == whole.checks


def test_the_next_expiry_or_rejection_is_found_past_the_frames_run_so_far():
    scenario = load_scenario(resolve("onboarding"))
    whole = build_timeline(scenario, Scheduler)
    assert whole.notable, "the walkthrough has an expiry or a rejection"
    timeline = tl.Timeline(scenario, Scheduler)
    assert timeline.next_notable(0) == whole.notable[0] and timeline.ran == whole.notable[0] + 1
    last = whole.notable[-1]
    assert timeline.previous_notable(whole.last) == last


def test_two_threads_reading_a_lazy_timeline_run_every_step_once(monkeypatch):
    import threading

    monkeypatch.setattr(_Counted, "calls", 0)
    scenario = load_scenario(resolve("onboarding"))
    timeline = tl.Timeline(scenario, _Counted)
    readers = [threading.Thread(target=timeline.run_steps, kwargs={"every": 1}) for _ in range(2)]
    for reader in readers:
        reader.start()
    timeline.frames[-1]
    for reader in readers:
        reader.join()
    assert _Counted.calls == timeline.last
    assert timeline.frames == build_timeline(scenario, Scheduler).frames


def test_append_to_a_lazy_timeline_runs_the_scenario_first():
    timeline = tl.Timeline(Scenario("test", steps(("add_worker", "w1", 1), ("submit",))), Scheduler)
    frame = timeline.append(Step("dispatch", {"worker": "w1", "now": 0, "duration": 5}))
    assert frame.index == 3 and timeline.last == 3 and timeline.ran == 4
    assert [f.step.op for f in timeline.frames[1:]] == ["add_worker", "submit", "dispatch"]
    assert timeline.model_done


def test_append_records_accepted_calls_with_their_result_as_expect_and_refuses_invalid_ones():
    timeline = run(("add_worker", "w1", 1))
    assert timeline.append(Step("dispatch", {"worker": "w9", "now": 0, "duration": 1})) == (
        "worker 'w9' is unknown: add it with add_worker first"
    )
    assert timeline.last == 1
    frame = timeline.append(Step("submit", {}), record_expect=True)
    assert frame.index == 2 and frame.step.expect == {"task_id": 1}
    frame = timeline.append(Step("dispatch", {"worker": "w1", "now": 3, "duration": 2}), record_expect=True)
    assert frame.step.expect == {"task_id": 1, "worker": "w1", "token": 1, "started_at": 3, "expires_at": 5}
    assert timeline.model_done and timeline.check(3).divergence is None
    assert [s.op for s in timeline.steps] == ["add_worker", "submit", "dispatch"]


def test_a_lease_call_accepted_under_a_stale_token_shows_the_token_the_task_really_holds():
    from fencepost.impl.mutants import worker_identity

    # The mutant accepts token 1 for task 2 because token 1's lease went to the same worker.
    calls = [("submit",), ("submit",), ("add_worker", "w3", 3), ("dispatch", "w3", 0, 1), ("dispatch", "w3", 0, 1)]
    renewed = run(*calls, ("renew", 2, 1, 0, 1), factory=worker_identity.Scheduler)
    assert texts(renewed, 6, "renew") == ["lease of task 2 renewed: now [0, 1), under token 2, not the 1 given"]
    completed = run(*calls, ("complete", 2, 1, 0), factory=worker_identity.Scheduler)
    assert texts(completed, 6, "complete") == [
        "task 2 succeeded (its lease was under token 2, not the 1 given); its slot is free at once"
    ]
    honest = run(*calls, ("renew", 2, 2, 0, 3))
    assert texts(honest, 6, "renew") == ["lease of task 2 renewed: now [0, 3), still token 2"]


def test_a_pruned_task_leaves_done_and_the_narration_says_why():
    timeline = run(
        ("add_worker", "w1", 1),
        ("submit",), ("submit",),
        ("cancel", 2, 3),
        ("dispatch", "w1", 4, 5),
        ("complete", 1, 1, 6),
        ("prune", 6, 6),
        ("prune", 6, 7),
    )
    assert sorted(r.id for r in timeline.board(6).done) == [1, 2]
    assert [r.id for r in timeline.board(7).done] == [1]  # task 2 ended at 3 < 6; task 1 at exactly 6 stays
    assert texts(timeline, 7, "prune") == [
        "prune forgets 1 final task (2): each ended before t=6, so it leaves Done; task() of it now says it was "
        "forgotten, and its id is never given again"
    ]
    assert texts(timeline, 8, "prune") == ["prune forgets nothing: no final task ended before t=6"]
    timeline.run_model()
    assert [c.divergence for c in timeline.checks] == [None] * len(timeline.checks)  # the model forgot the same
    assert [r.id for r in timeline.board(7, side="model").done] == [1]
