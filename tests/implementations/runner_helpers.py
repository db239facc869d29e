"""Shared by the runner's tests: bounded waits, run-time verification, and the seed's cases.

Run-time verification: every runner a test makes through the ``runners``
fixture (``conftest.py``) is stopped at the end of the test, its trace saved as a scenario and replayed
against the spec's model with the spec's own ``replay`` (so every call the
runner made, in the scheduler's order, got the answer the model gives).

The cases that must catch a broken runner (``zombie_case``,
``lock_not_held_case``, ``worked_example_case``) are functions of the runner
class and a bound, so ``test_runner_mutants.py`` runs them on the mutants
with a short bound (a mutant is expected to run into it) and the main tests
run them on ``Runner`` with a generous one.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path

from fencepost.impl import Scheduler
from fencepost.impl.runner.core import ManualClock, Runner
from fencepost.spec import model
from fencepost.spec.checkers.replay import replay
from fencepost.spec.formats.scenario import load_scenario
from fencepost.spec.protocol import OPERATIONS, OPTIONAL_OPERATIONS, OutcomeUnknown

#: Real seconds any wait in these tests may take before the test fails instead of hanging.
#: Generous: the machine is shared; a correct runner answers in milliseconds.
BOUND = 30.0

#: Real seconds a case waits when it is run on a mutant that is expected to run into it.
SHORT_BOUND = 1.0


class ModelAsScheduler:
    """The spec's model behind the protocol's method names (the optional ones too), for ``replay``."""

    def __init__(self) -> None:
        self.state = model.initial()

    @property
    def now(self) -> int:
        return self.state.now

    def task(self, task_id: int) -> object:
        return model.task(self.state, task_id)

    def __getattr__(self, op: str) -> Callable[..., object]:
        if op not in OPERATIONS and op not in OPTIONAL_OPERATIONS:
            raise AttributeError(op)

        def call(**args: object) -> object:
            self.state, result = model.apply(self.state, op, args)
            return result

        return call


def replay_mismatches(path: Path) -> list[str]:
    """Replay a saved trace against the model: the mismatching steps, one line each."""
    replayed = replay(load_scenario(path), ModelAsScheduler())
    return [f"step {r.number}: {r.step.op} {r.step.args}: {r.mismatch}" for r in replayed if r.mismatch]


def verify_trace(runner: Runner, path: Path) -> None:
    """Save the runner's trace to ``path`` and assert the model agrees with every call in it."""
    runner.save_trace(path)
    assert replay_mismatches(path) == []


class Gate:
    """A function's starts reported on a queue, and per-start release events (all waits bounded)."""

    def __init__(self, bound: float = BOUND) -> None:
        self.bound = bound
        self.started: queue.Queue = queue.Queue()
        self._releases: dict[object, threading.Event] = {}
        self._lock = threading.Lock()

    def release_event(self, key: object) -> threading.Event:
        with self._lock:
            return self._releases.setdefault(key, threading.Event())

    def enter(self, key: object) -> None:
        """Report ``key`` started, then block until ``release(key)``."""
        self.started.put(key)
        if not self.release_event(key).wait(self.bound):
            raise TimeoutError(f"{key!r} was never released")

    def release(self, key: object) -> None:
        self.release_event(key).set()

    def next_start(self) -> object:
        try:
            return self.started.get(timeout=self.bound)
        except queue.Empty:
            raise AssertionError(f"nothing started within {self.bound} s") from None


def call_within(bound: float, fn: Callable[[], object]) -> object:
    """``fn()`` in another thread; its value, or AssertionError if it did not return within ``bound`` s."""
    box: list = []
    thread = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    thread.start()
    thread.join(bound)
    if thread.is_alive():
        raise AssertionError(f"the call did not return within {bound} s: the runner's lock is held")
    return box[0]


# ---------------------------------------------------------------- cases that catch broken runners


def zombie_case(make: Callable[..., Runner], bound: float) -> Runner:
    """The first seed's zombie, with real threads: a lease expires mid-work, the task runs again,
    the late completion is rejected, and the task's result comes from the second attempt."""
    clock = ManualClock()
    gate = Gate(bound)
    runner = make(workers=2, clock=clock, lease=10)

    def work(ctx):
        if ctx.attempt == 1:
            gate.enter("first")
            return "late"
        return "fresh"

    task_id = runner.submit(work)
    assert gate.next_start() == "first"
    first = runner.task(task_id)
    assert (first.status, first.token, first.expires_at) == ("running", 1, 10)
    clock.advance_to(10)  # the first attempt stalls past its lease
    view = runner.wait(task_id, bound)
    assert (view.status, view.attempts) == ("succeeded", 2)
    assert runner.result(task_id) == "fresh"
    gate.release("first")  # the zombie returns at last
    runner.wait_idle(bound)
    assert runner.result(task_id) == "fresh"
    assert runner.task(task_id).status == "succeeded"
    late = [s for s in runner._trace if s[0] == "complete" and s[1][1] == 1]
    assert len(late) == 1 and late[0][2].accepted is False, late
    return runner


def lock_not_held_case(make: Callable[..., Runner], bound: float) -> Runner:
    """While user work is blocked, another thread submits, cancels and reads tasks; user work does too."""
    gate = Gate(max(bound, SHORT_BOUND))
    runner = make(workers=1)
    seen_inside: list = []

    def blocked(ctx):
        seen_inside.append(runner.task(ctx.task_id).status)  # the runner's own call, from user work
        seen_inside.append(ctx.submit(lambda c: "from inside"))
        gate.enter("blocked")

    blocker = runner.submit(blocked)
    assert gate.next_start() == "blocked"
    try:
        other = call_within(bound, lambda: runner.submit(lambda c: "never runs"))
        assert call_within(bound, lambda: runner.cancel(other)).accepted
        assert call_within(bound, lambda: runner.task(blocker)).status == "running"
        assert call_within(bound, lambda: runner.task(other)).status == "cancelled"
    finally:
        gate.release("blocked")
    runner.wait_idle(BOUND)
    assert seen_inside[0] == "running"
    assert runner.result(seen_inside[1]) == "from inside"
    return runner


def worked_example_case(make: Callable[..., Runner], bound: float) -> Runner:
    """The second seed's worked example, with A failing once: B starts at once, A retries later."""
    clock = ManualClock(10)
    gate = Gate(bound)
    runner = make(workers=1, clock=clock, lease=100)
    starts: list[tuple[str, int, int]] = []
    fail_a = threading.Event()

    def named(name: str):
        def work(ctx):
            starts.append((name, ctx.now, ctx.attempt))
            if name == "A" and ctx.attempt == 1:
                gate.enter("A")
                if fail_a.is_set():
                    raise RuntimeError("A fails once")
            return name

        return work

    a = runner.submit(named("A"), due_at=12)
    b = runner.submit(named("B"), due_at=12)
    c = runner.submit(named("C"), due_at=20)
    runner.wait_idle(bound)
    assert starts == []  # at 10 nothing is due
    clock.advance_to(12)
    assert gate.next_start() == "A"
    assert runner.task(b).status == "pending"  # one worker, held by A: B waits
    fail_a.set()
    gate.release("A")
    runner.wait(b, bound)  # B starts at once when A releases the worker...
    assert starts == [("A", 12, 1), ("B", 12, 1)]
    retry = runner.task(a)
    assert (retry.status, retry.due_at) == ("retry_wait", 13)  # ...and A's retry is due later
    runner.wait_idle(bound)
    clock.advance_to(13)
    runner.wait(a, bound)
    clock.advance_to(20)
    runner.wait(c, bound)
    assert starts == [("A", 12, 1), ("B", 12, 1), ("A", 13, 2), ("C", 20, 1)]
    assert [runner.result(t) for t in (a, b, c)] == ["A", "B", "C"]
    assert isinstance(runner.error(a), RuntimeError)
    return runner


class NoPayloads:
    """A payload store that stores nothing (for option checks that never reach it)."""

    def put(self, key, function, args, kwargs):
        return True

    def forget(self, key):
        pass

    def for_task(self, task_id):
        return None

    def stamp(self):
        return (0, 0)


class Losing:
    """A scheduler whose first ``op`` call loses its answer, after taking effect or not (``applied``).

    A dispatch that leases nothing is not lost: the one lost is the first that leases a task.
    """

    def __init__(self, op: str, applied: bool) -> None:
        self.inner = Scheduler()
        self.op, self.applied, self.lost = op, applied, 0

    def __getattr__(self, name: str) -> object:
        target = getattr(self.inner, name)
        if name != self.op:
            return target

        def call(*args: object, **kwargs: object) -> object:
            if self.lost:
                return target(*args, **kwargs)
            if self.applied:
                value = target(*args, **kwargs)
                if value is None and name == "dispatch":
                    return value  # nothing leased: lose a dispatch that leases something
            self.lost += 1
            raise OutcomeUnknown(name, kwargs, "the test dropped the answer")

        return call

    @property
    def now(self) -> int:
        return self.inner.now
