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

import tempfile
from pathlib import Path

from fencepost.impl.runner.core import ManualClock, Runner
from fencepost.spec.formats.scenario import Scenario, Step, load_scenario

try:
    from runner_helpers import BOUND, Gate
except ImportError:  # run as a script from the repository's root
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from runner_helpers import BOUND, Gate

#: Lease length of the walkthrough's runner, in ticks: long enough that each lease reads as a bar in the lanes view.
LEASE = 20

#: Ticks the walkthrough's runner waits before a failed task's first retry.
RETRY_DELAY = 6


def walkthrough_run(bound: float = BOUND) -> list[Step]:
    """Run the walkthrough's workload on a real two-slot runner; its canonical protocol calls.

    The clock moves while functions are held at their gates, so each piece of
    work takes a few ticks and the lanes view shows it as a bar.
    """
    clock = ManualClock()
    gate = Gate(bound)
    runner = Runner(workers=2, clock=clock, lease=LEASE, trace=True)

    def child(ctx):
        gate.enter("child 1")
        ctx.heartbeat()  # a long job: renew the lease from now before it runs out
        gate.enter("child 2")
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
        gate.enter("other")
        return "other done"

    def cancellable(ctx):
        gate.enter("cancellable")
        if not ctx.heartbeat():  # refused: a cancel was requested
            ctx.raise_if_cancelled()
        return "cancellable done"

    def stalls(ctx):
        gate.enter(f"stalls {ctx.attempt}")
        return "late" if ctx.attempt == 1 else "fresh"

    def starts(*keys: str) -> None:
        assert {gate.next_start() for _ in keys} == set(keys)

    runner.start()
    try:
        # A task that submits a task (tasks 1 and 2).
        parent_id = runner.submit(parent)
        starts("parent", "child 1")
        clock.advance_to(4)
        gate.release("parent")
        runner.wait(parent_id, bound)
        # A retry after a raise does not block the queue (tasks 3 and 4).
        clock.advance_to(6)
        flaky_id = runner.submit(flaky, retry_delay=RETRY_DELAY)
        starts("flaky 1")
        other_id = runner.submit(other)
        clock.advance_to(10)
        gate.release("flaky 1")
        starts("other")
        clock.advance_to(15)
        gate.release("other")
        runner.wait(other_id, bound)
        clock.advance_to(16)
        starts("flaky 2")
        clock.advance_to(18)
        gate.release("child 1")  # the child's heartbeat, at 18
        starts("child 2")
        clock.advance_to(20)
        gate.release("flaky 2")
        runner.wait(flaky_id, bound)
        # A cooperative cancel (task 5).
        clock.advance_to(22)
        cancellable_id = runner.submit(cancellable)
        starts("cancellable")
        clock.advance_to(24)
        assert runner.cancel(cancellable_id).accepted
        clock.advance_to(27)
        gate.release("cancellable")
        runner.wait(cancellable_id, bound)
        # A zombie (task 6).
        clock.advance_to(29)
        stalls_id = runner.submit(stalls)
        starts("stalls 1")
        clock.advance_to(33)
        gate.release("child 2")
        runner.wait(2, bound)
        clock.advance_to(29 + LEASE)  # the stalled attempt's lease runs out
        starts("stalls 2")
        clock.advance_to(53)
        gate.release("stalls 2")
        runner.wait(stalls_id, bound)
        clock.advance_to(57)
        gate.release("stalls 1")
        runner.wait_idle(bound)
    finally:
        for key in ("parent", "child 1", "child 2", "flaky 1", "flaky 2", "other", "cancellable", "stalls 1", "stalls 2"):
            gate.release(key)
        runner.stop(bound)
    with tempfile.TemporaryDirectory() as folder:
        trace = load_scenario(runner.save_trace(Path(folder) / "trace.toml"))
    return canonical(trace.steps)


def canonical(trace: tuple[Step, ...]) -> list[Step]:
    """The saved trace's steps: slots renamed so the first lease is ``w1``, dispatches that found nothing dropped."""
    steps = [s for s in trace if not (s.op == "dispatch" and s.expect == "none")]
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
