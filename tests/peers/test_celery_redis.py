"""Celery's Redis broker (kombu's Redis transport, late acknowledgement) on the real clock: the pinned verdicts.

The delivery tag a message is published with is the one every redelivery
carries, and the only handle ``basic_ack`` takes: ``fencepost check --clock
real`` must find a second lease with the first one's token, the shipped
scenario must diverge at the redelivery, and a zombie's ack (kombu's, and
Celery's worker ``Request.acknowledge``) must remove the new holder's
``unacked`` entry. Every verdict holds whatever the timing: the redelivery
comes two ticks after the visibility timeout, and the zombie's ack a tick
after the redelivery.

Needs the Redis server (``FENCEPOST_REDIS_URL``, default 127.0.0.1:6379) and
kombu and celery (the ``peers`` extra); every key is under the scheduler's own
``fp:celery:PID:N:`` prefix, deleted at the end.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys

import pytest

from fencepost.cli import main
from fencepost.impl.peers import celery_redis
from fencepost.spec import realclock
from fencepost.spec.checkers.realtime import run_timed_calls, ticked, TimedScheduler, Timing
from fencepost.spec.variants import Variants
from peers_env import model_disagreements, require, scenario_and_calls, SCENARIOS

FACTORY = "fencepost.impl.peers.celery_redis:queue"
SCENARIO = SCENARIOS / "real_clock" / "celery_redis_zombie_ack.toml"
TICK_MS = realclock.DEFAULT_TICK_MS
#: The server the adapter uses too.
URL = os.environ.get("FENCEPOST_REDIS_URL", celery_redis.DEFAULT_URL)


@pytest.fixture(autouse=True)
def _redis_and_kombu() -> None:
    require("redis_streams")  # the redis package and a server that answers
    for package in ("kombu", "celery"):
        # not importlib.util.find_spec: kombu replaces its module object once imported, without a __spec__
        try:
            importlib.import_module(package)
        except ModuleNotFoundError as exc:
            if exc.name != package:
                raise
            pytest.skip(f"{package} is not installed: pip install 'fencepost[peers]'")


def leftover_keys(prefix: str) -> list[bytes]:
    import redis

    client = redis.Redis.from_url(URL)
    try:
        return list(client.scan_iter(match=f"{prefix}*"))
    finally:
        client.close()


def scenario_calls() -> tuple[dict, list[tuple[str, dict]]]:
    return scenario_and_calls(SCENARIO)


def test_check_finds_the_redelivery_carrying_the_first_delivery_tag(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["check", FACTORY, "--clock", "real"])
    out = capsys.readouterr().out
    assert status == 1, out
    diverging = [line for line in out.splitlines() if "<-- diverges" in line]
    assert len(diverging) == 1, out
    assert "dispatch(" in diverging[0], out
    assert "was issued before (for task 1)" in out and "no timing within the measured uncertainty explains it" in out
    assert "real clock: tick 50 ms" in out and re.search(r"\b\d+ runs? inconclusive", out), out


def test_the_adapter_refuses_logical_time() -> None:
    assert main(["check", FACTORY, "--clock", "logical"]) == 2


def test_the_scenario_diverges_at_the_redelivery_on_the_real_clock() -> None:
    scenario, calls = scenario_calls()
    variants = Variants.from_declared(scenario["meta"]["variants"])
    assert celery_redis.queue.fencepost_variants == scenario["meta"]["variants"]
    trace = run_timed_calls(Timing(TICK_MS), measured=True)(ticked(celery_redis.queue, TICK_MS), calls, None, variants)
    assert trace is not None, "the scenario held: kombu now hands a redelivery a fresh tag?"
    assert len(trace) == scenario["meta"]["diverging_step"], trace
    assert trace[-1].op == "dispatch" and "was issued before (for task 1)" in trace[-1].problem, trace[-1]


def test_the_scenarios_expectations_are_the_models_under_its_variants() -> None:
    """No queue needed: the file says what the contract says, under the declared variants."""
    scenario, _ = scenario_calls()
    assert model_disagreements(scenario) == []


def test_past_the_divergence_the_zombies_ack_lands_and_the_message_is_gone() -> None:
    """The scenario's reports, then a dispatch after w2's lease ended: kombu's answers, read back, on ticks."""
    _, calls = scenario_calls()
    with realclock.ticking(TICK_MS):
        impl = celery_redis.queue()
    prefix = impl.key_prefix
    # real time passes through every lease's end (w2's is the last, at 12); only what lies past it is skipped
    timed = TimedScheduler(impl, realclock.RealClock(TICK_MS), None, pending=lambda: 12)
    try:
        results = [getattr(timed, op)(**args) for op, args in calls[:5]]
        first, second = results[3], results[4]
        assert first.token == second.token and second.worker == "w2"
        zombie = timed.complete(task_id=1, token=first.token, now=8)
        holder = timed.complete(task_id=1, token=second.token, now=9)
        assert zombie.accepted, zombie
        assert (holder.accepted, holder.reason) == (False, celery_redis.NOT_UNACKED)
        # w2's lease ended at 12: a sweep at 20 finds nothing to restore, the message is gone for good
        assert timed.dispatch(worker="w1", now=20, duration=celery_redis.LEASE) is None
    finally:
        impl.close()
    assert leftover_keys(prefix) == []



def test_closing_a_client_and_its_scheduler_deletes_only_the_schedulers_own_keys() -> None:
    """A recorder's client closes its connections and deletes nothing; the scheduler deletes its prefix, nothing else.

    (A client once deleted under the empty prefix, which is every key of the database.)
    """
    import redis

    other = f"fp:celery-test-not-ours:{os.getpid()}:{id(object())}"
    client = redis.Redis.from_url(URL)
    client.set(other, "kept")
    try:
        with realclock.ticking(TICK_MS):
            scheduler = celery_redis.queue()
        scheduler.add_worker("w1", 1)
        scheduler.submit()
        recorded = scheduler.client()
        assert recorded.dispatch("w1", 0, celery_redis.LEASE).task_id == 1
        recorded.close()
        assert client.get(other) == b"kept"
        assert leftover_keys(scheduler.key_prefix), "the client deleted its scheduler's keys"
        scheduler.close()
        assert client.get(other) == b"kept"
        assert leftover_keys(scheduler.key_prefix) == []
    finally:
        client.delete(other)
        client.close()

def test_celerys_worker_request_acknowledges_through_the_same_tag() -> None:
    """Celery 5.7's ``Request.acknowledge`` (``acks_late``) is ``Message.ack``: the zombie's removes the new holder's entry.

    ``visibility_timeout = 0``: a message is restorable at once, so the
    redelivery needs no waiting.
    """
    import redis
    from celery import Celery
    from celery.worker.request import Request

    prefix = f"{celery_redis.KEY_PREFIX}test-request:{id(object())}:"
    app = Celery("fp", broker=URL, set_as_current=False)
    app.conf.broker_transport_options = celery_redis.transport_options(prefix, 0)

    @app.task(name="fp.work", acks_late=True)
    def work() -> None:  # never run: only its message is
        pass

    client = redis.Redis.from_url(URL)
    zombie_connection, holder_connection = app.connection_for_read(), app.connection_for_read()
    try:
        work.apply_async()
        zombie_channel, holder_channel = zombie_connection.default_channel, holder_connection.default_channel
        zombie_message = zombie_channel.basic_get(celery_redis.QUEUE, no_ack=False)
        holder_channel.qos.restore_visible(num=None, interval=1)
        holder_message = holder_channel.basic_get(celery_redis.QUEUE, no_ack=False)
        assert holder_message.delivery_tag == zombie_message.delivery_tag
        assert client.hexists(prefix + celery_redis.UNACKED_KEY, holder_message.delivery_tag)
        request = Request(zombie_message, on_ack=zombie_message.ack_log_error, app=app, task=work)
        assert request.task.acks_late
        request.acknowledge()
        assert not client.hexists(prefix + celery_redis.UNACKED_KEY, holder_message.delivery_tag)
    finally:
        zombie_connection.release()
        holder_connection.release()
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)
        client.close()
    assert leftover_keys(prefix) == []


def test_the_zombie_race_is_found_in_every_round_and_linearize_rejects_it(tmp_path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The pinned command, default threads: the zombie's ack, every round; no renew is called on a queue without one."""
    out = tmp_path / "zombie.jsonl"
    recorded = subprocess.run(
        [sys.executable, "-m", "fencepost.impl.peers.record", FACTORY, "zombie", str(out), "--rounds", "3"],
        capture_output=True, text=True, timeout=120)
    assert recorded.returncode == 0, recorded.stderr
    assert "saw 3 problem(s)" in recorded.stdout and "was accepted" in recorded.stdout, recorded.stdout
    assert "AttributeError" not in recorded.stdout, recorded.stdout
    assert main(["linearize", str(out)]) == 1
    marked = [line for line in capsys.readouterr().out.splitlines() if "no order explains" in line]
    assert marked and "dispatch(worker='w2'" in marked[0], marked



def test_closing_the_zombies_channel_gives_back_a_message_another_consumer_holds() -> None:
    """K2: ``Channel.close`` restores every tag the channel delivered and did not ack, the redelivered one too.

    ``visibility_timeout = 0`` as above. After w2's redelivery, w1's channel
    closes (``restore_at_shutdown``): the message goes back to the queue while
    w2 still holds it, and a third consumer gets it, with the same tag.
    """
    import redis
    from kombu import Connection, Exchange, Producer, Queue

    prefix = f"{celery_redis.KEY_PREFIX}test-close:{id(object())}:"
    options = celery_redis.transport_options(prefix, 0)
    exchange = Exchange(celery_redis.QUEUE, type="direct")
    queue = Queue(celery_redis.QUEUE, exchange, routing_key=celery_redis.QUEUE)
    connections = [Connection(URL, transport_options=options) for _ in range(4)]
    client = redis.Redis.from_url(URL)
    try:
        producer, w1, w2, w3 = (connection.channel() for connection in connections)
        Producer(producer).publish({"task": 1}, exchange=exchange, routing_key=celery_redis.QUEUE,
                                   serializer="json", declare=[queue])
        first = w1.basic_get(celery_redis.QUEUE, no_ack=False)
        w2.qos.restore_visible(num=None, interval=1)
        second = w2.basic_get(celery_redis.QUEUE, no_ack=False)
        assert second.delivery_tag == first.delivery_tag
        w1.close()
        third = w3.basic_get(celery_redis.QUEUE, no_ack=False)
        assert third is not None and third.delivery_tag == second.delivery_tag  # w2 still holds it
    finally:
        for connection in connections:
            connection.release()
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)
        client.close()
    assert leftover_keys(prefix) == []


def test_a_late_ack_of_a_message_a_sweep_restored_removes_nothing_and_says_nothing() -> None:
    """K3: the same late ack removes the message for good before a sweep, and nothing after it.

    ``visibility_timeout = 0``: every delivered message is restorable at once.
    Two messages are delivered; a sweep restores both and the sweeper takes
    one; the other's late ack finds no ``unacked`` entry, and the message is
    delivered again. Before any sweep, the same late ack removes the entry
    (``late=accept-unclaimed``).
    """
    import redis
    from kombu import Connection, Exchange, Producer, Queue

    prefix = f"{celery_redis.KEY_PREFIX}test-late:{id(object())}:"
    options = celery_redis.transport_options(prefix, 0)
    exchange = Exchange(celery_redis.QUEUE, type="direct")
    queue = Queue(celery_redis.QUEUE, exchange, routing_key=celery_redis.QUEUE)
    connections = [Connection(URL, transport_options=options) for _ in range(3)]
    client = redis.Redis.from_url(URL)
    unacked = prefix + celery_redis.UNACKED_KEY
    try:
        producer, late, sweeper = (connection.channel() for connection in connections)
        for n in (1, 2, 3):
            Producer(producer).publish({"task": n}, exchange=exchange, routing_key=celery_redis.QUEUE,
                                       serializer="json", declare=[queue])
        unswept = late.basic_get(celery_redis.QUEUE, no_ack=False)
        late.basic_ack(unswept.delivery_tag)  # past its visibility timeout, but nobody swept: removed for good
        assert not client.hexists(unacked, unswept.delivery_tag)
        first, second = (late.basic_get(celery_redis.QUEUE, no_ack=False) for _ in range(2))
        sweeper.qos.restore_visible(num=None, interval=1)  # restores both
        taken = sweeper.basic_get(celery_redis.QUEUE, no_ack=False)
        left = second if taken.delivery_tag == first.delivery_tag else first
        assert not client.hexists(unacked, left.delivery_tag)  # what decides the adapter's `not_unacked`
        late.basic_ack(left.delivery_tag)  # answers nothing
        again = sweeper.basic_get(celery_redis.QUEUE, no_ack=False)
        assert again is not None and again.delivery_tag == left.delivery_tag  # the acked message runs again
    finally:
        for connection in connections:
            connection.release()
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)
        client.close()
    assert leftover_keys(prefix) == []
