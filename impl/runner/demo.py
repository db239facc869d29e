"""A small realistic workload run through the runner on real threads: what ``fencepost demo`` shows.

``run_demo(workers, tasks, seed, out)`` runs it and writes the runner's trace;
the command (``fencepost.commands.demo``) checks the arguments and opens the trace
in the TUI. The demo drives a ``ManualClock`` itself: it submits N tasks with seeded
priorities and due times over a few leases, of which one stalls past its
lease (the zombie: the task runs again elsewhere and the stalled
function's late completion is rejected), one is cancelled while it runs and
stops cooperatively, one submits a child task, one works across several
ticks and heartbeats half-way, some fail once and retry, and one fails every
time until its budget is spent. Then it moves the clock on,
a step at a time, until every task is final.

The runner's trace is written to ``out`` as a scenario that ``fencepost
replay`` checks and ``fencepost tui`` shows.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

from fencepost.impl.runner.core import ManualClock, Runner, TaskContext

#: The demo's lease, in ticks: short, so the stalled task's expiry comes early in the run.
LEASE = 10
#: Due times are spread over this many ticks, so work keeps arriving while the clock moves.
DUE_SPREAD = 3 * LEASE
#: When the long job heartbeats (renewing its lease to LONG_RENEW_AT + LEASE), and when it finishes.
LONG_RENEW_AT = 6
LONG_DONE_AT = 13
#: How far the demo moves the clock at a time once the special tasks are done.
STEP = 3
#: Clock steps after which an unfinished demo is a bug (retries end well within a few leases).
MAX_STEPS = 1_000
#: The statuses a task never leaves.
FINAL = ("succeeded", "failed", "cancelled")
#: Real seconds any wait of the demo may take before it gives up (the run takes milliseconds).
BOUND = 30.0
#: The fewest workers and tasks the demo's story needs (a stalled, a cancelled and a long task beside the rest).
MIN_WORKERS = 3
MIN_TASKS = 5
#: The most tasks a demo submits.
MAX_TASKS = 10_000


class _Scripted:
    """The demo's user functions: each task's role, and the events the demo drives them by."""

    def __init__(self) -> None:
        self.stall_started = threading.Event()
        self.stall_release = threading.Event()
        self.cancel_started = threading.Event()
        self.cancel_release = threading.Event()
        self.long_started = threading.Event()
        self.long_renew = threading.Event()  # the demo moved the clock: time to heartbeat
        self.long_renewed = threading.Event()
        self.long_finish = threading.Event()

    def long_job(self, ctx: TaskContext) -> str:
        """Works across several ticks and heartbeats half-way, so its lease outlives the first one's end."""
        self.long_started.set()
        for event in (self.long_renew, self.long_finish):
            if not event.wait(BOUND):
                raise TimeoutError("the long job was never moved on")
            if event is self.long_renew:
                ctx.heartbeat()
                self.long_renewed.set()
        return f"a long job, done at t={ctx.now}"

    def stalls(self, ctx: TaskContext) -> str:
        """The first attempt stalls past its lease; the next one returns at once."""
        if ctx.attempt == 1:
            self.stall_started.set()
            if not self.stall_release.wait(BOUND):
                raise TimeoutError("the stalled task was never released")
            return "a late result, which the scheduler rejects"
        return f"done on attempt {ctx.attempt}"

    def stops_when_cancelled(self, ctx: TaskContext) -> str:
        self.cancel_started.set()
        if not self.cancel_release.wait(BOUND):
            raise TimeoutError("the cancelled task was never released")
        ctx.raise_if_cancelled()
        return "not cancelled after all"

    @staticmethod
    def submits_a_child(ctx: TaskContext) -> int:
        return ctx.submit(lambda child: f"the child of task {ctx.task_id}", priority=1)

    @staticmethod
    def works(ctx: TaskContext) -> str:
        return f"task {ctx.task_id} done at t={ctx.now}"

    @staticmethod
    def fails_once(ctx: TaskContext) -> str:
        if ctx.attempt == 1:
            raise RuntimeError(f"task {ctx.task_id}: a transient error")
        return f"task {ctx.task_id} done on attempt {ctx.attempt}"

    @staticmethod
    def always_fails(ctx: TaskContext) -> None:
        raise RuntimeError(f"task {ctx.task_id}: a permanent error (attempt {ctx.attempt})")


def run_demo(workers: int, tasks: int, seed: int, out: Path) -> Runner:
    """Run the demo's workload to the end and write its trace to ``out``; return the stopped runner."""
    rng = random.Random(seed)
    clock = ManualClock()
    script = _Scripted()
    runner = Runner(workers=workers, clock=clock, lease=LEASE, trace=True)  # the demo saves its trace
    with runner:
        stalled = runner.submit(script.stalls, priority=9)
        cancelled = runner.submit(script.stops_when_cancelled, priority=8)
        runner.submit(script.submits_a_child, priority=7)
        runner.submit(script.always_fails, priority=rng.randrange(4), due_at=rng.randrange(DUE_SPREAD), max_attempts=2)
        long_job = runner.submit(script.long_job, priority=6)
        for _ in range(tasks - MIN_TASKS):
            fn = script.fails_once if rng.random() < 0.25 else script.works
            runner.submit(fn, priority=rng.randrange(4), due_at=rng.randrange(DUE_SPREAD), max_attempts=3)
        for event in (script.stall_started, script.cancel_started, script.long_started):
            if not event.wait(BOUND):
                raise TimeoutError("the demo's special tasks never started")
        runner.cancel(cancelled)
        script.cancel_release.set()
        runner.wait(cancelled, BOUND)
        clock.advance_to(LONG_RENEW_AT)
        script.long_renew.set()  # the long job heartbeats: its lease now runs past LEASE
        if not script.long_renewed.wait(BOUND):
            raise TimeoutError("the long job never heartbeat")
        clock.advance_to(LEASE)  # the stalled attempt's lease expires; the task runs again elsewhere
        runner.wait(stalled, BOUND)
        script.stall_release.set()  # the zombie returns, too late
        clock.advance_to(LONG_DONE_AT)
        script.long_finish.set()
        runner.wait(long_job, BOUND)
        runner.wait_idle(BOUND)
        for _ in range(MAX_STEPS):
            if all(runner.task(t).status in FINAL for t in range(1, runner.submitted() + 1)):
                break
            clock.advance(STEP)
            runner.wait_idle(BOUND)
        else:
            raise RuntimeError(f"the demo's tasks were not all final after {MAX_STEPS} clock steps")
    runner.save_trace(
        out,
        title=_title(workers, tasks, runner.submitted() - tasks, seed),
        description=(
            "# A runner's real run\n\n"
            f"`fencepost demo --workers {workers} --tasks {tasks} --seed {seed}`: real threads, a manual clock "
            f"the demo moves, leases of {LEASE} ticks. Task {stalled} stalls past its lease (its late completion "
            f"is rejected), task {cancelled} is cancelled while it runs, task 3 submits a child, task {long_job} "
            f"works from 0 to {LONG_DONE_AT} and heartbeats at {LONG_RENEW_AT}, some tasks fail once and retry, "
            "task 4 fails until its budget is spent.\n\n"
            "Every step is a protocol call the runner made, in the order the scheduler saw it."
        ),
    )
    return runner


def _title(workers: int, tasks: int, children: int, seed: int) -> str:
    """The trace's title: ``--tasks``'s count as the user typed it, and the tasks a task submitted
    beside it, so 16 typed is never 17 shown without a word."""
    child = "" if not children else f" + {children} submitted by a task"
    return f"Demo: {workers} workers, {tasks} tasks{child}, seed {seed}"
