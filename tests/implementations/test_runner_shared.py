"""Runners sharing one scheduler: named slots, one clock kept by the scheduler, payloads, time races.

The first tests need no server: names, option rules, ``SchedulerClock`` and the
runner's retry of a timed call refused as behind, over the in-memory
scheduler. The rest run shared runners on a PostgreSQL schema of their own
(skipped, saying why, without a server): a task submitted by one runner runs
in another, what ``result``/``error``/``wait`` can say about it, tasks nothing
here can run, and submits refused with nothing written. The many-process
stress run is ``test_postgres_runner.py``. Every wait is bounded (``BOUND``).
"""

from __future__ import annotations

import functools

import pytest
from runner_helpers import BOUND, NoPayloads

from fencepost.impl import Scheduler
from fencepost.impl.runner.clocks import SchedulerClock
from fencepost.impl.runner.core import ManualClock, Runner
from fencepost.spec.protocol import Status


def echo(ctx, word: str = "hi", times: int = 1) -> str:
    return word * times


def other(ctx) -> str:
    return "other"


def fails(ctx) -> None:
    raise RuntimeError("no")


# ---------------------------------------------------------------- names and options (no server)


def test_a_named_runners_slots_carry_its_name_and_the_default_stays_w1_to_wn() -> None:
    scheduler = Scheduler()
    clock = SchedulerClock(scheduler)
    named = Runner(name="host7.p2", workers=2, clock=clock, scheduler=scheduler, lease=10)
    Runner(workers=2, clock=clock, scheduler=scheduler, lease=10)  # the default names, on the same scheduler
    with pytest.raises(ValueError, match="worker 'w1' already exists"):
        Runner(workers=1, clock=clock, scheduler=scheduler)  # unnamed runners cannot share a scheduler
    ids = [scheduler.submit() for _ in range(4)]
    # every slot is a worker of capacity one on the one scheduler
    leases = [scheduler.dispatch(w, 0, 5) for w in ("host7.p2-w1", "host7.p2-w2", "w1", "w2")]
    assert [lease.task_id for lease in leases] == ids
    assert scheduler.dispatch("w1", 0, 5) is None  # full
    assert all(scheduler.complete(lease.task_id, lease.token, 1).accepted for lease in leases)
    with named:
        task_id = named.submit(lambda ctx: ctx.task_id)
        assert named.wait(task_id, BOUND).status is Status.SUCCEEDED


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(name=""), "name must be None or a non-empty str without surrounding spaces"),
        (dict(name=" a"), "name must be None or a non-empty str without surrounding spaces.*' a'"),
        (dict(name=3), "name must be None or a non-empty str.*got 3"),
        (dict(functions={"echo": echo}), "functions and poll need payloads"),
        (dict(poll=0.1), "functions and poll need payloads"),
        (dict(payloads=object(), functions={"echo": echo}), "payloads must offer put, forget, for_task, stamp"),
        (dict(payloads=NoPayloads()), "functions must be a non-empty mapping"),
        (dict(payloads=NoPayloads(), functions={}), "functions must be a non-empty mapping"),
        (dict(payloads=NoPayloads(), functions={"": echo}), "functions must map non-empty str names to callables"),
        (dict(payloads=NoPayloads(), functions={"x": 3}), "functions must map non-empty str names to callables"),
        (dict(payloads=NoPayloads(), functions={"echo": echo}, poll=0),
         "poll must be None or a number of real seconds > 0, got 0"),
    ],
)
def test_bad_shared_options_are_refused_and_nothing_is_registered(options: dict, message: str) -> None:
    scheduler = Scheduler()
    with pytest.raises(ValueError, match=message):
        Runner(workers=1, clock=ManualClock(), scheduler=scheduler, **options)
    with pytest.raises(ValueError, match="unknown worker|worker"):
        scheduler.dispatch("w1", 0, 5)  # no slot was added


def test_a_shared_runner_refuses_work_it_could_not_store_and_writes_nothing() -> None:
    stored: list = []

    class Store(NoPayloads):
        def put(self, key, function, args, kwargs):
            stored.append(key)
            return True

    scheduler = Scheduler()
    runner = Runner(workers=1, clock=ManualClock(), scheduler=scheduler, payloads=Store(), functions={"echo": echo})
    for fn, message in [
        (other, "fn must be one of the runner's functions \\(echo\\) or a functools.partial of one"),
        (lambda ctx: 1, "fn must be one of the runner's functions"),
        (functools.partial(echo, word=("a", "b")), "must come back unchanged from JSON.*\\('a', 'b'\\)"),
        (functools.partial(echo, word=float("nan")), "must come back unchanged from JSON"),
        (functools.partial(echo, object()), "must come back unchanged from JSON"),
    ]:
        with pytest.raises(ValueError, match=message):
            runner.submit(fn)
    assert stored == [] and runner.submitted() == 0 and scheduler.now == 0
    with pytest.raises(ValueError, match="task_id 1 is unknown"):
        scheduler.task(1)


def test_a_shared_runner_whose_clock_is_behind_the_schedulers_is_refused_at_once() -> None:
    scheduler = Scheduler()
    scheduler.advance(10)  # another client's time
    with pytest.raises(ValueError, match="clock is behind the scheduler's: clock.now=3 < scheduler.now=10"):
        Runner(workers=1, clock=ManualClock(3), scheduler=scheduler, payloads=NoPayloads(), functions={"echo": echo})
    with pytest.raises(ValueError, match="unknown worker|worker"):
        scheduler.dispatch("w1", 10, 5)  # no slot was added
    Runner(workers=1, clock=SchedulerClock(scheduler), scheduler=scheduler, payloads=NoPayloads(), functions={"echo": echo})


# ---------------------------------------------------------------- one clock, kept by the scheduler (no server)


class Racing:
    """A scheduler another client races: an armed op's next call is preceded by that client moving time on by ``leap``."""

    def __init__(self, inner: Scheduler) -> None:
        self._inner = inner
        self.armed: set[str] = set()
        self.leap = 1  # how far the other client moves time on

    @property
    def now(self) -> int:
        return self._inner.now

    def task(self, task_id: int):
        return self._inner.task(task_id)

    def __getattr__(self, op: str):
        target = getattr(self._inner, op)

        def call(**args):
            if op in self.armed:
                self.armed.discard(op)
                self._inner.advance(self._inner.now + self.leap)  # the other client, between our read and our call
            return target(**args)

        return call


def test_a_scheduler_clock_is_the_schedulers_time_and_moving_it_expires_leases() -> None:
    scheduler = Scheduler()
    clock = SchedulerClock(scheduler)
    heard: list[int] = []
    clock.subscribe(lambda: heard.append(clock.now))
    scheduler.add_worker("w1", 1)
    task_id = scheduler.submit()
    scheduler.dispatch("w1", 0, 5)
    scheduler.advance(3)  # another client moved time: the clock shows it
    assert clock.now == 3 and clock.seconds_until(100) is None
    assert clock.advance(2) == 5 and clock.now == 5
    assert scheduler.task(task_id).status is Status.PENDING  # the lease [0, 5) ended with the move
    assert clock.advance_to(9) == 9 and heard == [5, 9]


def test_a_scheduler_clock_move_raced_by_another_client_is_made_again_from_the_new_time() -> None:
    scheduler = Racing(Scheduler())
    clock = SchedulerClock(scheduler)
    scheduler.advance(now=4)
    scheduler.armed.add("advance")
    # read 4, target 5; the other client moves to 5 first, so advance(5) is accepted: a tie is not behind
    assert clock.advance(1) == 5
    scheduler.leap = 10
    scheduler.armed.add("advance")
    # read 5, target 8; the other client moves to 15 first, so advance(8) is refused; read 15, target 18
    assert clock.advance(3) == 18 and scheduler.now == 18


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda c: c.advance(-1), "ticks must be an int >= 0"),
        (lambda c: c.advance(True), "ticks must be an int >= 0"),
        (lambda c: c.advance_to(6), "time can't go backwards: now=6 < current time 7"),
        (lambda c: c.advance_to(-1), "t must be an int >= 0"),
        (lambda c: SchedulerClock(object()), "scheduler must offer now and advance"),
    ],
)
def test_a_scheduler_clock_refuses_bad_time_and_changes_nothing(call, message: str) -> None:
    scheduler = Scheduler()
    scheduler.advance(7)
    with pytest.raises(ValueError, match=message):
        call(SchedulerClock(scheduler))
    assert scheduler.now == 7


def test_a_runner_refused_because_another_client_moved_time_reads_again_and_retries(tmp_path) -> None:
    scheduler = Racing(Scheduler())
    runner = Runner(workers=1, clock=SchedulerClock(scheduler), scheduler=scheduler, lease=10, trace=True)
    task_id = runner.submit(lambda ctx: ctx.now)
    scheduler.armed.update({"dispatch", "complete"})
    with runner:
        assert runner.wait(task_id, BOUND).status is Status.SUCCEEDED
    assert runner.result(task_id) >= 1
    runner.save_trace(tmp_path / "trace.json")
    from fencepost.spec.formats.scenario import load_scenario

    steps = [(s.op, s.args.get("now"), s.expect)
             for s in load_scenario(tmp_path / "trace.json").steps if s.op in ("dispatch", "complete")]
    # each raced call was refused (behind the other client's time) and made again at the new time
    assert steps[0][0] == "dispatch" and steps[0][2] == "error" and steps[1][0] == "dispatch" and steps[1][1] == steps[0][1] + 1
    refused_completes = [s for s in steps if s[0] == "complete" and s[2] == "error"]
    assert len(refused_completes) == 1


def test_a_runner_whose_clock_is_behind_the_scheduler_is_refused_and_nothing_changes() -> None:
    scheduler = Scheduler()
    scheduler.advance(10)  # another client's time
    runner = Runner(workers=1, clock=ManualClock(), scheduler=scheduler, lease=10)
    task_id = runner.submit(lambda ctx: None)
    with pytest.raises(ValueError, match="time can't go backwards: now=0 < current time 10"):
        runner.cancel(task_id)
    assert scheduler.task(task_id).status is Status.PENDING and scheduler.now == 10


# ---------------------------------------------------------------- shared runners on PostgreSQL


@pytest.fixture
def shared():
    """``make(**options)``: a shared runner on one fresh schema (a SchedulerClock over it); all stopped at the end."""
    import pg_server

    dsn = pg_server.require_server()
    from fencepost.impl.postgres.scheduler import PostgresScheduler, drop_schema, temporary_schema_name
    from fencepost.impl.postgres.payloads import PostgresPayloads

    schema = temporary_schema_name("fp_shared")
    made, opened = [], []

    def make(functions=None, **options) -> Runner:
        scheduler = PostgresScheduler(dsn, schema=schema)
        payloads = PostgresPayloads(dsn, schema=schema)
        opened.extend((scheduler, payloads))
        options.setdefault("workers", 2)
        runner = Runner(clock=SchedulerClock(scheduler), lease=10, scheduler=scheduler, payloads=payloads,
                        functions=functions or {"echo": echo, "other": other, "fails": fails}, poll=0.01, **options)
        made.append(runner)
        return runner

    make.dsn, make.schema = dsn, schema
    try:
        yield make
    finally:
        for runner in made:
            runner.stop(BOUND)
        for thing in opened:
            thing.close()
        drop_schema(dsn, schema)


def test_a_task_one_runner_submits_runs_in_another_and_both_see_how_it_ended(shared) -> None:
    submitter = shared(name="a")  # never started: it runs nothing
    worker = shared(name="b")
    worker.start()
    task_id = submitter.submit(functools.partial(echo, word="ab", times=2))
    assert submitter.wait(task_id, BOUND).status is Status.SUCCEEDED  # noticed by polling the scheduler
    assert worker.wait(task_id, BOUND).worker is None
    assert worker.result(task_id) == "abab"
    with pytest.raises(ValueError, match=f"task {task_id} succeeded in another runner process: its value stays there"):
        submitter.result(task_id)
    assert submitter.task(task_id).status is Status.SUCCEEDED and worker.submitted() == 0 and submitter.submitted() == 1


def test_a_task_nothing_here_can_run_fails_with_the_reason(shared) -> None:
    from fencepost.impl.postgres.scheduler import PostgresScheduler

    submitter = shared(name="a")
    worker = shared(name="b", functions={"echo": echo})  # lacks "other"
    worker.start()
    unknown = submitter.submit(other, max_attempts=1)
    with PostgresScheduler(shared.dsn, schema=shared.schema) as plain:
        bare = plain.submit(max_attempts=1)  # no key, no payload: not a runner's task
    for task_id in (unknown, bare):
        assert worker.wait(task_id, BOUND).status is Status.FAILED
    assert isinstance(worker.error(unknown), LookupError)
    assert "runs function 'other', which this runner's functions (echo) lack" in str(worker.error(unknown))
    assert "has no payload" in str(worker.error(bare))
    assert submitter.error(unknown) is None  # the failure was reported in the other process


def test_a_refused_submit_leaves_no_payload_and_no_task(shared) -> None:
    from fencepost.impl.postgres.scheduler import PostgresScheduler
    from fencepost.impl.postgres.payloads import PostgresPayloads

    runner = shared(name="a")
    for fn, options, message in [
        (echo, dict(priority="high"), "priority"),
        (echo, dict(max_attempts=0), "max_attempts"),
        (print, {}, "fn must be one of the runner's functions"),
    ]:
        with pytest.raises(ValueError, match=message):
            runner.submit(fn, **options)
    with PostgresPayloads(shared.dsn, schema=shared.schema) as payloads, PostgresScheduler(shared.dsn, schema=shared.schema) as s:
        assert payloads.stamp() == (0, 0) and s.snapshot() == (0, [])
        assert payloads.orphans() == 0
        assert payloads._conn.execute(f"SELECT count(*) FROM {shared.schema}.payloads").fetchone()[0] == 0


def test_a_key_names_one_task_and_keeps_its_first_payload(shared) -> None:
    runner = shared(name="a")
    first = runner.submit(functools.partial(echo, word="x"), key="job-1")
    again = runner.submit(functools.partial(echo, word="y"), key="job-1")
    assert first == again and runner.submitted() == 1
    runner.start()
    runner.wait(first, BOUND)
    assert runner.result(first) == "x"


def test_a_named_runner_restarted_takes_its_slots_back(shared) -> None:
    first = shared(name="a", workers=1)
    again = shared(name="a", workers=1)  # add_worker("a-w1") already done: taken over, not an error
    again.start()
    task_id = first.submit(echo)
    assert again.wait(task_id, BOUND).worker is None and again.result(task_id) == "hi"


def test_shared_runners_on_the_database_clock_run_each_others_tasks(shared) -> None:
    """Real time from the server (``DatabaseClock``), as in production: one process's task runs in another."""
    from fencepost.impl.postgres.scheduler import DatabaseClock, PostgresScheduler
    from fencepost.impl.postgres.payloads import PostgresPayloads

    made = []
    for name in ("a", "b"):
        scheduler = PostgresScheduler(shared.dsn, schema=shared.schema)
        clock = DatabaseClock(shared.dsn, schema=shared.schema)
        payloads = PostgresPayloads(shared.dsn, schema=shared.schema)
        made.append((Runner(name=name, workers=1, clock=clock, lease=60_000, scheduler=scheduler,
                            functions={"echo": echo}, payloads=payloads, poll=0.01), scheduler, clock, payloads))
    (submitter, *_), (worker, *_) = made
    try:
        worker.start()
        ids = [submitter.submit(functools.partial(echo, word=str(n))) for n in range(5)]
        assert [submitter.wait(i, BOUND).status for i in ids] == [Status.SUCCEEDED] * 5
        assert [worker.result(i) for i in ids] == ["0", "1", "2", "3", "4"]
        assert {worker.task(i).attempts for i in ids} == {1}
    finally:
        for runner, *closable in made:
            runner.stop(BOUND)
            for thing in closable:
                thing.close()


def test_a_shared_runner_with_process_isolation_runs_anothers_task_and_its_child(shared) -> None:
    from runner_work import constant, uses_its_context

    functions = {"uses": uses_its_context, "constant": constant}
    submitter = shared(name="a", functions=functions)
    worker = shared(name="b", functions=functions, isolation="process")
    worker.start()
    task_id = submitter.submit(uses_its_context)
    assert submitter.wait(task_id, BOUND).status is Status.SUCCEEDED
    seen = worker.result(task_id)
    assert (seen["task_id"], seen["attempt"], seen["heartbeat"], seen["cancel_requested"]) == (task_id, 1, True, False)
    assert submitter.wait(seen["child"], BOUND).status is Status.SUCCEEDED  # submitted from the child, stored as a payload
    assert worker.result(seen["child"]) == "from the child"


def test_on_real_time_an_idle_shared_runner_starts_a_task_another_process_submitted_for_later(shared) -> None:
    """The stamp shows a new task at once, but not the moment it falls due: a real-time runner looks every poll."""
    from fencepost.impl.postgres.scheduler import DatabaseClock, PostgresScheduler
    from fencepost.impl.postgres.payloads import PostgresPayloads

    scheduler = PostgresScheduler(shared.dsn, schema=shared.schema)
    clock = DatabaseClock(shared.dsn, schema=shared.schema)  # 1 ms ticks
    payloads = PostgresPayloads(shared.dsn, schema=shared.schema)
    worker = Runner(name="b", workers=1, clock=clock, lease=60_000, scheduler=scheduler,
                    functions={"echo": echo}, payloads=payloads, poll=0.01)
    submitter = shared(name="a")  # never started; its clock is the schema's logical one, at 0
    try:
        worker.start()
        worker.wait_idle(BOUND)
        task_id = submitter.submit(echo, due_at=clock.now + 30)  # due 30 ms from now
        assert worker.wait(task_id, BOUND).status is Status.SUCCEEDED
        assert worker.result(task_id) == "hi"
    finally:
        worker.stop(BOUND)
        for thing in (scheduler, clock, payloads):
            thing.close()
