"""Several processes, each a shared ``Runner`` with several slots, all on ONE PostgreSQL schema.

Each process runs ``Runner(name=f"r{i}", workers=WORKERS, clock=SchedulerClock(...),
lease=LEASE, scheduler=Recording(PostgresScheduler(dsn, schema)),
functions=FUNCTIONS, payloads=PostgresPayloads(dsn, schema))`` on the same
schema. Every process submits a workload of its own, and any process may run
any task: functions that return, that raise (retried with the spec's backoff
until their budget is spent), that fail once, that stall past their lease (on
their first attempt they move the shared clock on from inside, so their lease
expires while they run, the task runs again, maybe in another process, and
their late completion is refused), parents that submit a child from user work,
and cancels from the driver.

Time is logical and shared: every process's clock is a ``SchedulerClock`` over
the one schema, so processes move one time (stalls, and the settling driver)
and race on it; a runner refused with "time can't go backwards" re-reads and
retries. ``Recording`` keeps every protocol call as a history (the pinned event
format); each process has two history processes, its runner (``rN``: one call
at a time, under the runner's lock) and its clock (``rNclock``: moves made by
stalls and the driver, serialised by the clock's lock). The events are merged
by ``time.monotonic_ns()``, one clock for the machine.

Settling: after all processes submitted (a barrier), rounds of "every runner
idle (``wait_idle``: one of its dispatches made after the call found nothing),
barrier, process 0 looks at the whole schema: all final -> done; nothing
running -> it moves time on by ``SETTLE_TICKS`` (retries fall due), barrier".
Time is never moved while a task runs, except by a stall, so only stalls make
zombies.

Under faults (``run_runners(..., faults=inject)``, issue 23): ``inject()`` runs
in a thread of the parent while the processes work, and until it returns every
round also submits ``FAULT_ROUND_TASKS`` more tasks per process, so the faults
land on a busy queue. Calls are then made with ``synchronous_commit`` on (an
acknowledged call must survive a server crash) and a short ``call_timeout``
(a paused server is noticed); a call whose answer was lost is recorded as
``info``; the settling driver moves time on whenever every runner is idle and
some task is not final, since a task leased by a lost dispatch is running for
nobody until its lease expires.

With ``batches=True`` (``test_postgres_runner_batches.py``) the runners have
their default ``batch`` (PostgreSQL: batches of up to ``WORKERS``), so each is
one worker ``rN-pool3`` whose claims are ``dispatch_many`` and whose reports go
out as ``complete_many``/``fail_many``, and ``Recording`` records those; without
it, ``Recording`` offers no batch operation, so the runners make single calls
on slots ``rN-w1`` .. ``rN-w3`` (a runner uses batches only where its
scheduler offers them). ``unbatched`` turns a history's batches into the
single calls they stand for, for the checks that count leases and reports.

Every wait is bounded in real seconds (``BOUND``); nothing sleeps.
"""

from __future__ import annotations

import functools
import itertools
import json
import multiprocessing
import random
import threading
import time
import traceback

from fencepost.impl.runner.clocks import SchedulerClock
from fencepost.impl.postgres.scheduler import PostgresScheduler
from fencepost.impl.postgres.payloads import PostgresPayloads
from fencepost.impl.postgres.session import Reconnect
from fencepost.spec.formats.scenario import BATCH_OF
from fencepost.spec.formats.values import to_json
from fencepost.spec.protocol import BATCH_OPERATIONS, FINAL_STATUSES, OPERATIONS, OutcomeUnknown, Status

#: Real seconds any wait may take before the run fails instead of hanging.
BOUND = 120.0
#: Lease length in ticks of the shared logical clock.
LEASE = 5
#: Ticks the settling driver moves time on by: past any lease, and past the backoff these budgets reach.
SETTLE_TICKS = LEASE + 8
#: Rounds of "all idle, then maybe move time on" before the workload counts as stuck.
SETTLE_ROUNDS = 400
#: Real seconds between a runner's looks at what the other processes did (shorter than the default:
#: the settling rounds wait for it).
POLL = 0.02
#: Slots per runner.
WORKERS = 3
#: Off: the run checks concurrency, not durability (no server crashes here), and with it on every
#: call waits for a disk flush while holding the schema's one lock, which doubled the run's time.
SYNCHRONOUS_COMMIT = False
#: Under faults: seconds a call may wait for its answer (shorter than a pause, so a pause is noticed).
FAULT_CALL_TIMEOUT = 1.0
#: Under faults: tasks each process submits per round while faults are still being injected.
FAULT_ROUND_TASKS = 4


class Recording:
    """A scheduler whose protocol calls are recorded as history events; everything else passes through.

    One history process: calls must not overlap, so with ``serialise=True``
    (callers in several threads) a lock holds each call from invoke to completion.
    The batch operations are recorded too with ``batches=True``; without it the
    wrapper does not offer them (``AttributeError``), so nothing unrecorded reaches
    the scheduler.
    """

    def __init__(self, scheduler: PostgresScheduler, process: str, serialise: bool = False, batches: bool = False) -> None:
        self._scheduler = scheduler
        self.process = process
        self.events: list[dict] = []
        self._last = -1
        self._lock = threading.Lock() if serialise else None
        self._recorded = OPERATIONS + BATCH_OPERATIONS if batches else OPERATIONS

    def _stamp(self) -> int:
        self._last = max(time.monotonic_ns(), self._last + 1)
        return self._last

    def __getattr__(self, name: str) -> object:
        if name in BATCH_OPERATIONS and name not in self._recorded:
            raise AttributeError(f"{name}: not offered (Recording(batches=False))")
        target = getattr(self._scheduler, name)
        if name not in self._recorded:
            return target

        def call(**args: object) -> object:
            if self._lock is None:
                return self._record(name, target, args)
            with self._lock:
                return self._record(name, target, args)

        return call

    def _record(self, name: str, target, args: dict) -> object:
        self.events.append({"process": self.process, "type": "invoke", "op": name, "args": args, "time": self._stamp()})
        try:
            value = target(**args)
        except ValueError:
            self.events.append({"process": self.process, "type": "ok", "error": "ValueError", "time": self._stamp()})
            raise
        except OutcomeUnknown:  # the answer was lost: it may or may not have taken effect
            self.events.append({"process": self.process, "type": "info", "time": self._stamp()})
            raise
        self.events.append({"process": self.process, "type": "ok", "result": to_json(name, value), "time": self._stamp()})
        return value

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


# ---------------------------------------------------------------- the registered functions

#: This process's shared clock, for ``stall`` (set by ``_run_workload``).
_CLOCK: SchedulerClock | None = None


def ret(ctx, tag: str) -> str:
    return f"{tag}: task {ctx.task_id} attempt {ctx.attempt}"


def always_raise(ctx) -> None:
    raise RuntimeError(f"task {ctx.task_id} fails every time")


def flaky(ctx, tag: str) -> str:
    if ctx.attempt == 1:
        raise RuntimeError(f"task {ctx.task_id} fails once")
    return ret(ctx, tag)


def stall(ctx, tag: str) -> str:
    if ctx.attempt == 1:
        _CLOCK.advance(LEASE + 1)  # a stall past the lease: the task is taken back while this runs
    return ret(ctx, tag)


def parent(ctx, tag: str) -> str:
    ctx.submit(functools.partial(ret, tag=f"child of {ctx.task_id}"), priority=1)
    return ret(ctx, tag)


#: What tasks may run, by name: the same registry in every process.
FUNCTIONS = {"ret": ret, "always_raise": always_raise, "flaky": flaky, "stall": stall, "parent": parent}


def _workload(index: int, tasks: int, seed: int) -> list[tuple[object, dict]]:
    rng = random.Random(f"{seed}:{index}")
    plan = []
    for n in range(tasks):
        kind = rng.choices(("ret", "always_raise", "stall", "parent", "flaky"), weights=(55, 12, 8, 10, 15))[0]
        budgets = (2, 3) if kind == "always_raise" else (None, 2, 3)  # a task that always raises needs a budget to end
        fn = always_raise if kind == "always_raise" else functools.partial(FUNCTIONS[kind], tag=f"r{index}.{n}")
        plan.append((fn, dict(priority=rng.randrange(3), max_attempts=rng.choice(budgets))))
    return plan


# ---------------------------------------------------------------- one process


def _run_one(dsn: str, schema: str, index: int, tasks: int, seed: int, barrier, decision, out, hold=None, ready=None,
             batches: bool = False) -> None:
    try:
        _run_workload(dsn, schema, index, tasks, seed, barrier, decision, out, hold, ready, batches)
    except BaseException:  # reported to the parent at once, so it never waits out its bound on a dead child
        barrier.abort()
        out.put(json.dumps({"index": index, "error": traceback.format_exc()}))
        raise


#: ``decision`` values: keep settling, every task is final, or faults are still coming (submit more).
_GO, _DONE, _HELD = 0, 1, 2


def _run_workload(dsn: str, schema: str, index: int, tasks: int, seed: int, barrier, decision, out, hold=None,
                  ready=None, batches: bool = False) -> None:
    global _CLOCK
    from fencepost.impl.runner.core import Runner

    faulted = hold is not None
    options = dict(synchronous_commit=True, call_timeout=FAULT_CALL_TIMEOUT, reconnect=Reconnect(attempts=20)) \
        if faulted else dict(synchronous_commit=SYNCHRONOUS_COMMIT)
    scheduler = Recording(PostgresScheduler(dsn, schema=schema, **options), f"r{index}", batches=batches)
    mover = Recording(PostgresScheduler(dsn, schema=schema, **options), f"r{index}clock", serialise=True)
    _CLOCK = clock = SchedulerClock(mover)
    payloads = PostgresPayloads(dsn, schema=schema, call_timeout=options.get("call_timeout"), reconnect=options.get("reconnect"))
    observer = PostgresScheduler(dsn, schema=schema, **options)  # reads only (snapshot): not part of the history
    rng = random.Random(f"{seed}:{index}:cancel")
    runner = Runner(name=f"r{index}", workers=WORKERS, clock=clock, lease=LEASE, scheduler=scheduler,
                    functions=FUNCTIONS, payloads=payloads, poll=POLL)
    runner.start()
    started = time.monotonic()
    rounds = advances = 0
    plan = iter(_workload(index, tasks, seed)) if not faulted else \
        itertools.chain.from_iterable(_workload(index, tasks, f"{seed}:{n}") for n in itertools.count())

    def submit(count: int) -> None:
        for fn, options in itertools.islice(plan, count):
            task_id = runner.submit(fn, **options)
            if rng.random() < 0.1:  # at once: the task is still waiting, or just started somewhere
                try:
                    runner.cancel(task_id)
                except OutcomeUnknown:
                    pass  # under faults: the cancel's answer was lost (recorded as info); the task says later

    try:
        submit(tasks)
        barrier.wait(BOUND)
        if ready is not None and index == 0:
            ready.set()  # every process is connected and has submitted: the faults may start
        settling = 0
        for rounds in itertools.count(1):
            if decision.value == _HELD:
                submit(FAULT_ROUND_TASKS)
            else:
                settling += 1
                if settling > SETTLE_ROUNDS:
                    raise AssertionError(f"runner {index}: tasks not final after {SETTLE_ROUNDS} rounds")
            runner.wait_idle(BOUND)
            barrier.wait(BOUND)
            if index == 0:
                now, views = observer.snapshot()
                final = all(v.status in FINAL_STATUSES for v in views)
                if faulted and hold.value:
                    decision.value = _HELD
                elif final:
                    decision.value = _DONE
                else:
                    decision.value = _GO
                # every runner is idle: a running task is a stall's zombie, or (faults) a lost dispatch's
                if not final and (faulted or not any(v.status is Status.RUNNING for v in views)):
                    clock.advance(SETTLE_TICKS)
                    advances += 1
            barrier.wait(BOUND)
            if decision.value == _DONE:
                break
    finally:
        runner.stop(BOUND)
        payloads.close()
        observer.close()
    out.put(json.dumps({
        "index": index, "events": scheduler.events + mover.events, "submitted": runner.submitted(),
        "rounds": rounds, "advances": advances, "seconds": time.monotonic() - started,
    }))


def run_runners(dsn: str, schema: str, processes: int, tasks: int, seed: int = 0, faults=None,
                batches: bool = False) -> list[dict]:
    """``processes`` shared runners on ``schema``, each submitting ``tasks``; each one's history and counts.

    ``faults``: called in a thread of this process while the runners work (see the module docstring).
    ``batches``: the runners' scheduler offers the batch operations (see the module docstring).
    """
    PostgresPayloads(dsn, schema=schema).close()  # the tables, made once before the processes race to
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    barrier = ctx.Barrier(processes)
    hold = None if faults is None else ctx.Value("i", 1)
    ready = None if faults is None else ctx.Event()
    decision = ctx.Value("i", _GO if faults is None else _HELD)
    procs = [ctx.Process(target=_run_one, args=(dsn, schema, i, tasks, seed, barrier, decision, out, hold, ready, batches))
             for i in range(processes)]
    for p in procs:
        p.start()
    injector = None
    if faults is not None:
        problem: list[BaseException] = []
        gone = threading.Event()  # the runners ended before the faults began (one failed)

        def inject() -> None:
            try:
                if not ready.wait(BOUND):
                    raise RuntimeError(f"the runner processes were not ready after {BOUND} s")
                if not gone.is_set():
                    faults()
            except BaseException as exc:  # noqa: BLE001 - raised below, after the runners finish
                problem.append(exc)
            finally:
                hold.value = 0

        injector = threading.Thread(target=inject, name="fault-injector", daemon=True)
        injector.start()
    results = [json.loads(out.get(timeout=BOUND * 4)) for _ in procs]
    if injector is not None:
        gone.set()
        ready.set()  # an injector still waiting for the runners wakes, and injects nothing
        injector.join(BOUND)
        if problem:
            raise RuntimeError(f"injecting a fault failed: {problem[0]}")
    failed = [r["error"] for r in results if "error" in r]
    if failed:
        raise RuntimeError("a runner process failed:\n" + failed[0])
    for p in procs:
        p.join(BOUND)
        if p.exitcode != 0:
            raise RuntimeError(f"a runner process exited with status {p.exitcode}")
    return sorted(results, key=lambda r: r["index"])


def merged_events(results: list[dict]) -> list[dict]:
    """Every process's events in real-time order: one machine-wide monotonic clock, invocations first on a tie."""
    events = [e for r in results for e in r["events"]]
    events.sort(key=lambda e: (e["time"], e["type"] != "invoke"))
    return events


def unbatched(events: list[dict]) -> list[dict]:
    """The events with each batch call as the single calls it stands for, in order, at its times.

    A ``dispatch_many`` that leased k tasks is k ``dispatch`` calls answering
    those leases (the one that found nothing is left out: nothing was handed
    out); a ``complete_many`` or ``fail_many`` is one ``complete`` or ``fail``
    per report, answering its outcome. A batch that raised or whose answer was
    lost is one call of its single op that did the same (its parts are not
    known). For the checks that count leases and reports; the linearizability
    check takes the batches as they were, each one call.
    """
    batch_of: dict[str, dict] = {}  # process -> its open batch invoke
    out: list[dict] = []
    for e in events:
        if e["type"] == "invoke" and e["op"] in BATCH_OF:
            batch_of[e["process"]] = e
            continue
        invoke = batch_of.pop(e["process"], None) if e["type"] != "invoke" else None
        if invoke is None:
            out.append(e)
            continue
        single, args = BATCH_OF[invoke["op"]], invoke["args"]
        if e["type"] != "ok" or e.get("error"):
            out.extend([dict(invoke, op=single), e])
            continue
        if single == "dispatch":
            parts = [({k: v for k, v in args.items() if k != "limit"}, lease) for lease in e["result"]]
        else:
            parts = [({"task_id": task_id, "token": token, "now": args["now"]}, outcome)
                     for (task_id, token), outcome in zip(args["reports"], e["result"])]
        for part_args, result in parts:
            out.append(dict(invoke, op=single, args=part_args))
            out.append(dict(e, result=result))
    return out


#: Bound on the linearizability search of a run's history; a run that needs more fails as undecided.
MAX_STATES = 2_000_000


def run_and_look(dsn: str, prefix: str, processes: int, tasks: int, seed: int, batches: bool = False) -> tuple:
    """``run_runners`` on a fresh schema named from ``prefix``, then the schema's end state; the schema is dropped.

    Returns (results, merged events, the scheduler's final snapshot, orphan payloads).
    """
    from fencepost.impl.postgres.scheduler import drop_schema, temporary_schema_name

    schema = temporary_schema_name(prefix)
    try:
        results = run_runners(dsn, schema, processes, tasks, seed=seed, batches=batches)
        with PostgresScheduler(dsn, schema=schema) as s:
            final = s.snapshot()
        with PostgresPayloads(dsn, schema=schema) as p:
            orphans = p.orphans()
    finally:
        drop_schema(dsn, schema)
    return results, merged_events(results), final, orphans


def assert_linearizable(events: list[dict], folder) -> None:
    """The whole history, loaded from a file in ``folder`` as the pinned format, is linearizable, cut in windows."""
    from fencepost.spec.checkers import linearize, linearize_command
    from fencepost.spec.formats import history as histories

    path = folder / "runners.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    history = histories.load_history(path)
    verdict = linearize.check_history(history, max_states=MAX_STATES)
    assert verdict.linearizable is True, linearize_command.report(history, verdict)
    assert verdict.windows > 1  # cut at quiescent points (the settling rounds, pauses between calls)
