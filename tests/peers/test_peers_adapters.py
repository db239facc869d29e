"""The adapters themselves: logical time reaches each real queue, and bad arguments are refused.

These hold whatever the queue's verdict: they check that the adapter maps the
protocol faithfully (time the queue sees is the caller's logical time; an
invalid argument is a ValueError naming it, before the queue is called), so
that what the checks find is the queue's behaviour, not the adapter's.
"""

from __future__ import annotations

import pytest

from peers_env import require
from fencepost.impl.peers import EPOCH_SECONDS


def make(adapter: str, factory: str) -> object:
    require(adapter)
    import importlib

    return getattr(importlib.import_module(f"fencepost.impl.peers.{adapter}"), factory)()


@pytest.fixture(params=[("sqs", "standard"), ("sqs", "fifo"), ("litequeue", "queue"), ("pgqueuer", "queue"),
                        ("procrastinate", "queue")],
                ids=["sqs-standard", "sqs-fifo", "litequeue", "pgqueuer", "procrastinate"])
def queue(request):
    scheduler = make(*request.param)
    yield scheduler
    clear = getattr(scheduler, "clear", None)
    if clear:
        clear()
    scheduler.close()


def test_a_lease_lasts_exactly_its_logical_duration_however_long_the_wall_clock_takes(queue) -> None:
    """Leased at 10 for 5: live through 15 (every queue here is closed), taken back at 16."""
    queue.add_worker("w1", 2)
    queue.add_worker("w2", 2)
    queue.submit()
    queue.advance(9)
    first = queue.dispatch("w1", 10, 5)
    assert (first.task_id, first.started_at, first.expires_at) == (1, 10, 15)
    assert queue.dispatch("w2", 15, 5) is None
    again = queue.dispatch("w2", 16, 5)
    assert again is not None and again.task_id == 1
    assert queue.now == 16


@pytest.mark.parametrize("call, argument", [
    (lambda q: q.dispatch("w1", -1, 5), "now"),
    (lambda q: q.dispatch("w1", 3, 0), "duration"),
    (lambda q: q.dispatch("nobody", 3, 5), "nobody"),
    (lambda q: q.dispatch("w1", 3.0, 5), "now"),
    (lambda q: q.complete(2, "t", 3), "task_id"),
    (lambda q: q.complete(1, True, 3), "token"),
    (lambda q: q.complete(1, "", 3), "token"),
    (lambda q: q.complete(1, ["t"], 3), "token"),
    (lambda q: q.advance(1), "backwards"),
    (lambda q: q.renew(1, "t", 30, 0) if hasattr(q, "renew") else q.dispatch("w1", 30, 0), "duration"),
    (lambda q: q.add_worker("w1", 1), "already exists"),
    (lambda q: q.submit(retry_delay=0), "retry_delay"),
])
def test_an_invalid_argument_is_a_value_error_naming_it_and_changes_nothing(queue, call, argument) -> None:
    queue.add_worker("w1", 1)
    queue.submit()
    queue.advance(2)
    with pytest.raises(ValueError, match=argument):
        call(queue)
    assert queue.now == 2
    lease = queue.dispatch("w1", 3, 5)  # the task is still there, untouched
    assert lease is not None and lease.task_id == 1


def test_moto_sees_the_logical_clock_through_the_two_names_the_adapter_patches() -> None:
    require("sqs")
    scheduler = make("sqs", "standard")
    import datetime

    import moto.sqs.models as sqs_models

    try:
        scheduler.advance(42)
        assert sqs_models.unix_time() == EPOCH_SECONDS + 42
        assert sqs_models.unix_time_millis() == (EPOCH_SECONDS + 42) * 1000
        # A datetime moto converts is not the clock: it converts as before.
        assert sqs_models.unix_time(datetime.datetime(1970, 1, 2)) == 86400
    finally:
        scheduler.close()


def test_sqs_refuses_a_handle_received_for_another_task_without_calling_sqs() -> None:
    scheduler = make("sqs", "standard")
    try:
        scheduler.add_worker("w1", 1)
        scheduler.submit()
        scheduler.submit()
        one = scheduler.dispatch("w1", 0, 5)
        outcome = scheduler.complete(3 - one.task_id, one.token, 1)
        assert outcome.accepted is False
        again = scheduler.complete(one.task_id, one.token, 1)  # the message was not deleted by the refusal
        assert again.accepted is True
    finally:
        scheduler.close()


def test_pgqueuer_timestamps_are_the_logical_clock() -> None:
    scheduler = make("pgqueuer", "queue")
    import psycopg

    from fencepost.impl.peers import pgqueuer

    try:
        scheduler.advance(7)
        scheduler.submit(due_at=10)
        with psycopg.connect(pgqueuer.dsn()) as conn:
            row = conn.execute(
                f"SELECT extract(epoch FROM created)::bigint, extract(epoch FROM execute_after)::bigint "
                f"FROM {pgqueuer.SCHEMA}.{pgqueuer.PREFIX}pgqueuer WHERE entrypoint = %s",
                (scheduler.entrypoint,),
            ).fetchone()
        assert row == (EPOCH_SECONDS + 7, EPOCH_SECONDS + 10)
    finally:
        scheduler.clear()
        scheduler.close()


def _collect_and_exit(pipe: object) -> None:
    import gc

    from fencepost.impl.peers import pgqueuer

    gc.collect()  # the parent's garbage, inherited: its finalizers run here, in the child
    pipe.send(pgqueuer.installed_here())
    pgqueuer.uninstall()  # what the child's exit would run


def _jobs_of(entrypoint: str) -> int:
    import psycopg

    from fencepost.impl.peers import pgqueuer

    with psycopg.connect(pgqueuer.dsn()) as conn:
        return conn.execute(f"SELECT count(*) FROM {pgqueuer.SCHEMA}.{pgqueuer.PREFIX}pgqueuer WHERE entrypoint = %s",
                            (entrypoint,)).fetchone()[0]


def test_a_forked_child_frees_neither_its_parents_pgqueuer_jobs_nor_its_schema() -> None:
    """A child that collects its parent's pgqueuer scheduler, and exits, leaves the parent's queues whole.

    The scheduler's finalizer used to delete its jobs and close its connection from whichever
    process ran it, on the parent's socket; the child's exit dropped the parent's schema.
    """
    import gc
    import multiprocessing

    scheduler = make("pgqueuer", "queue")
    try:
        scheduler.add_worker("w1", 1)
        scheduler.submit()
        # The garbage must still be pending at the fork, and in the parent until the count below:
        # an automatic collection in between (a CI run saw one) would delete the job itself.
        # The child's gc.collect() runs with the collector disabled too.
        gc.disable()
        try:
            garbage = make("pgqueuer", "queue")  # another scheduler with a job, left in a cycle
            garbage.submit()
            entrypoint = garbage.entrypoint
            garbage.cycle = garbage
            del garbage
            context = multiprocessing.get_context("fork")
            receiver, sender = context.Pipe(duplex=False)
            child = context.Process(target=_collect_and_exit, args=(sender,))
            child.start()
            assert receiver.poll(60), "the child sent nothing"
            assert receiver.recv() is False  # it installed nothing, so its exit drops nothing
            child.join(60)
            assert child.exitcode == 0
            assert _jobs_of(entrypoint) == 1  # the child's collection deleted nothing of the parent's
        finally:
            gc.enable()
        gc.collect()  # the parent's own collection does
        assert _jobs_of(entrypoint) == 0
        lease = scheduler.dispatch("w1", 1, 5)  # the parent's session and its job are still there
        assert lease is not None and lease.task_id == 1
    finally:
        scheduler.clear()
        scheduler.close()



#: A part of ASCII-digit tokens that is no number: "\u00b2".isdigit() is true, and int() refuses it.
SUPERSCRIPT_TWO = "\u00b2"


def test_the_templates_token_of_a_non_ascii_digit_is_refused_not_a_value_error() -> None:
    """Such a token names no assignment, so the report is an Outcome (it raised int()'s ValueError)."""
    from fencepost.impl.kit.template import queue

    toy = queue()
    toy.add_worker("w1", 1)
    toy.submit()
    lease = toy.dispatch("w1", 1, 5)
    job = lease.token.split("/")[0]
    assert not toy.complete(lease.task_id, f"{job}/{SUPERSCRIPT_TWO}", 2).accepted
    assert toy.complete(lease.task_id, lease.token, 2).accepted  # the real lease still holds


def test_procrastinates_token_of_a_non_ascii_digit_is_refused_not_a_value_error() -> None:
    from fencepost.impl.peers.procrastinate import DURATION

    queue = make("procrastinate", "queue")
    try:
        queue.add_worker("w1", 1)
        queue.submit()
        lease = queue.dispatch("w1", 1, DURATION)
        worker = lease.token.split("/")[1]
        assert not queue.complete(lease.task_id, f"{SUPERSCRIPT_TWO}/{worker}", 2).accepted
        assert not queue.complete(lease.task_id, f"{lease.token.split('/')[0]}/{SUPERSCRIPT_TWO}", 2).accepted
        assert queue.complete(lease.task_id, lease.token, 2).accepted
    finally:
        queue.close()
