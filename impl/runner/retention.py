"""The runner's retention window: which final tasks' records it still keeps, and when each goes.

A task's record (its function, and its result or error) is kept while the
task is live and, once final, for ``window`` ticks after the call that made it
final, whether it was read or not; ``window=None`` keeps every record for the
runner's life. The runner forgets lazily, at its next timed call at or past a
window's end (``Runner._after_timed_call``), and prunes its scheduler on the
same window when the scheduler offers ``prune``.
"""

from __future__ import annotations

from collections import deque

#: A time after every window's end.
NEVER = float("inf")


class Retention:
    """The retained final tasks in the order they became final, and the largest id ever held.

    Their ids, and beside them the times (two deques of ints: no tuple per
    task); ``next_forget`` is the first time from which the oldest is forgotten
    (``NEVER``: none is retained, or records are kept for ever). An id at or
    below ``last_id`` that the runner no longer holds was forgotten.
    """

    __slots__ = ("window", "ended", "times", "next_forget", "last_id")

    def __init__(self, window: int | None) -> None:
        self.window = window
        self.ended: deque[int] = deque()
        self.times: deque[int] = deque()
        self.next_forget: float = NEVER
        self.last_id = 0  # the largest task id the runner has held a record of

    def held(self, task_id: int) -> None:
        """The runner now holds a record of ``task_id``."""
        if task_id > self.last_id:
            self.last_id = task_id

    def ended_at(self, now: int, task_id: int) -> None:
        """The task became final at ``now``: its record is kept for the window from then."""
        if self.window is not None:
            if not self.ended:
                self.next_forget = now + self.window + 1  # forgotten once it ended before now - window
            self.ended.append(task_id)
            self.times.append(now)

    def forget_before(self, before: int, records: dict) -> None:
        """Drop from ``records`` the tasks that became final before ``before``.

        O(k) for the k records dropped (they are in the order they ended).
        """
        ended, times = self.ended, self.times
        while times and times[0] < before:
            times.popleft()
            records.pop(ended.popleft(), None)
        self.next_forget = times[0] + self.window + 1 if times else NEVER

    def forgotten(self, task_id: int) -> bool:
        """True when the runner held ``task_id`` once (it is not held now: ask first)."""
        return 1 <= task_id <= self.last_id

    def check_invariants(self) -> None:
        """Assert the ids and times pair up, every id was held, and ``next_forget`` follows the first.

        (The times are in the order the calls were made, which an untimed read
        after a lost answer may put a tick behind: that only delays a forget.)
        """
        ended, times = self.ended, self.times
        assert len(ended) == len(times), (len(ended), len(times))
        assert self.window is not None or not ended, "records kept for ever, yet some are queued to be forgotten"
        assert all(1 <= task_id <= self.last_id for task_id in ended), "a retained id the runner never held"
        expected = times[0] + self.window + 1 if times else NEVER
        assert self.next_forget == expected, (self.next_forget, expected)
