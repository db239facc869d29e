"""The run behind the `running-work` walkthrough: a real ``Runner`` on a ``ManualClock``.

``walkthrough_run()`` drives two pool slots through every scene the
walkthrough narrates (a task that submits a task, a retry that does not block
the queue, a heartbeat and a cooperative cancel, a zombie) and returns the
protocol calls the runner made, as scenario steps. ``test_runner_walkthrough``
checks the committed walkthrough's steps equal these, so the walkthrough
cannot drift from what the runner does.

Every function waits on a ``Gate`` the script releases, so the calls come in
one order. Two things about a pool are not fixed by that and are made
canonical here: which of two free slots takes the first lease (the slots are
renamed so it is ``w1``), and the dispatches a free slot makes that find
nothing (dropped: how often an idle slot asks is the pool's business, and
each such call only moves the scheduler's clock to a time the next call
reaches anyway). Every later dispatch happens with exactly one slot free.

Run as a script (``python tests/implementations/runner_walkthrough.py``) it
prints the steps as TOML, the skeleton the narration was written onto.
"""

from __future__ import annotations

from fencepost.impl.runner import Cancelled, ManualClock, Runner
from fencepost.spec.formats.scenario import Scenario, Step, StepResult, expect_from

try:
    from runner_helpers import BOUND, Gate
except ImportError:  # run as a script from the repository's root
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from runner_helpers import BOUND, Gate

#: Lease length of the walkthrough's runner, in ticks: short enough that the zombie scene stays readable.
LEASE = 10


def walkthrough_run(bound: float = BOUND) -> list[Step]:
    """Run the walkthrough's workload on a real two-slot runner; its canonical protocol calls."""
    clock = ManualClock()
    gate = Gate(bound)
    runner = Runner(workers=2, clock=clock, lease=LEASE)

    def child(ctx):
        gate.enter("child")
        return "child done"

    def parent(ctx):
        ctx.submit(child)  # a task that submits a task: the free slot picks it up
        gate.enter("parent")
        return "parent done"

    def flaky(ctx):
        gate.enter(f"flaky {ctx.attempt}")
        if ctx.attempt == 1:
            raise ConnectionError("the first attempt fails")
        return "flaky done"

    def other(ctx):
        return "other done"

    def long_job(ctx):
        gate.enter("long 1")
        ctx.heartbeat()  # still alive: renew the lease from now
        gate.enter("long 2")
        if not ctx.heartbeat():  # refused: a cancel was requested
            ctx.raise_if_cancelled()
        return "long done"

    def stalls(ctx):
        if ctx.attempt == 1:
            gate.enter("stalls")
            return "late"
        return "fresh"

    runner.start()
    try:
        # Scene 1 (t=0): a task that submits a task.
        runner.submit(parent)
        assert {gate.next_start(), gate.next_start()} == {"parent", "child"}
        gate.release("parent")
        runner.wait(1, bound)
        # Scene 2 (t=1): a retry after a raise does not block the queue.
        clock.advance_to(1)
        runner.submit(flaky, retry_delay=1)
        assert gate.next_start() == "flaky 1"
        runner.submit(other)
        gate.release("flaky 1")
        runner.wait(4, bound)
        clock.advance_to(2)
        assert gate.next_start() == "flaky 2"
        gate.release("flaky 2")
        runner.wait(3, bound)
        # Scene 3 (t=3..4): a heartbeat, then a cooperative cancel.
        clock.advance_to(3)
        runner.submit(long_job)
        assert gate.next_start() == "long 1"
        clock.advance_to(4)
        gate.release("long 1")
        assert gate.next_start() == "long 2"
        assert runner.cancel(5).accepted
        gate.release("long 2")
        runner.wait(5, bound)
        # Scene 4 (t=5..15): a zombie.
        clock.advance_to(5)
        runner.submit(stalls)
        assert gate.next_start() == "stalls"
        gate.release("child")
        runner.wait(2, bound)
        clock.advance_to(5 + LEASE)  # the stalled attempt's lease runs out
        runner.wait(6, bound)
        gate.release("stalls")
        runner.wait_idle(bound)
    finally:
        for key in ("parent", "child", "flaky 1", "flaky 2", "long 1", "long 2", "stalls"):
            gate.release(key)
        runner.stop(bound)
    return canonical(runner._trace)


def canonical(trace: list) -> list[Step]:
    """The trace as steps: slots renamed so the first lease is ``w1``, dispatches that found nothing dropped."""
    from fencepost.impl.runner import _ARGUMENT_NAMES

    steps = []
    for op, values, value, error in trace:
        if op == "dispatch" and value is None and error is None:
            continue
        args = dict(zip(_ARGUMENT_NAMES[op], values))
        steps.append(Step(op, args, expect=expect_from(Step(op, args), StepResult(value, error))))
    first = next(s.args["worker"] for s in steps if s.op == "dispatch")
    names = {first: "w1", ("w2" if first == "w1" else "w1"): "w2"}

    def rename(values):
        return {k: names.get(v, v) if k == "worker" else v for k, v in values.items()}

    renamed = [Step(s.op, rename(s.args), expect=rename(s.expect) if isinstance(s.expect, dict) else s.expect)
               for s in steps]
    workers = sorted((s for s in renamed if s.op == "add_worker"), key=lambda s: s.args["worker"])
    return workers + [s for s in renamed if s.op != "add_worker"]


if __name__ == "__main__":
    from fencepost.spec.formats.scenario import dumps_scenario

    print(dumps_scenario(Scenario("skeleton", tuple(walkthrough_run()), description="# skeleton")))
