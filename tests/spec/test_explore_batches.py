"""``fencepost explore --batches``: the batch operations as single transitions of the exhaustive search.

Batches are made of calls the scope already has, so they add transitions
and no states; explored, they reach every declared batch outcome, catch
every batch mutant (which the same scope without batches does not), pass
on every shipped scheduler, compose with declared variants and ``--prune``,
and are skipped, saying so, against a scheduler that does not offer them.
"""

from __future__ import annotations

import dataclasses
import os
import re

import pytest

from fencepost.cli import load_factory, main
from fencepost.impl.durable import temporary
from fencepost.impl.simple import SimpleScheduler
from fencepost.story.shipped import SHIPPED
from fencepost.spec import model
from fencepost.spec.checkers import explore as explore_module
from fencepost.spec.checkers.coverage import BATCH_OUTCOMES
from fencepost.spec.checkers.explore import Scope, calls, explore
from fencepost.spec.checkers.invalid_calls import offered_calls
from fencepost.spec.checkers.lockstep import run_calls
from fencepost.impl.mutants import BATCH_MUTANTS, DESCRIPTIONS, MUTANTS
from fencepost.spec.protocol import BATCH_OPERATIONS, OPERATIONS, PRUNE_OPERATIONS
from fencepost.spec.variants import Variants

from restartable import KeylessScheduler
from variant_schedulers import WrongPriority

#: Small enough for a second or two per in-memory scheduler; large enough that leases expire,
#: budgets run out and a worker holds two leases: every declared outcome, the batches' included.
WHOLE = Scope(capacity=2, tasks=2, horizon=1, priorities=(0,), max_attempts=(None, 1), durations=(1,), batches=True)
#: Every batch mutant is found here (tests/spec/test_explore.py runs each to its counterexample).
MUTANT_SCOPE = Scope(capacity=2, tasks=3, horizon=0, priorities=(0,), max_attempts=(None,), durations=(1,), batches=True)
#: For the durable scheduler, each transition a fresh SQLite file replayed twice (restarts): four calls
#: deep, a submit_many, a dispatch_many of two and a complete_many of both are on one path.
DURABLE_SCOPE = Scope(capacity=2, tasks=2, horizon=0, priorities=(0,), max_attempts=(None,), durations=(1,), batches=True,
                      depth=4)
SMALL = ["--tasks", "1", "--horizon", "1", "--jobs", "1"]
#: tmpfs, where there is one: the durable scheduler's SQLite logic without the disk's fsync.
FAST_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def durable_on_tmpfs() -> object:
    """``impl.durable:temporary`` on tmpfs where there is one: the same SQLite code without the disk's fsync."""
    return temporary(directory=FAST_DIR)


def state_after(calls_: list[tuple[str, dict]]) -> model.State:
    state = model.initial()
    for op, args in calls_:
        state, _ = model.apply(state, op, args)
    return state


# ---------------------------------------------------------------- what is explored


def test_batches_add_transitions_and_no_states(monkeypatch: pytest.MonkeyPatch) -> None:
    keys: list[set] = []
    real_key = explore_module.state_key

    def recording(state: model.State, prune: bool = False) -> tuple:
        key = real_key(state, prune)
        keys[-1].add(key)
        return key

    monkeypatch.setattr(explore_module, "state_key", recording)
    results = []
    for batches in (False, True):
        keys.append(set())
        results.append(explore(dataclasses.replace(WHOLE, batches=batches)))
    singles, batched = results
    assert keys[0] == keys[1] and batched.distinct == singles.distinct
    assert batched.generated > singles.generated
    assert batched.depth <= singles.depth  # a batch may reach a state in fewer calls
    for op in BATCH_OPERATIONS:
        assert batched.taken[op] > 0 and singles.taken[op] == 0, op
    assert {op: batched.taken[op] for op in OPERATIONS} == {op: singles.taken[op] for op in OPERATIONS}


def test_every_declared_batch_outcome_is_reached() -> None:
    result = explore(WHOLE)
    assert result.violation is None and result.missing == [], result.missing
    for op, outcomes in BATCH_OUTCOMES.items():
        for outcome in outcomes:
            assert result.coverage.outcomes[(op, outcome)] > 0, (op, outcome)


def test_several_leases_in_one_batch_need_room_for_two_and_are_not_required_without_it() -> None:
    scope = Scope(tasks=2, horizon=0, priorities=(0,), max_attempts=(None,), durations=(1,), batches=True)
    assert scope.unreachable()["dispatch_many -> leases"] == "needs --capacity 2 and --tasks 2"
    result = explore(scope)
    assert result.coverage.outcomes[("dispatch_many", "leases")] == 0
    assert "dispatch_many -> leases" in result.coverage.missing() and "dispatch_many -> leases" not in result.missing
    assert "dispatch_many -> leases" not in WHOLE.unreachable()
    assert "dispatch_many -> leases" not in Scope().unreachable()  # no batches, nothing to say


def test_the_batch_calls_of_a_state_with_two_leases() -> None:
    state = state_after([
        ("add_worker", {"worker": "w1", "capacity": 2}), ("submit", {}), ("submit", {}),
        ("dispatch", {"worker": "w1", "now": 0, "duration": 2}), ("dispatch", {"worker": "w1", "now": 0, "duration": 2}),
    ])
    scope = Scope(capacity=2, tasks=2, horizon=2, batches=True)
    offered = list(calls(state, scope))
    batches = [(op, args) for op, args in offered if op in BATCH_OPERATIONS]
    assert offered[-len(batches):] == batches, "the batches come after every single call"
    assert not any(op in BATCH_OPERATIONS for op, _ in calls(state, dataclasses.replace(scope, batches=False)))
    for reports in ([[1, 1], [2, 2]],  # every live report
                    [[1, 1], [2, 2], [1, 1]],  # a duplicated one
                    [[1, 1], [2, 1]],  # a stale report of a task still running, after an accepted one
                    [],
                    [[1, 1], [3, 1]]):  # an unknown id after a valid report: invalid
        for op in ("complete_many", "fail_many"):
            assert (op, {"reports": reports, "now": 0}) in batches, (op, reports)
            assert (op, {"reports": reports, "now": 2}) in batches, (op, reports)  # late: both leases expired at 2
    limits = {args["now"]: set() for op, args in batches if op == "dispatch_many"}
    for op, args in batches:
        if op == "dispatch_many" and args["worker"] == "w1" and args["duration"] > 0:
            limits[args["now"]].add(args["limit"])
    assert limits[0] == limits[1] == {0, 1}  # full: 1 is already more than its room
    assert limits[2] == {0, 1, 2, 3}  # both leases over: room for two, and one more asked
    submits = [args["tasks"] for op, args in batches if op == "submit_many"]
    assert submits == [[], [{}, {"retry_delay": 0}]], "no room for two more tasks: only the empty and the invalid batch"


def test_two_task_submit_batches_while_two_more_tasks_fit() -> None:
    offered = [args["tasks"] for op, args in calls(model.initial(), Scope(tasks=2, horizon=1, batches=True)) if op == "submit_many"]
    assert [{}, {}] in offered and [{}, {"priority": 1}] in offered and [{"priority": 1}, {}] in offered
    assert [{"due_at": 1}, {}] in offered and [{}, {"max_attempts": 2}] in offered
    assert all(len(tasks) != 1 for tasks in offered)


# ---------------------------------------------------------------- what it catches, what passes


@pytest.mark.parametrize("name", BATCH_MUTANTS)
def test_every_batch_mutant_is_rejected_with_batches_and_missed_without(name: str) -> None:
    factory = load_factory(MUTANTS[name])
    result = explore(MUTANT_SCOPE, factory)
    assert result.violation is not None, f"explore missed the {name} mutant: {DESCRIPTIONS[name]}"
    calls_ = [(step.op, step.args) for step in result.violation.trace]
    assert calls_[-1][0] in BATCH_OPERATIONS
    assert run_calls(SimpleScheduler, calls_) is None, "the counterexample fails on the correct implementation too"
    assert explore(dataclasses.replace(MUTANT_SCOPE, batches=False), factory).violation is None


@pytest.mark.parametrize("shipped", [s.name for s in SHIPPED])
def test_every_shipped_scheduler_passes_with_batches(shipped: str) -> None:
    durable = shipped == "impl.durable:temporary"
    scope = DURABLE_SCOPE if durable else WHOLE
    result = explore(scope, durable_on_tmpfs if durable else load_factory(shipped))
    assert result.violation is None, result.violation
    assert result.skipped == () and result.scope.batches
    assert all(result.taken[op] > 0 for op in BATCH_OPERATIONS)
    if not durable:
        assert result.missing == [], result.missing


def test_batches_are_skipped_and_said_to_be_against_a_scheduler_without_them(capsys: pytest.CaptureFixture[str]) -> None:
    result = explore(dataclasses.replace(WHOLE, depth=3), KeylessScheduler)
    assert result.violation is None and result.skipped == ("batch",) and not result.scope.batches
    assert not any(result.taken[op] for op in BATCH_OPERATIONS)
    assert main(["explore", "--impl", "restartable:KeylessScheduler", "--batches", *SMALL]) == 0
    out = capsys.readouterr().out
    header, said = out.splitlines()[:2]
    assert not header.endswith(", batches")
    assert said.startswith("optional capabilities skipped (not offered): batch (restartable:KeylessScheduler does not have all of")
    assert "submit_many " not in out


def test_the_command_line_explores_batches_and_its_table_adds_up(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "--batches", *SMALL]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(", depth unbounded, batches")
    generated, distinct = map(int, re.match(r"(\d+) states generated, (\d+) distinct", lines[1]).groups())
    rows = [line.split() for line in lines[5 : 5 + len(OPERATIONS) + len(BATCH_OPERATIONS)]]
    assert [row[0] for row in rows] == [*OPERATIONS, *BATCH_OPERATIONS]
    assert sum(int(row[1]) for row in rows) == generated and sum(int(row[2]) for row in rows) == distinct - 1
    assert "dispatch_many -> leases (needs --capacity 2 and --tasks 2)" in lines[-2]


# ---------------------------------------------------------------- with variants and prune


def test_batches_follow_a_declared_variant() -> None:
    scope = Scope(capacity=2, tasks=2, horizon=0, priorities=(0, 1), max_attempts=(None,), durations=(1,), batches=True)
    allowed = explore(scope, WrongPriority, variants=Variants.parse(["order=any"]))
    assert allowed.violation is None, allowed.violation
    assert allowed.taken["dispatch_many"] > 0
    refused = explore(scope, WrongPriority)
    assert refused.violation is not None


def test_a_batch_of_a_part_the_queue_leaves_out_is_not_made() -> None:
    variants = Variants.parse(["without=fail", "order=fifo"])
    made = [("submit_many", {"tasks": [{}, {"priority": 1}]}), ("submit_many", {"tasks": [{}, {}]}),
            ("fail_many", {"reports": [[1, 1]], "now": 0}), ("complete_many", {"reports": [[1, 1]], "now": 0})]
    assert offered_calls(made, variants) == [made[1], made[3]]
    opaque = Variants.parse(["tokens=opaque"])
    assert offered_calls([("complete_many", {"reports": [[1, "1"]], "now": 0})], opaque) == []
    scope = Scope(tasks=2, horizon=1, priorities=(0, 1), max_attempts=(None,), durations=(1,), batches=True)
    result = explore(scope, variants=variants)
    assert result.violation is None
    assert result.taken["fail_many"] == result.taken["fail"] == 0 and result.taken["complete_many"] > 0
    assert result.coverage.outcomes[("submit_many", "ok")] > 0


def test_batches_and_prune_together_list_both_in_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "--batches", "--prune", "--impl", "impl:Scheduler", *SMALL]) == 0
    out = capsys.readouterr().out
    assert ", prune, batches" in out.splitlines()[0]
    rows = [line.split()[0] for line in out.splitlines()[5:] if line.split() and line.split()[0] in
            (*OPERATIONS, *PRUNE_OPERATIONS, *BATCH_OPERATIONS)]
    assert rows == [*OPERATIONS, *PRUNE_OPERATIONS, *BATCH_OPERATIONS]
    assert "impl:Scheduler agreed with the model on every transition" in out
