"""The PostgreSQL scheduler under its server's faults (issue 23; docs/faults.md).

Two parts. Against the machine's server (``FENCEPOST_PG_DSN``): a backend
ended between calls is replaced unseen; one ended mid-call (the call parked
on a lock held by the test, so "mid-call" is certain, not timed) is asked
again when that is safe and otherwise raises ``OutcomeUnknown``; a call past
``call_timeout`` is cut; reserved and foreign-held schemas are refused in one
line, changing nothing. Against a throw-away cluster the tests start
themselves (``impl/faults/cluster.py``; skipped, saying why, without the server
binaries): a server that stays away makes a call give up in one line naming
the dsn, and the next call after it is back succeeds; the fault suite
(``impl/faults/inject.py``) -- every fault, several times, under a multi-process
workload -- keeps every property it checks; and runners outlast a 30 s
outage of their server (issue 34), saying meanwhile that they wait for it.
"""

from __future__ import annotations

import functools
import logging
import re
import socket
import threading
import time
import types

import psycopg
import pytest

import pg_server
from pg_server import in_thread
from fencepost.impl.faults.inject import FAULTS, inject_faults, judge, postgres_factory, run_faults, table
from fencepost.impl.faults.cluster import Cluster, unavailable
from fencepost.impl.postgres.payloads import PostgresPayloads
from fencepost.impl.postgres.scheduler import DatabaseClock, PostgresScheduler, drop_schema, lock_key, temporary_schema_name
from fencepost.impl.runner.core import Runner
from fencepost.impl.kit.outages import Patience
from fencepost.impl.postgres import session as session_module
from fencepost.impl.postgres.session import Effect, Reconnect, Session, StoppedWaiting
from fencepost.spec.protocol import FINAL_STATUSES, OutcomeUnknown, Status
from pg_runner_stress import merged_events, run_runners

#: Real seconds any wait in these tests may take.
BOUND = 30.0
#: Each fault this many times in each suite run (CI's bounded count).
TIMES = 2
#: Runner processes, and the tasks each submits at the start (more come while faults are injected).
RUNNERS, RUNNER_TASKS = 3, 30
#: Real seconds the server is down while runners wait for it (issue 34: a runner outlasts a 30 s outage).
OUTAGE_SECONDS = 30.0
#: Slots of each runner in the outage test, and the tasks the lone runner and the shared runners get.
OUTAGE_WORKERS, ALONE_TASKS, SHARED_TASKS = 2, 6, 8
#: The shared runners' lease, in the database clock's milliseconds: shorter than the outage, so the
#: tasks the lost runner held are free again by the time the server is back.
SHARED_LEASE = 10_000
#: Rounds each fault-suite client makes at least (3 steps each, about a fifth of them submits), so
#: the sizes the test asserts hold however fast the machine ran while the faults were injected.
MIN_ROUNDS = 80


@pytest.fixture
def dsn() -> str:
    return pg_server.require_server()


@pytest.fixture
def schema(dsn):
    name = temporary_schema_name("faults")
    yield name
    drop_schema(dsn, name)


def _terminate(dsn: str, pid: int) -> None:
    """End backend ``pid`` and wait (bounded) until it is gone: its goodbye is then in the client's socket."""
    with psycopg.connect(dsn, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
        deadline = time.monotonic() + BOUND
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
            assert time.monotonic() < deadline, f"backend {pid} still there {BOUND} s after pg_terminate_backend"
            time.sleep(0.005)  # polling the server's own view, bounded above


def _backend(s: PostgresScheduler) -> int:
    return s._session.conn.info.backend_pid


class _ClockHeld:
    """Hold the schema's clock lock from another session, so a timed call waits in the server."""

    def __init__(self, dsn: str, schema: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.key = lock_key(schema)
        self.conn.execute("SELECT pg_advisory_lock(%s, 1)", (self.key,))

    def wait_for(self, pid: int) -> None:
        """Until backend ``pid`` waits on a lock (bounded)."""
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            row = self.conn.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
            if row and row[0] == "Lock":
                return
            time.sleep(0.005)  # polling the server's own view of the backend, bounded above
        raise AssertionError(f"backend {pid} never waited on the clock lock")

    def release(self) -> None:
        self.conn.execute("SELECT pg_advisory_unlock(%s, 1)", (self.key,))
        self.conn.close()


# ---------------------------------------------------------------- the machine's server


def test_a_backend_ended_between_calls_is_replaced_unseen(dsn, schema) -> None:
    with PostgresScheduler(dsn, schema=schema) as s:
        s.add_worker("w", 1)
        task = s.submit()
        _terminate(dsn, _backend(s))
        lease = s.dispatch("w", 1, 5)  # not retried: it was never sent on the dead connection
        assert lease is not None and lease.token == 1
        assert s._session.reconnects == 1
        assert s.task(task).status is Status.RUNNING


def test_a_complete_whose_answer_is_lost_raises_outcome_unknown_and_the_task_says_what_happened(dsn, schema) -> None:
    with PostgresScheduler(dsn, schema=schema) as s:
        s.add_worker("w", 1)
        task = s.submit()
        lease = s.dispatch("w", 1, 5)
        held = _ClockHeld(dsn, schema)
        try:
            thread, result = in_thread(lambda: s.complete(task, lease.token, 2))  # moves the clock: waits
            held.wait_for(_backend(s))
            _terminate(dsn, _backend(s))
            thread.join(BOUND)
        finally:
            held.release()
        (error,) = result
        assert isinstance(error, OutcomeUnknown) and not isinstance(error, ValueError)
        assert (error.op, error.call_args) == ("complete", {"task_id": task, "token": lease.token, "now": 2})
        assert str(error).startswith(f"complete(task_id={task}, token={lease.token}, now=2): outcome unknown")
        assert "\n" not in str(error)
        view = s.task(task)  # a read: asked on a new connection
        assert (view.status, view.token) == (Status.RUNNING, lease.token)  # it did not take effect
        assert s.complete(task, lease.token, 2).accepted  # so completing again is not blind


def test_reads_and_advance_are_asked_again_after_a_lost_answer(dsn, schema) -> None:
    with PostgresScheduler(dsn, schema=schema) as s:
        task = s.submit()
        held = _ClockHeld(dsn, schema)
        try:
            thread, result = in_thread(lambda: s.advance(7))
            held.wait_for(_backend(s))
            _terminate(dsn, _backend(s))
        finally:
            held.release()
        thread.join(BOUND)
        assert result == [None]  # asked again on a new connection, and answered
        assert s._session.reconnects == 1
        assert s.now == 7 and s.task(task).status is Status.PENDING


def test_a_keyed_submit_is_asked_again_and_returns_the_same_task(dsn, schema) -> None:
    with PostgresScheduler(dsn, schema=schema) as s:
        first = s.submit(key="k")
        _terminate(dsn, _backend(s))
        assert s.submit(key="k") == first


def test_a_call_past_call_timeout_is_cut_and_its_outcome_is_unknown(dsn, schema) -> None:
    # The timed call waits on a held lock, so any call_timeout cuts it; the set-up calls before it run
    # under the same timeout, and 0.2 s was within reach of a loaded machine's honest statements.
    with PostgresScheduler(dsn, schema=schema, call_timeout=2.0, reconnect=Reconnect(attempts=1, first_delay=0.01)) as s:
        s.add_worker("w", 1)
        s.submit()
        held = _ClockHeld(dsn, schema)
        try:
            with pytest.raises(OutcomeUnknown, match=r"^dispatch\(worker='w', now=3, duration=5\): outcome unknown"):
                s.dispatch("w", 3, 5)
        finally:
            held.release()
        assert s.task(1).attempts in (0, 1)  # the server may or may not have run it: that is what unknown means


def test_reserved_schema_names_are_refused_in_one_line(dsn) -> None:
    for name in ("pg_catalog", "pg_toast", "pg_mine", "information_schema"):
        with pytest.raises(ValueError, match=rf"^schema '{name}' is reserved by PostgreSQL"):
            PostgresScheduler(dsn, schema=name)


def test_a_schema_holding_tables_fencepost_did_not_create_is_refused_and_left_alone(dsn, schema) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.tasks (x int)")
        conn.execute(f"CREATE TABLE {schema}.ledger (y int)")
        conn.execute(f"INSERT INTO {schema}.tasks VALUES (41), (42)")
        with pytest.raises(RuntimeError, match=rf"^schema '{schema}' holds tables fencepost did not create \(ledger, tasks\); nothing was changed"):
            PostgresScheduler(dsn, schema=schema)
        rows = conn.execute(f"SELECT x FROM {schema}.tasks ORDER BY x").fetchall()
        names = conn.execute("SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                             " WHERE nspname = %s ORDER BY relname", (schema,)).fetchall()
    assert rows == [(41,), (42,)]
    assert names == [("ledger",), ("tasks",)]


def test_bad_reconnect_and_call_timeout_settings_are_refused(dsn) -> None:
    with pytest.raises(ValueError, match=r"reconnect attempts must be an int >= 0: -1"):
        Reconnect(attempts=-1)
    with pytest.raises(ValueError, match=r"reconnect max_delay must be a number of seconds > 0: 0"):
        Reconnect(max_delay=0)
    with pytest.raises(ValueError, match=r"call_timeout must be None or a number of seconds > 0: 0"):
        PostgresScheduler(dsn, call_timeout=0)


def _refusing_session(dsn: str, refusals: int) -> tuple[Session, list[str | None]]:
    """A session whose next ``refusals`` connection tries are refused; ``seen`` holds its ``outage`` line at each try."""
    seen: list[str | None] = []
    left = [refusals]
    session: Session

    def connect() -> psycopg.Connection:
        seen.append(None if session.outage is None else session.outage.describe())
        if left[0] > 0:
            left[0] -= 1
            raise psycopg.OperationalError("connection refused (a test's stand-in for a server that is down)")
        return psycopg.connect(dsn, autocommit=True)

    session = Session("the test's server", connect, reconnect=Reconnect(attempts=2, first_delay=0.001, max_delay=0.002),
                      call_timeout=None, conn=psycopg.connect(dsn, autocommit=True))
    return session, seen


def test_a_patient_session_reconnects_past_its_try_count_saying_it_waits_for_the_database(dsn, caplog) -> None:
    session, seen = _refusing_session(dsn, refusals=40)  # 20 times the try count
    session.patience = Patience()
    with caplog.at_level("WARNING", logger="fencepost.impl.postgres.session"):
        assert session.run("SELECT 1", None, lambda c: c.fetchone()[0], Effect.READ, "probe", {}) == 1  # alive: no wait
        session.replace("a test lost it")
    assert session.reconnects == 1 and session.outage is None
    assert seen[0] is None  # nothing failed yet
    assert seen[1].startswith("waiting for the database: the test's server unreachable for ")
    assert "(1 try so far; last: connection refused" in seen[1] and "(40 tries so far;" in seen[-1]
    said = [r.getMessage() for r in caplog.records]
    assert said[0].startswith("waiting for the database: the test's server unreachable") and "still trying" in said[0]
    assert said[-1].startswith("the database is back: the test's server reconnected after 41 tries in ")
    session.close()


def test_a_patient_session_gives_up_past_its_limit_and_stops_when_told(dsn) -> None:
    session, _ = _refusing_session(dsn, refusals=10**9)
    session.patience = Patience(limit=0.05)
    with pytest.raises(psycopg.OperationalError, match=r"^cannot connect to the test's server: connection refused .*"
                       r"gave up waiting for the database after \d+ tries in [\d.]+ s, its outage limit being 0.05 s"):
        session.replace("a test lost it")
    session.patience = stopped = Patience()
    stopped.stopping.set()
    with pytest.raises(StoppedWaiting, match=r"^stopped waiting for the test's server after [\d.]+ s: told to stop"):
        session.run("SELECT 1", None, lambda c: c.fetchone()[0], Effect.READ, "probe", {})  # the connection is gone
    assert session.outage is None
    with pytest.raises(ValueError, match=r"^outage limit must be None or a number of seconds > 0: 0$"):
        Patience(limit=0)


def test_a_patient_session_whose_answers_keep_being_lost_gives_up_past_its_limit(dsn) -> None:
    """Every new connection comes at once and loses its answer: the outage limit still bounds the call."""
    session, _ = _refusing_session(dsn, refusals=0)
    session.patience = patience = Patience(limit=0.2)
    lost_every_time = "SELECT pg_terminate_backend(pg_backend_pid())"  # the server ends the backend that asks
    thread, result = in_thread(lambda: session.run(lost_every_time, None, lambda c: c.fetchone(), Effect.READ, "probe", {}))
    thread.join(BOUND)
    patience.stopping.set()  # without a bound the call would reconnect for ever: end it, so the test ends
    thread.join(BOUND)
    assert len(result) == 1 and isinstance(result[0], psycopg.OperationalError), result
    assert re.match(r"^lost the connection to the test's server \(connection lost: .*\); gave up waiting for the database "
                    r"after \d+ lost answers in a row in [\d.]+ s, its outage limit being 0.2 s$", str(result[0])), result[0]
    session.close()


# ---------------------------------------------------------------- a cluster of our own


class _Gate:
    """Holds first attempts of the outage test's tasks until opened, counting how many it holds."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.entered = 0
        self.changed = threading.Condition()

    def hold(self, ctx) -> str:
        if ctx.attempt == 1:
            with self.changed:
                self.entered += 1
                self.changed.notify_all()
            assert self.opened.wait(OUTAGE_SECONDS * 4), "the outage test never opened the gate"
        return f"task {ctx.task_id} attempt {ctx.attempt}"

    def wait_for(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.entered >= count, BOUND), f"{self.entered} of {count} held"


#: The outage test's gate; a module attribute, so the shared runners' registry can name ``_gated``.
_GATE = _Gate()


def _gated(ctx) -> str:
    return _GATE.hold(ctx)


class _Said(logging.Handler):
    """Events set when the session's log says a runner's thread waits for the database, or that it is back."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.waiting: dict[str, threading.Event] = {}
        self.back = threading.Event()
        self.guard = threading.Lock()  # not ``lock``: that is the Handler's own, held around ``emit``

    def waits(self, prefix: str) -> threading.Event:
        with self.guard:
            return self.waiting.setdefault(prefix, threading.Event())

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("waiting for the database"):
            thread = record.threadName  # fencepost-runner-w1, -expiry (alone); fencepost-runner-b-w1, -b-expiry
            self.waits(thread.split("-")[2] if thread.startswith(("fencepost-runner-a-", "fencepost-runner-b-")) else "alone").set()
        elif message.startswith("the database is back"):
            self.back.set()


def ride_an_outage(cluster: Cluster, seconds: float) -> dict:
    """Runners through ``seconds`` without their server; every task must end succeeded. Returns what was seen.

    A lone ``Runner`` over a ``PostgresScheduler`` (its own tasks), and two
    shared runners on another schema: ``a``, lost during the outage (stopped
    while its reports wait for the server, so the tasks it held stay running
    in the database), and ``b``, which rides it through. The server is
    stopped while every slot holds a task's first attempt at a gate; the gate
    opens once the log says both survivors wait for the database, so their
    reports wait too; the server starts again ``seconds`` after it stopped.
    Every wait is bounded; the only sleep is the outage itself.
    """
    global _GATE
    _GATE = gate = _Gate()
    said = _Said()
    logger = logging.getLogger("fencepost.impl.postgres.session")
    logger.addHandler(said)
    alone_scheduler = PostgresScheduler(cluster.dsn, schema="outage_alone")
    shared_parts = [(PostgresScheduler(cluster.dsn, schema="outage_shared"), PostgresPayloads(cluster.dsn, schema="outage_shared"),
                     DatabaseClock(cluster.dsn, schema="outage_shared")) for _ in range(2)]
    alone = Runner(workers=OUTAGE_WORKERS, scheduler=alone_scheduler)
    lost, survivor = (Runner(name=name, workers=OUTAGE_WORKERS, scheduler=scheduler, payloads=payloads, clock=clock,
                             lease=SHARED_LEASE, functions={"gated": _gated})
                      for name, (scheduler, payloads, clock) in zip("ab", shared_parts))
    seen: dict = {}
    try:
        for runner in (alone, lost, survivor):
            runner.start()
        mine = [alone.submit(functools.partial(gate.hold)) for _ in range(ALONE_TASKS)]
        shared = [lost.submit(_gated) for _ in range(SHARED_TASKS)]
        gate.wait_for(3 * OUTAGE_WORKERS)  # every slot of every runner holds a first attempt
        held_by_lost = [t for t in shared if lost.task(t).worker is not None and lost.task(t).worker.startswith("a-")]
        cluster.stop("immediate")
        stopped = time.monotonic()
        try:
            assert said.waits("b").wait(BOUND), "the shared runner never said it waits"
            gate.opened.set()  # the held functions return: every report now waits for the server
            assert said.waits("alone").wait(BOUND), "the lone runner never said it waits"
            seen["alone"], seen["survivor"] = alone.status(), survivor.status()
            lost.stop(BOUND)  # lost in the outage: its reports are never made, its leases expire in the database
            seen["lost"] = lost.status()
            time.sleep(max(0.0, seconds - (time.monotonic() - stopped)))  # the outage itself
        finally:
            cluster.start()
        seen["down"] = time.monotonic() - stopped
        seen["alone_views"] = [alone.wait(t, BOUND + seconds) for t in mine]
        seen["shared_views"] = [survivor.wait(t, BOUND + seconds) for t in shared]
        seen["resumed"] = time.monotonic() - stopped - seen["down"]
        seen["back"] = said.back.is_set()
        seen["after"] = (alone.status(), survivor.status())
        seen["held_by_lost"] = held_by_lost
        seen["results"] = {t: survivor.result(t) for t in held_by_lost}
    finally:
        gate.opened.set()
        logger.removeHandler(said)
        for runner in (alone, lost, survivor):
            runner.stop(BOUND)
        for thing in (alone_scheduler, *(part for parts in shared_parts for part in parts)):
            thing.close()
    return seen




@pytest.fixture(scope="module")
def cluster():
    why = unavailable()
    if why is not None:
        pytest.skip(why)
    with Cluster.create() as made:
        yield made


def test_a_server_that_stays_away_gives_up_in_one_line_and_the_next_call_after_it_is_back_succeeds(cluster) -> None:
    secret_dsn = cluster.dsn.replace("fencepost@", "fencepost:hunter2@")
    with PostgresScheduler(secret_dsn, schema="giveup", reconnect=Reconnect(attempts=2, first_delay=0.01)) as s:
        task = s.submit(key="before")
        cluster.stop("immediate")
        try:
            with pytest.raises(psycopg.OperationalError) as caught:
                s.task(task)
            with pytest.raises(psycopg.OperationalError, match="gave up reconnecting"):
                s.submit(key="during")  # never sent (the connection was known dead): nothing is unknown
        finally:
            cluster.start()
        message = str(caught.value)
        assert "\n" not in message and "hunter2" not in message
        assert f"dsn='{secret_dsn.replace('hunter2', '***')}'" in message and "gave up reconnecting after 2 tries" in message
        assert s.task(task).status is Status.PENDING  # not dead after giving up
        assert s.submit(key="before") == task


def test_the_fault_suite_keeps_every_property(cluster) -> None:
    report = run_faults(postgres_factory, times=TIMES, clients=3, cluster=cluster, seed=23, min_rounds=MIN_ROUNDS)
    assert report.injected == dict.fromkeys(FAULTS, TIMES)
    assert report.ok, "\n".join(table(report))
    assert report.calls > 500 and report.tasks > 50
    assert [c.name for c in report.checks] == ["acknowledged calls kept", "one accepted completion per task",
                                               "leases never overlap", "every task accounted for", "linearizable"]


def test_shared_runners_ride_through_every_fault(cluster) -> None:
    schema = "runners"
    before = dict(cluster.injected)
    results = run_runners(cluster.dsn, schema, RUNNERS, RUNNER_TASKS, seed=23,
                          faults=lambda: inject_faults(cluster, FAULTS, TIMES, seed=23))
    injected = {f: cluster.injected[f] - before[f] for f in FAULTS}
    with PostgresScheduler(cluster.dsn, schema=schema) as s:
        now, views = s.snapshot()
    report = judge(merged_events(results), views, injected)
    assert injected == dict.fromkeys(FAULTS, TIMES)
    assert report.ok, "\n".join(table(report))
    assert all(v.status in FINAL_STATUSES for v in views), [v for v in views if v.status not in FINAL_STATUSES][:3]
    assert len(views) >= sum(r["submitted"] for r in results) > RUNNERS * RUNNER_TASKS


def test_runners_finish_every_task_through_a_30_s_outage_of_their_server(cluster) -> None:
    """Issue 34: a Runner over PostgreSQL waits for its server, says so, and finishes every task; a
    shared runner also finishes the tasks a runner lost in the outage left running in the database."""
    seen = ride_an_outage(cluster, OUTAGE_SECONDS)
    for status in (seen["alone"], seen["survivor"]):
        assert status.state == "waiting for the database", status
        assert status.waiting and all(line.startswith("waiting for the database: PostgreSQL at dsn=") for line in status.waiting)
        assert f":{cluster.port}/" in status.waiting[0] and "unreachable for " in status.waiting[0]
    assert seen["lost"].state == "stopped"  # stopped quietly: its waits ended, no error
    assert seen["down"] >= OUTAGE_SECONDS
    assert [v.status for v in seen["alone_views"]] == [Status.SUCCEEDED] * ALONE_TASKS
    assert [v.status for v in seen["shared_views"]] == [Status.SUCCEEDED] * SHARED_TASKS
    assert seen["back"], "the log never said the database is back"
    assert all(status.state == "running" and status.waiting == () for status in seen["after"]), seen["after"]
    assert len(seen["held_by_lost"]) == OUTAGE_WORKERS  # the lost runner held tasks ...
    for task_id, result in seen["results"].items():  # ... which the survivor ran again, after their leases
        assert result.startswith(f"task {task_id} attempt ") and not result.endswith("attempt 1"), result


def test_the_database_clock_is_read_again_after_its_backend_is_ended(dsn, schema) -> None:
    from fencepost.impl.postgres.scheduler import DatabaseClock

    clock = DatabaseClock(dsn, schema=schema)
    try:
        before = clock.now
        _terminate(dsn, clock._session.conn.info.backend_pid)
        assert clock.now >= before and clock._session.reconnects == 1
    finally:
        clock.close()


class _FakeConn:
    """What the watchdog's cut reads from a connection: its socket's descriptor."""

    def __init__(self, sock: socket.socket) -> None:
        self.pgconn = types.SimpleNamespace(socket=sock.fileno())


def test_the_watchdog_sleeping_until_a_later_deadline_is_woken_for_an_earlier_one() -> None:
    """A call's arm wakes the watchdog's thread only for a deadline earlier than the one it sleeps until,
    and such a call is still cut on time, the other left alone (issue 33: no wake-up per call)."""
    watchdog = session_module._Watchdog()
    late, late_peer = socket.socketpair()
    soon, soon_peer = socket.socketpair()
    try:
        long_ticket = watchdog.arm(_FakeConn(late), 60.0)
        deadline = time.monotonic() + BOUND
        while watchdog._wake_at is None:  # until the thread has gone to sleep until that deadline
            assert time.monotonic() < deadline, "the watchdog thread never went to sleep"
            time.sleep(0.001)  # polling the thread's own state, bounded above
        notified: list[None] = []
        notify = watchdog._cond.notify
        watchdog._cond.notify = lambda *n: (notified.append(None), notify(*n))[1]
        watchdog.disarm(long_ticket)  # a call that answered; the next one's deadline is later
        long_ticket = watchdog.arm(_FakeConn(late), 60.0)
        assert notified == []  # nobody woken: the thread wakes before that deadline anyway
        short_ticket = watchdog.arm(_FakeConn(soon), 0.05)
        assert len(notified) == 1
        soon_peer.settimeout(BOUND)
        assert soon_peer.recv(1) == b""  # its socket was shut down under it: the reader wakes at once
        assert watchdog.disarm(short_ticket) and not watchdog.disarm(long_ticket)
        late_peer.setblocking(False)
        with pytest.raises(BlockingIOError):  # nothing to read and not shut down: left alone
            late_peer.recv(1)
    finally:
        for sock in (late, late_peer, soon, soon_peer):
            sock.close()
