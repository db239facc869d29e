"""The submits a runner queues without its lock, for the next holder of the lock to make.

A runner on the scheduler it made itself (``fencepost.impl.Scheduler``) is that
scheduler's only client, so the id it will issue is known (ids are 1, 2, 3...
in submit order, and a refused submit consumes none), and so are its rules:
the kit's ``check_submit``, which the scheduler's own ``submit`` applies,
refuses here exactly what it would refuse there, with its message. Such a
runner's submits do not take its lock: each is checked, given its id and
queued (``SubmitQueue.put``); whoever takes the lock next makes the queued
submits first (``Runner._drain``), so that no call on the runner can tell a
submit was queued.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator

from fencepost.impl.kit import check_submit


class SubmitQueue:
    """Queued submits, oldest first, as ``(id, fn, priority, due_at, max_attempts, retry_delay)``.

    ``pending`` is appended to without the runner's lock (under ``lock``, which
    orders the submits: their ids are their order) and taken from under the
    runner's lock (``take``). ``issued`` is the last id the scheduler issued or
    was promised, queued or not.
    """

    __slots__ = ("pending", "lock", "issued")

    def __init__(self) -> None:
        self.pending: deque[tuple] = deque()
        self.lock = threading.Lock()  # orders queued submits: their ids are their order
        self.issued = 0  # ids the scheduler issued, plus those queued for it

    def put(self, fn: Callable[..., object], priority: object, due_at: object, max_attempts: object,
            retry_delay: object) -> int:
        """Check the options by the scheduler's rules, queue the submit; return the id it will get.

        Raises:
            ValueError: an option the scheduler would refuse, with its message (nothing is queued).
        """
        if not (type(priority) is int and (due_at is None or (type(due_at) is int and due_at >= 0))
                and (max_attempts is None or (type(max_attempts) is int and max_attempts >= 1))
                and type(retry_delay) is int and retry_delay >= 1):
            check_submit(priority, due_at, max_attempts, retry_delay)  # plain ints pass as above; others here
        with self.lock:
            task_id = self.issued = self.issued + 1
            self.pending.append((task_id, fn, priority, due_at, max_attempts, retry_delay))
        return task_id

    def take(self) -> Iterator[tuple]:
        """Under the runner's lock: the submits queued now, oldest first, each taken off as it is yielded.

        Only those queued when it starts: a submitter that keeps up cannot keep the taker here.
        """
        pending = self.pending
        for _ in range(len(pending)):
            yield pending.popleft()

    def saw(self, task_id: int) -> None:
        """Under ``lock``: the scheduler issued ``task_id`` to a submit made under the runner's lock."""
        if task_id > self.issued:
            self.issued = task_id

    def check_invariants(self) -> None:
        """Assert the queued ids run on by one, oldest first, up to the last id issued."""
        with self.lock:
            ids = [entry[0] for entry in self.pending]
            assert all(len(entry) == 6 and callable(entry[1]) for entry in self.pending), "a malformed queued submit"
            assert ids == list(range(self.issued - len(ids) + 1, self.issued + 1)), (
                f"queued ids {ids} do not run on by one up to the last issued, {self.issued}")
