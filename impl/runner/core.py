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
runner on the scheduler it made itself is that scheduler's only client, so
its submits do not take the lock: each is checked by the scheduler's own
rules, given the id the scheduler will issue, and queued; whoever takes the
lock next makes the queued submits first (``_queue_submit``, ``_drain``).
A slot takes the lock back after user work by trying it and yielding the GIL
between tries (``_relock``): a thread blocked on a lock costs every release
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

**Modes, each chosen once.** The pool itself (slots, leases, expiry, the
trace) is this module; how user work runs is the isolation's
(``impl.isolation``: thread or process); whose tasks the runner runs is its
mode's (``impl.shared_runner``: alone, or shared). The records both build on
are ``impl.attempts``.

**Shared runners.** With ``name``, ``functions`` and ``payloads`` (a
``PostgresPayloads``), runners in many processes share one scheduler: each
task is stored as a registered function's name and JSON arguments before it
is submitted, any runner runs any task, a clock shared by all
(``SchedulerClock``, ``DatabaseClock``) gives one time, a timed call refused
because another client moved that time on is made again at the new time, and
a poll every ``poll`` seconds notices other processes' work. Results and
exceptions stay in the process that ran the task; the scheduler's view is
everyone's. The README's "Many runners on many machines, one schema" has the
details.

**Batches** (``batch``, default ``default_batch``: on a scheduler that keeps
its state in storage, as many as there are slots; in memory, none). With
``batch`` above 1, on a scheduler that offers the batch operations, the slots
share one scheduler worker ``poolN`` (``NAME-poolN``) of capacity ``workers``:
a slot that looks for work claims for every free slot with one
``dispatch_many`` and hands the other leases to their slots; a slot whose work
ended queues its report, and the next slot to take the lock makes every
queued report in one ``complete_many`` (and one ``fail_many``), each judged by
the scheduler exactly as its single call would be. On a clock that runs by
itself, the reports of the attempts one claim leased together wait for each
other at most ``batch_wait`` real seconds, and never more than half of what
is left of their leases. Otherwise (``batch=1``, or a scheduler without
batches) every slot is its own worker of capacity one and every call a single one.

**Memory is bounded by the live tasks plus a retention window.** A task's
record (its function, and its result or error) is kept while the task is
live and, once final, for ``retention`` ticks after the call that made it
final, whether it was read or not: ``result``, ``error`` and ``task`` may be
called any number of times in that window, and raise ``ValueError`` saying
the task was forgotten after it. Choose the window as the longest time a
caller may take to come back for an answer (say, a request's timeout);
``retention=None`` keeps every record for the runner's life (memory then
grows with every task). The runner prunes its scheduler on the same window
when the scheduler offers ``prune``, so the scheduler forgets the same tasks.
Both forget lazily, at the runner's next timed call at or past the window's
end; an idle runner makes no calls and holds still.
**Calls whose outcome is unknown** (``OutcomeUnknown``: a scheduler over a
network lost a call's answer, docs/faults.md). The runner rides through
them: a lost ``dispatch`` is left to lease expiry (the slot asks again; a
lease it never heard of ends at its expiry, as any lost worker's does); a lost
``complete`` or ``fail`` is resolved by reading the task (``_resolve``: still
running under the attempt's token means it did not take effect, and it is
made again; otherwise the status and the attempt count say whether it was
accepted); a lost ``renew`` by the task's expiry; a lost ``add_worker`` is
made again (a slot's name is the runner's own, so "already exists" then means
the first took effect). A lost ``submit`` or ``cancel`` is the caller's:
``Runner.submit`` and ``Runner.cancel`` raise it (a shared runner's submits
carry a key, which the scheduler makes safe to repeat, so they do not lose
answers to a PostgreSQL reconnect). Calls with unknown outcomes are not in the
trace: a scenario has no step whose effect is unknown.

``save_trace(path)`` writes every protocol call the runner made, in the order
the scheduler saw them, with each actual result as ``expect``: a scenario
that ``fencepost replay`` checks against any scheduler (it must start fresh)
and ``fencepost tui`` shows. The trace is recorded only when asked for
(``Runner(trace=True)``), and then in full: it grows with every call.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fencepost.impl.kit import check_submit
from fencepost.impl.runner.attempts import FINAL, Attempt, Cancelled, Cohort, InCohort, TaskContext, TaskRecord
from fencepost.impl.runner.clocks import BACKWARDS, TIME_RETRIES, ManualClock, MonotonicClock, SchedulerClock
from fencepost.impl.runner.isolation import MODES
from fencepost.impl.runner.waiting import Outlasting, RunnerStatus
from fencepost.impl.runner.shared import (  # noqa: F401  (the shared mode's constants stay importable from here)
    PAYLOAD_KEY_PREFIX,
    PAYLOAD_METHODS,
    SHARED_POLL_SECONDS,
    mode_for,
)
from fencepost.spec.checkers.capabilities import offers_batches
from fencepost.spec.checkers.steps import offers_restart
from fencepost.spec.formats.scenario import ALL_SIGNATURES, Scenario, Step, StepResult, dump_scenario, expect_from
from fencepost.spec.protocol import Outcome, OutcomeUnknown, Status, TaskView

__all__ = ["Cancelled", "ManualClock", "MonotonicClock", "Runner", "RunnerStatus", "SchedulerClock", "TaskContext"]

#: The isolations a runner offers: user work in a pool thread, or in a child process per attempt.
ISOLATIONS = tuple(MODES)

#: Times a call whose answer was lost is made again after reading says it did not take effect.
UNKNOWN_RETRIES = 10

#: What ``_next_attempt`` returns when its dispatch lost its answer: ask again at once.
_ASK_AGAIN = object()

#: Real seconds ``stop()`` waits for running user functions before it gives up with ``TimeoutError``.
STOP_TIMEOUT = 60.0

#: Ticks a final task's record is kept by default: ten minutes of ``MonotonicClock``'s milliseconds.
DEFAULT_RETENTION = 600_000

#: Tries a slot makes to take the lock back after user work, yielding the GIL between them, before
#: it blocks on the lock (``Runner._relock``).
RELOCK_TRIES = 20

#: Real seconds a pooled runner's report waits, at most, for the reports of the attempts its claim
#: leased together with it, so that they go in one call (``Runner(batch_wait=...)``).
DEFAULT_BATCH_WAIT = 0.002

#: A time after every lease's end.
_NEVER = float("inf")

#: Slots are scheduler workers named ``w1`` .. ``wN`` (the seeds' names for workers), or
#: ``NAME-w1`` .. ``NAME-wN`` for a runner given a ``name`` (unique among runners sharing a scheduler).
SLOT_PREFIX = "w"

#: A runner whose claims and reports go in batches (``batch`` above 1) has one scheduler worker
#: for all its slots, of capacity ``workers``, named this and the count: ``pool4``, or ``NAME-pool4``
#: (the count in the name: a restarted runner with another pool size never takes over a worker
#: whose capacity is not its own).
POOL_PREFIX = "pool"


def default_batch(scheduler: object, workers: int) -> int:
    """The ``batch`` of a runner given none: ``workers`` where a call costs a commit, else 1.

    A scheduler that keeps its state in storage (it offers ``reopen``:
    ``DurableScheduler``, ``PostgresScheduler``) makes every call a transaction,
    and over PostgreSQL a round trip: a batch is one of each for many leases or
    reports. In memory a batch is its single calls plus a check of the whole
    (``impl._batches``), and measured no faster (docs/runner.md, "Batches").
    A scheduler without the batch operations gets 1 (single calls) either way.
    """
    return workers if offers_restart(scheduler) and offers_batches(scheduler) else 1

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
        outage_limit: real seconds the runner waits for an unreachable database
            before it stops with the error (None, the default: as long as it
            runs). While it waits, the log and ``status()`` say so; once the
            database is back, the work goes on (``impl.runner.waiting``).
            Applies from ``start`` on to the scheduler, payload store and clock
            that offer ``outlast``; construction itself does not wait.

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
        if isinstance(batch_wait, bool) or not isinstance(batch_wait, int | float) or not 0 <= batch_wait < _NEVER:
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
        self._changed = _Signal(self._lock)
        self._idle = _Signal(self._lock)
        self._work = _Signal(self._lock)
        # The expiry thread waits apart, woken only when a lease may end sooner than it planned
        # for, so the state changes of every task do not wake it (each wake costs a lock handoff).
        self._expiry_changed = _Signal(self._lock)
        self._expiry_wakes_at: float = _NEVER  # the earliest lease end the expiry thread waits for
        prefix = '' if name is None else name + '-'
        self._prefix = prefix  # of its slots' names, and of its threads' (fencepost-runner-NAME-w1, ...-expiry)
        self._slots = tuple(f"{prefix}{SLOT_PREFIX}{n}" for n in range(1, workers + 1))
        # How many leases one claim takes and reports one call makes (at most one per slot). Above 1,
        # on a scheduler with the batch operations, the slots share one worker (``_pool``) and claim
        # and report for each other (``_pooled_slot_loop``); otherwise every slot is its own worker
        # of capacity one and every call is a single one.
        self._batch = min(workers, default_batch(scheduler, workers) if batch is None else batch)
        self._pool: str | None = f"{prefix}{POOL_PREFIX}{workers}" if self._batch > 1 and offers_batches(scheduler) else None
        # Pooled: the attempts a slot's claim took for other free slots, by slot, not yet started
        # (each is in ``_running`` already: its lease is the scheduler's from the claim on), and the
        # reports of slots whose work ended, queued without the runner's lock and made by the next
        # slot that holds it (``_flush_reports``), in as few calls as ``batch`` allows.
        self._handed: dict[str, Attempt] = {}
        self._reports: deque[_QueuedReport] = deque()  # appended and taken under _queued_reports
        # The queued reports' own lock, never held while taking the runner's (which may be held
        # around it), so a slot queues its report and waits for its cohort's without the runner's.
        self._queued_reports = threading.Condition(threading.Lock())
        self._batch_wait = batch_wait
        # Real seconds per clock tick, for a clock that runs by itself (None: only calls move it, and
        # then no report waits), so a report never waits past its lease's end (``InCohort.deadline``).
        self._tick_seconds: float | None = None
        if self._pool is not None:
            until = clock.seconds_until(clock.now + lease)
            self._tick_seconds = None if until is None else until / lease
        self._own = 0  # tasks this runner submitted (shared: ``_tasks`` also holds tasks others submitted)
        self._tasks: dict[int, TaskRecord] = {}
        # Submits that went around the lock (``_queue_submit``), oldest first, as (id, fn, priority,
        # due_at, max_attempts, retry_delay): appended without the lock, taken off under it by
        # whoever holds it next (``_drain``), before anything that reads the scheduler or the records.
        self._queued: deque[tuple] | None = deque() if queues else None
        self._submit_lock = threading.Lock()  # orders queued submits: their ids are their order
        self._issued = 0  # ids the scheduler issued, plus those queued for it (queued mode only)
        self._idle_slots = 0  # slots waiting for work (a queued submit wakes one when there is one)
        self._running: dict[str, Attempt] = {}  # slot -> the attempt its thread works on (zombies too)
        # At most the end of the soonest live lease in ``_running`` (a lease renewed or finished since
        # leaves it early, never late): no timed call before it can have expired one of them.
        self._soonest_expiry: float = _NEVER
        # With trace=True, every protocol call, in the scheduler's order, as (op, argument values
        # in protocol order, value, error message): tuples, not dicts, so a long trace stays small.
        self._trace: list[tuple[str, tuple, object, str | None]] | None = [] if trace else None
        self._retention = retention
        # The retained final tasks in the order they became final: their ids, and beside them the
        # times (two deques of ints: no tuple per task); the first time from which the oldest is
        # forgotten (``_NEVER``: none is retained, or records are kept for ever).
        self._ended: deque[int] = deque()
        self._ended_times: deque[int] = deque()
        self._next_forget: float = _NEVER
        self._last_id = 0  # the largest task id this runner has held a record of
        self._prunes = callable(getattr(scheduler, "prune", None))
        self._now_seen = 0  # the time of the runner's latest timed call: when an untimed read notices an end
        self._version = 0  # bumped whenever work may have become eligible (submit, expiry)
        self._idle_proof: tuple[int, int] | None = None  # (version, time) at which a free slot's dispatch found nothing
        self._due_hints: list[int] = []  # heap of due times, so a real clock's idle slots wake when work falls due
        self._threads: list[threading.Thread] = []
        self._started = False
        self._stopping = False
        # (thread name, exception) of the first pool thread that raised: the runner then stops, and
        # every later public call says why instead of waiting for work no thread will do
        self._broken: tuple[str, BaseException] | None = None
        workers_added = ((self._pool, workers),) if self._pool is not None else ((slot, 1) for slot in self._slots)
        with self._lock:
            for worker, capacity in workers_added:
                lost = 0
                while True:
                    try:
                        self._call("add_worker", {"worker": worker, "capacity": capacity})
                    except OutcomeUnknown:
                        lost += 1
                        if lost > UNKNOWN_RETRIES:
                            raise
                        continue  # made again: a duplicate then means the lost one took effect
                    except ValueError as exc:
                        if (name is None and not lost) or "already exists" not in str(exc):
                            raise
                        # a named runner restarted (its slot is still registered, and is its own
                        # again), or the lost add_worker above took effect
                    break

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
        loop = self._slot_loop if self._pool is None else self._pooled_slot_loop
        targets = [lambda s=slot: loop(s) for slot in self._slots] + [self._expiry_loop]
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
        """What the runner is doing (``impl.runner.waiting.RunnerStatus``), without taking its lock.

        Answers at once while a call waits for an unreachable database (that
        call holds the lock): ``state`` is then ``"waiting for the database"``
        and ``waiting`` says for what, since when, and the last error.
        """
        waiting = self._outlasting.waiting()
        alive = any(thread.is_alive() for thread in self._threads)
        if self._broken is not None:
            state = "broken"
        elif not self._started:
            state = "not started"
        elif self._stopping:
            state = "stopping" if alive else "stopped"
        else:
            state = "waiting for the database" if waiting else "running"
        return RunnerStatus(state, waiting, len(self._running))

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
        without taking its lock (the next call that takes it makes the submit
        first, so every call sees the task); ``key`` is made under the lock.
        ``key``, an idempotency key, is
        passed on only when given (a scheduler without keys never sees it):
        a key the scheduler already knows names the task it made then, which
        keeps its first function. May be called from user work.

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
        if self._queued is not None and key is None and not self._stopping:
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
                if self._queued is None:
                    task_id = self._call("submit", args)
                else:
                    with self._submit_lock:  # no queued submit takes an id meanwhile
                        self._drain()
                        task_id = self._call("submit", args)
                        if task_id > self._issued:
                            self._issued = task_id
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
                if task_id > self._last_id:
                    self._last_id = task_id
            if due_at is not None:
                # A task due at once needs no hint: the version bump voids every idle proof made
                # before it, and any proof made after it was made at a time it was already due.
                heapq.heappush(self._due_hints, due_at)
            self._version += 1
            self._wake_pool()
        return task_id

    def _queue_submit(self, fn: Callable[[TaskContext], object], priority: int, due_at: int | None,
                      max_attempts: int | None, retry_delay: int) -> int:
        """``submit`` without the runner's lock, for a runner alone on the scheduler it made itself.

        Such a scheduler (``fencepost.impl.Scheduler``) has no other client, so
        the id it will issue is known (ids are 1, 2, 3... in submit order, and a
        refused submit consumes none), and so are its rules: the kit's
        ``check_submit``, which its own ``submit`` applies, refuses here
        exactly what it would refuse there, with its message. The submit is
        queued with its id and made, in queue order, by the next holder of the
        lock (``_drain``), before that holder reads the scheduler or the
        records: every call on the runner that could see the task drains first,
        so none can tell the submit was queued. The pool's slots, which take
        the lock for every task, then never make a submitter wait (nor it them).
        An idle slot is woken, as a locked submit would (the order of the two
        checks is what makes the wake-up never lost: see ``_slot_loop``).

        Raises:
            ValueError: an option the scheduler would refuse (nothing is queued).
        """
        if not (type(priority) is int and (due_at is None or (type(due_at) is int and due_at >= 0))
                and (max_attempts is None or (type(max_attempts) is int and max_attempts >= 1))
                and type(retry_delay) is int and retry_delay >= 1):
            try:
                check_submit(priority, due_at, max_attempts, retry_delay)  # plain ints pass as above; others here
            except ValueError as exc:
                if self._trace is not None:  # as a locked submit records its refusal (it changes nothing)
                    with self._lock:
                        self._trace.append(("submit", (priority, due_at, max_attempts, retry_delay), None, str(exc)))
                raise
        with self._submit_lock:
            task_id = self._issued = self._issued + 1
            self._queued.append((task_id, fn, priority, due_at, max_attempts, retry_delay))
        if self._idle_slots:  # read after the append (see _slot_loop)
            with self._lock:
                # one task due at once wants one slot; a later due time, every idle slot's new timeout
                self._work.notify_all() if due_at is not None else self._work.notify()
        return task_id

    def _drain(self) -> None:
        """Under the lock: make the queued submits, in their order (O(1) when none is queued)."""
        queued = self._queued
        if not queued:
            return
        submit, tasks, hints, trace = self._scheduler.submit, self._tasks, self._due_hints, self._trace
        for _ in range(len(queued)):  # those queued now: a submitter that keeps up cannot keep this here
            task_id, fn, priority, due_at, max_attempts, retry_delay = queued.popleft()
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
                heapq.heappush(hints, due_at)  # see submit: only a task not due at once needs a hint
        if task_id > self._last_id:
            self._last_id = task_id
        self._version += 1

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
            calls = list(self._trace)
        steps = []
        for op, values, value, error in calls:
            args = dict(zip(_ARGUMENT_NAMES[op], values))
            steps.append(Step(op, args, expect=expect_from(Step(op, args), StepResult(value, error))))
        scenario = Scenario(
            title=title or f"A runner's trace: {len(self._slots)} workers, {len(self._tasks)} tasks",
            steps=tuple(steps),
            description=description or (
                "Every protocol call a `Runner` made on its scheduler, in the order the scheduler "
                "saw them, each with its actual result as `expect`."
            ),
            meta={"generated_by": "fencepost.impl.runner", "isolation": self._isolation, "lease": self._lease},
        )
        path = Path(path)
        dump_scenario(scenario, path)
        return path

    # ------------------------------------------------------------ the pool

    def _slot_loop(self, slot: str) -> None:
        """One pool slot, its own worker of capacity one: take a lease, run it without the lock, report, repeat."""
        with self._lock:
            while not self._stopping:
                attempt = self._next_attempt(slot)
                if attempt is _ASK_AGAIN:
                    continue
                if attempt is None:
                    self._wait_for_work()
                    continue
                outcome = self._run_attempt(attempt)
                self._finish(attempt, outcome)

    def _pooled_slot_loop(self, slot: str) -> None:
        """One slot of a pooled runner (``batch`` above 1): claim for the free slots, run, queue the report.

        The work's outcome is queued before the slot takes the lock back (and
        held back a moment for the reports of the attempts leased with it:
        ``_queue_report``); then, unless another slot's flush took it
        meanwhile, this slot makes every report queued by then, in one call
        per kind (``_flush_reports``), and goes on to its next lease, which
        another slot's claim may have taken for it (``_claim``).

        On ``stop`` a slot still runs a lease a claim took for it (the
        scheduler counts it as running) unless a pool thread broke the runner.
        """
        with self._lock:
            while not self._stopping or (slot in self._handed and self._broken is None):
                attempt = self._claim(slot)
                if attempt is _ASK_AGAIN:
                    continue
                if attempt is None:
                    self._wait_for_work()
                    continue
                self._lock.release()
                try:
                    queued = self._queue_report(attempt, self._execute(attempt))  # the next lock holder may make it
                finally:
                    self._relock()
                if not queued.taken:  # not taken by another slot's flush meanwhile: this one makes it
                    self._flush_reports()

    def _queue_report(self, attempt: Attempt, outcome: tuple[str, object]) -> _QueuedReport:
        """No lock held, pooled: queue the attempt's report (returned); while its cohort works, wait for theirs.

        On a clock that runs by itself, the attempts one claim leased together
        are a cohort (``_claim``): each report waits until every one of them
        has queued its own (they began together; with like work they end
        together, and then go in one call), or a flush took it, or
        ``batch_wait`` real seconds passed, whichever is first, and never more
        than half of what is left of its lease in real time
        (``InCohort.deadline``): waiting never takes a report past its lease's
        end. On a clock moved by calls (``ManualClock``, ``SchedulerClock``) no
        report waits, since any call may move time and end the lease meanwhile,
        which no real-time bound sees; reports still go together when they
        queue while another slot holds the lock. An attempt leased alone never waits.
        """
        queued = _QueuedReport(attempt, outcome)
        place = attempt.cohort
        with self._queued_reports:
            self._reports.append(queued)
            if place is None:
                return queued
            cohort = place.cohort
            cohort.unreported -= 1
            if not cohort.unreported:
                self._queued_reports.notify_all()  # the cohort is complete: its waiters flush it
                return queued
            wait = min(self._batch_wait, (place.deadline - time.monotonic()) / 2)
            if wait > 0:
                queued.holding = True  # another slot's claim leaves it queued (``_flush_reports``)
                try:
                    self._queued_reports.wait_for(lambda: queued.taken or not cohort.unreported, wait)
                finally:
                    queued.holding = False
        return queued

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
            if not self._queued:
                self._work.wait(self._seconds_to_next_due())
        finally:
            self._idle_slots -= 1

    def _next_attempt(self, slot: str) -> Attempt | None:
        """Under the lock: lease the best eligible task to ``slot``, or None if there is none now."""
        if self._queued:
            self._drain()
        if self._idle_proof is not None and self._proven_idle():
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
            return self._claim_lost()
        if lease is None:
            self._idle_proof = (self._version, now)
            return None
        hints = self._due_hints
        if hints and hints[0] <= now:
            self._past_due_hints(now)
        # ``_begin``, without its frame: this is every single-call lease's way (the default runner's)
        task = self._tasks.get(lease.task_id)
        new = task is None
        if new:
            task = self._tasks[lease.task_id] = TaskRecord(None)  # another client submitted it
            if lease.task_id > self._last_id:
                self._last_id = lease.task_id
        task.status = _RUNNING
        task.attempts += 1
        self._mode.claim(lease.task_id, task, new)
        attempt = Attempt(lease.task_id, lease.token, task.attempts, slot, lease.expires_at, task)
        self._running[slot] = attempt
        if lease.expires_at < self._soonest_expiry:
            self._soonest_expiry = lease.expires_at
        if lease.expires_at < self._expiry_wakes_at:
            self._expiry_changed.notify()  # it sleeps past this lease's end: it must plan again
        return attempt

    def _claim(self, slot: str) -> Attempt | None | object:
        """Under the lock, pooled: the lease a claim took for ``slot``, else a claim for every free slot.

        Queued reports are made first: their slots are then free, and their
        leases no longer take the pool worker's room. One ``dispatch`` when
        this slot is the only free one, else one ``dispatch_many`` of up to
        ``batch`` leases (the scheduler hands out fewer when fewer tasks are
        eligible); the first lease is this slot's, each other one is handed to
        another free slot, and the slots waiting for work are woken. The pool
        worker's capacity is the number of slots, and a slot holds at most one
        lease, so the scheduler's room is never what stops a claim short: fewer
        leases than asked for mean nothing more is eligible now. Returns None
        when nothing is; ``_ASK_AGAIN`` when the claim lost its answer.
        """
        handed = self._handed.pop(slot, None)
        if handed is not None:
            return handed
        if self._queued:
            self._drain()
        if self._reports:
            self._flush_reports(held=False)
        if self._idle_proof is not None and self._proven_idle():
            return None  # a free slot already found nothing, and nothing new came or fell due since
        running = self._running
        free = [slot, *(other for other in self._slots if other != slot and other not in running)]
        limit = min(self._batch, len(free))
        asked = time.monotonic()  # before the call: the lease cannot have begun earlier
        try:
            if limit == 1:
                lease, now = self._timed_call("dispatch", {"worker": self._pool, "now": None, "duration": self._lease})
                leases = [] if lease is None else [lease]
            else:
                leases, now = self._timed_call(
                    "dispatch_many", {"worker": self._pool, "now": None, "duration": self._lease, "limit": limit})
        except OutcomeUnknown:
            return self._claim_lost()
        if leases:
            if self._due_hints and self._due_hints[0] <= now:
                self._past_due_hints(now)
            self._mode.claiming([lease.task_id for lease in leases])
        if len(leases) < limit:
            self._idle_proof = (self._version, now)
        if not leases:
            return None
        attempts = [self._begin(owner, lease) for owner, lease in zip(free, leases)]
        if len(attempts) > 1:
            if self._tick_seconds is not None:  # a clock that runs by itself: the reports may wait for each other
                cohort = Cohort(len(attempts))
                for attempt in attempts:
                    attempt.cohort = InCohort(cohort, asked + (attempt.expires_at - now) * self._tick_seconds)
            for attempt in attempts[1:]:
                self._handed[attempt.slot] = attempt
            self._work.notify_all()  # the slots waiting for work: theirs may be among them
        return attempts[0]

    def _claim_lost(self) -> object:
        """Under the lock: a dispatch (or ``dispatch_many``) lost its answer; ``_ASK_AGAIN``.

        A lease it may have made is nobody's here: it ends at its expiry, by
        clock.now + lease at the latest, and its task is eligible again then,
        which no idle proof may hide. The slot asks again at once (the
        scheduler reconnects first).
        """
        heapq.heappush(self._due_hints, self._clock.now + self._lease)
        self._version += 1
        return _ASK_AGAIN

    def _past_due_hints(self, now: int) -> None:
        """Under the lock, after a dispatch at ``now`` leased something: drop the due times up to ``now`` (some are).

        Every due time up to now is behind every later dispatch, so no later
        idle proof needs it; dropping them here keeps the heap to the tasks not
        yet due while the pool is busy. The proof in hand, if any, was made
        before them: it no longer stands.
        """
        hints = self._due_hints
        self._idle_proof = None
        while hints and hints[0] <= now:
            heapq.heappop(hints)

    def _begin(self, slot: str, lease: object) -> Attempt:
        """Under the lock: ``slot``'s attempt at the task ``lease`` leased, in the records and ``_running``."""
        task = self._tasks.get(lease.task_id)
        new = task is None
        if new:
            task = self._tasks[lease.task_id] = TaskRecord(None)  # another client submitted it
            if lease.task_id > self._last_id:
                self._last_id = lease.task_id
        task.status = _RUNNING
        task.attempts += 1
        self._mode.claim(lease.task_id, task, new)
        attempt = Attempt(lease.task_id, lease.token, task.attempts, slot, lease.expires_at, task)
        self._running[slot] = attempt
        if lease.expires_at < self._soonest_expiry:
            self._soonest_expiry = lease.expires_at
        if lease.expires_at < self._expiry_wakes_at:
            self._expiry_changed.notify()  # it sleeps past this lease's end: it must plan again
        return attempt

    def _run_attempt(self, attempt: Attempt) -> tuple[str, object]:
        """Called and returns with the lock held; runs the user function with it released."""
        self._lock.release()
        try:
            return self._execute(attempt)
        finally:
            self._relock()

    def _relock(self) -> None:
        """Take the lock back after user work: try, and while another thread holds it, yield the GIL.

        A thread blocked on the lock makes every release of it wake that thread
        (a system call), which then mostly finds the lock taken again: with
        no-op work, slots queued for the lock that way cost several calls per
        task. Held by a thread that runs Python, the lock is free again once
        that thread has had the GIL for a moment, so a slot yields the GIL
        (``time.sleep(0)``) and tries again, and blocks only after
        ``RELOCK_TRIES`` tries (the holder waits on something else: a
        scheduler over a network, say).
        """
        lock = self._lock
        for _ in range(RELOCK_TRIES):
            if lock.acquire(False):
                return
            time.sleep(0)  # releases the GIL: the holder runs, and may release the lock meanwhile
        lock.acquire()

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
                    answer, now = self._report(op, attempt, lost=True)
            if answer.accepted:
                task = attempt.record
                if kind == "ok":
                    task.result = value
                    task.completed_here = True
                    task.status = _SUCCEEDED  # what an accepted completion always does
                    self._ended_at(now, attempt.task_id)
                else:
                    if kind == "error":
                        task.error = value
                    view = self._refresh(attempt.task_id, now)
                    if view.status == Status.RETRY_WAIT:
                        heapq.heappush(self._due_hints, view.due_at)
                        self._work.notify_all()  # idle slots wake at the retry's due time
        finally:
            del self._running[attempt.slot]
            self._changed.notify_all()  # the task may be final (the pool's idleness: see _slot_loop)

    def _flush_reports(self, held: bool = True) -> None:
        """Under the lock, pooled: make the queued reports, each kind in calls of at most ``batch`` reports.

        ``held``: also those whose slot holds them back for their cohort's
        (``_queue_report``). A slot flushes them all once its own report is
        queued (its cohort is complete, or it waited long enough); another
        slot's claim leaves them, so that a cohort's reports are not split.

        One report of a kind is its single call (``_finish``); more are one
        ``complete_many`` or ``fail_many``, in which the scheduler judges each
        report exactly as its single call would be judged: a stale or late one
        is refused whatever else the batch holds, and the others are accepted.
        A batch the scheduler refuses whole (``ValueError``: an invalid entry,
        such as a zombie's task forgotten since, and nothing changed) is made
        again as single calls, so each report is judged alone. A batch whose
        answer was lost is resolved report by report, as a lost single call is
        (``_report``). Every report is made at the clock's time of its call.
        """
        with self._queued_reports:
            taken = [queued for queued in self._reports if held or not queued.holding]
            kept = [] if held else [queued for queued in self._reports if queued.holding]
            self._reports.clear()
            self._reports.extend(kept)
            for queued in taken:
                queued.taken = True
            self._queued_reports.notify_all()  # a slot waiting for its cohort: its report is being made
        groups: dict[str, list[tuple[Attempt, tuple[str, object]]]] = {"complete": [], "fail": []}
        for attempt, outcome in ((queued.attempt, queued.outcome) for queued in taken):
            if outcome[0] == "killed" and not attempt.cancel_requested:
                self._finish(attempt, outcome)  # its lease expired: nothing to report, the slot is free
            else:
                groups["complete" if outcome[0] == "ok" else "fail"].append((attempt, outcome))
        for op, group in groups.items():
            for first in range(0, len(group), self._batch):
                chunk = group[first:first + self._batch]
                if len(chunk) == 1:
                    self._finish(*chunk[0])
                else:
                    self._report_many(op, chunk)

    def _report_many(self, op: str, chunk: list[tuple[Attempt, tuple[str, object]]]) -> None:
        """Under the lock: ``op``'s batch (``complete_many``/``fail_many``) of ``chunk``'s reports; see ``_flush_reports``."""
        reports = [[attempt.task_id, attempt.token] for attempt, _ in chunk]  # lists: as a scenario writes them
        try:
            answers, now = self._timed_call(f"{op}_many", {"reports": reports, "now": None})
        except ValueError:
            for attempt, outcome in chunk:  # refused whole: each alone, as if never batched
                self._finish(attempt, outcome)
            return
        except OutcomeUnknown:
            for attempt, outcome in chunk:  # one transaction: all took effect or none; each task says which
                try:
                    answer, now = self._report(op, attempt, lost=True)
                except BaseException:
                    del self._running[attempt.slot]  # the slot is free all the same, as _finish leaves it
                    raise
                self._finish(attempt, outcome, answer, now)
            return
        for (attempt, outcome), answer in zip(chunk, answers):
            self._finish(attempt, outcome, answer, now)

    def _report(self, op: str, attempt: Attempt, lost: bool = False) -> tuple[Outcome, int]:
        """Under the lock: ``complete`` or ``fail`` the attempt; its answer and the time it was made at
        (for a lost answer resolved by reading the task, the clock's time when read).

        ``lost``: the first call was made (``_finish`` makes it itself) and its
        answer lost, so this starts by resolving it. Each lost answer is
        resolved before the call is made again, ``UNKNOWN_RETRIES`` calls in all.
        """
        for _ in range(UNKNOWN_RETRIES):
            if not lost:
                try:
                    return self._timed_call(op, {"task_id": attempt.task_id, "token": attempt.token, "now": None})
                except OutcomeUnknown:
                    pass
            lost = False
            answer = self._resolve(op, attempt)
            if answer is not None:
                return answer, self._clock.now
        raise RuntimeError(f"{op} of task {attempt.task_id} lost its answer {UNKNOWN_RETRIES} times in a row")

    def _resolve(self, op: str, attempt: Attempt) -> Outcome | None:
        """What became of a ``complete``/``fail`` whose answer was lost; None if it did not take effect.

        Read from the task (one read, asked again by the scheduler across a
        reconnect): still running under this attempt's token, it did not take
        effect (None: make it again; the token fences a late copy of the lost
        one, so at most one is accepted). Otherwise it was accepted exactly
        when the task is in the state the call leaves it in -- succeeded for a
        completion, waiting to retry or failed for a failure -- and has not
        been dispatched since (its attempt count is still this attempt's).
        """
        view = self._refresh(attempt.task_id)
        if view.status is Status.RUNNING and view.token == attempt.token:
            return None
        ends = (Status.SUCCEEDED,) if op == "complete" else (Status.RETRY_WAIT, Status.FAILED)
        if view.status in ends and view.attempts == attempt.number:
            return Outcome(True)
        return Outcome(False, "unknown_then_read")

    def _expiry_loop(self) -> None:
        """Make a timed call as soon as a running lease's time is up.

        Every slot may be busy (a stalled function, say), and then nobody else
        calls the scheduler: this thread expires the lease so its task is
        eligible again (and, with process isolation, its child terminated).
        When a free slot's dispatch gets there first, there is nothing left to do.
        A shared runner's thread also looks, every ``poll`` seconds, for what
        other processes did (``SharedMode.look_around``).
        """
        with self._lock:
            while not self._stopping:
                self._mode.look_around(self)
                if self._expire_due_leases():
                    self._wake_pool()
                    continue
                live = [a.expires_at for a in self._running.values() if not a.expired]
                self._expiry_wakes_at = min(live) if live else _NEVER
                wait = self._clock.seconds_until(self._expiry_wakes_at) if live else None
                self._expiry_changed.wait(self._mode.bound_wait(wait))

    def _expire_due_leases(self) -> bool:
        """Under the lock: if a running lease's time is up, make a timed call (``advance``) so the
        scheduler takes it back; True if it did."""
        if all(a.expired for a in self._running.values()):
            return False  # no live lease: no need to read the clock (one round trip for a shared one)
        now = self._clock.now
        if not any(not a.expired and a.expires_at <= now for a in self._running.values()):
            return False
        self._timed_call("advance", {"now": None})
        return True

    def _after_timed_call(self, now: int) -> None:
        """Under the lock, after any timed call at ``now``: notice leases the scheduler expired,
        and forget the records whose retention window has passed.

        ``_timed_call`` calls it only when there may be something to do: a live
        lease may have ended (O(workers)) or a record's window passed (O(records
        forgotten)); most timed calls come before both.
        """
        if now >= self._soonest_expiry:
            soonest = _NEVER
            for attempt in self._running.values():
                if attempt.expired:
                    continue
                if attempt.expires_at <= now:
                    attempt.expired = True
                    self._refresh(attempt.task_id, now)
                    self._version += 1  # the task is eligible again (or final: out of attempts)
                    self._runs.lease_lost(attempt)  # process isolation: terminate its child
                    self._wake_pool()
                elif attempt.expires_at < soonest:
                    soonest = attempt.expires_at
            self._soonest_expiry = soonest
        if now >= self._next_forget:
            self._forget_before(now - self._retention, now)

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
                # accepted exactly when the lease is still this attempt's and ends where the renewal put it
                view = self._refresh(attempt.task_id)
                now = self._clock.now
                accepted = view.token == attempt.token and view.expires_at is not None and view.expires_at > attempt.expires_at
                answer = Outcome(accepted, None if accepted else "unknown_then_read")
                now = view.expires_at - length if accepted else now
            if answer.accepted:
                attempt.expires_at = now + (self._lease if duration is None else duration)
                if self._tick_seconds is not None and attempt.cohort is not None:
                    attempt.cohort.deadline = asked + length * self._tick_seconds
                if attempt.expires_at < self._soonest_expiry:
                    self._soonest_expiry = attempt.expires_at  # a shorter renewal ends sooner
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
            trace.append((op, tuple(args.values()), None, str(exc)))
            raise
        trace.append((op, tuple(args.values()), value, None))
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
            if BACKWARDS not in str(refused) or fresh <= now:
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
        if now >= self._soonest_expiry or now >= self._next_forget:
            self._after_timed_call(now)

    def _refresh(self, task_id: int, now: int | None = None) -> TaskView:
        """Read the task's view and keep its status; a task found final starts its retention
        window at ``now``, the timed call's time (None: an untimed read, at the latest call's)."""
        view = self._scheduler.task(task_id)
        task = self._tasks[task_id]
        status = getattr(view.status, "value", view.status)
        if status in FINAL and task.status not in FINAL:
            self._ended_at(self._now_seen if now is None else now, task_id)
        task.status = status
        return view

    def _ended_at(self, now: int, task_id: int) -> None:
        """The task became final at ``now``: its record is kept for the retention window from then."""
        if self._retention is not None:
            if not self._ended:
                self._next_forget = now + self._retention + 1  # forgotten once it ended before now - retention
            self._ended.append(task_id)
            self._ended_times.append(now)

    def _forget_before(self, before: int, now: int) -> None:
        """Drop the records of tasks that became final before ``before``, and prune the scheduler so.

        O(k) for the k records dropped (they are in the order they ended). A
        shared scheduler's prune may be refused as behind its clock (another
        client moved it on): nothing is lost, the next timed call prunes.
        """
        ended, times, tasks = self._ended, self._ended_times, self._tasks
        while times and times[0] < before:
            times.popleft()
            tasks.pop(ended.popleft(), None)
        self._next_forget = times[0] + self._retention + 1 if times else _NEVER
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
        self._expiry_changed.notify_all()

    def _known(self, task_id: int) -> TaskRecord:
        an_id = isinstance(task_id, int) and not isinstance(task_id, bool)
        task = self._tasks.get(task_id) if an_id else None
        if task is None and an_id:
            task = self._mode.unknown(self, task_id)  # shared: any task of the scheduler
        if task is None and an_id and 1 <= task_id <= self._last_id:
            raise ValueError(f"task {task_id} was forgotten: it ended more than retention={self._retention} ticks ago")
        if task is None:
            raise ValueError(f"task_id must be the id of a task this runner submitted, got {task_id!r}")
        return task

    def _is_idle(self) -> bool:
        return not self._running and not self._queued and self._proven_idle()

    def _proven_idle(self) -> bool:
        """True when a dispatch now would find nothing eligible.

        So it is when a free slot's dispatch at time p found nothing, nothing
        was submitted or expired since (the version is the same), and no due
        time the runner knows of (submits, retries) lies in (p, now]. O(log n)
        amortized: due times up to p are dropped as they surface.
        """
        proof = self._idle_proof
        if proof is None or proof[0] != self._version:
            return False
        while self._due_hints and self._due_hints[0] <= proof[1]:
            heapq.heappop(self._due_hints)  # the dispatch at p saw these
        return not self._due_hints or self._due_hints[0] > self._clock.now

    def _seconds_to_next_due(self) -> float | None:
        """Real seconds until the next known due time (None: wait to be notified).

        Called after a dispatch found nothing (or was proven to), when every
        known due time up to now has been dropped.
        """
        return self._clock.seconds_until(self._due_hints[0]) if self._due_hints else None

    def _on_clock(self) -> None:
        """A manual clock moved (in the mover's thread): expire what is due at once, then wake the pool.

        So when ``advance`` returns, every lease whose time is up has been
        taken back; what fell due is dispatched by the pool's threads.
        """
        with self._lock:
            self._drain()  # submitted before time moved: the scheduler sees them before it moves
            if not self._stopping:
                self._expire_due_leases()
            self._mode.others_may_have_worked(self)  # shared: retries and due tasks others submitted may be eligible
            self._wake_all()


_SUCCEEDED = Status.SUCCEEDED.value
_RUNNING = Status.RUNNING.value


@dataclass(eq=False, slots=True)
class _QueuedReport:
    """A pooled slot's report, queued for the next slot holding the lock to make (``Runner._flush_reports``)."""

    attempt: Attempt
    outcome: tuple[str, object]
    holding: bool = False  # its slot holds it back for its cohort's reports (a claim's flush leaves it)
    taken: bool = False  # a flush took it (set under the queue's lock)


class _Signal(threading.Condition):
    """A condition variable whose notify costs nothing when no thread waits on it.

    A busy pool notifies at every submit and every finish, and then usually
    nobody waits (every slot is running work): ``Condition.notify`` would still
    check the lock's owner and look at its waiters, about 0.4 us a
    call. ``waiting`` counts the threads in ``wait`` (``wait_for`` waits through
    it); it changes only with the lock held, as ``notify`` is called.
    """

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock)
        self.waiting = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting += 1
        try:
            return super().wait(timeout)
        finally:
            self.waiting -= 1

    def notify(self, n: int = 1) -> None:
        if self.waiting:
            super().notify(n)

    def notify_all(self) -> None:
        if self.waiting:
            super().notify_all()

#: Each operation's argument names in protocol order: how a recorded call's values are named again.
_ARGUMENT_NAMES = {op: tuple(p.name for p in params) for op, params in ALL_SIGNATURES.items()}


def _check_timeout(timeout: object) -> None:
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ValueError(f"timeout must be a number of real seconds > 0, got {timeout!r}")

