"""``fencepost explore``: exhaustive breadth-first search of a scope, its statistics, and what it finds.

The default-scope run is the guarantee itself (every declared outcome and
boundary reached, nothing violated); the mutants show it has teeth, each with
a counterexample no longer than random search's.
"""

from __future__ import annotations

import dataclasses
import re
from functools import cache
from pathlib import Path

import pytest

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.checkers import explore as explore_module
from fencepost.spec.checkers import levels
from fencepost.spec import invariants, model
from fencepost.spec.checkers.check import check_factory
from fencepost.cli import load_factory, main
from fencepost.spec.checkers.explore import DEFAULT_SCOPE, Result, Scope, calls, default_jobs, explore, state_key
from fencepost.spec.checkers.lockstep import run_calls
from fencepost.impl.mutants import BATCH_MUTANTS, DESCRIPTIONS, MUTANTS
from fencepost.spec.protocol import FINAL_STATUSES, OPERATIONS, Status

#: A scope small enough for a fraction of a second that still reaches every
#: outcome (and every boundary but the two that need more tasks).
SMALL = ["--tasks", "1", "--horizon", "1", "--jobs", "1"]

#: A scope with batches that finds every batch mutant in a fraction of a second: a worker with room
#: for two, three tasks (one more than its room), time fixed at 0.
BATCH_SCOPE = Scope(capacity=2, tasks=3, horizon=0, priorities=(0,), max_attempts=(None,), durations=(1,), batches=True)

#: Mutants whose pitfall cannot occur in the default scope, and the scope that
#: finds each. Ids sorted as text need ten tasks; with one priority and time
#: fixed at 0 the search stays small (13 steps: ten submits, a worker of
#: capacity 2, two dispatches). Allowing priorities 0,1 finds the 12-step one
#: random search finds, but takes about 90 s of CPU, too long for CI.
LARGER = {
    "string_ids": Scope(tasks=10, capacity=2, horizon=0, priorities=(0,), max_attempts=(None,), durations=(1,)),
    # the prune mutants break only prune, which explore calls with --prune
    **{name: Scope(prune=True) for name in ("prune_unfinished", "prune_at_before", "prune_recounts", "prune_keeps_answering")},
    # the batch mutants break only the batches, which explore calls with --batches; two of them need a
    # worker with room for two (one batch handing a task out twice, a stale report after an accepted one)
    **{name: BATCH_SCOPE for name in BATCH_MUTANTS},
    # the ends of the int range are met by explore's boundary probes, not by its search (which draws
    # small ints): the smallest scope finds it at once, where the default scope's search took 133 s first
    "narrow_ints": Scope(tasks=1, capacity=1, horizon=0, priorities=(0,), max_attempts=(None,), durations=(1,)),
}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["explore", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@cache
def default_run() -> Result:
    return explore(DEFAULT_SCOPE, jobs=default_jobs())


# ---------------------------------------------------------------- the guarantee at the default scope


def test_default_scope_reaches_every_outcome_and_boundary_and_violates_nothing() -> None:
    result = default_run()
    assert result.violation is None, result.violation
    assert result.missing == [], result.missing
    assert result.queued == 0, "the default scope is explored completely, not cut off by a depth bound"
    assert DEFAULT_SCOPE.unreachable() == {"ids_past_9": "needs --tasks 10"}
    for name in ("completion_at_expiry", "expiry_to_failed", "expiry_to_cancelled", "capacity_exactly_full"):
        assert result.coverage.boundaries[name] > 0, name
    for op, outcome in [("complete", "stale_token"), ("renew", "cancel_requested"), ("fail", "accepted:failed")]:
        assert result.coverage.outcomes[(op, outcome)] > 0, (op, outcome)


def test_default_scope_statistics_add_up() -> None:
    result = default_run()
    assert sum(result.taken.values()) == result.generated
    assert sum(result.found.values()) == result.distinct - 1  # every state but the initial one was found by a call
    assert set(result.taken) == set(OPERATIONS)
    assert result.generated > result.distinct > 1000 and result.depth >= 5


# ---------------------------------------------------------------- the command line


@pytest.mark.parametrize("impl", ["impl:Scheduler", "impl.simple:SimpleScheduler"])
def test_small_scope_passes_on_both_implementations(capsys: pytest.CaptureFixture[str], impl: str) -> None:
    status, out, _ = run_cli(capsys, "--impl", impl, *SMALL)
    assert status == 0, out
    assert f"{impl} agreed with the model on every transition" in out


def test_prints_tlc_statistics(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, *SMALL)
    assert status == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("Exploring the model: 1 worker(s) of capacity 1, up to 1 task(s), times 0..1")
    counts = re.fullmatch(r"(\d+) states generated, (\d+) distinct states found, 0 states left on queue\.", lines[1])
    assert counts, lines[1]
    generated, distinct = int(counts[1]), int(counts[2])
    assert re.fullmatch(r"The depth of the complete state graph search is \d+\.", lines[2]), lines[2]
    assert re.fullmatch(r"[\d.]+ s: \d+ states/s generated, \d+ distinct states/s\.", lines[3]), lines[3]
    assert lines[4].split() == ["operation", "transitions", "distinct"]
    table = {}
    for line in lines[5 : 5 + len(OPERATIONS)]:
        op, taken, found = line.split()
        table[op] = (int(taken), int(found))
    assert list(table) == list(OPERATIONS)
    assert sum(t for t, _ in table.values()) == generated
    assert sum(f for _, f in table.values()) == distinct - 1
    assert "Every declared outcome and boundary reached, except ids_past_9 (needs --tasks 10)" in out
    assert lines[-1] == f"No invariant violated ({len(invariants.INVARIANTS)} invariants)."


def test_exit_1_prints_the_shortest_counterexample_and_writes_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "cx.toml"
    mutant = MUTANTS["token_reuse"]
    status, out, _ = run_cli(capsys, "--impl", mutant, "--trace-out", str(target), "--jobs", "1")
    assert status == 1, out
    assert "Violation, a shortest counterexample (4 steps, breadth-first):" in out
    numbers = [int(n) for n in re.findall(r"^\s*(\d+)\. [a-z_]+\(", out, re.MULTILINE)]
    assert numbers == [1, 2, 3, 4]
    assert out.count("<-- diverges") == 1
    assert target.exists()
    assert main(["replay", str(target), "--impl", mutant]) == 1
    assert main(["replay", str(target), "--impl", "impl:Scheduler"]) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--impl", "no_such_module:Scheduler"], "cannot import module 'no_such_module'"),
        (["--impl", "spec.protocol:Outcome"], "failed when called with no arguments"),
        (["--trace-out", "/no/such/folder/cx.toml"], "the folder it would go in does not exist"),
    ],
)
def test_exit_2_on_a_bad_argument_in_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    status, out, err = run_cli(capsys, *argv)
    assert status == 2
    assert out == ""
    assert len(err.splitlines()) == 1 and message in err, err


@pytest.mark.parametrize(
    "argv", [["--workers", "0"], ["--tasks", "-1"], ["--horizon", "x"], ["--max-attempts", "0"], ["--durations", "1,0"], ["--bogus"]]
)
def test_exit_2_on_a_malformed_option(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["explore", *argv])
    assert info.value.code == 2
    assert "fencepost explore: error:" in capsys.readouterr().err


def test_a_coverage_gap_fails_at_the_default_scope_but_not_below_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # With time fixed at 0 no lease can expire, so lease_expired is never a reason.
    tiny = ["--tasks", "1", "--horizon", "0", "--jobs", "1"]
    status, out, _ = run_cli(capsys, *tiny)
    assert status == 0, out
    assert "complete -> lease_expired" in out and "not an error in a scope smaller than the default" in out
    monkeypatch.setattr(explore_module, "DEFAULT_SCOPE", Scope(tasks=1, horizon=0))
    status, out, _ = run_cli(capsys, *tiny)
    assert status == 1, out
    assert "Never reached:" in out and "complete -> lease_expired" in out
    assert "this exploration is vacuous there" in out


# ---------------------------------------------------------------- what is explored, and how it is judged


def test_every_invalid_kind_is_tried_at_every_valid_time() -> None:
    state = model.initial()
    for op, args in [("add_worker", {"worker": "w1", "capacity": 1}), ("submit", {}),
                     ("dispatch", {"worker": "w1", "now": 1, "duration": 1})]:
        state, _ = model.apply(state, op, args)
    offered = list(calls(state, Scope(horizon=3)))
    assert ("advance", {"now": 0}) in offered  # time going backwards
    assert ("dispatch", {"worker": "w1", "now": 2, "duration": 0}) in offered  # zero duration, when the lease has expired
    assert ("dispatch", {"worker": "w2", "now": 3, "duration": 1}) in offered  # an unknown worker
    assert ("cancel", {"task_id": 2, "now": 2}) in offered  # an unknown task id
    assert ("complete", {"task_id": 1, "token": 2, "now": 1}) in offered  # a token never issued
    assert ("complete", {"task_id": 1, "token": 1, "now": 2}) in offered  # the current token, exactly at expiry
    assert not any(args.get("now", 0) > 3 for _, args in offered if isinstance(args.get("now"), int))


def test_state_key_drops_only_what_the_future_cannot_observe() -> None:
    state = model.initial()
    for op, args in [("add_worker", {"worker": "w1", "capacity": 1}), ("submit", {}), ("submit", {"priority": 1}),
                     ("dispatch", {"worker": "w1", "now": 0, "duration": 2})]:
        state, _ = model.apply(state, op, args)
    running, pending = state.tasks[1], state.tasks[0]
    assert running.status is Status.RUNNING

    def with_task(task: model.Task) -> model.State:
        return dataclasses.replace(state, tasks=tuple(task if t.id == task.id else t for t in state.tasks))

    assert state_key(with_task(dataclasses.replace(running, started_at=None))) == state_key(state)
    assert state_key(with_task(dataclasses.replace(running, expires_at=3))) != state_key(state)
    assert state_key(with_task(dataclasses.replace(pending, priority=5))) != state_key(state)
    done, _ = model.apply(state, "complete", {"task_id": 2, "token": 1, "now": 0})
    finished = done.tasks[1]
    assert finished.status is Status.SUCCEEDED
    same_final = dataclasses.replace(done, tasks=(done.tasks[0], dataclasses.replace(finished, priority=7, attempts=2)))
    assert state_key(same_final) == state_key(done)
    expired_token = dataclasses.replace(done, tasks=(done.tasks[0], dataclasses.replace(finished, expired_token=1)))
    assert state_key(expired_token) != state_key(done)


def test_the_state_key_loses_no_outcome_boundary_or_observable_state(monkeypatch: pytest.MonkeyPatch) -> None:
    # Small enough to explore with the whole state as the key, large enough to reach every outcome.
    scope = Scope(tasks=2, horizon=1, priorities=(0,), max_attempts=(None, 1), durations=(1,))
    observed: list[set] = []

    def observable(state: model.State) -> tuple:
        return (state.now, tuple(model.view(t) for t in state.tasks))

    results = []
    for key in (explore_module.state_key, lambda state: state):  # the canonical key, then the whole state

        def recording(state: model.State, key=key) -> object:
            observed[-1].add(observable(state))
            return key(state)

        observed.append(set())
        monkeypatch.setattr(explore_module, "state_key", recording)
        results.append(explore(scope))
    reduced, full = results
    assert full.distinct > reduced.distinct and reduced.missing == []
    assert set(full.coverage.outcomes) == set(reduced.coverage.outcomes)
    assert set(full.coverage.boundaries) == set(reduced.coverage.boundaries)
    assert observed[0] <= observed[1]

    def up_to_final_details(seen: tuple) -> tuple:
        """What the key promises to keep: a final task's view only by its status."""
        now, views = seen
        return now, tuple((v.id, v.status) if v.status in FINAL_STATUSES else v for v in views)

    assert {up_to_final_details(o) for o in observed[0]} == {up_to_final_details(o) for o in observed[1]}


def test_an_invariant_the_model_breaks_is_found_with_a_shortest_counterexample(monkeypatch: pytest.MonkeyPatch) -> None:
    def nothing_ever_succeeds(obs: invariants.Observation, history: invariants.History) -> None:
        for view in obs.tasks:
            if view.status == Status.SUCCEEDED:
                raise invariants.InvariantViolation("nothing_ever_succeeds", f"task {view.id} succeeded")

    monkeypatch.setattr(invariants, "INVARIANTS", (*invariants.INVARIANTS, nothing_ever_succeeds))
    result = explore(Scope(tasks=1, horizon=1))
    assert result.violation is not None
    assert [step.op for step in result.violation.trace] == ["add_worker", "submit", "dispatch", "complete"]
    assert "nothing_ever_succeeds" in result.violation.problem
    assert result.violation.trace[-1].problem


@pytest.mark.skipif(default_jobs() < 2, reason="this platform cannot fork")
def test_forked_jobs_give_the_same_result_as_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(levels, "PARALLEL_MIN", 8)  # split every level but the first two
    scope = Scope(tasks=1, horizon=1)
    one, two = explore(scope, jobs=1), explore(scope, jobs=2)
    for name in ("generated", "distinct", "depth", "queued", "taken", "found"):
        assert getattr(one, name) == getattr(two, name), name
    assert one.coverage.outcomes == two.coverage.outcomes and one.coverage.boundaries == two.coverage.boundaries
    # With a violation, the earliest share's counterexample wins, as in one process.
    mutant = load_factory(MUTANTS["no_release_on_complete"])
    one, two = explore(Scope(horizon=1), mutant, jobs=1), explore(Scope(horizon=1), mutant, jobs=2)
    assert [(s.op, s.args) for s in one.violation.trace] == [(s.op, s.args) for s in two.violation.trace]


def _level_of(scope: Scope, at_least: int) -> tuple[list, dict]:
    """The first breadth-first level of ``scope`` with ``at_least`` states, and the states known before it."""
    root = model.initial()
    parents: dict = {state_key(root): None}
    frontier = [(root, state_key(root))]
    while len(frontier) < at_least:
        following = []
        for after_key, parent, after in explore_module._expand_all(frontier, scope, parents, None).new:
            parents[after_key] = parent
            following.append((after, after_key))
        assert following, f"no level of {scope} has {at_least} states"
        frontier = following
    return frontier, parents


def _share(frontier: list, scope: Scope, parents: dict, bounds: list[int], indices: list[int]) -> list:
    """What one forked worker taking parts ``indices`` of ``frontier`` cut at ``bounds``, in that order,
    would send back."""
    import multiprocessing

    def expand(part, superseded, sent):
        return explore_module._expand_all(part, scope, parents, None, superseded=superseded, sent=sent)

    levels._SHARED = (frontier, expand, bounds, multiprocessing.Value("i", len(bounds) - 1), {"last": -1, "keys": set()})
    try:
        return [levels._expand_part(index) for index in indices]
    finally:
        levels._SHARED = None


@pytest.mark.parametrize(("states", "jobs"), [(1, 2), (7, 2), (300, 2), (4317, 2), (9, 4), (10**5, 8)])
def test_a_level_is_cut_into_parts_that_shrink_to_the_least_part(states: int, jobs: int) -> None:
    bounds = levels.bounds(states, jobs)
    sizes = [end - start for start, end in zip(bounds, bounds[1:])]
    assert bounds[0] == 0 and bounds[-1] == states
    assert all(size > 0 for size in sizes) and sizes == sorted(sizes, reverse=True)
    assert all(size >= levels.LEAST_PART for size in sizes[:-1])
    assert sizes[0] == max(-(-states // (levels.SHARE_OF_REST * jobs)), min(states, levels.LEAST_PART))


def test_a_worker_sends_back_a_new_state_once_and_the_merge_is_unchanged() -> None:
    scope = Scope(tasks=1, horizon=1)
    frontier, parents = _level_of(scope, 40)
    whole = explore_module._expand_all(frontier, scope, parents, None)
    bounds = levels.bounds(len(frontier), 2)
    shares = _share(frontier, scope, parents, bounds, list(range(len(bounds) - 1)))
    sent = [after_key for share in shares for after_key, _, _ in share.new]
    assert len(sent) == len(set(sent)), "a worker sent a state back twice"
    # unshared, the parts do send copies back: the record is what saves them
    alone = [explore_module._expand_all(frontier[start:end], scope, parents, None) for start, end in zip(bounds, bounds[1:])]
    assert sum(len(share.new) for share in alone) > len(sent)
    # merged as explore merges (first discovery wins), the parts give the next level one process gives
    merged: dict = {}
    for share in shares:
        for after_key, parent, _ in share.new:
            merged.setdefault(after_key, parent)
    assert list(merged.items()) == [(after_key, parent) for after_key, parent, _ in whole.new]
    assert sum(share.generated for share in shares) == whole.generated


def test_a_worker_given_an_earlier_part_than_its_last_sends_that_part_whole() -> None:
    scope = Scope(tasks=1, horizon=1)
    frontier, parents = _level_of(scope, 40)
    bounds = levels.bounds(len(frontier), 1)
    later, earlier = _share(frontier, scope, parents, bounds, [3, 1])
    alone = explore_module._expand_all(frontier[bounds[1]:bounds[2]], scope, parents, None)
    assert [entry[:2] for entry in earlier.new] == [entry[:2] for entry in alone.new]


# ---------------------------------------------------------------- strength: every pitfall mutant


@pytest.mark.parametrize("name", list(MUTANTS))
def test_explore_finds_every_mutant_with_a_real_shortest_counterexample(name: str) -> None:
    factory = load_factory(MUTANTS[name])
    result = explore(LARGER.get(name, DEFAULT_SCOPE), factory, jobs=default_jobs())
    assert result.violation is not None, f"explore missed the {name} mutant: {DESCRIPTIONS[name]}"
    trace = result.violation.trace
    assert trace[-1].problem and "crashed" not in trace[-1].problem
    calls_ = [(step.op, step.args) for step in trace]
    assert run_calls(SimpleScheduler, calls_) is None, "the counterexample fails on the correct implementation too"
    replayed = run_calls(factory, calls_)
    assert replayed is not None and len(replayed) == len(trace)
    if name not in LARGER:
        random = check_factory(factory)
        assert not random.passed
        assert len(trace) <= len(random.trace), f"breadth-first found {len(trace)} steps, random search {len(random.trace)}"
