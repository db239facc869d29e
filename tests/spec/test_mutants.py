"""Strength is shown, not assumed: ``fencepost check`` rejects every pitfall mutant.

Each mutant in ``spec.mutants`` is a correct scheduler with one seeded bug.
The check must find it with the default (CI) budget (or, where
``BUDGETS`` says why, fewer machine runs before the boundary probes), shrink it to a short
counterexample whose last step names the problem, and that counterexample
must be a real one: its calls conform on ``SimpleScheduler`` and fail on the
mutant when replayed from scratch.
"""

from __future__ import annotations

import importlib
import re
import pkgutil
from functools import cache

import pytest

import fencepost.impl.mutants
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.checkers.check import CheckResult, check_factory
from fencepost.cli import load_factory, main
from fencepost.spec.checkers.lockstep import run_calls
from fencepost.impl.mutants import CRASH_DESCRIPTIONS, CRASH_MUTANTS, DESCRIPTIONS, MUTANTS

#: Longest counterexample accepted. Derandomized, the mutants shrink to 1-8
#: steps; over ten seeds each, to at most 9 (the minimizer deletes calls and
#: can stop at a local minimum), so this leaves room for the generator to move.
MAX_STEPS = 12
#: Mutants whose shortest counterexample is longer, and why.
LONGER = {
    # Ten submits before an id passes 9, a worker, a dispatch, and one step
    # that takes task 1 out of the race (it would win under either order).
    # 12 at best, 12-14 measured.
    "string_ids": 14,
}
#: Mutants checked with fewer machine runs than the default, and why. The
#: check's boundary probes run after its machine runs, whatever their number.
BUDGETS = {
    # Only the boundary probes meet it (the machine's values are small): the default
    # 200 runs find nothing and cost 40 s to 190 s on the loaded 2-core CI machine,
    # the slowest test of the suite; one run, then the probes, takes 1 s.
    "narrow_ints": 1,
}


@cache
def checked(name: str) -> CheckResult:
    return check_factory(load_factory(MUTANTS[name]), max_examples=BUDGETS.get(name))


def mutant_params() -> list:
    return list(MUTANTS)


@pytest.mark.parametrize("name", mutant_params())
def test_check_rejects_mutant_with_a_short_real_counterexample(name: str) -> None:
    result = checked(name)
    assert not result.passed, f"fencepost check accepted the {name} mutant: {DESCRIPTIONS[name]}"
    trace = result.trace
    assert 0 < len(trace) <= LONGER.get(name, MAX_STEPS), f"{len(trace)}-step counterexample for {name}"
    problem = trace[-1].problem
    assert problem, "the last step of the counterexample is not marked with its problem"
    # Caught by a divergence or an invariant, not because the mutant itself broke.
    assert "crashed" not in problem and "not a ValueError" not in problem, problem
    calls = [(step.op, step.args) for step in trace]
    assert run_calls(SimpleScheduler, calls) is None, "the counterexample fails on the correct implementation too"
    replayed = run_calls(load_factory(MUTANTS[name]), calls)
    assert replayed is not None, "the counterexample does not fail when replayed on the mutant"
    assert len(replayed) == len(trace) and replayed[-1].problem


def test_registry_lists_every_mutant_module_with_its_seed() -> None:
    modules = {m.name for m in pkgutil.iter_modules(fencepost.impl.mutants.__path__) if not m.name.startswith("_")}
    assert modules == set(MUTANTS) | set(CRASH_MUTANTS)
    assert set(MUTANTS) == set(DESCRIPTIONS) and set(CRASH_MUTANTS) == set(CRASH_DESCRIPTIONS)
    for name, target in {**MUTANTS, **CRASH_MUTANTS}.items():
        module = importlib.import_module(f"fencepost.impl.mutants.{name}")
        assert target == f"{module.__name__}:Scheduler"
        assert isinstance(module.Scheduler, type)
        assert "Pitfall:" in module.__doc__ and "Seed 00" in module.__doc__, f"{name}'s docstring names no pitfall or seed"


def test_cli_check_prints_numbered_steps_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["check", MUTANTS["token_reuse"]])
    out = capsys.readouterr().out
    assert status == 1
    assert "does NOT conform" in out
    numbers = [int(n) for n in re.findall(r"^\s*(\d+)\. [a-z_]+\(", out, re.MULTILINE)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 2, out
    assert "<-- diverges" in out
    assert "token 2" in out and "token 1" in out  # the expected fresh token and the reused one
