"""Broken runners, each one override of ``Runner``, that the runner's tests must catch.

They live with the tests, not in ``impl/mutants/``: those are schedulers for
``fencepost check``, these are runners, and only ``test_runner_mutants.py``
runs them. Each names the seed's rule it breaks.
"""

from __future__ import annotations

from fencepost.impl.runner.core import Runner


class HoldsLockDuringWork(Runner):
    """Runs user work with the scheduler's lock held ("do not hold the scheduler lock while executing user work")."""

    def _run_attempt(self, attempt):
        return self._execute(attempt)


class CompletesWithFirstToken(Runner):
    """Reports every attempt with the token of the task's first lease ("completion must match the current assignment")."""

    def _next_attempt(self, slot):
        attempt = super()._next_attempt(slot)
        if attempt is not None:
            self.__dict__.setdefault("_first_tokens", {}).setdefault(attempt.task_id, attempt.token)
        return attempt

    def _finish(self, attempt, outcome):
        attempt.token = self._first_tokens[attempt.task_id]
        super()._finish(attempt, outcome)


class KeepsRejectedResult(Runner):
    """Keeps a rejected completion's value: a zombie's late result overwrites the current attempt's."""

    def _finish(self, attempt, outcome):
        kind, value = outcome
        super()._finish(attempt, outcome)
        if kind == "ok":
            self._tasks[attempt.task_id].result = value


MUTANTS = (HoldsLockDuringWork, CompletesWithFirstToken, KeepsRejectedResult)
