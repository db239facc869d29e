"""A pooled runner's slots: one scheduler worker for all, claims for every free slot, reports in batches.

With ``batch`` above 1, on a scheduler that offers the batch operations, the
runner's slots share one scheduler worker ``poolN`` (``NAME-poolN``) of
capacity ``workers`` (the count in the name: a restarted runner with another
pool size never takes over a worker whose capacity is not its own). A slot
that looks for work claims for every free slot with one ``dispatch_many`` and
hands the other leases to their slots; a slot whose work ended queues its
report (``reports.py``), and the next slot to take the lock makes every queued
report in one ``complete_many`` (and one ``fail_many``), each judged by the
scheduler exactly as its single call would be. On a clock that runs by
itself, the reports of the attempts one claim leased together wait for each
other at most ``batch_wait`` real seconds, and never more than half of what
is left of their leases.

``Pool`` owns what only a pooled runner has (the leases handed to other slots,
the report queue, the clock's real seconds per tick); its methods take the
runner, whose lock they are called under (as the modes' in ``shared.py`` do).
"""

from __future__ import annotations

import time

from fencepost.impl.runner import unknown
from fencepost.impl.runner.attempts import ASK_AGAIN, Attempt, Cohort, InCohort
from fencepost.impl.runner.reports import ReportQueue, grouped
from fencepost.impl.runner.wakeups import relock
from fencepost.spec.protocol import OutcomeUnknown, offers_batches, offers_restart


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


class Pool:
    """The pool worker's name, the batch size, the leases handed to slots, and the queued reports."""

    __slots__ = ("worker", "batch", "handed", "reports", "tick_seconds")

    def __init__(self, worker: str, batch: int, batch_wait: float, clock: object, lease: int) -> None:
        self.worker = worker
        self.batch = batch  # the most leases one claim takes and reports one call makes
        # The attempts a slot's claim took for other free slots, by slot, not yet started (each is in
        # the runner's ``_running`` already: its lease is the scheduler's from the claim on).
        self.handed: dict[str, Attempt] = {}
        self.reports = ReportQueue(batch_wait)
        # Real seconds per clock tick, for a clock that runs by itself (None: only calls move it, and
        # then no report waits), so a report never waits past its lease's end (``InCohort.deadline``).
        until = clock.seconds_until(clock.now + lease)
        self.tick_seconds: float | None = None if until is None else until / lease

    def slot_loop(self, runner: object, slot: str) -> None:
        """One slot: claim for the free slots, run, queue the report.

        The work's outcome is queued before the slot takes the lock back (and
        held back a moment for the reports of the attempts leased with it:
        ``ReportQueue.queue``); then, unless another slot's flush took it
        meanwhile, this slot makes every report queued by then, in one call
        per kind (``flush``), and goes on to its next lease, which another
        slot's claim may have taken for it (``claim``).

        On ``stop`` a slot still runs a lease a claim took for it (the
        scheduler counts it as running) unless a pool thread broke the runner.
        """
        lock, handed = runner._lock, self.handed
        with lock:
            while not runner._stopping or (slot in handed and runner._broken is None):
                attempt = self.claim(runner, slot)
                if attempt is ASK_AGAIN:
                    continue
                if attempt is None:
                    runner._wait_for_work()
                    continue
                lock.release()
                try:
                    queued = self.reports.queue(attempt, runner._execute(attempt))  # the next lock holder may make it
                finally:
                    relock(lock)
                if not queued.taken:  # not taken by another slot's flush meanwhile: this one makes it
                    self.flush(runner)

    def claim(self, runner: object, slot: str) -> Attempt | None | object:
        """Under the lock: the lease a claim took for ``slot``, else a claim for every free slot.

        Queued reports are made first: their slots are then free, and their
        leases no longer take the pool worker's room. One ``dispatch`` when
        this slot is the only free one, else one ``dispatch_many`` of up to
        ``batch`` leases (the scheduler hands out fewer when fewer tasks are
        eligible); the first lease is this slot's, each other one is handed to
        another free slot, and the slots waiting for work are woken. The pool
        worker's capacity is the number of slots, and a slot holds at most one
        lease, so the scheduler's room is never what stops a claim short: fewer
        leases than asked for mean nothing more is eligible now. Returns None
        when nothing is; ``ASK_AGAIN`` when the claim lost its answer.
        """
        handed = self.handed.pop(slot, None)
        if handed is not None:
            return handed
        if runner._submits is not None and runner._submits.pending:
            runner._drain()
        if self.reports.pending:
            self.flush(runner, held=False)
        idle = runner._idle_proof
        if idle.proof is not None and idle.proven(runner._clock):
            return None  # a free slot already found nothing, and nothing new came or fell due since
        running = runner._running
        free = [slot, *(other for other in runner._slots if other != slot and other not in running)]
        limit = min(self.batch, len(free))
        asked = time.monotonic()  # before the call: the lease cannot have begun earlier
        try:
            if limit == 1:
                lease, now = runner._timed_call("dispatch", {"worker": self.worker, "now": None, "duration": runner._lease})
                leases = [] if lease is None else [lease]
            else:
                leases, now = runner._timed_call(
                    "dispatch_many", {"worker": self.worker, "now": None, "duration": runner._lease, "limit": limit})
        except OutcomeUnknown:
            return unknown.claim_lost(runner)
        if leases:
            if idle.hints and idle.hints[0] <= now:
                idle.past_due(now)
            runner._mode.claiming([lease.task_id for lease in leases])
        if len(leases) < limit:
            idle.found_nothing(now)
        if not leases:
            return None
        attempts = [runner._begin(owner, lease) for owner, lease in zip(free, leases)]
        if len(attempts) > 1:
            if self.tick_seconds is not None:  # a clock that runs by itself: the reports may wait for each other
                cohort = Cohort(len(attempts))
                for attempt in attempts:
                    attempt.cohort = InCohort(cohort, asked + (attempt.expires_at - now) * self.tick_seconds)
            for attempt in attempts[1:]:
                self.handed[attempt.slot] = attempt
            runner._work.notify_all()  # the slots waiting for work: theirs may be among them
        return attempts[0]

    def flush(self, runner: object, held: bool = True) -> None:
        """Under the lock: make the queued reports, each kind in calls of at most ``batch`` reports.

        ``held``: also those whose slot holds them back for their cohort's
        (``ReportQueue.queue``). A slot flushes them all once its own report is
        queued (its cohort is complete, or it waited long enough); another
        slot's claim leaves them, so that a cohort's reports are not split.

        One report of a kind is its single call (``Runner._finish``); more are
        one ``complete_many`` or ``fail_many``, in which the scheduler judges
        each report exactly as its single call would be judged: a stale or late
        one is refused whatever else the batch holds, and the others are
        accepted. A batch the scheduler refuses whole (``ValueError``: an
        invalid entry, such as a zombie's task forgotten since, and nothing
        changed) is made again as single calls, so each report is judged
        alone. A batch whose answer was lost is resolved report by report, as a
        lost single call is (``unknown.report``). Every report is made at the
        clock's time of its call. If making one raises, the exception goes on
        (it breaks the runner) and every slot whose report was taken is freed.
        """
        taken = self.reports.take(held)
        alone, chunks = grouped(taken, self.batch)
        try:
            for queued in alone:
                runner._finish(queued.attempt, queued.outcome)  # its lease expired: nothing to report, the slot is free
            for op, chunk in chunks:
                if len(chunk) == 1:
                    runner._finish(*chunk[0])
                else:
                    self.report_many(runner, op, chunk)
        except BaseException:
            # A report raised, which breaks the runner (``Runner._guarded``): the reports taken and not
            # made yet never will be, and their slots are free all the same, as ``_finish`` leaves the
            # slot of a report that raised; else ``status().running`` would count them for ever.
            running = runner._running
            for queued in taken:
                if running.get(queued.attempt.slot) is queued.attempt:
                    del running[queued.attempt.slot]
            runner._changed.notify_all()
            raise

    @staticmethod
    def report_many(runner: object, op: str, chunk: list[tuple[Attempt, tuple[str, object]]]) -> None:
        """Under the lock: ``op``'s batch (``complete_many``/``fail_many``) of ``chunk``'s reports; see ``flush``."""
        reports = [[attempt.task_id, attempt.token] for attempt, _ in chunk]  # lists: as a scenario writes them
        try:
            answers, now = runner._timed_call(f"{op}_many", {"reports": reports, "now": None})
        except ValueError:
            for attempt, outcome in chunk:  # refused whole: each alone, as if never batched
                runner._finish(attempt, outcome)
            return
        except OutcomeUnknown:
            for attempt, outcome in chunk:  # one transaction: all took effect or none; each task says which
                answer, now = unknown.report(runner, op, attempt, lost=True)  # if it raises, flush frees the slots
                runner._finish(attempt, outcome, answer, now)
            return
        for (attempt, outcome), answer in zip(chunk, answers):
            runner._finish(attempt, outcome, answer, now)

    def check_invariants(self, running: dict[str, Attempt]) -> None:
        """Assert every handed lease is its slot's running attempt, in a batch no larger than ``batch``,
        and the report queue holds."""
        assert self.batch >= 2, f"a pool of batch {self.batch}: pooling needs 2 or more"
        for slot, attempt in self.handed.items():
            assert running.get(slot) is attempt, f"slot {slot} was handed task {attempt.task_id} yet runs another"
        self.reports.check_invariants()
