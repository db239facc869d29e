"""Fixtures of the scheduler and runner tests, found by pytest by name (never imported).

``runners``: started runners on a ``ManualClock``, each stopped, checked
(``Runner.check_invariants``) and its trace replayed against the model at
teardown.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from runner_helpers import BOUND, verify_trace

from fencepost.impl.runner.core import ManualClock, Runner


@pytest.fixture
def runners(tmp_path: Path):
    """``make(**options)``: a started runner on a ``ManualClock`` (``clock=`` to share one); checked at teardown.

    ``start=False``: not started yet (work submitted before ``start()`` waits for it)."""
    made: list[Runner] = []

    def make(runner_class: type = Runner, start: bool = True, **options: object) -> Runner:
        options.setdefault("clock", ManualClock())
        options.setdefault("trace", True)  # every runner made here has its trace replayed at teardown
        runner = runner_class(**options)
        if start:
            runner.start()
        made.append(runner)
        return runner

    yield make
    for number, runner in enumerate(made):
        if not runner._started:
            runner.start()  # so that stop() stops it
        runner.stop(BOUND)
        runner.check_invariants()  # the runner's bookkeeping and each helper's own
        verify_trace(runner, tmp_path / f"trace-{number}.toml")
