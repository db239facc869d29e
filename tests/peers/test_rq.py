"""RQ (python-rq 3.0.0) on the Redis server at 127.0.0.1:6379, on the workers' clock: the pinned verdicts.

RQ's worker finishes or fails a job through ``handle_job_success`` and
``handle_job_failure`` with the ``Execution`` it started, and neither looks
at whether that execution is still the job's: a zombie's finish lands on a
job that maintenance abandoned and retried, failed, or handed to another
worker (docs/findings.md, Q1). The check must find a report accepted that
the contract refuses, the shipped scenario must diverge at the zombie's
completion, and RQ alone (no fencepost) must show the same. What RQ gets
right is pinned too: a zombie's heartbeat moves nothing (Q4).

Real-clock verdicts here hold whatever the timing: every late report comes
a whole tick (one second) or more after the lease's end and after the
sweep that ended it. The tests of RQ alone need no waiting: a maintenance
sweep is given a timestamp an hour ahead (``StartedJobRegistry.cleanup``
takes one), as if the worker had been quiet that long.

Needs the Redis server (``FENCEPOST_REDIS_URL``) and rq (the ``peers``
extra); every key holds the scheduler's own ``fp-rq-PID-N_`` tag or the
test's, deleted at the end.
"""

from __future__ import annotations

import os
import re
import time
import uuid

import pytest

from fencepost.cli import main
from fencepost.impl.peers import rq as peer
from fencepost.spec import realclock
from fencepost.spec.checkers.realtime import run_timed_calls, ticked, TimedScheduler, Timing
from fencepost.spec.variants import Variants
from peers_env import model_disagreements, require, scenario_and_calls, SCENARIOS

FACTORY = "fencepost.impl.peers.rq:queue"
SCENARIO = SCENARIOS / "real_clock" / "rq_zombie_finishes_a_job_another_worker_holds.toml"
#: One tick is one of RQ's seconds (its clock counts whole seconds).
TICK_MS = peer.SECOND_MS
#: Runs of the pinned check: the first finding comes within them (derandomized, so always the same runs).
EXAMPLES = "10"
#: Seconds ahead a maintenance sweep is told it runs, past every heartbeat TTL RQ's worker gives.
AN_HOUR = 3600
URL = os.environ.get("FENCEPOST_REDIS_URL", peer.DEFAULT_URL)


@pytest.fixture(autouse=True)
def _redis_and_rq() -> None:
    require("rq")


@pytest.fixture
def redis_client():
    import redis

    client = redis.Redis.from_url(URL)
    yield client
    client.close()


def keys_with(client, tag: str) -> list[bytes]:
    return list(client.scan_iter(match=f"*{tag}*"))


@pytest.fixture
def rq_alone(redis_client):
    """A queue and two of RQ's workers, ``a`` and ``b``, under a tag of the test's own; every key deleted after."""
    from rq import Queue, Worker

    tag = f"{peer.KEY_TAG}test-{uuid.uuid4().hex[:8]}{peer.TAG_END}"
    queue = Queue(f"{tag}queue", connection=redis_client)
    workers = {name: Worker([queue], connection=redis_client, name=f"{tag}{name}") for name in ("a", "b")}
    yield tag, queue, workers
    peer.delete_keys(URL, tag)
    assert keys_with(redis_client, tag) == []


def take(worker, queue):
    """What ``rq worker`` does with the job at the head of the queue: dequeue it, start an execution."""
    from rq import Queue

    job, _ = Queue.dequeue_any([queue], None, connection=queue.connection)
    execution = worker.prepare_execution(job)
    worker.prepare_job_execution(job, remove_from_intermediate_queue=True)
    return job, execution


def finish(worker, queue, job, execution) -> None:
    """What the worker's horse does when the job function returns."""
    worker.handle_execution_ended(job, queue, job.success_callback_timeout)
    worker.handle_job_success(job, queue, queue.started_job_registry, execution)


def status(queue, job_id: str) -> str:
    from rq.job import Job

    return Job.fetch(job_id, connection=queue.connection).get_status().value


def scenario_calls() -> tuple[dict, list[tuple[str, dict]]]:
    return scenario_and_calls(SCENARIO)


# ---------------------------------------------------------------- fencepost's verdicts, on the real clock


def test_check_finds_a_report_the_contract_refuses_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    status_code = main(["check", FACTORY, "--clock", "real", "--tick-ms", str(TICK_MS),
                        "--max-examples", EXAMPLES])
    out = capsys.readouterr().out
    assert status_code == 1, out
    diverging = [line for line in out.splitlines() if "<-- diverges" in line]
    assert len(diverging) == 1, out
    assert re.search(r"\b(complete|fail|cancel)\(.*expected: rejected \(\w+\); got: accepted", diverging[0]), out
    assert "no timing within the measured uncertainty explains it" in out, out
    assert "real clock: tick 1000 ms" in out and re.search(r"\b\d+ runs? inconclusive", out), out


def test_a_tick_that_is_not_a_whole_number_of_seconds_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", FACTORY, "--clock", "real", "--tick-ms", "50"]) == 2
    err = capsys.readouterr().err
    assert "whole number of seconds" in err and "--tick-ms 1000" in err, err


def test_the_adapter_refuses_logical_time() -> None:
    assert main(["check", FACTORY, "--clock", "logical"]) == 2


def test_the_scenario_diverges_at_the_zombies_completion_on_the_real_clock() -> None:
    scenario, calls = scenario_calls()
    variants = Variants.from_declared(scenario["meta"]["variants"])
    assert peer.queue.fencepost_variants == scenario["meta"]["variants"]
    trace = run_timed_calls(Timing(TICK_MS), measured=True)(ticked(peer.queue, TICK_MS), calls, None, variants)
    assert trace is not None, "the scenario held: RQ now refuses a finish from an execution that is not the job's?"
    assert len(trace) == scenario["meta"]["diverging_step"], trace
    assert trace[-1].op == "complete" and trace[-1].args["token"] == 1, trace[-1]


def test_the_scenarios_expectations_are_the_models_under_its_variants() -> None:
    """No queue needed: the file says what the contract says, under the declared variants."""
    scenario, _ = scenario_calls()
    assert model_disagreements(scenario) == []


def test_past_the_divergence_rq_records_the_zombies_result_and_accepts_the_holders(redis_client) -> None:
    """The scenario on ticks: RQ's result for the job names w1, whose execution it had abandoned; w2's finish lands too."""
    from rq.job import Job

    _, calls = scenario_calls()
    with realclock.ticking(TICK_MS):
        impl = peer.queue()
    tag = impl.key_tag
    timed = TimedScheduler(impl, realclock.RealClock(TICK_MS), None, pending=lambda: 10)
    try:
        results = [getattr(timed, op)(**args) for op, args in calls[:6]]
        first, second = results[3], results[5]
        assert (first.worker, second.worker, second.task_id) == ("w1", "w2", 1) and first.token != second.token
        zombie = timed.complete(task_id=1, token=first.token, now=6)
        assert zombie.accepted, zombie
        job = Job.fetch(f"{tag}1", connection=redis_client)
        assert job.get_status().value == "finished"
        assert job.latest_result().worker_name == f"{tag}w1"  # the result of the abandoned execution
        assert timed.complete(task_id=1, token=second.token, now=7).accepted
    finally:
        impl.close()
    assert keys_with(redis_client, tag) == []


# ---------------------------------------------------------------- RQ alone: the reproductions of docs/findings.md


def test_rq_alone_a_zombies_finish_lands_on_the_job_another_worker_runs(rq_alone) -> None:
    """Q1: a's execution is abandoned and the job retried; b takes it; a's horse finishes: the job is finished under b."""
    from rq import Retry

    tag, queue, workers = rq_alone
    queue.enqueue(peer.noop, job_id=f"{tag}1", retry=Retry(max=1))
    job_a, execution_a = take(workers["a"], queue)
    queue.started_job_registry.cleanup(timestamp=time.time() + AN_HOUR)  # a worker's maintenance, an hour on
    assert status(queue, job_a.id) == "queued"  # retried: Retry(max=1) without an interval requeues at once
    job_b, execution_b = take(workers["b"], queue)
    assert job_b.id == job_a.id and execution_b.id != execution_a.id
    finish(workers["a"], queue, job_a, execution_a)
    assert status(queue, job_a.id) == "finished"
    assert queue.started_job_registry.get_job_and_execution_ids(cleanup=False) == [(job_b.id, execution_b.id)]


def test_rq_alone_a_zombies_finish_turns_a_failed_job_finished(rq_alone) -> None:
    """Q1: without retries the abandoned job is failed (final); the zombie's finish then makes it finished."""
    tag, queue, workers = rq_alone
    queue.enqueue(peer.noop, job_id=f"{tag}1")
    job, execution = take(workers["a"], queue)
    queue.started_job_registry.cleanup(timestamp=time.time() + AN_HOUR)
    assert status(queue, job.id) == "failed" and job.id in queue.failed_job_registry
    finish(workers["a"], queue, job, execution)
    assert status(queue, job.id) == "finished" and job.id in queue.finished_job_registry


def test_rq_alone_a_finished_job_still_on_the_queue_is_dequeued_again(rq_alone) -> None:
    """Q1: the zombie finishes a job that waits on the queue after its retry; the next dequeue hands it out again."""
    from rq import Retry

    tag, queue, workers = rq_alone
    queue.enqueue(peer.noop, job_id=f"{tag}1", retry=Retry(max=1))
    job, execution = take(workers["a"], queue)
    queue.started_job_registry.cleanup(timestamp=time.time() + AN_HOUR)
    finish(workers["a"], queue, job, execution)
    assert status(queue, job.id) == "finished" and job.id in queue.get_job_ids()
    again, _ = take(workers["b"], queue)
    assert again.id == job.id  # a final job runs again


def test_rq_alone_a_job_canceled_while_it_runs_is_requeued_by_its_workers_failure(rq_alone) -> None:
    """Q3: Job.cancel marks a running job canceled; its worker's failure then retries it onto the queue."""
    from rq import Retry
    from rq.job import Job

    tag, queue, workers = rq_alone
    queue.enqueue(peer.noop, job_id=f"{tag}1", retry=Retry(max=1))
    job, execution = take(workers["a"], queue)
    Job.fetch(job.id, connection=queue.connection).cancel()
    assert status(queue, job.id) == "canceled"
    workers["a"].handle_execution_ended(job, queue, job.failure_callback_timeout)
    workers["a"].handle_job_failure(job, queue, queue.started_job_registry, "failed", execution)
    assert status(queue, job.id) == "queued" and queue.get_job_ids() == [job.id]  # a canceled job runs again


def test_rq_alone_cancel_turns_a_finished_job_canceled(rq_alone) -> None:
    """Q3: Job.cancel refuses only a job canceled before; a finished one becomes canceled."""
    from rq.job import Job

    tag, queue, workers = rq_alone
    queue.enqueue(peer.noop, job_id=f"{tag}1")
    job, execution = take(workers["a"], queue)
    finish(workers["a"], queue, job, execution)
    Job.fetch(job.id, connection=queue.connection).cancel()
    assert status(queue, job.id) == "canceled"


def test_rq_alone_a_zombies_heartbeat_moves_nothing(rq_alone) -> None:
    """Q4, where RQ gets it right: the heartbeat is ZADD XX of the execution's own key, so a gone one stays gone."""
    from rq import Retry

    tag, queue, workers = rq_alone
    queue.enqueue(peer.noop, job_id=f"{tag}1", retry=Retry(max=1))
    job_a, execution_a = take(workers["a"], queue)
    queue.started_job_registry.cleanup(timestamp=time.time() + AN_HOUR)
    job_b, execution_b = take(workers["b"], queue)
    before = queue.started_job_registry.get_job_and_execution_ids(cleanup=False)
    workers["a"].maintain_heartbeats(job_a, execution_a)
    assert queue.started_job_registry.get_job_and_execution_ids(cleanup=False) == before == [(job_b.id, execution_b.id)]


def test_rq_alone_an_abandoned_job_waits_its_retry_interval(rq_alone) -> None:
    """Q2: maintenance retries an abandoned job as a failed one: with an interval it is scheduled, not queued."""
    from rq import Retry

    tag, queue, workers = rq_alone
    queue.enqueue(peer.noop, job_id=f"{tag}1", retry=Retry(max=2, interval=[60, 120]))
    job, _ = take(workers["a"], queue)
    queue.started_job_registry.cleanup(timestamp=time.time() + AN_HOUR)
    assert status(queue, job.id) == "scheduled" and job.id in queue.scheduled_job_registry
    assert queue.get_job_ids() == []


def test_closing_the_scheduler_deletes_every_key_it_made(redis_client) -> None:
    with realclock.ticking(TICK_MS):
        impl = peer.queue()
    tag = impl.key_tag
    impl.add_worker("w1", 1)
    impl.submit(max_attempts=2)
    lease = impl.dispatch("w1", 0, 1)
    assert impl.fail(1, lease.token, 0).accepted  # retried: scheduled for a second later
    assert keys_with(redis_client, tag)
    assert any(tag.encode() in name for name in redis_client.smembers("rq:queues"))
    impl.close()
    assert keys_with(redis_client, tag) == []
    assert not any(tag.encode() in name for name in redis_client.smembers("rq:queues"))
