"""Pitfall: ties are broken by task ids compared as display text, so task 10 is dispatched before task 2.

Seed 000 ("Sorting displayed identifiers also creates subtle ties: the string
"task_10" sorts before "task_2". Store numeric creation order separately from
presentation."): among tasks of equal priority and due time, this scheduler
picks the one whose ``task_N`` label sorts first.
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler


class _DisplayedId(int):
    """A task id that equals its number but orders by its label, ``task_10`` < ``task_2``."""

    def __lt__(self, other: object) -> bool:
        return f"task_{int(self)}" < f"task_{int(other)}"


class Scheduler(SimpleScheduler):
    def submit(self, priority: int = 0, due_at: int | None = None,
               max_attempts: int | None = None, retry_delay: int = 1) -> int:
        task_id = super().submit(priority, due_at, max_attempts, retry_delay)
        # The bug: the dispatch tie-break (the last field of its sort key) compares labels.
        self._tasks[-1].id = _DisplayedId(task_id)
        return task_id
