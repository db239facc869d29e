"""RQ (python-rq, the Redis Queue) behind the protocol, as its workers drive it, on the workers' clock.

Factory: ``queue``. Each scheduler is one fresh RQ ``Queue``; a task is one
job; a worker is one RQ ``Worker`` (the class ``rq worker`` runs), whose own
methods the adapter calls where a worker process calls them. No work horse is
forked and no job function runs: a horse finishes a job through these same
methods (``perform_job`` ends in ``handle_job_success`` or
``handle_job_failure``, with the ``Job`` and ``Execution`` its worker
dequeued), so what the adapter calls is what a worker does.

=============  ==========================================================================
protocol       RQ 3.0 (rq 3.0.0, Redis 7.0)
=============  ==========================================================================
submit         ``Queue.enqueue`` (``RPUSH`` of the job id) with ``Retry(max=B - 1,
               interval=[d, 2d, 4d, ...])`` for a budget of ``B`` attempts and a retry
               delay of ``d`` ticks
dispatch       the sweep below, then ``Queue.dequeue_any`` (``LMOVE`` to the intermediate
               list) and the worker's ``prepare_execution`` (a new ``Execution``, its
               ``composite_key`` added to the ``StartedJobRegistry`` scored
               ``now + heartbeat TTL``) and ``prepare_job_execution`` (status
               ``started``); the token is the execution's ``composite_key``,
               ``JOB_ID:EXECUTION_ID`` (a uuid per execution)
complete       the worker's ``handle_execution_ended`` and ``handle_job_success``
fail           the worker's ``handle_execution_ended`` and ``handle_job_failure``
               (retried through the job's ``Retry``, else ``failed``)
renew          the worker's ``maintain_heartbeats`` (``ZADD XX`` of the execution's
               score to ``now + TTL``: it never adds an entry that is gone)
cancel         ``Job.cancel``
advance        the sweep
the sweep      ``StartedJobRegistry.cleanup`` (what a worker's maintenance runs: every
               execution whose score has passed is abandoned, and its job retried
               through its ``Retry`` or failed) and ``RQScheduler.enqueue_scheduled_jobs``
               (what ``rq worker --with-scheduler`` runs every second: retries whose
               interval has passed go back to the queue)
=============  ==========================================================================

**The clock.** RQ keeps every time on the worker's own clock,
``datetime.now(timezone.utc)`` (``rq.utils.now``), never on the Redis
server's, and in **whole seconds**: a registry score is
``current_timestamp() + ttl``, where ``current_timestamp()`` is
``calendar.timegm(now().utctimetuple())``, the present second with its
fraction dropped; a retry is scheduled at ``now() + interval`` and scored in
whole seconds too. Nobody sets that clock, so the factory runs on the real
clock only (``kit.real_clock``), with a tick of a whole number of seconds
(``--tick-ms 1000``; one tick is then one of RQ's seconds): a shorter tick
would put several ticks in one of RQ's seconds, and their boundaries
nowhere. The judge places a lease's end within a millisecond of the real
instant the lease was set plus its duration; RQ places it at the *start* of
that second plus the duration, up to a second earlier. So the factory starts
every scheduler just after a second begins (``SECOND_MARGIN``): the harness
fixes tick 0 at the first timed call, a few milliseconds later, so each
tick's calls fall in one second of RQ's, the same one the judge has in mind.
The limits (docs/findings.md, RQ): a call late by more than the rest of its
second lands in the next one, and a lease ends at the start of its last
second, not at the instant its dispatch read the clock plus its duration,
so a renew at exactly a lease's end made sooner into its tick than the call
that set the lease may be judged by the instant where RQ went by the second.
Neither gave a wrong verdict in the runs measured there. In a deployment
the lease is longer: RQ's heartbeat TTL is the job monitoring interval plus
60 seconds, and a worker's maintenance runs every 600 seconds by default;
the adapter sets the TTL to the lease's duration (``get_heartbeat_ttl``
overridden, the one change to RQ's worker) and sweeps before every timed
call, so a lease ends when the contract says.

**The token** is what RQ itself records for one execution: the
``composite_key`` in the ``StartedJobRegistry``, fresh at every dispatch
(``tokens=opaque``). A report is refused without a call only when no call
could mean it: a token this adapter handed out for another task, or one it
never handed out (no worker holds an ``Execution`` for it). Otherwise the
adapter makes the call with the worker's own ``Job`` and ``Execution``, as
the worker that holds them would, whatever their state.

**Which read decides each call.** RQ's worker methods return nothing, so the
answer is read back from RQ's own records after the call (``kit.read_back``;
not atomic with the call, and no other client acts in between here):
``complete`` is accepted when the job's status is then ``finished``; ``fail``
when it is ``failed``, ``scheduled`` or ``queued`` (retried); ``renew`` when
the execution is still in the ``StartedJobRegistry``; ``cancel`` when the
job is ``canceled`` (``Job.cancel`` raises ``InvalidJobOperation`` only for a
job canceled before).

What RQ promises, and so what ``queue`` declares: one FIFO list per queue
(``order=fifo``: ``RPUSH`` to enqueue, ``LMOVE`` from the head to dequeue;
no priorities), opaque tokens, no bound on the executions a worker holds
through these calls (``capacity=none``: one ``rq worker`` runs one job at a
time by running one horse, not by refusing a dequeue), and no per-task view
that does not move on its own (``views=none``). Not offered: due times
(``enqueue_at`` takes a wall-clock datetime, which the harness's ticks do not
name before they happen) and keys. An unlimited budget is
``UNLIMITED_RETRIES`` retries: RQ's ``Retry`` has a finite ``max``.

The server is ``FENCEPOST_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``).
RQ's keys all start with ``rq:``; every queue name, job id and worker name
this adapter makes starts with ``fp-rq-PID-N_`` (``KEY_TAG``), so every key
it makes holds it, and all of them are deleted when the scheduler is closed or
collected. ``rq`` is the ``peers`` extra.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
import weakref

from fencepost.impl.kit import (
    Book,
    Lease,
    Outcome,
    check_submit,
    declare,
    not_offered,
    read_back,
    real_clock,
    require_tick,
)

#: The server, unless ``FENCEPOST_REDIS_URL`` names another.
DEFAULT_URL = "redis://127.0.0.1:6379/0"
#: What every queue name, job id and worker name of a scheduler starts with, then ``PID-N`` and ``TAG_END``.
KEY_TAG = "fp-rq-"
#: Ends a scheduler's tag, so that scheduler 1's (``fp-rq-PID-1_``) is not a part of scheduler 10's.
TAG_END = "_"
#: RQ's clock counts whole seconds: a tick must be a whole number of them, in milliseconds.
SECOND_MS = 1000
#: Seconds after a second begins at which a scheduler is handed over, so its ticks fall inside RQ's seconds.
SECOND_MARGIN = 0.002
#: The retries an unlimited budget gets (RQ's ``Retry`` needs a finite ``max``): far more attempts than a run makes.
UNLIMITED_RETRIES = 64
#: The longest retry interval given to RQ, in seconds (``timedelta`` overflows near 10**14 s); a run never waits it.
LONGEST_INTERVAL = 10**9
#: Sets the keys of RQ's that list every queue and worker by name: a scheduler removes its own names.
NAME_SETS = ("rq:queues", "rq:workers")
#: Why a report is refused when its token was handed out for another task (no call is made).
OTHER_TASKS_TOKEN = "token_of_another_task"
#: Why a report is refused when this adapter never handed out its token (no worker holds that execution).
NEVER_HANDED_OUT = "token_never_handed_out"
#: Why ``complete``, ``fail``, ``renew`` and ``cancel`` are refused: what RQ's records show after the call.
NOT_FINISHED = "job_not_finished"
NOT_FAILED = "job_not_failed_nor_retried"
NOT_STARTED = "execution_not_in_started_registry"
NOT_CANCELED = "job_not_canceled"

VARIANTS = {
    "order": "fifo",
    "tokens": "opaque",
    "capacity": "none",
    "views": "none",
    "without": "due_at,keys",
}

_NUMBERS = itertools.count(1)


def noop() -> None:
    """The function every job names; never run (no work horse is forked)."""


def delete_keys(url: str, tag: str) -> None:
    """Delete every key holding ``tag`` and remove its names from RQ's name sets."""
    try:
        import redis

        client = redis.Redis.from_url(url, socket_timeout=10)
        keys = list(client.scan_iter(match=f"*{tag}*", count=500))
        if keys:
            client.delete(*keys)
        for key in NAME_SETS:
            ours = [name for name in client.smembers(key) if tag.encode() in name]
            if ours:
                client.srem(key, *ours)
        client.close()
    except Exception:  # noqa: BLE001 - the server went away: nothing left to free
        pass


def _worker_class() -> type:
    """RQ's ``Worker`` with the heartbeat TTL set by the caller (made on first use: rq is imported lazily)."""
    from rq import Worker

    class LeaseWorker(Worker):
        """``rq worker``'s class; its heartbeat TTL is the lease's duration, where RQ's adds 60 s."""

        lease_seconds = 1

        def get_heartbeat_ttl(self, job: object, working_time: float = 0.0) -> int:
            return self.lease_seconds

    return LeaseWorker


class RQQueue:
    """One RQ queue behind the protocol, driven as RQ's workers drive it; see the module docstring.

    Raises:
        ValueError: made outside ``--clock real``, or with a tick that is not a whole number of seconds.
        ModuleNotFoundError: rq (the ``peers`` extra) is not installed.
        redis.ConnectionError: the server cannot be reached.
    """

    def __init__(self, url: str | None = None) -> None:
        import redis
        from rq import Queue
        from rq.registry import StartedJobRegistry
        from rq.scheduler import RQScheduler

        # RQ's loggers have no handler: without one, Python prints its warnings (an abandoned job) to stderr
        logging.getLogger("rq").addHandler(logging.NullHandler())
        tick = require_tick("rq:queue")
        if tick % SECOND_MS:
            raise ValueError(f"tick_ms must be a whole number of seconds for RQ, whose clock counts whole "
                             f"seconds: {tick} (check it with --tick-ms 1000)")
        self._seconds = tick // SECOND_MS  # RQ's seconds per tick
        self._url = url or os.environ.get("FENCEPOST_REDIS_URL", DEFAULT_URL)
        self._tag = f"{KEY_TAG}{os.getpid()}-{next(_NUMBERS)}{TAG_END}"
        self._redis = redis.Redis.from_url(self._url, socket_timeout=10)
        self._queue = Queue(f"{self._tag}queue", connection=self._redis)
        self._started = StartedJobRegistry(queue=self._queue)
        self._scheduler = RQScheduler([self._queue], connection=self._redis, logging_level="WARNING")
        self._book = Book()
        self._workers: dict[str, object] = {}  # name -> its LeaseWorker
        self._held: dict[str, tuple] = {}  # token -> (worker, Job, Execution) as that worker dequeued them
        self._lock = threading.Lock()  # around the two dicts above
        self._release = weakref.finalize(self, delete_keys, self._url, self._tag)
        time.sleep(1 - time.time() % 1 + SECOND_MARGIN)  # see "The clock" in the module docstring

    @property
    def key_tag(self) -> str:
        """What every queue name, job id and worker name of this scheduler holds (so every key it makes)."""
        return self._tag

    # ------------------------------------------------------------ the protocol

    @property
    def now(self) -> int:
        return self._book.now

    def add_worker(self, worker: str, capacity: int) -> None:
        """An RQ ``Worker`` on this queue, named after the scheduler and ``worker`` (``capacity=none``)."""
        self._book.add_worker(worker, capacity)
        made = _worker_class()([self._queue], connection=self._redis, name=f"{self._tag}{worker}")
        with self._lock:
            self._workers[worker] = made

    def submit(self, priority: int = 0, due_at: int | None = None, max_attempts: int | None = None,
               retry_delay: int = 1) -> int:
        """``Queue.enqueue`` with the budget as a ``Retry``; the task id (1, 2, 3... in enqueue order).

        Raises:
            ValueError: an invalid argument, or a priority or due time (not offered).
        """
        from rq import Retry

        check_submit(priority, due_at, max_attempts, retry_delay)
        if priority != 0:
            raise not_offered("priority", priority, "RQ", "one FIFO list per queue")
        if due_at is not None:
            raise not_offered("due_at", due_at, "this adapter", "enqueue_at takes a wall-clock datetime")
        retries = UNLIMITED_RETRIES if max_attempts is None else max_attempts - 1
        intervals = [min(retry_delay * self._seconds * 2**n, LONGEST_INTERVAL) for n in range(retries)]
        with self._book.lock:  # task ids follow the enqueue order
            job_id = f"{self._tag}{self._book.issued + 1}"
            self._queue.enqueue(noop, job_id=job_id, retry=Retry(max=retries, interval=intervals) if retries else None)
            return self._book.add_task(job_id)

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """The sweep, then the worker's dequeue and execution; None when the queue is empty."""
        from rq import Queue

        self._book.check_dispatch(worker, now, duration)
        self._book.move_to(now)
        self._sweep()
        made = self._workers[worker]
        dequeued = Queue.dequeue_any([self._queue], None, connection=self._redis)
        if dequeued is None:
            return None
        job, _ = dequeued
        made.lease_seconds = duration * self._seconds
        execution = made.prepare_execution(job)
        made.prepare_job_execution(job, remove_from_intermediate_queue=True)
        token = execution.composite_key
        task_id = self._book.task_of(job.id)
        self._book.handed_out(token, task_id)
        with self._lock:
            self._held[token] = (made, job, execution)
        return Lease(task_id=task_id, worker=worker, token=token, started_at=now, expires_at=now + duration)

    def complete(self, task_id: int, token: object, now: int) -> Outcome:
        """The holder's ``handle_job_success``; accepted when the job is then ``finished``."""
        held = self._report(task_id, token, now)
        if isinstance(held, Outcome):
            return held
        made, job, execution = held
        made.handle_execution_ended(job, self._queue, job.success_callback_timeout)
        made.handle_job_success(job, self._queue, self._started, execution)
        return read_back(lambda: self._status(job.id), lambda status: status == "finished", NOT_FINISHED)

    def fail(self, task_id: int, token: object, now: int) -> Outcome:
        """The holder's ``handle_job_failure``; accepted when the job is then failed or waits for a retry."""
        held = self._report(task_id, token, now)
        if isinstance(held, Outcome):
            return held
        made, job, execution = held
        made.handle_execution_ended(job, self._queue, job.failure_callback_timeout)
        made.handle_job_failure(job, self._queue, self._started, "failed (fencepost)", execution)
        return read_back(lambda: self._status(job.id), lambda status: status in ("failed", "scheduled", "queued"),
                         NOT_FAILED)

    def renew(self, task_id: int, token: object, now: int, duration: int) -> Outcome:
        """The holder's ``maintain_heartbeats`` for ``duration``; accepted when the execution is still started."""
        held = self._report(task_id, token, now, duration)
        if isinstance(held, Outcome):
            return held
        made, job, execution = held
        made.lease_seconds = duration * self._seconds
        made.maintain_heartbeats(job, execution)
        return read_back(lambda: self._redis.zscore(self._started.key, execution.composite_key),
                         lambda score: score is not None, NOT_STARTED)

    def cancel(self, task_id: int, now: int) -> Outcome:
        """``Job.cancel``; refused when RQ raises ``InvalidJobOperation`` (canceled before)."""
        from rq.exceptions import InvalidJobOperation
        from rq.job import Job

        job_id = self._book.job(task_id)
        self._book.move_to(now)
        self._sweep()
        try:
            Job.fetch(job_id, connection=self._redis).cancel()
        except InvalidJobOperation:
            return Outcome(False, NOT_CANCELED)
        return read_back(lambda: self._status(job_id), lambda status: status == "canceled", NOT_CANCELED)

    def advance(self, now: int) -> None:
        """Move the logical clock, then sweep as a worker's maintenance and RQ's scheduler would."""
        self._book.move_to(now)
        self._sweep()

    def close(self) -> None:
        """Delete every key of this scheduler (also done when it is collected) and close its connections."""
        self._release()
        self._redis.close()
        self._scheduler.connection.close()

    # ------------------------------------------------------------ helpers

    def _report(self, task_id: object, token: object, now: object, duration: object = None) -> tuple | Outcome:
        """A report's checks and the sweep; what the holder holds, or the refusal of a report no call can mean."""
        self._book.check_report(task_id, token, now, duration)
        self._book.move_to(now)
        self._sweep()
        if self._book.other_task(task_id, token):
            return Outcome(False, OTHER_TASKS_TOKEN)
        with self._lock:
            held = self._held.get(token)
        return Outcome(False, NEVER_HANDED_OUT) if held is None else held

    def _sweep(self) -> None:
        """A worker's maintenance of the started registry, then RQ's scheduler moving due retries to the queue."""
        self._started.cleanup()
        self._scheduler.acquire_locks()
        self._scheduler.enqueue_scheduled_jobs()

    def _status(self, job_id: str) -> str:
        """The job's status as RQ records it now."""
        from rq.job import Job

        return str(Job.fetch(job_id, connection=self._redis).get_status().value)


@real_clock
@declare(VARIANTS)
def queue() -> RQQueue:
    """A fresh RQ queue, driven through ``rq worker``'s own methods, on the workers' clock in whole seconds."""
    return RQQueue()
