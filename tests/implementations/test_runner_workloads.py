"""Random workloads through the runner, each trace replayed against the spec's model.

A workload is a few tasks, each with a plan per attempt (return, raise, or
block until released), and a list of actions from the test thread: move the
clock, release a blocked attempt (in random order), cancel a task. Threads
interleave as they will; what must hold for every interleaving:

* the trace replays against the model (every call got the model's answer);
* the runner's view of each task is the scheduler's;
* a succeeded task's result is the value of the attempt whose completion the
  scheduler accepted (never a zombie's);
* never more than ``workers`` user functions at once.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest
from runner_mutants import CompletesWithFirstToken
from runner_workloads import actions, run_workload, tasks

from fencepost.impl.runner.core import Runner

#: Examples per run: each starts a pool of threads, so fewer than the spec's machine runs.
EXAMPLES = 40


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    workers=st.integers(1, 3),
    lease=st.integers(1, 5),
    task_specs=st.lists(tasks, min_size=1, max_size=5),
    script=st.lists(actions, max_size=12),
    given_scheduler=st.booleans(),
)
def test_random_workloads_replay_against_the_model(workers, lease, task_specs, script, given_scheduler,
                                                   tmp_path_factory) -> None:
    run_workload(Runner, workers, lease, task_specs, script, Path(tmp_path_factory.mktemp("trace")), given_scheduler)


def test_a_workload_catches_a_runner_that_reports_with_the_first_token(tmp_path: Path) -> None:
    """A retry reported with the first attempt's token is refused every time, so the task never ends."""
    raises_once = (["raise", "return"], 0, None, None, 1)
    with pytest.raises(AssertionError, match="tasks not final"):
        run_workload(CompletesWithFirstToken, 1, 2, [raises_once], [], tmp_path)
