"""The PostgreSQL scheduler under network faults, made by a TCP proxy the tests control (issue 34).

Every test talks to the machine's server (``FENCEPOST_PG_DSN``) through
``pg_proxy.Proxy`` and does one fault to the link, at a moment the test picks
(the proxy's ``arm`` acts on the next request sent, so "mid-call" is certain,
not timed):

* drop (both sides closed): between calls, the next call reconnects unseen;
  a request dropped on the way raises ``OutcomeUnknown`` and took no effect;
* delay: calls under latency answer as the contract says; an answer held past
  ``call_timeout`` raises ``OutcomeUnknown`` once the watchdog cuts the
  connection, and the late answer is never taken for another call's;
* half-open (nothing forwarded, nothing closed): a call is cut at
  ``call_timeout`` and a reconnect gives up at ``connect_timeout`` -- bounded,
  one line each -- and the request held in the network is delivered when it
  heals, which is why the call's outcome was unknown;
* cut after commit (the server committed, its answer never arrives):
  ``OutcomeUnknown`` for a call that must not be asked again, the same task for
  a keyed submit asked again, and the recorded history is linearizable whether
  the unknown call took effect or not. Nothing acknowledged is lost.

Each test takes seconds; none sleeps to wait (events and bounded waits).
"""

from __future__ import annotations

import select
import time

from dataclasses import replace

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

import pg_server
from pg_server import in_thread
from fencepost.impl.postgres.scheduler import PostgresScheduler, drop_schema, temporary_schema_name
from fencepost.impl.postgres.session import Reconnect
from fencepost.spec.checkers.linearize import check_history
from fencepost.spec.formats.history import HistoryLog, dumps_event, loads_history
from fencepost.spec.formats.values import to_json
from fencepost.spec.protocol import Lease, OutcomeUnknown, Status
from pg_proxy import Proxy

#: Real seconds any wait in these tests may take before it fails instead of hanging.
BOUND = 30.0
#: The call timeout of the tests that wait for it (the watchdog cuts one second past it).
CALL_TIMEOUT = 1.0
#: One quick reconnect try, so a fault that outlasts it is given up on in a few seconds.
ONE_TRY = Reconnect(attempts=1, first_delay=0.01, connect_timeout=2)


@pytest.fixture
def dsn() -> str:
    return pg_server.require_server()


@pytest.fixture
def schema(dsn):
    name = temporary_schema_name("network")
    yield name
    drop_schema(dsn, name)


@pytest.fixture
def proxy(dsn):
    with Proxy(int(conninfo_to_dict(dsn).get("port") or 5432)) as made:
        yield made


@pytest.fixture
def impatient(dsn, schema, proxy):
    """(log, scheduler, its recorded client, a task): a short call timeout, one reconnect try, worker w with 1 slot."""
    log = HistoryLog()
    s, client = _recorded(dsn, schema, proxy, log, call_timeout=CALL_TIMEOUT, reconnect=ONE_TRY)
    with s:
        client.add_worker("w", 1)
        yield log, s, client, client.submit()


def _finished(fn):
    """``fn()``'s result or exception, failing the test if it has none within ``BOUND``: a hang is a failure."""
    thread, result = in_thread(fn)
    thread.join(BOUND)
    assert not thread.is_alive(), f"the call had not returned after {BOUND} s"
    return result[0]


def _cut_by_the_watchdog(call) -> None:
    """``call()`` gets no answer, so its connection is cut past ``CALL_TIMEOUT`` and it raises ``OutcomeUnknown``."""
    error = _finished(call)
    assert isinstance(error, OutcomeUnknown), error
    assert str(error).endswith(f"no answer within call_timeout={CALL_TIMEOUT} s (the connection was cut)")


def _recorded(dsn: str, schema: str, proxy: Proxy, log: HistoryLog, **options) -> tuple[PostgresScheduler, object]:
    scheduler = PostgresScheduler(proxy.dsn(dsn), schema=schema, **options)
    return scheduler, log.recorder(scheduler, "client")


def _linearizable(log: HistoryLog) -> bool | None:
    text = "".join(dumps_event(e) + "\n" for e in log.events)
    return check_history(loads_history(text, "network faults")).linearizable


def _wait_until_running(dsn: str, schema: str, task: int) -> None:
    """Until the server's own table says ``task`` runs (polled on a connection of the test's, bounded)."""
    query = sql.SQL("SELECT status FROM {}.tasks WHERE id = %s").format(sql.Identifier(schema))
    deadline = time.monotonic() + BOUND
    with psycopg.connect(dsn, autocommit=True) as admin:
        while admin.execute(query, (task,)).fetchone()[0] != "running":
            assert time.monotonic() < deadline, f"task {task} not running {BOUND} s after the link healed"
            time.sleep(0.005)  # polling the server's own view, bounded above


# ---------------------------------------------------------------- drop


def test_a_connection_dropped_between_calls_is_replaced_unseen(dsn, schema, proxy) -> None:
    with PostgresScheduler(proxy.dsn(dsn), schema=schema) as s:
        s.add_worker("w", 1)
        task = s.submit()
        assert proxy.drop() == 1
        readable, _, _ = select.select([s._session.conn.pgconn.socket], [], [], BOUND)  # the end of stream has arrived
        assert readable
        lease = s.dispatch("w", 1, 5)  # never sent on the dropped connection: nothing is unknown
        assert lease is not None and (lease.task_id, lease.token) == (task, 1)
        assert s._session.reconnects == 1 and proxy.accepted == 2


def test_a_request_dropped_on_the_way_raises_outcome_unknown_and_took_no_effect(dsn, schema, proxy) -> None:
    log = HistoryLog()
    s, client = _recorded(dsn, schema, proxy, log)
    with s:
        client.add_worker("w", 1)
        task = client.submit()
        proxy.arm("drop request")
        error = _finished(lambda: client.dispatch("w", 1, 5))
        assert proxy.fired.is_set()
        assert isinstance(error, OutcomeUnknown), error
        assert str(error).startswith("dispatch(worker='w', now=1, duration=5): outcome unknown, it may or may not have taken effect: connection lost")
        view = client.task(task)  # asked on a new connection
        assert (view.status, view.attempts) == (Status.PENDING, 0)  # the server never saw it
        lease = client.dispatch("w", 2, 5)
        assert (lease.task_id, lease.token) == (task, 1)  # no token was spent on the lost call
        proxy.arm("drop request")
        again = _finished(lambda: client.submit(key="k"))  # keyed: asked again on a new connection
        assert again == task + 1 and proxy.fired.is_set()
        assert client.submit(key="k") == again
    assert _linearizable(log) is True  # the unknown dispatch placed nowhere


# ---------------------------------------------------------------- cut after commit


def test_a_dispatch_cut_after_its_commit_raises_outcome_unknown_and_the_history_accepts_it(dsn, schema, proxy) -> None:
    log = HistoryLog()
    s, client = _recorded(dsn, schema, proxy, log)
    with s:
        client.add_worker("w", 1)
        first, second = client.submit(), client.submit()
        proxy.arm("cut after commit")
        error = _finished(lambda: client.dispatch("w", 1, 5))
        assert proxy.fired.is_set() and isinstance(error, OutcomeUnknown), error
        view = client.task(first)
        assert (view.status, view.worker, view.token) == (Status.RUNNING, "w", 1)  # it took effect, unseen
        assert client.dispatch("w", 1, 5) is None  # the worker's one slot is held by the lost lease
        assert client.task(second).status is Status.PENDING
        client.advance(6)  # the lost lease ends at its expires_at, as the contract promises
        lease = client.dispatch("w", 6, 5)
        assert (lease.task_id, lease.token) == (first, 2)  # the lost lease was the first: token 1
    assert _linearizable(log) is True  # the unknown dispatch placed where it took effect


def test_a_completion_cut_after_its_commit_is_final_and_nothing_acknowledged_is_lost(dsn, schema, proxy) -> None:
    log = HistoryLog()
    s, client = _recorded(dsn, schema, proxy, log)
    with s:
        client.add_worker("w", 2)
        tasks = [client.submit(key=f"k{n}") for n in range(3)]
        leases = [client.dispatch("w", 1, 5) for _ in range(2)]
        assert client.complete(leases[0].task_id, leases[0].token, 2).accepted
        proxy.arm("cut after commit")
        error = _finished(lambda: client.complete(leases[1].task_id, leases[1].token, 2))
        assert proxy.fired.is_set() and isinstance(error, OutcomeUnknown), error
        # what a caller does with an unknown completion (docs/faults.md): read the task
        assert client.task(leases[1].task_id).status is Status.SUCCEEDED
        outcome = client.complete(leases[1].task_id, leases[1].token, 3)
        assert (outcome.accepted, outcome.reason) == (False, "already_final")  # at most one accepted
        proxy.arm("cut after commit")
        assert _finished(lambda: client.submit(key="k3")) == tasks[-1] + 1  # asked again: the first run's task
        assert proxy.fired.is_set()
        now, views = s.snapshot()
    assert len(views) == 4  # one task for the keyed submit that was cut, not two
    assert [v.status for v in views] == [Status.SUCCEEDED, Status.SUCCEEDED, Status.PENDING, Status.PENDING]
    assert _linearizable(log) is True


def test_either_outcome_of_an_unknown_call_is_linearizable_and_a_contradicting_answer_is_not(dsn, schema, proxy) -> None:
    """The checker lets an ``info`` call take effect or not, but no later answer may contradict what was acknowledged."""
    verdicts, logs = {}, {}
    for fault in ("drop request", "cut after commit"):
        logs[fault] = log = HistoryLog()
        s, client = _recorded(dsn, f"{schema}_{fault[0]}", proxy, log)
        try:
            client.add_worker("w", 1)
            task = client.submit()
            proxy.arm(fault)
            assert isinstance(_finished(lambda: client.dispatch("w", 1, 5)), OutcomeUnknown)
            later = client.dispatch("w", 2, 5)  # a lease if the lost one was never made; None if it holds the slot
            verdicts[fault] = (later and later.token, _linearizable(log))
        finally:
            s.close()
            drop_schema(dsn, f"{schema}_{fault[0]}")
    assert verdicts == {"drop request": (1, True), "cut after commit": (None, True)}
    # the dropped request's history, had its dispatch been acknowledged: the later lease then contradicts it
    lease = to_json("dispatch", Lease(task, "w", 1, 1, 6))
    forged = [replace(e, type="ok", result=lease) if e.type == "info" else e for e in logs["drop request"].events]
    text = "".join(dumps_event(e) + "\n" for e in forged)
    assert check_history(loads_history(text, "forged")).linearizable is False


# ---------------------------------------------------------------- delay


def test_calls_under_latency_answer_as_the_contract_says(dsn, schema, proxy) -> None:
    proxy.latency = 0.02  # each chunk, each way
    log = HistoryLog()
    s, client = _recorded(dsn, schema, proxy, log, call_timeout=CALL_TIMEOUT * 10)
    with s:
        client.add_worker("w", 2)
        tasks = [client.submit(priority=n) for n in range(3)]
        leases = [client.dispatch("w", 1, 3) for _ in range(2)]
        assert [lease.task_id for lease in leases] == [tasks[2], tasks[1]]  # priority first
        assert client.complete(leases[0].task_id, leases[0].token, 2).accepted
        assert client.complete(leases[1].task_id, leases[1].token, 4).reason == "lease_expired"
        assert s._session.reconnects == 0  # slow is not lost
    assert _linearizable(log) is True


def test_an_answer_held_past_call_timeout_raises_outcome_unknown_and_is_never_taken_for_another(impatient, proxy) -> None:
    log, s, client, task = impatient
    lease = client.dispatch("w", 1, 5)
    proxy.hold("down")  # the server answers; the answer waits in the network
    _cut_by_the_watchdog(lambda: client.complete(task, lease.token, 2))
    proxy.release("down")  # the late answer goes to a connection the client has cut
    assert s._session.reconnects == 0  # cut, not yet replaced: the next call does that
    view = client.task(task)  # its own answer, on a new connection
    assert (view.id, view.status) == (task, Status.SUCCEEDED)  # the request went through; only its answer was late
    assert s._session.reconnects == 1
    assert _linearizable(log) is True


# ---------------------------------------------------------------- half-open


def test_a_half_open_link_gives_bounded_one_line_errors_and_delivers_the_held_request_when_it_heals(dsn, schema, impatient, proxy) -> None:
    log, s, client, task = impatient
    proxy.partition()  # from here nothing is forwarded and nothing is closed
    _cut_by_the_watchdog(lambda: client.dispatch("w", 1, 5))
    error = _finished(lambda: s.task(task))  # a read (unrecorded): not in doubt, but no connection can be made
    assert isinstance(error, psycopg.OperationalError) and not isinstance(error, OutcomeUnknown), error
    assert "\n" not in str(error) and "gave up reconnecting after 1 tries" in str(error)
    assert f"port={proxy.port}" in str(error)
    proxy.heal()  # the dispatch the network held reaches the server now, after the client gave up on it
    _wait_until_running(dsn, schema, task)
    view = client.task(task)
    assert (view.status, view.worker, view.token) == (Status.RUNNING, "w", 1)
    assert _linearizable(log) is True  # the unknown dispatch may take effect any time after it was made: late too
