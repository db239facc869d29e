"""A pooled runner's report queue: slots queue their work's outcome, the next lock holder reports it.

With ``batch`` above 1 (``Runner``'s "Batches"), a slot whose work ended queues
its report here without the runner's lock, and the next slot to hold the lock
makes every queued report in one ``complete_many`` (and one ``fail_many``).
On a clock that runs by itself, the attempts one claim leased together (a
cohort) wait for each other's reports, so that like work that ends together
goes in one call. The queue has its own lock, never held while taking the
runner's (which may be held around it).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

from fencepost.impl.runner.attempts import Attempt


@dataclass(eq=False, slots=True)
class QueuedReport:
    """A pooled slot's report, queued for the next slot holding the lock to make (``Runner._flush_reports``)."""

    attempt: Attempt
    outcome: tuple[str, object]
    holding: bool = False  # its slot holds it back for its cohort's reports (a claim's flush leaves it)
    taken: bool = False  # a flush took it (set under the queue's lock)


class ReportQueue:
    """The queued reports, oldest first, under their own lock; ``batch_wait`` bounds a cohort's wait.

    ``pending`` may be read without the lock to see whether any is queued (a
    stale answer only delays a flush to the next lock holder).
    """

    __slots__ = ("pending", "_lock", "batch_wait")

    def __init__(self, batch_wait: float) -> None:
        self.pending: deque[QueuedReport] = deque()  # appended and taken under _lock
        self._lock = threading.Condition(threading.Lock())
        self.batch_wait = batch_wait

    def queue(self, attempt: Attempt, outcome: tuple[str, object]) -> QueuedReport:
        """No runner lock held: queue the attempt's report (returned); while its cohort works, wait for theirs.

        On a clock that runs by itself, the attempts one claim leased together
        are a cohort (``Runner._claim``): each report waits until every one of
        them has queued its own (they began together; with like work they end
        together, and then go in one call), or a flush took it, or
        ``batch_wait`` real seconds passed, whichever is first, and never more
        than half of what is left of its lease in real time
        (``InCohort.deadline``): waiting never takes a report past its lease's
        end. On a clock moved by calls (``ManualClock``, ``SchedulerClock``) no
        report waits, since any call may move time and end the lease meanwhile,
        which no real-time bound sees; reports still go together when they
        queue while another slot holds the lock. An attempt leased alone never waits.
        """
        queued = QueuedReport(attempt, outcome)
        place = attempt.cohort
        with self._lock:
            self.pending.append(queued)
            if place is None:
                return queued
            cohort = place.cohort
            cohort.unreported -= 1
            if not cohort.unreported:
                self._lock.notify_all()  # the cohort is complete: its waiters flush it
                return queued
            wait = min(self.batch_wait, (place.deadline - time.monotonic()) / 2)
            if wait > 0:
                queued.holding = True  # another slot's claim leaves it queued (``take(held=False)``)
                try:
                    self._lock.wait_for(lambda: queued.taken or not cohort.unreported, wait)
                finally:
                    queued.holding = False
        return queued

    def take(self, held: bool) -> list[QueuedReport]:
        """Take the queued reports to make; ``held``: also those a slot holds back for its cohort's.

        Each taken report is marked ``taken``, and a slot waiting for its
        cohort is woken: its report is being made.
        """
        with self._lock:
            pending = self.pending
            taken = [queued for queued in pending if held or not queued.holding]
            kept = [] if held else [queued for queued in pending if queued.holding]
            pending.clear()
            pending.extend(kept)
            for queued in taken:
                queued.taken = True
            self._lock.notify_all()
        return taken

    def check_invariants(self) -> None:
        """Assert no queued report was taken, and each attempt is queued once, holding only in a cohort."""
        with self._lock:
            attempts = [id(queued.attempt) for queued in self.pending]
            assert len(set(attempts)) == len(attempts), "an attempt's report is queued twice"
            for queued in self.pending:
                assert not queued.taken, f"task {queued.attempt.task_id}: a taken report is still queued"
                assert not queued.holding or queued.attempt.cohort is not None, "a report held back outside a cohort"


def grouped(taken: list[QueuedReport], batch: int) -> tuple[list[QueuedReport], list[tuple[str, list]]]:
    """Split taken reports into those with nothing to report and ``(op, chunk)`` calls of at most ``batch``.

    An attempt killed because its lease expired (not by a cancel) has nothing
    to report: the scheduler already took its task back. The others are
    completions (work returned) or failures, in the order they were queued,
    each kind in chunks of at most ``batch`` ``(attempt, outcome)`` pairs.
    """
    alone, groups = [], {"complete": [], "fail": []}
    for queued in taken:
        attempt, outcome = queued.attempt, queued.outcome
        if outcome[0] == "killed" and not attempt.cancel_requested:
            alone.append(queued)
        else:
            groups["complete" if outcome[0] == "ok" else "fail"].append((attempt, outcome))
    chunks = [(op, group[first:first + batch]) for op, group in groups.items() for first in range(0, len(group), batch)]
    return alone, chunks
