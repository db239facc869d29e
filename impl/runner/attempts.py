"""The runner's records and the user's context: what every mode of the runner shares.

``TaskContext`` is what user work gets; ``TaskRecord`` and ``Attempt`` are the
runner's bookkeeping of a task and of one lease being worked on; a
``ThreadContext`` is the context of work in a pool thread, and a
``ThreadLink`` the runner side a child process's context is served from. The
runner (``impl.runner``), its process isolation (``impl.isolation``) and its
shared mode (``impl.shared_runner``) all build on these, and none of them is
imported here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fencepost.spec.protocol import FINAL_STATUSES, Status

#: The statuses a task never leaves, as the strings a ``TaskRecord`` keeps.
FINAL = frozenset(status.value for status in FINAL_STATUSES)

#: What a slot's look for work returns when its dispatch lost its answer: ask again at once.
ASK_AGAIN = object()


class Cancelled(Exception):
    """Raised by user work to say it stopped because a cancellation was requested."""


class TaskContext:
    """What user work gets as its only argument: who it is, the time, and its lease.

    ``task_id``, ``attempt`` (1 for the first run) and ``token`` (this
    attempt's lease token) are fixed; ``now`` and ``cancel_requested`` are read
    live. Every method may be called from the user function's own thread (or,
    with process isolation, from the child process).
    """

    __slots__ = ("task_id", "attempt", "token", "_link")

    def __init__(self, link: object, task_id: int, attempt: int, token: int) -> None:
        self._link = link  # the runner's side: a thread link, or a pipe to it from a child process
        self.task_id = task_id
        self.attempt = attempt
        self.token = token

    def __repr__(self) -> str:
        return f"TaskContext(task_id={self.task_id}, attempt={self.attempt}, token={self.token})"

    @property
    def now(self) -> int:
        """The runner's clock, now."""
        return self._link.now()

    @property
    def cancel_requested(self) -> bool:
        """True once ``cancel`` was accepted while this attempt runs."""
        return self._link.cancel_requested()

    def raise_if_cancelled(self) -> None:
        """Raise ``Cancelled`` if a cancellation was requested; otherwise do nothing."""
        if self.cancel_requested:
            raise Cancelled(f"task {self.task_id} attempt {self.attempt}: cancellation requested")

    def heartbeat(self, duration: int | None = None) -> bool:
        """Renew this attempt's lease for ``duration`` ticks (default: the runner's lease) from now.

        Returns False once the scheduler has refused a renewal (the lease
        expired, a newer attempt holds the task, or a cancel was requested),
        and from then on without asking again.

        Raises:
            ValueError: ``duration`` is not an int >= 1 (the scheduler's message).
        """
        return self._link.heartbeat(duration)

    def submit(self, fn: Callable[[TaskContext], object], **options: object) -> int:
        """Submit another task, as ``Runner.submit(fn, **options)``; return its id."""
        return self._link.submit(fn, options)


@dataclass(eq=False, slots=True)  # slots: one is kept per live or retained task, and made per submit
class TaskRecord:
    """The runner's record of one task: the user's function and what came of it."""

    fn: Callable[[TaskContext], object] | None  # None: a shared task not dispatched here yet (its payload is read then)
    status: str = Status.PENDING.value  # the scheduler's status, as of the runner's last call about it
    result: object = None  # the value of the completion the scheduler accepted
    error: BaseException | None = None  # the exception of the last failure the scheduler accepted
    attempts: int = 0  # attempts started (dispatches), zombies included; shared: the scheduler's count
    completed_here: bool = False  # this runner's completion was the accepted one (``result`` is its value)
    problem: str | None = None  # shared: why this runner cannot run the task (no payload, unknown function)


@dataclass(eq=False, slots=True)
class Cohort:
    """The attempts one claim of a pooled runner leased together: how many of them have not queued their report."""

    unreported: int


@dataclass(eq=False, slots=True)
class InCohort:
    """An attempt's place in its cohort, on a clock that runs by itself (``ReportQueue.queue``)."""

    cohort: Cohort
    deadline: float  # the real (``time.monotonic``) time before which its lease cannot have ended, as renewed


@dataclass(eq=False, slots=True)  # slots: one is made per dispatch
class Attempt:
    """One lease being worked on by one slot."""

    task_id: int
    token: int
    number: int  # 1 for the task's first attempt
    slot: str
    expires_at: int  # as renewed; the scheduler's own expiry is the truth
    record: TaskRecord  # the task's record, as it was at the dispatch (the one in the runner's records)
    cancel_requested: bool = False
    expired: bool = False  # the runner saw a timed call at or after expires_at
    renew_refused: bool = False  # heartbeat answers False from then on
    kill: bool = False  # process isolation: terminate the child (forced cancel or expiry)
    wake: Callable[[], None] | None = None  # wakes a slot waiting on its child process
    cohort: InCohort | None = None  # a pooled runner's, on a clock that runs by itself (see ``InCohort``)

    def wake_up(self) -> None:
        """Wake the slot if it waits on its child process (only process isolation sets ``wake``)."""
        if self.wake is not None:
            self.wake()


class ThreadContext(TaskContext):
    """The ``TaskContext`` of an attempt running in a pool thread: its own link, one object per attempt.

    What ``TaskContext(ThreadLink(runner, attempt), ...)`` would be, without the
    second object (a context is made for every attempt): every method that
    would go through ``_link`` reads the runner and the attempt itself, so
    ``_link`` stays unset.
    """

    __slots__ = ("_runner", "_attempt")

    def __init__(self, runner: object, attempt: Attempt) -> None:  # runner: a fencepost.impl.runner.Runner
        self._runner = runner
        self._attempt = attempt
        self.task_id = attempt.task_id
        self.attempt = attempt.number
        self.token = attempt.token

    @property
    def now(self) -> int:
        """The runner's clock, now."""
        return self._runner._clock.now

    @property
    def cancel_requested(self) -> bool:
        """True once ``cancel`` was accepted while this attempt runs."""
        return self._attempt.cancel_requested

    def heartbeat(self, duration: int | None = None) -> bool:
        """As ``TaskContext.heartbeat``."""
        return self._runner._heartbeat(self._attempt, duration)

    def submit(self, fn: Callable[[TaskContext], object], **options: object) -> int:
        """As ``TaskContext.submit``."""
        return self._runner.submit(fn, **options)


class ThreadLink:
    """``TaskContext``'s runner side for an attempt served from a pool thread (a child process's, say)."""

    __slots__ = ("_runner", "_attempt")

    def __init__(self, runner: object, attempt: Attempt) -> None:  # runner: a fencepost.impl.runner.Runner
        self._runner = runner
        self._attempt = attempt

    def now(self) -> int:
        return self._runner._clock.now

    def cancel_requested(self) -> bool:
        return self._attempt.cancel_requested

    def heartbeat(self, duration: int | None) -> bool:
        return self._runner._heartbeat(self._attempt, duration)

    def submit(self, fn: Callable[[TaskContext], object], options: dict) -> int:
        return self._runner.submit(fn, **options)
