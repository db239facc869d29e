"""Failover: a streaming standby promoted mid-run (issue 34 item 4; docs/faults.md).

Each test starts a private primary (``impl/faults/cluster.py``) and a standby
made from it with ``pg_basebackup -R``, whose WAL comes through a
``pg_proxy.Proxy`` (so the test can hold the replication link); the clients
reach the primary through another proxy, which the failover points at the
promoted standby (as a virtual IP or a DNS name would move). Then:

* synchronous replication (``synchronous_standby_names``): clients of the fault
  suite run throughout, the primary is killed (``pg_ctl stop -m immediate``) and
  the standby promoted mid-run; every checker of the fault suite holds on the
  whole history and the promoted server's tasks: nothing acknowledged is lost;
* synchronous, the replication link held: no call is acknowledged, not even a
  read of what a call waiting for the standby wrote;
* asynchronous replication: the replication link is held (the standby falls
  behind for certain) while one client goes on; after the failover,
  ``lost_in_failover`` names exactly the calls made after the link was held
  that changed the state, and the fault suite's checkers report the loss.

Skipped, saying why, without the server binaries. Every wait is bounded;
nothing sleeps to wait.
"""

from __future__ import annotations

import os
import pwd
import random
import tempfile
import threading
import time

import psycopg
import pytest

from fencepost.impl.faults.cluster import Cluster, unavailable
from fencepost.impl.faults.failover import lost_in_failover
from fencepost.impl.faults.inject import _Client, judge, pair, table
from fencepost.impl.postgres.scheduler import PostgresScheduler
from fencepost.impl.postgres.session import Reconnect
from fencepost.spec import model
from fencepost.spec.protocol import OutcomeUnknown, Status
from pg_proxy import Proxy
from pg_server import in_thread

#: Real seconds any wait may take before the test fails instead of hanging.
BOUND = 60.0
#: The standby's application_name, which synchronous_standby_names names.
STANDBY = "standby"
#: Clients of the synchronous run, and the steps each makes before the failover and after it.
CLIENTS, STEPS = 3, 40
#: Steps of the asynchronous run's client while the standby keeps up, then while it is cut off.
KEPT_STEPS, CUT_STEPS = 30, 20
#: The clients' call timeout: a call whose server died is cut after it (plus the watchdog's second).
CALL_TIMEOUT = 1.0


@pytest.fixture
def clusters():
    """(primary, standby, the replication proxy): a primary and a streaming standby fed through a proxy."""
    why = unavailable(("initdb", "pg_ctl", "pg_basebackup"))
    if why is not None:
        pytest.skip(why)
    with Cluster.create() as primary:
        with Proxy(primary.port) as replication:
            standby = primary.replica(via_port=replication.port, name=STANDBY)
            try:
                yield primary, standby, replication
            finally:
                standby.destroy()


@pytest.mark.parametrize("making", ["create", "replica"])
def test_a_cluster_that_cannot_be_made_leaves_no_folder_behind(making: str, tmp_path, monkeypatch) -> None:
    """A failure before the server's own tools run (the folder cannot be handed to its user) removes the folder."""
    from fencepost.impl.faults import cluster as cluster_module

    def refuse(*args: object) -> None:
        raise PermissionError("the test refuses to hand the folder over")

    me = pwd.getpwuid(os.getuid())
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where mkdtemp makes the cluster's folder
    monkeypatch.setattr(cluster_module, "unavailable", lambda programs=(): None)  # no server binaries are run
    monkeypatch.setattr(cluster_module, "_server_user", lambda: me)
    monkeypatch.setattr(cluster_module.os, "chown", refuse)
    with pytest.raises(PermissionError, match="hand the folder over"):
        Cluster.create() if making == "create" else Cluster(tmp_path / "primary", 1, me).replica()
    assert list(tmp_path.iterdir()) == []


def _scheduler(dsn: str) -> PostgresScheduler:
    return PostgresScheduler(dsn, schema="failover", call_timeout=CALL_TIMEOUT, reconnect=Reconnect(attempts=20))


def _until(what: str, done) -> None:
    """Until ``done()`` is true, polling a server's own view; fails past ``BOUND``."""
    deadline = time.monotonic() + BOUND
    while not done():
        assert time.monotonic() < deadline, f"{what}: not within {BOUND} s"
        time.sleep(0.01)  # polling a server's view, bounded above


def _one(dsn: str, query: str) -> object:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        return conn.execute(query).fetchone()


def _streaming(primary: Cluster, sync: str) -> None:
    """Until the standby streams from the primary with ``sync_state`` ``sync`` ("sync" or "async")."""
    _until(f"the standby streaming, {sync}", lambda: _one(
        primary.dsn, f"SELECT count(*) FROM pg_stat_replication WHERE application_name = '{STANDBY}'"
                     f" AND state = 'streaming' AND sync_state = '{sync}'")[0] == 1)


def _caught_up(primary: Cluster, standby: Cluster) -> None:
    """Until the standby has replayed everything the primary has written so far."""
    (target,) = _one(primary.dsn, "SELECT pg_current_wal_lsn()::text")
    _until("the standby caught up", lambda: _one(
        standby.dsn, f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn")[0])


def _waiting_for_the_standby(primary: Cluster) -> int:
    """How many of the primary's backends wait for the synchronous standby to confirm a commit."""
    return _one(primary.dsn, "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")[0]


def _fail_over(primary: Cluster, standby: Cluster, clients: Proxy) -> None:
    """Kill the primary, promote the standby, and send the clients' new connections to it."""
    primary.stop("immediate")
    standby.promote()
    clients.retarget(standby.port)
    clients.drop()  # their connections to the dead primary are gone anyway


class _Steps:
    """A fault-suite client in a thread, stepping until told to stop; ``reached(n)`` waits until it has made n steps."""

    def __init__(self, dsn: str, name: str, seed: int) -> None:
        self.client = _Client(_scheduler(dsn), name, random.Random(f"{seed}:{name}"))
        self.client.register()
        self.steps = 0
        self.stop = threading.Event()
        self.changed = threading.Condition()
        self.thread, self.result = in_thread(self._run)

    def _run(self) -> None:
        while not self.stop.is_set():
            self.client.step()
            with self.changed:
                self.steps += 1
                self.changed.notify_all()

    def reached(self, steps: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.steps >= steps or self.result, BOUND), f"{self.client.name}: {self.steps} steps"
        assert not self.result, self.result  # the thread ended early: its exception

    def end(self) -> list[dict]:
        self.stop.set()
        self.thread.join(BOUND)
        assert not self.thread.is_alive() and self.result == [None], self.result
        self.client.s.close()
        return self.client.events


def test_synchronous_replication_loses_nothing_acknowledged_when_a_standby_is_promoted_mid_run(clusters) -> None:
    primary, standby, _ = clusters
    primary.synchronous(STANDBY)
    _streaming(primary, "sync")
    with Proxy(primary.port) as proxy:
        clients = [_Steps(proxy.dsn(primary.dsn), f"c{n}", seed=34) for n in range(CLIENTS)]
        try:
            for client in clients:
                client.reached(STEPS)
            _fail_over(primary, standby, proxy)
            at_failover = [client.steps for client in clients]
            for client, steps in zip(clients, at_failover):
                client.reached(steps + STEPS)
        finally:
            events = sorted((e for client in clients for e in client.end()), key=lambda e: e["time"])
    with _scheduler(standby.dsn) as promoted:
        _, views = promoted.snapshot()
    report = judge(events, views, {"failover": 1})
    assert report.ok, "\n".join(table(report))
    assert report.calls > CLIENTS * STEPS and report.tasks > 10
    assert sum(1 for c in pair(events) if c["op"] == "submit" and c["kind"] == "ok") > 10


def test_synchronous_replication_acknowledges_nothing_the_standby_does_not_hold(clusters) -> None:
    """A dispatch waiting for the standby is not acknowledged, and neither is a read of what it wrote."""
    primary, standby, replication = clusters
    primary.synchronous(STANDBY)
    _streaming(primary, "sync")
    with Proxy(primary.port) as proxy, _scheduler(proxy.dsn(primary.dsn)) as writer, \
            _scheduler(proxy.dsn(primary.dsn)) as reader:
        writer.add_worker("w", 1)
        task = writer.submit()
        replication.hold("down")  # from here the standby gets no WAL and confirms nothing
        thread, result = in_thread(lambda: writer.dispatch("w", 1, 5))
        _until("the dispatch answered or waiting for the standby", lambda: result or _waiting_for_the_standby(primary) >= 1)
        seen = in_thread(lambda: reader.task(task).status)
        _until("the read answered or waiting for the standby", lambda: seen[1] or _waiting_for_the_standby(primary) >= 2)
        _fail_over(primary, standby, proxy)
        replication.release("down")
        for waiting, answer in ((thread, result), seen):
            waiting.join(BOUND)
            assert not waiting.is_alive()
        (lost,) = result
        assert isinstance(lost, OutcomeUnknown), lost  # never acknowledged
        (read,) = seen[1]
        # the read must not report the lease the failover undid: it fails, or it reads the promoted server
        assert read is not Status.RUNNING, "a read acknowledged a dispatch the standby never had"
        view = reader.task(task)
        assert (view.status, view.attempts) == (Status.PENDING, 0)  # the promoted server never saw the dispatch


def test_asynchronous_replication_loses_exactly_the_calls_the_standby_never_got(clusters) -> None:
    primary, standby, replication = clusters
    _streaming(primary, "async")
    with Proxy(primary.port) as proxy:
        client = _Client(_scheduler(proxy.dsn(primary.dsn)), "c0", random.Random("34:async"))
        client.register()
        for _ in range(KEPT_STEPS):
            client.step()
        _caught_up(primary, standby)
        replication.hold("down")  # the standby gets no WAL from here: every later commit is only on the primary
        cut_at = len(pair(client.events))
        for _ in range(CUT_STEPS):
            client.step()
        client.s.close()
        _fail_over(primary, standby, proxy)
    calls = pair(client.events)
    assert all(c["kind"] != "info" for c in calls)  # the primary was up throughout: every call acknowledged
    with _scheduler(standby.dsn) as promoted:
        _, views = promoted.snapshot()
        report = judge(client.events, views, {"failover": 1})
        loss = lost_in_failover(client.events, promoted)  # its probe changes the scheduler: after the snapshot
    assert loss.kept is not None, loss.lines()
    assert loss.lost == [c for c in calls[cut_at:] if _changes_state(calls, c)], "\n".join(loss.lines())
    assert loss.lost and loss.kept >= cut_at
    # the fault suite's checkers see the loss too (the history ends before the failover, so it is
    # still linearizable: what contradicts it is the promoted server's tasks)
    assert [c.name for c in report.checks if not c.held] == ["acknowledged calls kept", "every task accounted for"], \
        "\n".join(table(report))
    print("\n".join(loss.lines()))


def _changes_state(calls: list[dict], call: dict) -> bool:
    """Whether ``call`` changed the model's state, replaying the history's calls up to it."""
    state = model.initial()
    for c in calls:
        try:
            after = model.apply(state, c["op"], dict(c["args"]))[0]
        except ValueError:
            after = state
        if c is call:
            return after != state
        state = after
    raise AssertionError("the call is not in the history")
