"""``isolation="process"``: each attempt in a child process, which a forced cancel or an expired lease terminates.

Each test spawns a few interpreters (a fraction of a second each); every
wait is bounded in real seconds, and every trace is replayed against the model.
"""

from __future__ import annotations

import multiprocessing
from functools import partial

import pytest
import runner_work
from runner_helpers import BOUND

from fencepost.impl.runner.core import ManualClock

#: The start method the runner uses, so the events below reach its children.
SPAWN = multiprocessing.get_context("spawn")


def test_an_attempt_in_a_child_process_has_its_whole_context(runners) -> None:
    clock = ManualClock(7)
    runner = runners(workers=1, clock=clock, isolation="process")
    task_id = runner.submit(runner_work.uses_its_context)
    failing = runner.submit(runner_work.raises, max_attempts=1)
    assert runner.wait(task_id, BOUND).status == "succeeded"
    answer = runner.result(task_id)
    assert answer == {"task_id": task_id, "attempt": 1, "now": 7, "heartbeat": True, "cancel_requested": False,
                      "child": answer["child"]}
    assert runner.wait(answer["child"], BOUND).priority == 2
    assert runner.result(answer["child"]) == "from the child"
    assert runner.wait(failing, BOUND).status == "failed"
    assert isinstance(runner.error(failing), KeyError)


def test_a_forced_cancel_terminates_the_running_attempt(runners) -> None:
    runner = runners(workers=1, isolation="process")
    started = SPAWN.Event()
    task_id = runner.submit(partial(runner_work.signal_then_block, started))
    assert started.wait(BOUND), "the child never started"
    assert runner.cancel(task_id, force=True).accepted
    view = runner.wait(task_id, BOUND)
    assert (view.status, view.attempts) == ("cancelled", 1)


def test_an_expired_attempt_is_terminated_and_the_task_runs_again(runners) -> None:
    clock = ManualClock()
    runner = runners(workers=1, clock=clock, lease=10, isolation="process")
    started = SPAWN.Event()
    task_id = runner.submit(partial(runner_work.block_on_first_attempt, started))
    assert started.wait(BOUND), "the child never started"
    clock.advance_to(10)  # the only slot is freed by terminating the stalled child
    view = runner.wait(task_id, BOUND)
    assert (view.status, view.attempts) == ("succeeded", 2)
    assert runner.result(task_id) == "attempt 2"


def test_a_function_that_cannot_pickle_is_refused_at_submit(runners) -> None:
    runner = runners(workers=1, isolation="process")
    with pytest.raises(ValueError, match="fn must pickle with isolation='process'"):
        runner.submit(lambda ctx: None)
