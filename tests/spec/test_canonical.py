"""Canonical counterexamples (issue 30): as short as explore's, no batch the bug does not need, and a why: line.

For each of the nine shipped mutants issue 30 names, ``fencepost check``'s
counterexample (derandomized, the CI budget) must have no more steps than the
shortest ``fencepost explore --impl`` finds in the default scope (shown by
exploring the default scope one step shallower and finding nothing), contain
no batch call, and end with a ``why:`` line naming the rule the mutant breaks.
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from functools import cache

import pytest

from fencepost.cli import main
from fencepost.spec import model
from fencepost.spec.reasons import explain
from fencepost.spec.checkers.canonical import batch_calls, canonical, scope_around, singles
from fencepost.spec.checkers.check import CheckResult, check_factory
from fencepost.spec.checkers.explore import DEFAULT_SCOPE, Scope, calls, explore
from fencepost.spec.checkers.lockstep import run_calls
from fencepost.spec.checkers.why import WHY_PREFIX, why
from fencepost.spec.formats.trace import TraceStep
from fencepost.spec.protocol import BATCH_OPERATIONS

#: The nine mutants issue 30 names, each with the rule its counterexample must be explained by.
RULES = {
    "closed_interval": "expiry-pending",
    "token_reuse": "fresh-token",
    "attempt_off_by_one": "expiry-budget-spent",
    "retry_at_failure_time": "fail-retry",
    "cancelled_dispatched": "cancelled-never-starts",
    "no_release_on_complete": "worker-room<-complete-succeeds",
    "worker_identity": "stale-token",
    "dispatch_consumes_token": "fresh-token",
    "boolean_assigned": "complete-succeeds",
}


def _factory(name: str):
    return importlib.import_module(f"fencepost.impl.mutants.{name}").Scheduler


@cache
def _checked(name: str) -> CheckResult:
    return check_factory(_factory(name))  # derandomized: the same counterexample every run


@pytest.mark.parametrize("name", sorted(RULES))
def test_check_is_as_short_as_explore_with_no_batch_and_says_why(name):
    result = _checked(name)
    assert not result.passed
    assert batch_calls(result.trace) == 0, result.trace
    shallower = explore(replace(DEFAULT_SCOPE, depth=len(result.trace) - 1), _factory(name), jobs=1)
    # explore's boundary probes (the ends of every value's range) may add a counterexample of their own past the
    # depth: what must not exist is one shorter than check's.
    found = shallower.violation
    assert found is None or len(found.trace) >= len(result.trace), f"explore finds {len(found.trace)} steps, check {len(result.trace)}"
    found = why(result.trace)
    assert found is not None and found.rule == RULES[name], found


def test_the_cli_ends_with_one_why_line_and_no_violation_line(capsys):
    assert main(["check", "impl.mutants.closed_interval:Scheduler"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith(WHY_PREFIX) and sum(line.startswith(WHY_PREFIX) for line in out) == 1
    assert not any(line.startswith("violation:") for line in out)
    assert out[-1] == ("why: a lease is live on [started_at, expires_at): at t=3 task 1's lease [0, 3) (token 1, w1) has "
                       "ended, so task 1 is pending again and w1's slot is free (docs/contract.md: rule 3)")
    header = next(line for line in out if line.startswith("counterexample ("))
    assert header == "counterexample (4 steps, shrunk):"
    assert sum("<-- diverges" in line for line in out) == 1 and "  4. " in next(line for line in out if "<-- diverges" in line)


def test_explore_ends_with_the_same_why_line(capsys):
    assert main(["explore", "--impl", "impl.mutants.token_reuse:Scheduler", "--jobs", "1"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("why: tokens are handed out 1, 2, 3... across the scheduler, one per lease: 1 issued so far")
    assert not any(line.startswith("violation:") for line in out)


def _step(op, args, expected=None, got=None):
    return TraceStep(op, args, expected, got)


def test_batches_become_the_single_calls_they_stand_for():
    trace = [
        _step("submit_many", {"tasks": [{}, {"priority": 1}]}),
        _step("dispatch_many", {"worker": "w1", "now": 0, "duration": 1, "limit": 4},
              ("batch", (("lease", 1, "w1", 1, 0, 1), ("lease", 2, "w1", 2, 0, 1))), ("batch", ())),
        _step("complete_many", {"reports": [[1, 1], [2, 2]], "now": 0}),
        _step("fail_many", {"reports": [], "now": 3}),
    ]
    assert singles(trace) == [
        ("submit", {}), ("submit", {"priority": 1}),
        ("dispatch", {"worker": "w1", "now": 0, "duration": 1}), ("dispatch", {"worker": "w1", "now": 0, "duration": 1}),
        ("complete", {"task_id": 1, "token": 1, "now": 0}), ("complete", {"task_id": 2, "token": 2, "now": 0}),
        ("advance", {"now": 3}),  # an empty report batch is the expiry it makes
    ]


def test_the_search_scope_is_the_counterexamples_own_values():
    trace = [_step("add_worker", {"worker": "w1", "capacity": 2}), _step("submit", {"priority": 3, "max_attempts": 2}),
             _step("dispatch", {"worker": "w1", "now": 0, "duration": 5})]
    assert scope_around(trace) == Scope(workers=1, capacity=2, tasks=1, horizon=2, priorities=(0, 3),
                                        max_attempts=(None, 2), durations=(1, 5))


def test_a_batch_counterexample_becomes_single_calls_of_the_same_rule():
    factory = _factory("closed_interval")
    batched = run_calls(factory, [("add_worker", {"worker": "w1", "capacity": 1}), ("submit", {}),
                                  ("dispatch_many", {"worker": "w1", "now": 0, "duration": 3, "limit": 4}),
                                  ("complete_many", {"reports": [], "now": 3})])
    assert batched is not None and why(batched).rule == "expiry-pending"
    without_search = canonical(factory, batched, search=False)
    assert [s.op for s in without_search] == ["add_worker", "submit", "dispatch", "advance"]
    assert why(without_search).rule == "expiry-pending"


def test_a_batch_the_bug_needs_stays():
    factory = _factory("batch_not_atomic")
    result = check_factory(factory)
    assert not result.passed and any(step.op in BATCH_OPERATIONS for step in result.trace)


def test_the_search_stops_at_its_budget():
    result = explore(DEFAULT_SCOPE, _factory("closed_interval"), jobs=1, budget=500)
    assert result.over_budget and result.violation is None
    assert 500 <= result.generated < 500 + 2000  # one state's calls past the budget at most


# ---------------------------------------------------------------- the model's reasons


def _reachable(scope: Scope, depth: int) -> list[model.State]:
    seen, frontier = [model.initial()], [model.initial()]
    for _ in range(depth):
        following = []
        for state in frontier:
            for op, args in calls(state, scope):
                try:
                    after, _ = model.apply(state, op, args)
                except ValueError:
                    continue
                if after not in seen:
                    seen.append(after)
                    following.append(after)
        frontier = following
    return seen


def test_explain_tells_the_story_apply_acts_out():
    """On every call of a small scope: the expiries named are the leases apply ends, a dispatch's eligible task
    is the one it leases, a rejection's rule is its reason, and a refused call has its ValueError."""
    scope = Scope(tasks=2, horizon=2, priorities=(0,), max_attempts=(None, 1), durations=(1,))
    checked = 0
    for state in _reachable(scope, 4):
        for op, args in calls(state, scope):
            reasons = explain(state, op, dict(args))
            try:
                after, result = model.apply(state, op, dict(args))
            except ValueError as exc:
                assert [b.rule for b in reasons] == ["invalid-argument"] and str(exc) in reasons[0].text
                continue
            checked += 1
            now = args.get("now")
            if now is not None:
                ended = {t.id for t in state.tasks if t.status.value == "running"
                         and not model.lease_live(state.variants, t.expires_at, now)}
                assert {b.task_id for b in reasons if b.rule.startswith("expiry-")} == ended
            if op == "dispatch":
                leased = [b.task_id for b in reasons if b.rule == "worker-room"]
                assert leased == ([] if result is None else [result.task_id])
            if op in ("complete", "fail", "renew") and not result.accepted:
                assert reasons[-1].rule == result.reason.replace("_", "-") or reasons[-1].rule == "cancel-requested"
            assert all(b.section for b in reasons)
    assert checked > 1000


def test_an_invalid_batch_is_kept_whole():
    step = _step("submit_many", {"tasks": [{}, {"colour": 1}]}, ("error", "tasks[1]: submit takes no argument 'colour'"))
    assert singles([step]) == [("submit_many", {"tasks": [{}, {"colour": 1}]})]
