"""The conformance machine's own parts: the invalid calls it makes and how it compares results.

The check's verdicts on whole implementations are in ``test_check.py``; here
each test names a sloppiness an implementation could have and shows that the
machine sees it -- and that what it generates is what it claims to be.
"""

from __future__ import annotations

import inspect
from dataclasses import replace

import pytest

from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec import model
from fencepost.spec.checkers.check import check_factory
from fencepost.cli import load_factory
from fencepost.spec.checkers.invalid_calls import INT_ARGUMENTS, INVALID_CALLS, NON_INT_FORMS, invalid_calls
from fencepost.spec.checkers.lockstep import Lockstep, run_calls
from fencepost.spec.checkers.minimize import minimize
from fencepost.spec.checkers.results import normalize, view_tuple
from fencepost.impl.mutants import MUTANTS
from fencepost.spec.protocol import Outcome
from fencepost.spec.formats.scenario import Scenario, Step, dumps_scenario, loads_scenario


def states() -> list[model.State]:
    """A few states an invalid call can meet: no tasks yet, tasks waiting and running, time moved on."""
    empty = model.initial()
    state, _ = model.apply(empty, "add_worker", {"worker": "w1", "capacity": 2})
    busy = state
    for priority in range(3):
        busy, _ = model.apply(busy, "submit", {"priority": priority})
    busy, _ = model.apply(busy, "dispatch", {"worker": "w1", "now": 4, "duration": 5})
    return [state, busy, replace(busy, now=7)]


def every_invalid_call(state: model.State):
    for kind in INVALID_CALLS:
        for pick in range(8):
            for shape in range(4):
                for form in NON_INT_FORMS:
                    for call in invalid_calls(state, kind, pick, state.now + shape % 2, shape, form):
                        yield kind, call


@pytest.mark.parametrize("state", states(), ids=["no tasks", "one running", "later"])
def test_every_invalid_call_is_refused_by_the_model_for_its_fault(state: model.State) -> None:
    accepted, miscalled = [], []
    for kind, (op, args) in every_invalid_call(state):
        try:
            model.apply(state, op, dict(args))
        except ValueError as exc:
            if str(exc).startswith("bad arguments"):  # a misspelt or missing keyword, not a fault
                miscalled.append((kind, op, args, str(exc)))
            continue
        accepted.append((kind, op, args))
    assert accepted == [] and miscalled == []


def test_both_implementations_refuse_every_invalid_call_and_change_nothing() -> None:
    for factory in (SimpleScheduler, IndexedScheduler):
        lockstep = Lockstep(factory)
        for op, args in [("add_worker", {"worker": "w1", "capacity": 2}), ("submit", {"priority": 1}),
                         ("submit", {}), ("dispatch", {"worker": "w1", "now": 4, "duration": 5})]:
            lockstep.step(op, args)
        for kind, (op, args) in every_invalid_call(lockstep.state):
            record = lockstep.step(op, args)  # raises Divergence on any difference, views included
            assert record.expected[0] == "error" and record.got[0] == "error", (kind, op, args)


def test_invalid_calls_cover_every_operation_and_argument() -> None:
    seen: set[tuple[str, str]] = set()
    for state in states():
        for _, (op, args) in every_invalid_call(state):
            try:
                model.apply(state, op, {**args})
            except ValueError as exc:
                # which argument the model refused, by the name its message starts with
                named = [name for name in args if str(exc).startswith((name, f"{name} "))]
                seen.update((op, name) for name in named)
    wanted = {
        ("submit", "priority"), ("submit", "due_at"), ("submit", "max_attempts"), ("submit", "retry_delay"),
        ("add_worker", "worker"), ("add_worker", "capacity"),
        ("dispatch", "worker"), ("dispatch", "now"), ("dispatch", "duration"),
        ("renew", "task_id"), ("renew", "token"), ("renew", "now"), ("renew", "duration"),
        ("complete", "task_id"), ("complete", "token"), ("complete", "now"),
        ("fail", "task_id"), ("fail", "token"), ("fail", "now"),
        ("cancel", "task_id"), ("cancel", "now"), ("advance", "now"),
    }
    assert wanted - seen == set()


@pytest.mark.parametrize("fmt", ["toml", "json"])
def test_every_invalid_call_can_be_kept_in_a_scenario(fmt: str) -> None:
    steps = tuple(Step(op, args, expect="error") for state in states() for _, (op, args) in every_invalid_call(state))
    scenario = Scenario(title="every invalid call", steps=steps)
    # by repr: == would let 7.0 come back as 7, or True as 1
    assert repr(loads_scenario(dumps_scenario(scenario, fmt), fmt).steps) == repr(steps)


# ---------------------------------------------------------------- sloppy implementations are seen


def coerces(op: str, argument: str) -> type:
    """``SimpleScheduler``, except that ``op`` runs ``argument`` through ``int()`` when it is a float or digit string."""
    correct = getattr(SimpleScheduler, op)
    names = list(inspect.signature(correct).parameters)[1:]

    def lax(self, *args, **kwargs):
        kwargs.update(zip(names, args))
        value = kwargs.get(argument)
        if isinstance(value, float) or (isinstance(value, str) and value.lstrip("-").isdigit()):
            kwargs[argument] = int(float(value))
        return correct(self, **kwargs)

    return type(f"Coerces_{op}_{argument}", (SimpleScheduler,), {op: lax})


@pytest.mark.parametrize(("op", "argument"), INT_ARGUMENTS, ids=lambda x: x)
def test_the_check_sees_one_argument_of_one_operation_coerced(op: str, argument: str) -> None:
    result = check_factory(coerces(op, argument))
    assert not result.passed
    diverging = next(step for step in result.trace if step.problem)
    assert diverging.op == op and not isinstance(diverging.args[argument], int)


class IntAccepted(SimpleScheduler):
    """Answers with ``accepted`` as 1 or 0: equal to True and False, but not a bool."""

    def complete(self, task_id, token, now):
        outcome = super().complete(task_id, token, now)
        return Outcome(int(outcome.accepted), outcome.reason)


def test_the_check_sees_an_int_where_accepted_must_be_a_bool() -> None:
    result = check_factory(IntAccepted)
    assert not result.passed
    diverging = next(step for step in result.trace if step.problem)
    # The simple scheduler's complete_many folds over complete, so either call can show it first.
    assert diverging.op in ("complete", "complete_many") and "not a bool" in diverging.problem


def test_a_bool_or_float_never_passes_for_an_int_nor_an_int_for_a_bool() -> None:
    assert normalize(True) != normalize(1)
    assert normalize(Outcome(1, None)) != normalize(Outcome(True, None))
    assert normalize(Outcome(True, None)) == ("outcome", True, None)
    scheduler = SimpleScheduler()
    scheduler.submit()
    view = scheduler.task(1)
    for sloppy in ({"cancel_requested": 0}, {"attempts": False}, {"due_at": 0.0}):
        assert view_tuple(replace(view, **sloppy)) != view_tuple(view), sloppy


def test_plain_ints_and_bools_from_a_correct_scheduler_match_the_model() -> None:
    state, scheduler = model.initial(), SimpleScheduler()
    for op, args in [("add_worker", {"worker": "w1", "capacity": 1}), ("submit", {"priority": 2}), ("submit", {}),
                     ("dispatch", {"worker": "w1", "now": 3, "duration": 4}), ("cancel", {"task_id": 1, "now": 5})]:
        state, expected = model.apply(state, op, dict(args))
        assert normalize(getattr(scheduler, op)(**args)) == normalize(expected)
    for task in state.tasks:
        assert view_tuple(scheduler.task(task.id)) == view_tuple(model.view(task))


class LenientView(SimpleScheduler):
    """Answers ``task()`` for an id given as a str or a float."""

    def task(self, task_id):
        return super().task(int(task_id) if isinstance(task_id, str | float) else task_id)


def test_the_check_sees_task_accepting_an_id_that_is_not_an_int() -> None:
    result = check_factory(LenientView)
    assert not result.passed
    assert "task(1.0) returned" in next(step for step in result.trace if step.problem).problem


# ---------------------------------------------------------------- minimizing


def test_minimize_deletes_a_pair_of_calls_neither_of_which_can_go_alone() -> None:
    # A counterexample the derandomized check once printed for this mutant:
    # task 1 and its dispatch to w3 only shift ids and tokens, and deleting
    # either one alone moves the failure away.
    calls = [
        ("add_worker", {"worker": "w1", "capacity": 1}),
        ("submit", {}), ("submit", {}), ("submit", {}),
        ("add_worker", {"worker": "w2", "capacity": 1}),
        ("add_worker", {"worker": "w3", "capacity": 1}),
        ("dispatch", {"worker": "w3", "now": 0, "duration": 10}),
        ("dispatch", {"worker": "w1", "now": 7, "duration": 1}),
        ("dispatch", {"worker": "w2", "now": 7, "duration": 8}),
        ("fail", {"task_id": 3, "token": 3, "now": 14}),
    ]
    mutant = load_factory(MUTANTS["retry_at_failure_time"])
    trace = run_calls(mutant, calls)
    assert trace is not None and len(trace) == 10
    shrunk = minimize(mutant, trace)
    assert sorted(step.op for step in shrunk) == ["add_worker", "dispatch", "fail", "submit"]
    assert run_calls(mutant, [(s.op, s.args) for s in shrunk]) is not None
    assert run_calls(SimpleScheduler, [(s.op, s.args) for s in shrunk]) is None


def test_the_machine_checks_each_listed_invariant_under_its_own_name():
    from hypothesis.stateful import INVARIANT_MARKER

    from fencepost.spec import invariants
    from fencepost.spec.checkers.machine import conformance_machine

    machine = conformance_machine(SimpleScheduler)
    checked = sorted(name for name, member in inspect.getmembers(machine) if hasattr(member, INVARIANT_MARKER))
    listed = [check.__name__ for check in invariants.INVARIANTS]
    assert checked == sorted([*listed, "implementation_invariants_hold"])
    assert len(set(listed)) == len(listed) == 8


def test_a_generated_invariant_runs_its_own_check(monkeypatch):
    from fencepost.spec import invariants
    from fencepost.spec.checkers.machine import conformance_machine

    machine = conformance_machine(SimpleScheduler)
    seen = []
    monkeypatch.setattr(machine, "holds", lambda self, check: seen.append(check))
    instance = machine()
    for check in invariants.INVARIANTS:
        getattr(instance, check.__name__)()
    assert seen == list(invariants.INVARIANTS)
