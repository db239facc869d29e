"""Random runner workloads: the strategies and the driver shared by ``test_runner_workloads.py``
and ``test_runner_batches.py`` (see the first for what every workload must show)."""

from __future__ import annotations

import threading
from pathlib import Path

from hypothesis import strategies as st
from runner_helpers import BOUND, replay_mismatches

from fencepost.impl import Scheduler
from fencepost.impl.runner.core import ManualClock


#: Rounds of "let everything run, then move the clock on" at the end before a workload counts as stuck.
SETTLE_ROUNDS = 60


plans = st.lists(st.sampled_from(["return", "raise", "block"]), min_size=1, max_size=3)


tasks = st.tuples(
    plans,
    st.integers(0, 2),  # priority
    st.one_of(st.none(), st.integers(0, 6)),  # due_at
    st.one_of(st.none(), st.integers(1, 3)),  # max_attempts
    st.integers(1, 2),  # retry_delay
)


actions = st.one_of(
    st.tuples(st.just("advance"), st.integers(0, 6)),
    st.tuples(st.just("release"), st.integers(0, 20)),
    st.tuples(st.just("cancel"), st.integers(0, 20)),
)


class Workload:
    """The user functions' side: what each attempt does, what ran, and how many at once."""

    def __init__(self, task_plans: list[list[str]]) -> None:
        self.plans = task_plans
        self.lock = threading.Lock()
        self.blocked: list[threading.Event] = []  # in the order the attempts blocked
        self.release_all = threading.Event()
        self.token_values: dict[int, str] = {}  # token -> the value that attempt returns
        self.running = 0
        self.most_at_once = 0

    def work(self, index: int):
        def run(ctx) -> str:
            plan = self.plans[index]
            step = plan[ctx.attempt - 1] if ctx.attempt <= len(plan) else "return"
            value = f"task {ctx.task_id} attempt {ctx.attempt}"
            with self.lock:
                self.running += 1
                self.most_at_once = max(self.most_at_once, self.running)
                self.token_values[ctx.token] = value
                release = threading.Event()
                if step == "block":
                    if self.release_all.is_set():
                        release.set()
                    else:
                        self.blocked.append(release)
            try:
                if step == "block" and not release.wait(BOUND):
                    raise TimeoutError("a blocked attempt was never released")
                if step == "raise":
                    raise RuntimeError(value)
                return value
            finally:
                with self.lock:
                    self.running -= 1

        return run

    def release(self, pick: int) -> None:
        """Release one blocked attempt, chosen by ``pick``; none if nothing is blocked."""
        with self.lock:
            if self.blocked:
                self.blocked.pop(pick % len(self.blocked)).set()

    def finish(self) -> None:
        """Release every blocked attempt, and let later ones through at once."""
        with self.lock:
            self.release_all.set()
            for release in self.blocked:
                release.set()
            self.blocked.clear()


def run_workload(runner_class: type, workers: int, lease: int, task_specs: list, script: list, folder: Path,
                 given_scheduler: bool = False, options: dict | None = None, clock: ManualClock | None = None) -> None:
    """Run one workload through a runner of ``runner_class`` and assert everything the module docstring lists.

    ``given_scheduler``: the runner is given its scheduler (its submits are made under its lock)
    instead of making its own (its submits are queued: ``Runner._queue_submit``). ``options``:
    more of the runner's arguments (``batch``, say); ``clock``: a ``ManualClock`` of another kind."""
    clock = ManualClock() if clock is None else clock
    workload = Workload([spec[0] for spec in task_specs])
    given = {"scheduler": Scheduler()} if given_scheduler else {}
    runner = runner_class(workers=workers, clock=clock, lease=lease, trace=True, **given, **(options or {}))
    runner.start()
    try:
        ids = [
            runner.submit(workload.work(i), priority=p, due_at=due, max_attempts=most, retry_delay=delay)
            for i, (_, p, due, most, delay) in enumerate(task_specs)
        ]
        for action, value in script:
            if action == "advance":
                clock.advance(value)
            elif action == "release":
                workload.release(value)
            else:
                runner.cancel(ids[value % len(ids)])
        workload.finish()
        for _ in range(SETTLE_ROUNDS):
            runner.wait_idle(BOUND)
            if all(runner.task(t).status in ("succeeded", "failed", "cancelled") for t in ids):
                break
            clock.advance(lease + 8)  # past any lease and any backoff these plans reach
        else:
            raise AssertionError(f"tasks not final after {SETTLE_ROUNDS} rounds: {[runner.task(t) for t in ids]}")
    finally:
        workload.finish()
        runner.stop(BOUND)

    path = runner.save_trace(folder / "trace.toml")
    assert replay_mismatches(path) == []
    assert workload.most_at_once <= workers
    accepted = {values[0]: values[1] for op, values, value, _ in runner._trace if op == "complete" and value.accepted}
    for op, values, value, error in runner._trace:  # a batch's reports, each judged as its own call
        if op == "complete_many" and error is None:
            accepted.update((task_id, token) for (task_id, token), outcome in zip(values[0], value) if outcome.accepted)
    for task_id in ids:
        view = runner.task(task_id)
        assert runner._tasks[task_id].status == view.status.value
        if view.status == "succeeded":
            assert runner.result(task_id) == workload.token_values[accepted[task_id]]
