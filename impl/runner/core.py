"""The executing runner: a bounded pool that runs user functions under a scheduler's leases.

``Runner`` is the second seed's system built on any scheduler with the
protocol (default a fresh ``fencepost.impl.Scheduler()``): each pool slot is a
scheduler worker of capacity one (``w1`` .. ``wN``); a slot's thread asks the
scheduler for a lease, runs the task's function *without* the scheduler's
lock, then reports ``complete`` (it returned) or ``fail`` (it raised). Time
comes from a clock (``ManualClock`` for tests, ``MonotonicClock`` for real
use), in ticks; the lease duration is in the same ticks.

Concurrency: one lock, held only around the runner's bookkeeping and the
protocol calls, and condition variables on it for who waits for what (idle
slots for work, ``wait`` for a task's end, ``wait_idle`` for an idle pool),
each notified only when what its waiters wait for may have come. User work
never runs under the lock, so it may call ``submit``, ``cancel`` and ``task``
on the runner, and other threads may do so while user work is blocked. A
runner on the scheduler it made itself (that scheduler's only client) queues
its submits without the lock, and whoever takes it next makes them first
(``submits.py``, ``_drain``). A slot takes the lock back after user work by trying it and yielding the GIL
between tries (``wakeups.relock``): a thread blocked on a lock costs every release
of it a system call.

What a lease guarantees, and what it does not:

* Moving a ``ManualClock`` expires every lease whose time is up before
  ``advance`` returns (a timed call from the mover's thread); eligible work
  is then started by the pool's threads (``wait`` / ``wait_idle`` for it).
* At most ``workers`` user functions run at once in this process (a slot's
  thread stays with its function until it returns), and ``workers`` do run
  at once when that many tasks are eligible.
* A lease that expires while its function still runs (it did not
  ``heartbeat``) hands the task back to the scheduler, which may run it
  again on another slot. The old function's late completion or failure is
  rejected (stale token or expired lease): its value is discarded, the
  rejection is in the trace, and only the current attempt decides the task.
  With ``isolation="thread"`` the old function keeps running until it
  returns -- a thread cannot be killed -- and any external effect it has is
  not fenced by the token. With ``isolation="process"`` each attempt runs in
  a child process, which is terminated when its lease expires or on
  ``cancel(task_id, force=True)``; a terminated attempt may still have done
  part of its external effects.
* Cancellation of running work is cooperative with threads: ``cancel`` sets
  ``ctx.cancel_requested`` and the function decides when to stop (raising
  ``Cancelled`` or anything else ends the task ``cancelled``; returning ends it
  ``succeeded``, since the work did finish).

**A restart loses everything**: tasks, results, errors and leases live in
this process's memory only. Durability is a separate concern.

**Modes, each chosen once.** The pool itself (slots, leases, expiry) is this
module; how user work runs is the isolation's (``isolation.py``: thread or
process); whose tasks the runner runs is its mode's (``shared.py``: alone, or
shared). The records both build on are ``attempts.py``. **Helpers, each
owning its state** and checking it (``check_invariants``, all called from
``Runner.check_invariants``): the queued submits (``submits.py``), the idle
proof (``idle.py``), the retention window (``retention.py``), lease expiry
(``expiry.py``), the pooled claims and report queue (``pooled.py``,
``reports.py``), the trace (``trace.py``), the condition variables
(``wakeups.py``).

**Shared runners** (``shared.py``). With ``name``, ``functions`` and
``payloads`` (a ``PostgresPayloads``), runners in many processes share one
scheduler and a clock (``SchedulerClock``, ``DatabaseClock``); a timed call
refused because another client moved that time on is made again at the new
time. Results and exceptions stay in the process that ran the task; the
scheduler's view is everyone's. The README's "Many runners on many machines,
one schema" has the details.

**Batches** (``batch``, default ``default_batch``: on a scheduler that keeps
its state in storage, as many as there are slots; in memory, none). With
``batch`` above 1, on a scheduler that offers the batch operations, the slots
share one scheduler worker and claim and report for each other in batches
(``pooled.py``). Otherwise every slot is its own worker of capacity one and
every call a single one.

**Memory is bounded by the live tasks plus a retention window**
(``retention.py``): ``result``, ``error`` and ``task`` may be called any
number of times in that window, and raise ``ValueError`` saying the task was
forgotten after it. Choose the window as the longest time a caller may take to
come back for an answer (say, a request's timeout); ``retention=None`` keeps
every record for the runner's life (memory then grows with every task). An
idle runner makes no calls and holds still.
**Calls whose outcome is unknown** (``OutcomeUnknown``: a scheduler over a
network lost a call's answer) are ridden through, each as ``unknown.py`` says;
a lost ``submit`` or ``cancel`` is the caller's.

``save_trace(path)`` writes every protocol call the runner made as a scenario
that ``fencepost replay`` checks and ``fencepost tui`` shows (``trace.py``;
recorded only with ``Runner(trace=True)``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from fencepost.impl.runner.attempts import ASK_AGAIN, FINAL, Attempt, Cancelled, TaskContext, TaskRecord
from fencepost.impl.runner.clocks import TIME_RETRIES, ManualClock, MonotonicClock, SchedulerClock
from fencepost.impl.runner.expiry import Expiry
from fencepost.impl.runner.idle import IdleProof
from fencepost.impl.runner import unknown
from fencepost.impl.runner.isolation import MODES
from fencepost.impl.runner.pooled import Pool, default_batch
from fencepost.impl.runner.retention import NEVER
from fencepost.impl.runner.retention import Retention
from fencepost.impl.runner.shared import mode_for
from fencepost.impl.runner.submits import SubmitQueue
from fencepost.impl.runner.trace import Trace
from fencepost.impl.runner.waiting import Outlasting, RunnerStatus
from fencepost.impl.runner.wakeups import Signal, relock
from fencepost.spec.protocol import Outcome, OutcomeUnknown, Status, TaskView, offers_batches, says_backwards

__all__ = ["Cancelled", "ManualClock", "MonotonicClock", "Runner", "RunnerStatus", "SchedulerClock", "TaskContext"]

#: The isolations a runner offers: user work in a pool thread, or in a child process per attempt.
ISOLATIONS = tuple(MODES)

#: Real seconds ``stop()`` waits for running user functions before it gives up with ``TimeoutError``.
STOP_TIMEOUT = 60.0

#: Ticks a final task's record is kept by default: ten minutes of ``MonotonicClock``'s milliseconds.
DEFAULT_RETENTION = 600_000

#: Real seconds a pooled runner's report waits, at most, for the reports of the attempts its claim
#: leased together with it, so that they go in one call (``Runner(batch_wait=...)``).
DEFAULT_BATCH_WAIT = 0.002

#: Slots are scheduler workers named ``w1`` .. ``wN`` (the seeds' names for workers), or
#: ``NAME-w1`` .. ``NAME-wN`` for a runner given a ``name`` (unique among runners sharing a scheduler).
SLOT_PREFIX = "w"

#: A runner whose claims and reports go in batches (``batch`` above 1) has one scheduler worker
#: for all its slots, of capacity ``workers``, named this and the count: ``pool4``, or ``NAME-pool4``
#: (``pooled.py``).
POOL_PREFIX = "pool"


class Runner:
    """A bounded pool running user functions under the leases of a scheduler.

    Args:
        workers: pool slots, each a scheduler worker of capacity one (int >= 1).
        clock: ``ManualClock``, ``MonotonicClock`` or any object with their
            methods (default ``MonotonicClock()``).
        lease: the lease duration in clock ticks (int >= 1).
        scheduler: any object with the protocol (default ``fencepost.impl.Scheduler()``);
            the runner adds its workers to it at once.
        isolation: ``"thread"`` (user work in a pool thread) or ``"process"``
            (each attempt in a child process; the function, its result and
            its exception must pickle).
        name: None (slots ``w1`` .. ``wN``) or a non-empty str: slots
            ``NAME-w1`` .. ``NAME-wN``, so runners sharing one scheduler each
            have their own workers. A slot that already exists is taken over
            (a restarted runner keeps its name); two live runners with one name
            would share those slots' capacity.
        functions: with ``payloads``, the registry of what tasks may run, by
            name: every submit is one of these functions or a
            ``functools.partial`` of one with JSON arguments, and any runner
            with the same registry may run it.
        payloads: a payload store (``PostgresPayloads`` over the scheduler's
            schema) that makes this a *shared* runner: tasks are stored as
            (function name, JSON arguments) before they are submitted, and
            this runner runs any task of the scheduler, whoever submitted it.
        poll: shared runners only: real seconds between looks for what other
            processes did (default ``SHARED_POLL_SECONDS``).
        retention: ticks a final task's record (result, error) is kept after
            it became final, an int >= 0 (default ``DEFAULT_RETENTION``), or
            None to keep every record; the scheduler is pruned on the same
            window when it offers ``prune`` (see the module docstring).
        trace: record every protocol call for ``save_trace`` (default False:
            a trace grows with every call, so it is kept only when asked for).
        batch: the most leases one claim takes and the most reports one call
            makes, an int >= 1 (at most one per slot: ``workers`` caps it), or
            None for ``default_batch(scheduler, workers)``: ``workers`` on a
            scheduler that keeps its state in storage (``DurableScheduler``,
            ``PostgresScheduler``), where each call is a commit, 1 in memory.
            Above 1 and on a scheduler with the batch operations, the slots
            are one worker ``poolN`` (``NAME-poolN``) of capacity ``workers``;
            else each slot is its own worker ``wK`` of capacity one.
        batch_wait: real seconds >= 0 a report waits, at most, for those of the
            attempts leased with it, on a clock that runs by itself (default
            ``DEFAULT_BATCH_WAIT``); never more than half of what is left of its
            lease. 0: reports never wait (they still go together when they
            queue while the lock is held).
        outage_limit: real seconds the runner waits, from ``start`` on, for an
            unreachable database before it stops with the error (None, the
            default: as long as it runs); see ``impl.runner.waiting``.

    Raises:
        ValueError: a bad argument, named with its value and the rule; for a
            shared runner, also a clock behind the scheduler's.
    """

    def __init__(
        self,
        *,
        workers: int = 4,
        clock: object = None,
        lease: int = 30_000,
        scheduler: object = None,
        isolation: str = "thread",
        name: str | None = None,
        functions: Mapping[str, Callable[..., object]] | None = None,
        payloads: object = None,
        poll: float | None = None,
        retention: int | None = DEFAULT_RETENTION,
        trace: bool = False,
        batch: int | None = None,
        batch_wait: float = DEFAULT_BATCH_WAIT,
        outage_limit: float | None = None,
    ) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be an int >= 1, got {workers!r}")
        if isinstance(lease, bool) or not isinstance(lease, int) or lease < 1:
            raise ValueError(f"lease must be an int >= 1 (clock ticks), got {lease!r}")
        if isolation not in ISOLATIONS:
            raise ValueError(f"isolation must be one of {', '.join(map(repr, ISOLATIONS))}, got {isolation!r}")
        if name is not None and (not isinstance(name, str) or not name or name != name.strip()):
            raise ValueError(
                f"name must be None or a non-empty str without surrounding spaces (its slots are NAME-w1..), got {name!r}"
            )
        if retention is not None and (isinstance(retention, bool) or not isinstance(retention, int) or retention < 0):
            raise ValueError(f"retention must be None or an int >= 0 (clock ticks), got {retention!r}")
        if not isinstance(trace, bool):
            raise ValueError(f"trace must be a bool, got {trace!r}")
        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
            raise ValueError(f"batch must be None or an int >= 1 (leases per claim, reports per call), got {batch!r}")
        if isinstance(batch_wait, bool) or not isinstance(batch_wait, int | float) or not 0 <= batch_wait < NEVER:
            raise ValueError(f"batch_wait must be a number of real seconds >= 0, got {batch_wait!r}")
        mode = mode_for(functions, payloads, poll)
        if clock is None:
            clock = MonotonicClock()
        missing = [name for name in ("now", "subscribe", "unsubscribe", "seconds_until") if not hasattr(clock, name)]
        if missing:
            raise ValueError(f"clock must offer now, subscribe, unsubscribe and seconds_until; {clock!r} lacks {', '.join(missing)}")
        # A runner that made its own scheduler is its only client, and knows its rules: see _queue_submit.
        queues = scheduler is None and payloads is None
        if scheduler is None:
            from fencepost.impl import Scheduler

            scheduler = Scheduler()
        mode.bind(clock, scheduler)
        # What the runner waits through an outage with (the scheduler's, the payloads', the clock's waits)
        self._outlasting = Outlasting(outage_limit, scheduler, payloads, clock)
        self._clock = clock
        self._lease = lease
        self._scheduler = scheduler
        self._isolation = isolation
        self._runs = MODES[isolation]  # how user work runs: in the slot's thread, or in a child process
        self._mode = mode  # whose tasks: this runner's own (alone), or any of a shared scheduler's
        self._lock = threading.Lock()  # guards everything below and every call on the scheduler
        # Who waits for what, apart, so that no state change wakes a thread it cannot concern:
        # callers of ``wait`` wait on ``_changed`` (a task may be final), of ``wait_idle`` on
        # ``_idle`` (a slot found nothing and none runs), idle slots on ``_work`` (work may be
        # eligible). A busy pool's finishes then wake nobody, and its submits no caller.
        self._changed = Signal(self._lock)
        self._idle = Signal(self._lock)
        self._work = Signal(self._lock)
        self._expiry = Expiry(self._lock)  # the soonest lease end, and the expiry thread's wake-up
        prefix = '' if name is None else name + '-'
        self._prefix = prefix  # of its slots' names, and of its threads' (fencepost-runner-NAME-w1, ...-expiry)
        self._slots = tuple(f"{prefix}{SLOT_PREFIX}{n}" for n in range(1, workers + 1))
        # How many leases one claim takes and reports one call makes (at most one per slot). Above 1, on a
        # scheduler with the batch operations, the slots share one worker and claim and report for each
        # other (``_pool``, ``pooled.py``); otherwise each slot is its own worker, every call a single one.
        self._batch = min(workers, default_batch(scheduler, workers) if batch is None else batch)
        self._pool = (Pool(f"{prefix}{POOL_PREFIX}{workers}", self._batch, batch_wait, clock, lease)
                      if self._batch > 1 and offers_batches(scheduler) else None)
        self._own = 0  # tasks this runner submitted (shared: ``_tasks`` also holds tasks others submitted)
        self._tasks: dict[int, TaskRecord] = {}
        # Submits that went around the lock (``_queue_submit``): taken off under it by whoever holds
        # it next (``_drain``), before anything that reads the scheduler or the records.
        self._submits = SubmitQueue() if queues else None
        self._idle_slots = 0  # slots waiting for work (a queued submit wakes one when there is one)
        self._running: dict[str, Attempt] = {}  # slot -> the attempt its thread works on (zombies too)
        self._trace = Trace() if trace else None  # every protocol call, in the scheduler's order
        self._retention = Retention(retention)
        self._prunes = callable(getattr(scheduler, "prune", None))
        self._now_seen = 0  # the time of the runner's latest timed call: when an untimed read notices an end
        self._idle_proof = IdleProof()
        self._threads: list[threading.Thread] = []
        self._started = False
        self._stopping = False
        # (thread name, exception) of the first pool thread that raised: the runner then stops, and
        # every later public call says why instead of waiting for work no thread will do
        self._broken: tuple[str, BaseException] | None = None
        workers_added = ((self._pool.worker, workers),) if self._pool is not None else ((slot, 1) for slot in self._slots)
        with self._lock:
            for worker, capacity in workers_added:
                unknown.add_worker(self, worker, capacity, named=name is not None)

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> Runner:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start the pool's threads. Raises ``RuntimeError`` if already started."""
        with self._lock:
            if self._started:
                raise RuntimeError("the runner is already started (a runner starts once)")
            self._started = True
        self._outlasting.begin()
        self._clock.subscribe(self._on_clock)
        names = [f"fencepost-runner-{slot}" for slot in self._slots] + [f"fencepost-runner-{self._prefix}expiry"]
        pool = self._pool
        loop = self._slot_loop if pool is None else lambda slot: pool.slot_loop(self, slot)
        targets = [lambda s=slot: loop(s) for slot in self._slots] + [lambda: self._expiry.loop(self)]
        for name, target in zip(names, targets):
            thread = threading.Thread(target=self._guarded, args=(name, target), name=name, daemon=True)
            self._threads.append(thread)
            thread.start()

    def _guarded(self, name: str, target: Callable[[], None]) -> None:
        """Run a pool thread's loop; if it raises (the scheduler's connection dropped, say), stop the runner.

        User work never gets here (its exceptions are task failures); only the
        runner's own calls to the scheduler and clock can. A slot that died
        quietly would leave the pool short and ``wait``/``wait_idle`` waiting
        for work no thread does, so the first such exception stops the runner
        and every later public call raises ``RuntimeError`` from it.
        """
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - re-raised to the caller by _check_broken
            if self._outlasting.ended_by_stop(exc):
                return  # stop() ended its wait for the database: the thread ends as stop() asked
            with self._lock:
                if self._broken is None:
                    self._broken = (name, exc)
                self._stopping = True
                for attempt in self._running.values():
                    attempt.wake_up()
                self._wake_all()

    def _check_broken(self) -> None:
        """Raise ``RuntimeError`` (from the thread's exception) if a pool thread stopped the runner."""
        if self._broken is not None:
            name, exc = self._broken
            raise RuntimeError(f"the runner stopped: its thread {name} raised {type(exc).__name__}: {exc}") from exc

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Stop taking work and wait for running user functions to return.

        Tasks not yet started stay pending (and are lost with the process,
        unless the scheduler keeps them: a shared runner's tasks stay in the
        database for the other runners). Calling it again, or before
        ``start``, is harmless.

        A call waiting for the database through an outage stops waiting at
        once (its report is not made: the task's lease expires in the
        scheduler, as a lost worker's does).

        Raises:
            TimeoutError: some user function was still running after ``timeout`` real seconds.
            RuntimeError: a pool thread had raised and stopped the runner (once stopped, says why).
        """
        self._outlasting.interrupt()  # first: a thread waiting for the database holds the lock
        with self._lock:
            self._stopping = True
            self._drain()  # the tasks stay pending in the scheduler, as a locked submit leaves them
            for attempt in self._running.values():
                attempt.wake_up()
            self._wake_all()
        self._clock.unsubscribe(self._on_clock)
        for thread in self._threads:
            thread.join(timeout)
            if thread.is_alive():
                raise TimeoutError(f"stop: {thread.name} still runs user work after {timeout} s")
        self._outlasting.end()
        with self._lock:
            self._check_broken()

    def status(self) -> RunnerStatus:
        """What the runner is doing, without taking its lock: ``impl.runner.waiting.RunnerStatus``."""
        life = "broken" if self._broken is not None else "not started" if not self._started else \
            ("stopping" if any(t.is_alive() for t in self._threads) else "stopped") if self._stopping else "running"
        return self._outlasting.status(life, len(self._running))

    # ------------------------------------------------------------ the public calls

    def submit(
        self,
        fn: Callable[[TaskContext], object],
        *,
        priority: int = 0,
        due_at: int | None = None,
        max_attempts: int | None = None,
        retry_delay: int = 1,
        key: str | None = None,
    ) -> int:
        """Submit ``fn``, to be called as ``fn(ctx)``; return the task's id.

        The options are the scheduler's ``submit`` arguments (``due_at`` in
        clock ticks; ``None`` means at once). A runner on the scheduler it made
        itself checks them by the scheduler's rules and queues the submit
        without taking its lock (``submits.py``); a ``key`` submit is made
        under the lock. ``key``, an idempotency key, is passed on only when
        given (a scheduler without keys never sees it): a key the scheduler
        already knows names the task it made then, which keeps its first
        function. May be called from user work.

        A shared runner (``payloads``) first stores the task's payload, the
        name of ``fn`` in ``functions`` (or of the function ``fn`` is a
        ``functools.partial`` of) and its arguments as JSON, under ``key``
        (a fresh ``PAYLOAD_KEY_PREFIX`` key when None), then submits with that
        key; a refused submit deletes the payload it wrote. Two round trips.

        Raises:
            ValueError: ``fn`` is not callable, or the scheduler refused an
                option, or (shared) ``fn`` is not a registered function or a
                partial of one with arguments that survive JSON unchanged.
                Nothing is stored or submitted.
            RuntimeError: the runner is stopped.
            OutcomeUnknown: the scheduler lost the submit's answer (without
                a key only: a keyed submit is asked again); the task may exist.
        """
        if not callable(fn):
            raise ValueError(f"fn must be callable (it is called as fn(ctx)), got {fn!r}")
        self._runs.check_fn(fn)
        if self._submits is not None and key is None and not self._stopping:
            return self._queue_submit(fn, priority, due_at, max_attempts, retry_delay)
        key, unstore = self._mode.store(self, fn, key)  # shared: the payload, committed before the submit
        with self._lock:
            if self._stopping:
                unstore()
                self._check_broken()
                raise RuntimeError("cannot submit: the runner is stopped")
            # key is passed on only when given: a scheduler without keys never sees it
            args = {"priority": priority, "due_at": due_at, "max_attempts": max_attempts, "retry_delay": retry_delay}
            if key is not None:
                args["key"] = key
            try:
                if self._submits is None:
                    task_id = self._call("submit", args)
                else:
                    with self._submits.lock:  # no queued submit takes an id meanwhile
                        self._drain()
                        task_id = self._call("submit", args)
                        self._submits.saw(task_id)
            except ValueError:
                unstore()  # the scheduler refused the submit: leave nothing behind
                raise
            known = self._tasks.get(task_id)
            if known is not None and known.fn is not None:
                return task_id  # a known key: the same task, nothing new to run
            self._own += 1
            if known is not None:
                known.fn = fn  # shared: looked at (task, cancel) before this submit returned
            else:
                self._tasks[task_id] = TaskRecord(fn)
                self._retention.held(task_id)
            if due_at is not None:
                # A task due at once needs no hint: the version bump voids every idle proof made
                # before it, and any proof made after it was made at a time it was already due.
                self._idle_proof.hint(due_at)
            self._idle_proof.version += 1
            self._wake_pool()
        return task_id

    def _queue_submit(self, fn: Callable[[TaskContext], object], priority: int, due_at: int | None,
                      max_attempts: int | None, retry_delay: int) -> int:
        """``submit`` without the runner's lock, for a runner alone on the scheduler it made itself.

        The submit is checked by the scheduler's rules and queued with the id
        the scheduler will issue (``SubmitQueue.put``), and made, in queue
        order, by the next holder of the lock (``_drain``), before that holder
        reads the scheduler or the records. The pool's slots, which take the
        lock for every task, then never make a submitter wait (nor it them).
        An idle slot is woken, as a locked submit would (the order of the two
        checks is what makes the wake-up never lost: see ``_wait_for_work``).

        Raises:
            ValueError: an option the scheduler would refuse (nothing is queued).
        """
        try:
            task_id = self._submits.put(fn, priority, due_at, max_attempts, retry_delay)
        except ValueError as exc:
            if self._trace is not None:  # as a locked submit records its refusal (it changes nothing)
                with self._lock:
                    self._trace.record("submit", (priority, due_at, max_attempts, retry_delay), None, str(exc))
            raise
        if self._idle_slots:  # read after the append (see _wait_for_work)
            with self._lock:
                # one task due at once wants one slot; a later due time, every idle slot's new timeout
                self._work.notify_all() if due_at is not None else self._work.notify()
        return task_id

    def _drain(self) -> None:
        """Under the lock: make the queued submits, in their order (O(1) when none is queued)."""
        submits = self._submits
        if submits is None or not submits.pending:
            return
        submit, tasks, idle, trace = self._scheduler.submit, self._tasks, self._idle_proof, self._trace
        for task_id, fn, priority, due_at, max_attempts, retry_delay in submits.take():
            if trace is None:
                issued = submit(priority, due_at, max_attempts, retry_delay)
            else:
                issued = self._call("submit", {"priority": priority, "due_at": due_at, "max_attempts": max_attempts,
                                               "retry_delay": retry_delay})
            if issued != task_id:  # only a scheduler with another client could; this one has none
                raise RuntimeError(f"a queued submit expected task id {task_id}, the scheduler issued {issued}")
            tasks[issued] = TaskRecord(fn)  # the scheduler's int as the key: one int object per task, not two
            self._own += 1
            if due_at is not None:
                idle.hint(due_at)  # see submit: only a task not due at once needs a hint
        self._retention.held(task_id)
        idle.version += 1

    def cancel(self, task_id: int, *, force: bool = False) -> Outcome:
        """Cancel the task: a waiting task never runs; a running one is asked to stop.

        With ``force=True`` and ``isolation="process"``, a running attempt's
        child process is terminated and the task ends ``cancelled``.

        Raises:
            ValueError: ``force=True`` with thread isolation (a thread cannot be
                killed), or an unknown ``task_id``. Nothing changes.
            OutcomeUnknown: the scheduler lost the cancel's answer: read the
                task (``task``) to see whether it took effect.
        """
        self._runs.check_force(force)
        with self._lock:
            self._drain()
            self._known(task_id)
            outcome, now = self._timed_call("cancel", {"task_id": task_id, "now": None})
            if outcome.accepted:
                view = self._refresh(task_id, now)
                for attempt in self._running.values():
                    if attempt.task_id == task_id and attempt.token == view.token:
                        attempt.cancel_requested = True
                        if force:
                            attempt.kill = True
                            attempt.wake_up()
            self._wake_pool()
        return outcome

    def task(self, task_id: int) -> TaskView:
        """The scheduler's detached view of the task. Raises ``ValueError`` for an unknown id.

        A shared runner answers for any task of the scheduler, whoever submitted it.
        """
        with self._lock:
            self._drain()
            self._known(task_id)
            return self._scheduler.task(task_id)

    def result(self, task_id: int) -> object:
        """The value the task's accepted completion returned.

        A shared runner knows the value only when its own slot's completion
        was the accepted one: results are not stored in the database, so a
        task that succeeded in another process has its value there only.

        Raises:
            ValueError: unknown id, or the task has not succeeded (the message says
                its status), or (shared) it succeeded in another process.
        """
        with self._lock:
            self._drain()
            task = self._known(task_id)
            self._mode.before_result(self, task_id, task)
            if task.status != Status.SUCCEEDED.value:
                raise ValueError(f"task {task_id} has no result: it is {task.status}, not succeeded")
            self._mode.check_result_here(task_id, task)
            return task.result

    def error(self, task_id: int) -> BaseException | None:
        """The exception of the task's last accepted failure, or None if none was accepted.

        A shared runner knows only the failures its own slots reported.

        Raises:
            ValueError: unknown id.
        """
        with self._lock:
            self._drain()
            return self._known(task_id).error

    def submitted(self) -> int:
        """How many tasks this runner has submitted (alone on its scheduler, ids run from 1 to this)."""
        with self._lock:
            self._drain()
            return self._own

    def wait(self, task_id: int, timeout: float) -> TaskView:
        """Return the task's view once it is final (succeeded, failed or cancelled).

        A shared runner reads the scheduler's view every ``poll`` seconds (the
        task may be run by any process), so it answers up to ``poll`` late.

        Raises:
            ValueError: unknown id, or ``timeout`` is not a number > 0.
            TimeoutError: not final after ``timeout`` real seconds.
            RuntimeError: a pool thread raised and stopped the runner (the message says which, and what).
        """
        _check_timeout(timeout)
        with self._lock:
            self._check_broken()
            self._drain()
            task = self._known(task_id)
            return self._mode.wait(self, task_id, task, timeout)

    def wait_idle(self, timeout: float) -> None:
        """Return once no user function runs and nothing is eligible at the clock's current time.

        A shared runner first forgets what it knew: it returns once none of its
        user functions runs and one of its dispatches, made after this call
        began, found nothing for it. Other processes may still be working.

        Raises:
            ValueError: ``timeout`` is not a number > 0.
            TimeoutError: still busy after ``timeout`` real seconds.
            RuntimeError: a pool thread raised and stopped the runner (the message says which, and what).
        """
        _check_timeout(timeout)
        with self._lock:
            self._mode.others_may_have_worked(self)  # shared: another process may have made work: look again
            self._check_broken()
            self._drain()
            if not self._idle.wait_for(lambda: self._is_idle() or self._broken is not None, timeout):
                self._check_broken()
                raise TimeoutError(
                    f"wait_idle: after {timeout} s, {len(self._running)} user function(s) still run "
                    f"(tasks {sorted(a.task_id for a in self._running.values())}) at t={self._clock.now}"
                )
            self._check_broken()

    def save_trace(self, path: str | Path, *, title: str | None = None, description: str | None = None) -> Path:
        """Write every protocol call so far as a scenario (JSON for ``.json``, else TOML); return the path.

        Each step's ``expect`` is the call's actual result, so ``fencepost
        replay PATH`` passes on a correct scheduler and ``fencepost tui PATH``
        shows the run. ``title`` and ``description`` (Markdown) replace the
        plain ones. O(calls) time and memory.
        """
        if self._trace is None:
            raise RuntimeError("save_trace needs a trace: make the runner with Runner(trace=True), which records every call")
        with self._lock:
            self._drain()  # the queued submits are calls the scheduler is about to see
            calls, tasks = self._trace.snapshot(), len(self._tasks)
        title = title or f"A runner's trace: {len(self._slots)} workers, {tasks} tasks"
        meta = {"generated_by": "fencepost.impl.runner", "isolation": self._isolation, "lease": self._lease}
        return Trace.save(calls, Path(path), title, description, meta)

    def check_invariants(self) -> None:
        """Assert the runner's own bookkeeping, then each helper's (``AssertionError`` says what broke).

        Takes the lock; O(tasks + trace): for tests and debugging, not for the hot path.
        """
        with self._lock:
            running = self._running
            assert set(running) <= set(self._slots), f"attempts on slots that are not the runner's: {set(running)}"
            assert all(attempt.slot == slot for slot, attempt in running.items()), "an attempt runs on another's slot"
            assert 0 <= self._idle_slots <= len(self._slots), f"{self._idle_slots} idle slots of {len(self._slots)}"
            tasks = self._tasks
            assert all(tasks[i].status in FINAL for i in self._retention.ended if i in tasks), "a retained task is live"
            for signal in (self._changed, self._idle, self._work):
                signal.check_invariants()
            self._idle_proof.check_invariants()
            self._retention.check_invariants()
            self._expiry.check_invariants(running)
            for helper in (self._submits, self._trace):
                if helper is not None:
                    helper.check_invariants()
            if self._pool is not None:
                self._pool.check_invariants(running)

    # ------------------------------------------------------------ the pool

    def _slot_loop(self, slot: str) -> None:
        """One pool slot, its own worker of capacity one: take a lease, run it without the lock, report, repeat."""
        with self._lock:
            while not self._stopping:
                attempt = self._next_attempt(slot)
                if attempt is ASK_AGAIN:
                    continue
                if attempt is None:
                    self._wait_for_work()
                    continue
                outcome = self._run_attempt(attempt)
                self._finish(attempt, outcome)

    def _wait_for_work(self) -> None:
        """Under the lock, after a slot found nothing: tell ``wait_idle`` if nothing runs, then wait for work."""
        if not self._running:
            self._idle.notify_all()  # nothing runs and this slot found nothing: wait_idle may hold
        # Counted before the queue is looked at, and a queued submit looks at the count
        # after its append: either this sees the submit or the submit sees this slot
        # waiting (and notifies it, once it waits), so no wake-up is lost. A lease a
        # pooled claim takes for this slot is handed under the lock, which is held from
        # ``_claim`` finding none to this wait, and notified.
        self._idle_slots += 1
        try:
            if self._submits is None or not self._submits.pending:
                self._work.wait(self._idle_proof.seconds_to_next_due(self._clock))
        finally:
            self._idle_slots -= 1

    def _next_attempt(self, slot: str) -> Attempt | None:
        """Under the lock: lease the best eligible task to ``slot``, or None if there is none now."""
        if self._submits is not None and self._submits.pending:
            self._drain()
        idle = self._idle_proof
        if idle.proof is not None and idle.proven(self._clock):
            return None  # a free slot already found nothing, and nothing new came or fell due since
        try:
            if self._trace is None:  # the call by keyword, as _timed_call makes it, without the dict
                now = self._clock.now
                try:
                    lease = self._scheduler.dispatch(worker=slot, now=now, duration=self._lease)
                except ValueError as exc:
                    lease, now = self._timed_retry("dispatch", {"worker": slot, "now": now, "duration": self._lease}, exc)
                else:
                    self._timed_done(now)
            else:
                lease, now = self._timed_call("dispatch", {"worker": slot, "now": None, "duration": self._lease})
        except OutcomeUnknown:
            return unknown.claim_lost(self)
        if lease is None:
            idle.found_nothing(now)
            return None
        hints = idle.hints
        if hints and hints[0] <= now:
            idle.past_due(now)
        # ``_begin``, without its frame: this is every single-call lease's way (the default runner's)
        task = self._tasks.get(lease.task_id)
        new = task is None
        if new:
            task = self._tasks[lease.task_id] = TaskRecord(None)  # another client submitted it
            self._retention.held(lease.task_id)
        task.status = _RUNNING
        task.attempts += 1
        self._mode.claim(lease.task_id, task, new)
        attempt = Attempt(lease.task_id, lease.token, task.attempts, slot, lease.expires_at, task)
        self._running[slot] = attempt
        expiry = self._expiry
        if lease.expires_at < expiry.soonest or lease.expires_at < expiry.wakes_at:
            expiry.leased(lease.expires_at)
        return attempt

    def _begin(self, slot: str, lease: object) -> Attempt:
        """Under the lock: ``slot``'s attempt at the task ``lease`` leased, in the records and ``_running``."""
        task = self._tasks.get(lease.task_id)
        new = task is None
        if new:
            task = self._tasks[lease.task_id] = TaskRecord(None)  # another client submitted it
            self._retention.held(lease.task_id)
        task.status = _RUNNING
        task.attempts += 1
        self._mode.claim(lease.task_id, task, new)
        attempt = Attempt(lease.task_id, lease.token, task.attempts, slot, lease.expires_at, task)
        self._running[slot] = attempt
        expiry = self._expiry
        if lease.expires_at < expiry.soonest or lease.expires_at < expiry.wakes_at:
            expiry.leased(lease.expires_at)
        return attempt

    def _run_attempt(self, attempt: Attempt) -> tuple[str, object]:
        """Called and returns with the lock held; runs the user function with it released."""
        self._lock.release()
        try:
            return self._execute(attempt)
        finally:
            relock(self._lock)

    def _execute(self, attempt: Attempt) -> tuple[str, object]:
        """Run one attempt (no lock held): ``("ok", value)``, ``("error", exc)`` or ``("killed", why)``."""
        task = attempt.record
        if task.problem is not None:
            return ("error", LookupError(task.problem))  # nothing here can run it; fail the attempt
        return self._runs.run(self, attempt, task)

    def _finish(self, attempt: Attempt, outcome: tuple[str, object], answer: Outcome | None = None,
                now: int = 0) -> None:
        """Under the lock: report the attempt's end to the scheduler and free its slot.

        ``answer``: the scheduler's answer to a report already made (in a
        batch, at ``now``); then only what it says is kept here.
        """
        kind, value = outcome
        try:
            if answer is None:
                if kind == "killed" and not attempt.cancel_requested:
                    return  # terminated because its lease expired: the scheduler already took the task back
                op = "complete" if kind == "ok" else "fail"
                try:  # the first try of _report's, without its frame (nor, with no trace, _timed_call's dict)
                    if self._trace is None:
                        now = self._clock.now
                        report = self._scheduler.complete if kind == "ok" else self._scheduler.fail
                        try:
                            answer = report(task_id=attempt.task_id, token=attempt.token, now=now)
                        except ValueError as exc:
                            answer, now = self._timed_retry(
                                op, {"task_id": attempt.task_id, "token": attempt.token, "now": now}, exc)
                        else:
                            self._timed_done(now)
                    else:
                        answer, now = self._timed_call(op, {"task_id": attempt.task_id, "token": attempt.token, "now": None})
                except OutcomeUnknown:
                    answer, now = unknown.report(self, op, attempt, lost=True)
            if answer.accepted:
                task = attempt.record
                if kind == "ok":
                    task.result = value
                    task.completed_here = True
                    task.status = _SUCCEEDED  # what an accepted completion always does
                    self._retention.ended_at(now, attempt.task_id)
                else:
                    if kind == "error":
                        task.error = value
                    view = self._refresh(attempt.task_id, now)
                    if view.status == Status.RETRY_WAIT:
                        self._idle_proof.hint(view.due_at)
                        self._work.notify_all()  # idle slots wake at the retry's due time
        finally:
            del self._running[attempt.slot]
            self._changed.notify_all()  # the task may be final (the pool's idleness: see _slot_loop)

    def _after_timed_call(self, now: int) -> None:
        """Under the lock, after any timed call at ``now``: notice leases the scheduler expired,
        and forget the records whose retention window has passed.

        ``_timed_call`` calls it only when there may be something to do: a live
        lease may have ended (O(workers)) or a record's window passed (O(records
        forgotten)); most timed calls come before both.
        """
        if now >= self._expiry.soonest:
            self._expiry.notice(self, now)
        if now >= self._retention.next_forget:
            self._forget_before(now - self._retention.window, now)

    def _heartbeat(self, attempt: Attempt, duration: int | None) -> bool:
        if attempt.renew_refused:
            return False
        with self._lock:
            length = self._lease if duration is None else duration
            asked = time.monotonic()  # before the call: the renewed lease cannot have begun earlier
            try:
                answer, now = self._timed_call(
                    "renew", {"task_id": attempt.task_id, "token": attempt.token, "now": None, "duration": length})
            except OutcomeUnknown:
                answer, now = unknown.renewal(self, attempt, length)
            if answer.accepted:
                attempt.expires_at = now + (self._lease if duration is None else duration)
                if attempt.cohort is not None and self._pool.tick_seconds is not None:
                    attempt.cohort.deadline = asked + length * self._pool.tick_seconds
                self._expiry.leased(attempt.expires_at)  # a shorter renewal ends sooner
            else:
                attempt.renew_refused = True
            self._wake_pool()
            return answer.accepted

    # ------------------------------------------------------------ helpers (all under the lock)

    def _call(self, op: str, args: dict) -> object:
        """Make one protocol call, by keyword, and record it in the trace if there is one.

        ``args`` are every argument of ``op`` in protocol order, but for trailing optional
        ones left out (``key``): ``save_trace`` names the values by position. A ``ValueError``
        is recorded, then raised.
        """
        trace = self._trace
        if trace is None:
            return getattr(self._scheduler, op)(**args)
        try:
            value = getattr(self._scheduler, op)(**args)
        except ValueError as exc:
            trace.record(op, tuple(args.values()), None, str(exc))
            raise
        trace.record(op, tuple(args.values()), value, None)
        return value

    def _timed_call(self, op: str, args: dict) -> tuple[object, int]:
        """Make a timed call at the clock's ``now``; return its value and the ``now`` it was made at.

        ``args`` are the call's arguments in protocol order (as ``_call``), with a
        placeholder for ``now``, which is filled in with the clock's time: a dict
        per call, no closure.

        When the scheduler refuses the time as behind its clock ("time can't go
        backwards": another client moved the shared clock on after this runner
        read it), the clock is read again and the call made again, as long as
        the clock moved on meanwhile, at most ``TIME_RETRIES`` times. The
        refused calls changed nothing (and are in the trace). A clock that
        stays behind the scheduler's cannot catch up by retrying: its
        ``ValueError`` is raised.
        """
        now = args["now"] = self._clock.now
        try:
            value = self._call(op, args)
        except ValueError as exc:
            return self._timed_retry(op, args, exc)
        self._timed_done(now)
        return value, now

    def _timed_retry(self, op: str, args: dict, refused: ValueError) -> tuple[object, int]:
        """``_timed_call`` after its first call at ``args["now"]`` was refused with ``refused``."""
        for _ in range(TIME_RETRIES):
            now, fresh = args["now"], self._clock.now
            if not says_backwards(refused) or fresh <= now:
                raise refused
            args["now"] = fresh
            try:
                value = self._call(op, args)
            except ValueError as exc:
                refused = exc
                continue
            self._timed_done(fresh)
            return value, fresh
        raise ValueError(f"{op}: the scheduler refused {TIME_RETRIES} times in a row a time the clock had just given")

    def _timed_done(self, now: int) -> None:
        """After a timed call at ``now`` took effect: the time seen, and what may have ended by it."""
        self._now_seen = now
        if now >= self._expiry.soonest or now >= self._retention.next_forget:
            self._after_timed_call(now)

    def _refresh(self, task_id: int, now: int | None = None) -> TaskView:
        """Read the task's view and keep its status; a task found final starts its retention
        window at ``now``, the timed call's time (None: an untimed read, at the latest call's)."""
        view = self._scheduler.task(task_id)
        task = self._tasks[task_id]
        status = getattr(view.status, "value", view.status)
        if status in FINAL and task.status not in FINAL:
            self._retention.ended_at(self._now_seen if now is None else now, task_id)
        task.status = status
        return view

    def _forget_before(self, before: int, now: int) -> None:
        """Drop the records of tasks that became final before ``before``, and prune the scheduler so.

        O(k) for the k records dropped (``Retention.forget_before``). A
        shared scheduler's prune may be refused as behind its clock (another
        client moved it on): nothing is lost, the next timed call prunes.
        """
        self._retention.forget_before(before, self._tasks)
        if self._prunes:
            try:
                self._call("prune", {"before": before, "now": now})
            except ValueError:
                pass  # behind a shared clock: the next window's prune forgets these too

    def _wake_pool(self) -> None:
        """Wake idle slots (work may be eligible) and callers of wait and wait_idle."""
        self._work.notify_all()
        self._changed.notify_all()
        self._idle.notify_all()

    def _wake_all(self) -> None:
        """Wake every waiting thread: the pool, the expiry thread, callers of wait and wait_idle."""
        self._wake_pool()
        self._expiry.changed.notify_all()

    def _known(self, task_id: int) -> TaskRecord:
        an_id = isinstance(task_id, int) and not isinstance(task_id, bool)
        task = self._tasks.get(task_id) if an_id else None
        if task is None and an_id:
            task = self._mode.unknown(self, task_id)  # shared: any task of the scheduler
        if task is None and an_id and self._retention.forgotten(task_id):
            raise ValueError(
                f"task {task_id} was forgotten: it ended more than retention={self._retention.window} ticks ago")
        if task is None:
            raise ValueError(f"task_id must be the id of a task this runner submitted, got {task_id!r}")
        return task

    def _is_idle(self) -> bool:
        """Nothing runs, nothing is queued, and a dispatch now would find nothing (``IdleProof``)."""
        return (not self._running and (self._submits is None or not self._submits.pending)
                and self._idle_proof.proven(self._clock))

    def _on_clock(self) -> None:
        """A manual clock moved (in the mover's thread): expire what is due at once, then wake the pool.

        So when ``advance`` returns, every lease whose time is up has been
        taken back; what fell due is dispatched by the pool's threads.
        """
        with self._lock:
            self._drain()  # submitted before time moved: the scheduler sees them before it moves
            if not self._stopping:
                self._expiry.expire_due(self)
            self._mode.others_may_have_worked(self)  # shared: retries and due tasks others submitted may be eligible
            self._wake_all()


_SUCCEEDED = Status.SUCCEEDED.value
_RUNNING = Status.RUNNING.value


def _check_timeout(timeout: object) -> None:
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ValueError(f"timeout must be a number of real seconds > 0, got {timeout!r}")

