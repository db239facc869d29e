"""Several processes, each an unchanged ``Runner`` over a ``PostgresScheduler``, in one database.

Each process runs ``Runner(workers=3, clock=ManualClock(), lease=LEASE,
scheduler=Recording(PostgresScheduler(dsn, schema=...)))`` on a schema of its
own in the shared database, with a workload of its own: functions that return,
functions that raise (retried with the spec's backoff until their budget is
spent), functions that stall past their lease (they move the clock on from
inside, so their lease expires while they run, the task runs again elsewhere,
and their late completion is refused), parents that submit a child, and
cancellations from the driver. ``Recording`` keeps every protocol call as a
history (the pinned event format; one history process per runner), which the
parent process then checks exactly as it checks the shared-schema stress run.

Why a schema per runner and not one shared by all: a runner keeps its tasks'
functions in its own memory, so it can run only the tasks it submitted, and
``dispatch`` on a shared schema hands out any client's task; and a runner
treats the scheduler's "time can't go backwards" as an error, which clients
racing on one clock will meet. ``pg_stress.py`` is the shared-schema run.

Every wait is bounded in real seconds (``BOUND``); nothing sleeps.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import time
import traceback

from fencepost.impl.postgres import PostgresScheduler
from fencepost.spec.protocol import OPERATIONS
from fencepost.spec.formats.values import to_json

#: Real seconds any wait may take before the run fails instead of hanging.
BOUND = 120.0
#: Lease length in ticks of each runner's ManualClock.
LEASE = 5
#: Rounds of "wait until idle, then move the clock on" before a workload counts as stuck.
SETTLE_ROUNDS = 200


class Recording:
    """A scheduler whose protocol calls are recorded as history events; everything else passes through.

    The runner makes one call at a time (under its lock), so one history process suffices.
    """

    def __init__(self, scheduler: PostgresScheduler, process: str) -> None:
        self._scheduler = scheduler
        self.process = process
        self.events: list[dict] = []
        self._last = -1

    def _stamp(self) -> int:
        self._last = max(time.monotonic_ns(), self._last + 1)
        return self._last

    def __getattr__(self, name: str) -> object:
        target = getattr(self._scheduler, name)
        if name not in OPERATIONS:
            return target

        def call(**args: object) -> object:
            self.events.append({"process": self.process, "type": "invoke", "op": name, "args": args, "time": self._stamp()})
            try:
                value = target(**args)
            except ValueError:
                self.events.append({"process": self.process, "type": "ok", "error": "ValueError", "time": self._stamp()})
                raise
            self.events.append({"process": self.process, "type": "ok", "result": to_json(name, value), "time": self._stamp()})
            return value

        return call

    @property
    def now(self) -> int:
        return self._scheduler.now

    def task(self, task_id: int) -> object:
        return self._scheduler.task(task_id)

    def submit(self, priority: int = 0, due_at: int | None = None, max_attempts: int | None = None,
               retry_delay: int = 1, key: str | None = None) -> int:
        args = dict(priority=priority, due_at=due_at, max_attempts=max_attempts, retry_delay=retry_delay)
        if key is not None:
            args["key"] = key
        return self.__getattr__("submit")(**args)


def _workload(index: int, tasks: int, seed: int) -> list[tuple[str, dict]]:
    rng = random.Random(f"{seed}:{index}")
    plan = []
    for _ in range(tasks):
        kind = rng.choices(("return", "raise", "stall", "parent", "flaky"), weights=(55, 12, 8, 10, 15))[0]
        budgets = (2, 3) if kind == "raise" else (None, 2, 3)  # a task that always raises needs a budget to end
        plan.append((kind, dict(priority=rng.randrange(3), max_attempts=rng.choice(budgets))))
    return plan


def _run_one(dsn: str, schema: str, index: int, tasks: int, seed: int, out) -> None:
    try:
        _run_workload(dsn, schema, index, tasks, seed, out)
    except BaseException:  # reported to the parent at once, so it never waits out its bound on a dead child
        out.put(json.dumps({"index": index, "error": traceback.format_exc()}))
        raise


def _run_workload(dsn: str, schema: str, index: int, tasks: int, seed: int, out) -> None:
    from fencepost.impl.runner import ManualClock, Runner

    clock = ManualClock()
    scheduler = Recording(PostgresScheduler(dsn, schema=schema), f"runner{index}")
    rng = random.Random(f"{seed}:{index}:cancel")

    def make(kind: str):
        def work(ctx) -> str:
            if kind == "raise":
                raise RuntimeError(f"task {ctx.task_id} fails every time")
            if kind == "flaky" and ctx.attempt == 1:
                raise RuntimeError(f"task {ctx.task_id} fails once")
            if kind == "stall" and ctx.attempt == 1:
                clock.advance(LEASE + 1)  # a stall past the lease: the task is taken back while this runs
            if kind == "parent":
                ctx.submit(make("return"), priority=1)
            return f"task {ctx.task_id} attempt {ctx.attempt}"

        return work

    runner = Runner(workers=3, clock=clock, lease=LEASE, scheduler=scheduler)
    runner.start()
    try:
        for kind, options in _workload(index, tasks, seed):
            task_id = runner.submit(make(kind), **options)
            if rng.random() < 0.1:  # at once: the task is still waiting, or just started
                runner.cancel(task_id)
        for _ in range(SETTLE_ROUNDS):
            runner.wait_idle(BOUND)
            if all(runner.task(t).status in ("succeeded", "failed", "cancelled") for t in range(1, runner.submitted() + 1)):
                break
            clock.advance(LEASE + 8)  # past any lease, and past the backoff these budgets reach
        else:
            raise AssertionError(f"runner {index}: tasks not final after {SETTLE_ROUNDS} rounds")
    finally:
        runner.stop(BOUND)
    out.put(json.dumps({"index": index, "schema": schema, "events": scheduler.events, "submitted": runner.submitted()}))


def run_runners(dsn: str, schemas: list[str], tasks: int, seed: int = 0) -> list[dict]:
    """One process per schema, each a runner over its own schema; each one's history and task count."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_run_one, args=(dsn, schema, i, tasks, seed, out)) for i, schema in enumerate(schemas)]
    for p in procs:
        p.start()
    results = [json.loads(out.get(timeout=BOUND * 4)) for _ in procs]
    failed = [r["error"] for r in results if "error" in r]
    if failed:
        raise RuntimeError("a runner process failed:\n" + failed[0])
    for p in procs:
        p.join(BOUND)
        if p.exitcode != 0:
            raise RuntimeError(f"a runner process exited with status {p.exitcode}")
    return sorted(results, key=lambda r: r["index"])
