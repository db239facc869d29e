"""What an adapter keeps that the queue does not: its ``Book``, and deciding calls the queue answers nothing to.

Every adapter needs the same few records beside the queue: the logical clock
(``now`` never goes backwards), the workers and their capacities, the map
from the contract's task ids (1, 2, 3... in submit order) to the queue's own
job ids, and which token it handed out for which task. ``Book`` holds exactly
those, with the contract's argument checks on each, behind one lock that is
never held around a call into the queue (so concurrent clients meet in the
queue, not in the adapter). The clients of one scheduler (``client()``, for
histories recorded from several threads) share one ``Book``.

**A call that answers nothing is not accepted by its silence.** Many queue
calls return nothing whatever happened: procrastinate's ``update_heartbeat``
updates a worker's row and returns nothing, pgqueuer's ``log_jobs`` likewise.
Reading "no error" as "accepted" reports the adapter's guess, not the queue's
answer (issue 29: it gave a false finding). Decide from the queue's own state
instead, read back through its public API:

* **before the call**, when the question is whether the token still names the
  current assignment as the queue records it (``guard``): refuse without the
  call when it does not; then make the call;
* **after the call**, when the question is whether it took effect
  (``read_back``): a job gone after an ack, a status that changed.

Either way the answer is the queue's. Say in the adapter's docstring which
read decides each call, and that a read beside the call is not atomic with it
(in a concurrent history another client may act between them). A call whose
outcome the queue cannot show at all is a variant the adapter declares
(``renew`` not offered, say), never a guess.

**Views under ``views=none``.** ``task(id)`` must show the queue's record of
the task: status, holder, token and expiry. When the queue cannot show all of
it, declare ``views=none`` and offer no ``task``: a view rebuilt from the
adapter's own ``Book`` would check the adapter, not the queue. The ``Book``'s
records are for mapping ids and tokens only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TypeVar

from fencepost.impl.kit.checks import (
    check_dispatch,
    check_lease_end,
    check_min,
    check_new_worker,
    check_report,
    check_task_id,
    check_time,
)
from fencepost.spec.protocol import ACCEPTED, Outcome

T = TypeVar("T")


class Book:
    """An adapter's own records for one scheduler: clock, workers, task ids, tokens handed out.

    Thread-safe: every method takes the lock around these fields only. Every
    method that takes an argument of the protocol checks it with the
    contract's exact ``ValueError`` first and changes nothing when it raises.
    Complexity: every method O(1).
    """

    def __init__(self) -> None:
        self._now = 0
        self._workers: dict[str, int] = {}
        self._jobs: list[Hashable] = []  # the queue's job id of task id - 1
        self._task_of: dict[Hashable, int] = {}
        self._owner: dict[Hashable, int] = {}  # token -> the task it was handed out for
        self.lock = threading.RLock()

    # ------------------------------------------------------------ the clock

    @property
    def now(self) -> int:
        """The logical time (0 at the start)."""
        return self._now

    def move_to(self, now: object) -> int:
        """Check ``now`` (an int >= 0, not before ``self.now``) and move the clock there; return it."""
        with self.lock:
            check_time(self._now, now)
            self._now = now
            return now

    def check_time(self, now: object) -> int:
        """Check ``now`` as ``move_to`` does, without moving the clock."""
        return check_time(self._now, now)

    # ------------------------------------------------------------ workers

    def add_worker(self, worker: object, capacity: object) -> None:
        """``add_worker``'s rules (a new, non-empty str; capacity an int >= 1), then remember it."""
        with self.lock:
            check_new_worker(worker, capacity, self._workers)
            self._workers[worker] = capacity

    def capacity(self, worker: str) -> int:
        """The capacity ``worker`` was added with (KeyError for an unknown name: check first)."""
        return self._workers[worker]

    def check_dispatch(self, worker: object, now: object, duration: object) -> int:
        """``dispatch``'s argument checks (``kit.check_dispatch``) against this book; the worker's capacity.
        The clock does not move: call ``move_to(now)`` once every argument is checked."""
        return check_dispatch(worker, now, duration, current=self._now, workers=self._workers)

    # ------------------------------------------------------------ tasks and tokens

    def add_task(self, job: Hashable) -> int:
        """Record the queue's ``job`` id as the next task; return its task id (1, 2, 3...).
        Call it under ``self.lock`` together with the queue's submit when task ids must follow
        the queue's own order."""
        with self.lock:
            self._jobs.append(job)
            task_id = len(self._jobs)
            self._task_of[job] = task_id
            return task_id

    @property
    def issued(self) -> int:
        """How many task ids were handed out."""
        return len(self._jobs)

    def job(self, task_id: object) -> Hashable:
        """The queue's job id of ``task_id``. Raises ValueError for an id never issued."""
        check_task_id(task_id, len(self._jobs))
        return self._jobs[task_id - 1]

    def task_of(self, job: Hashable) -> int | None:
        """The task id of the queue's ``job``, or None for a job this book never recorded."""
        return self._task_of.get(job)

    def check_report(self, task_id: object, token: object, now: object, duration: object = None,
                     opaque: bool = True) -> Hashable:
        """A report's arguments in the contract's order (``renew`` passes ``duration``); the task's job id.
        ``opaque``: tokens may be non-empty strs (``tokens=opaque``). The clock does not move."""
        check_report(task_id, token, now, issued=len(self._jobs), current=self._now, opaque=opaque)
        if duration is not None:
            check_min("duration", duration, 1)
            check_lease_end(now, duration)
        return self._jobs[task_id - 1]

    def handed_out(self, token: Hashable, task_id: int) -> None:
        """Remember that ``token`` was handed out for ``task_id`` (for ``other_task``)."""
        with self.lock:
            self._owner[token] = task_id

    def owner(self, token: object) -> int | None:
        """The task ``token`` was handed out for by this adapter, or None."""
        try:
            return self._owner.get(token)
        except TypeError:  # an unhashable token was never handed out
            return None

    def other_task(self, task_id: int, token: object) -> bool:
        """Whether ``token`` was handed out for another task: a report no queue call can mean
        (it would act on that other task's job), refused without calling the queue."""
        owner = self.owner(token)
        return owner is not None and owner != task_id


# ---------------------------------------------------------------- calls that answer nothing


def guard(read: Callable[[], T], holds: Callable[[T], bool], refused: str) -> Outcome | None:
    """Before a call the queue answers nothing to: read the queue's record back and refuse if it does not hold.

    Returns None when ``holds(read())`` (go on and make the call), else
    ``Outcome(False, refused)``. ``refused`` says, in the queue's words, what
    the record showed (``"job_not_held_by_this_worker"``).
    """
    return None if holds(read()) else Outcome(False, refused)


def read_back(read: Callable[[], T], took_effect: Callable[[T], bool], refused: str) -> Outcome:
    """After a call the queue answered nothing to: read the queue's record back and say whether it took effect.

    Returns ``ACCEPTED`` when ``took_effect(read())``, else ``Outcome(False, refused)``.
    """
    return ACCEPTED if took_effect(read()) else Outcome(False, refused)
