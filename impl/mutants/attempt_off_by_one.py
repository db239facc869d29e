"""Pitfall: ``max_attempts`` is counted as retries after the first attempt, so a task gets one dispatch too many.

Seed 001 ("Test ... retry exhaustion", with ``RETRY_WAIT -> FAILED`` in its
state machine): with ``max_attempts=N`` this scheduler lets a task run N + 1
times before it ends ``failed``, the classic max_retries/max_attempts mix-up.
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler


class Scheduler(SimpleScheduler):
    def submit(self, priority: int = 0, due_at: int | None = None,
               max_attempts: int | None = None, retry_delay: int = 1) -> int:
        task_id = super().submit(priority, due_at, max_attempts, retry_delay)
        if max_attempts is not None:
            self._tasks[-1].max_attempts += 1  # the bug: the budget counts retries, not attempts
        return task_id
