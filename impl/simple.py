"""``SimpleScheduler``: the seeds' direct design, one scan over all tasks.

A task map, worker capacities and assignment metadata kept apart; every timed
operation first scans for expired leases, a dispatch scans for the worker's
load and for the best candidate. Each timed operation costs O(T) for T tasks
submitted so far. This is the implementation to read first: it refines
``spec.model`` line for line, and ``impl.indexed.IndexedScheduler`` must give
the same results for every sequence of calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from fencepost.impl import kit as v
from fencepost.impl._batches import FoldedBatches
from fencepost.spec.protocol import (
    ACCEPTED,
    DISPATCHABLE_STATUSES,
    FINAL_STATUSES,
    Lease,
    Outcome,
    Reason,
    Status,
    TaskView,
)


@dataclass(slots=True)
class _Task:
    id: int
    priority: int
    due_at: int
    max_attempts: int | None
    retry_delay: int
    status: Status = Status.PENDING
    attempts: int = 0
    worker: str | None = None  # the assignment: set exactly while running
    token: int | None = None
    started_at: int | None = None
    expires_at: int | None = None
    cancel_requested: bool = False
    expired_token: int | None = None  # for the lease_expired rejection reason
    ended_at: int | None = None  # when it became final; set exactly while final
    key: str | None = None  # its idempotency key, forgotten with it

    def release(self, status: Status, now: int) -> None:
        """End the assignment at ``now``: clear every lease field and move to ``status``."""
        self.status = status
        self.worker = self.token = self.started_at = self.expires_at = None
        self.cancel_requested = False
        if status in FINAL_STATUSES:
            self.ended_at = now

    def budget_spent(self) -> bool:
        return self.max_attempts is not None and self.attempts >= self.max_attempts

    def view(self) -> TaskView:
        return TaskView(
            self.id, self.status, self.priority, self.due_at, self.attempts,
            self.worker, self.token, self.expires_at, self.cancel_requested,
        )


class SimpleScheduler(FoldedBatches):
    """An in-memory lease scheduler that scans every task on each timed call.

    Every method raises ``ValueError`` for an invalid argument and then changes
    nothing. Complexity: ``submit``, ``add_worker`` and ``task`` O(1); every
    timed operation O(T), T the number of tasks ever submitted. A task
    forgotten by ``prune`` leaves one empty slot (``None``) in the registry,
    so ids stay positions and are never reused. The batches
    (``submit_many``, ``dispatch_many``, ``complete_many``, ``fail_many``)
    are the single calls in order, checked whole first (``impl._batches``).
    """

    def __init__(self) -> None:
        self._now = 0
        self._tasks: list[_Task | None] = []  # index id - 1; None once forgotten by prune
        self._capacity: dict[str, int] = {}
        self._last_token = 0
        self._keys: dict[str, tuple[int, tuple]] = {}  # idempotency key -> (task id, submit arguments as passed)

    @property
    def now(self) -> int:
        """The current logical time (0 at the start)."""
        return self._now

    # -------------------------------------------------------------- untimed

    def add_worker(self, worker: str, capacity: int) -> None:
        """Register ``worker`` with ``capacity`` >= 1 slots; a duplicate name raises."""
        v.check_new_worker(worker, capacity, self._capacity)
        self._capacity[worker] = capacity

    def submit(self, priority: int = 0, due_at: int | None = None,
               max_attempts: int | None = None, retry_delay: int = 1, key: str | None = None) -> int:
        """Add a pending task and return its id (1, 2, 3...). Expires nothing.

        A ``key`` submitted before with the same other arguments returns that
        task's id and changes nothing; with different arguments it raises.
        """
        v.check_submit(priority, due_at, max_attempts, retry_delay)
        v.check_key(key)
        arguments = (priority, due_at, max_attempts, retry_delay)
        known = v.keyed_task(self._keys, key, arguments)
        if known is not None:
            return known
        task_id = len(self._tasks) + 1
        due = self._now if due_at is None else due_at
        self._tasks.append(_Task(task_id, priority, due, max_attempts, retry_delay, key=key))
        if key is not None:
            self._keys[key] = (task_id, arguments)
        return task_id

    def task(self, task_id: int) -> TaskView:
        """A detached view of one task; an unknown or forgotten id raises."""
        return self._get(task_id).view()

    # -------------------------------------------------------------- timed

    def advance(self, now: int) -> None:
        """Move time to ``now``, expiring every lease with ``expires_at <= now``."""
        v.check_time(self._now, now)
        self._expire(now)

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """Lease the best eligible task (priority desc, due_at asc, id asc) to ``worker``.

        Returns None when the worker is full or nothing is due; that issues no token.
        """
        v.check_dispatch(worker, now, duration, current=self._now, workers=self._capacity)
        self._expire(now)
        load = sum(1 for t in self._tasks if t is not None and t.status is Status.RUNNING and t.worker == worker)
        if load >= self._capacity[worker]:
            return None
        best: _Task | None = None
        for t in self._tasks:
            if t is not None and t.status in DISPATCHABLE_STATUSES and t.due_at <= now:
                if best is None or (-t.priority, t.due_at, t.id) < (-best.priority, best.due_at, best.id):
                    best = t
        if best is None:
            return None
        self._last_token += 1
        best.status = Status.RUNNING
        best.attempts += 1
        best.worker, best.token = worker, self._last_token
        best.started_at, best.expires_at = now, now + duration
        best.expired_token = None
        return Lease(best.id, worker, best.token, now, now + duration)

    def complete(self, task_id: int, token: int, now: int) -> Outcome:
        """Accept completion from the current lease only: the task succeeds, its slot frees."""
        t = self._timed_lease_call(task_id, token, now)
        refused = self._rejection(t, token)
        if refused:
            return refused
        t.release(Status.SUCCEEDED, now)
        return ACCEPTED

    def fail(self, task_id: int, token: int, now: int) -> Outcome:
        """Accept an explicit failure from the current lease: retry with backoff, or end.

        Raises ``ValueError``, changing nothing, if the retry time would be after ``INT_MAX``.
        """
        self._check_fail(task_id, token, now)
        t = self._timed_lease_call(task_id, token, now)
        refused = self._rejection(t, token)
        if refused:
            return refused
        if t.cancel_requested:
            t.release(Status.CANCELLED, now)
        elif t.budget_spent():
            t.release(Status.FAILED, now)
        else:
            backoff = t.retry_delay * 2 ** (t.attempts - 1)
            t.release(Status.RETRY_WAIT, now)
            t.due_at = now + backoff
        return ACCEPTED

    def cancel(self, task_id: int, now: int) -> Outcome:
        """Cancel a waiting task; mark a running one ``cancel_requested``; refuse a final one."""
        t = self._get(task_id)
        v.check_time(self._now, now)
        self._expire(now)
        if t.status in FINAL_STATUSES:
            return Outcome(False, Reason.ALREADY_FINAL)
        if t.status is Status.RUNNING:
            t.cancel_requested = True
        else:
            t.release(Status.CANCELLED, now)
        return ACCEPTED

    def renew(self, task_id: int, token: int, now: int, duration: int) -> Outcome:
        """Set the current lease's end to ``now + duration``; refused after a cancel request."""
        if type(now) is int and type(duration) is int and duration >= 1:
            v.check_lease_end(now, duration)  # before any change, as every other check
        t = self._timed_lease_call(task_id, token, now, duration)
        refused = self._rejection(t, token)
        if refused:
            return refused
        if t.cancel_requested:
            return Outcome(False, Reason.CANCEL_REQUESTED)
        t.expires_at = now + duration
        return ACCEPTED

    def prune(self, before: int, now: int) -> int:
        """Forget every final task that ended at a time ``< before``, with its key; return how many.

        Timed: leases due at ``now`` expire first (a task they end, ends at
        ``now >= before`` and is kept). ``before`` is an int with ``0 <=
        before <= now``. A forgotten id is never reused; ``task`` and every
        call naming it raise ``ValueError`` saying it was forgotten. O(T + K),
        K the keys.
        """
        v.check_prune(self._now, before, now)
        self._expire(now)
        forgotten = 0
        for index, t in enumerate(self._tasks):
            if t is not None and t.ended_at is not None and t.ended_at < before:
                self._tasks[index] = None
                if t.key is not None:
                    del self._keys[t.key]
                forgotten += 1
        return forgotten

    # -------------------------------------------------------------- internals

    def _get(self, task_id: object) -> _Task:
        t = self._tasks[v.check_task_id(task_id, len(self._tasks)) - 1]
        if t is None:
            raise v.forgotten_task(task_id)
        return t

    def _timed_lease_call(self, task_id: object, token: object, now: object, duration: object = 1) -> _Task:
        """Validate a token-carrying call (in the model's order), then expire; return the task."""
        t = self._get(task_id)
        v.check_int("token", token)
        v.check_time(self._now, now)
        v.check_min("duration", duration, 1)
        self._expire(now)
        return t

    def _check_fail(self, task_id: object, token: object, now: object) -> bool:
        """Whether ``fail(task_id, token, now)`` is accepted (False for any invalid argument: the
        call's own checks refuse those); raise, before any change, if it would send the task to
        retry after the latest time (``kit.check_retry_time``)."""
        if type(task_id) is not int or not 1 <= task_id <= len(self._tasks) or type(token) is not int \
                or type(now) is not int or not self._now <= now:
            return False
        t = self._tasks[task_id - 1]
        if t is None or t.status is not Status.RUNNING or t.token != token or t.expires_at <= now:
            return False
        if not t.cancel_requested and not t.budget_spent():
            v.check_retry_time(now, t.retry_delay, t.attempts)
        return True

    def _expire(self, now: int) -> None:
        for t in self._tasks:
            if t is not None and t.status is Status.RUNNING and t.expires_at <= now:
                token = t.token
                if t.cancel_requested:
                    t.release(Status.CANCELLED, now)
                elif t.budget_spent():
                    t.release(Status.FAILED, now)
                else:
                    t.release(Status.PENDING, now)
                t.expired_token = token
        self._now = now

    @staticmethod
    def _rejection(t: _Task, token: int) -> Outcome | None:
        if t.status is Status.RUNNING:
            return None if t.token == token else Outcome(False, Reason.STALE_TOKEN)
        if t.expired_token is not None and t.expired_token == token:
            return Outcome(False, Reason.LEASE_EXPIRED)
        if t.status in FINAL_STATUSES:
            return Outcome(False, Reason.ALREADY_FINAL)
        return Outcome(False, Reason.NOT_RUNNING)
