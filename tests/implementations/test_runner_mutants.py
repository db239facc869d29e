"""The runner's tests catch broken runners (``runner_mutants``), and pass on ``Runner``.

Each mutant runs through the cases that must catch it, with ``SHORT_BOUND``
real seconds for each wait: a mutant is expected to run into a wait or fail
an assertion. A mutant's pool is abandoned afterwards, not stopped: the one
that holds the lock during user work deadlocks its own thread for good
(user work calls the runner), and its threads are daemons.
"""

from __future__ import annotations

import pytest
from runner_helpers import SHORT_BOUND, lock_not_held_case, worked_example_case, zombie_case
from runner_mutants import MUTANTS, CompletesWithFirstToken, HoldsLockDuringWork, KeepsRejectedResult

from fencepost.impl.runner.core import ManualClock

#: The cases that catch each mutant (every mutant must be caught by each case listed).
CAUGHT_BY = {
    HoldsLockDuringWork: (lock_not_held_case, zombie_case),
    CompletesWithFirstToken: (zombie_case, worked_example_case),
    KeepsRejectedResult: (zombie_case,),
}


def test_every_mutant_has_a_case() -> None:
    assert set(CAUGHT_BY) == set(MUTANTS)


@pytest.mark.parametrize(
    ("mutant", "case"),
    [(mutant, case) for mutant, cases in CAUGHT_BY.items() for case in cases],
    ids=lambda x: x.__name__,
)
def test_the_case_catches_the_mutant(mutant: type, case) -> None:
    def make(**options: object):
        options.setdefault("clock", ManualClock())
        runner = mutant(**options)
        runner.start()
        return runner

    with pytest.raises((AssertionError, TimeoutError)):
        case(make, SHORT_BOUND)
