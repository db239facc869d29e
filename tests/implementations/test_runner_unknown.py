"""The runner with calls whose answer is lost (``OutcomeUnknown``), on an in-memory scheduler, exactly.

``Losing`` wraps a scheduler: the first call of a chosen op either takes
effect and then loses its answer, or loses it without taking effect, as a
scheduler over a network does; the history ``Recorder`` in front of it writes
that call as ``info``. The runner must resolve a lost ``complete`` by reading
the task (accepted exactly once, never twice), and leave a lost ``dispatch``
to lease expiry (the task runs once the lease has expired).
"""

from __future__ import annotations

import pytest
from runner_helpers import Losing

from fencepost.impl.runner.core import ManualClock, Runner
from fencepost.spec.formats.history import HistoryLog
from fencepost.spec.protocol import Status

#: Real seconds any wait may take: a safety net, generous for a loaded machine (a correct runner answers in milliseconds).
BOUND = 30.0
LEASE = 5


def _runner(scheduler: object, log: HistoryLog, clock: ManualClock) -> Runner:
    return Runner(workers=1, clock=clock, lease=LEASE, scheduler=log.recorder(scheduler, "runner"))


@pytest.mark.parametrize("applied", [True, False], ids=["took-effect", "did-not"])
def test_a_lost_complete_is_resolved_by_reading_the_task(applied: bool) -> None:
    clock, log, losing = ManualClock(), HistoryLog(), Losing("complete", applied)
    with _runner(losing, log, clock) as runner:
        task = runner.submit(lambda ctx: "done")
        assert runner.wait(task, BOUND).status == Status.SUCCEEDED
        assert runner.result(task) == "done"  # accepted: by the lost call, or by the one made after reading
    completes = [e for e in log.events if e.op == "complete" or e.type == "info"]
    kinds = [e.type for e in log.events if e.process == "runner"]
    assert losing.lost == 1 and "info" in kinds
    invoked = [e for e in log.events if e.type == "invoke" and e.op == "complete"]
    assert len(invoked) == (1 if applied else 2), completes  # made again only when it had not taken effect
    assert losing.inner.task(task).attempts == 1


def test_a_lost_dispatch_is_left_to_lease_expiry() -> None:
    clock, log, losing = ManualClock(), HistoryLog(), Losing("dispatch", applied=True)
    ran: list[int] = []
    with _runner(losing, log, clock) as runner:
        task = runner.submit(lambda ctx: ran.append(ctx.task_id))
        runner.wait_idle(BOUND)
        assert ran == [] and losing.inner.task(task).status is Status.RUNNING  # leased to nobody
        clock.advance(LEASE)  # the lost lease expires; the task is eligible again
        assert runner.wait(task, BOUND).status == Status.SUCCEEDED
    assert len(ran) == 1 and losing.inner.task(task).attempts == 2  # the lost lease was the first attempt
    assert [e.type for e in log.events].count("info") == 1
