"""A FIFO queue without due times that keeps the contract's core: first in, first out, and no ``due_at``.

Written as a user's queue would be: a deque of waiting task ids, leases with
fresh int tokens on the contract's half-open interval, a retry that goes to
the back of the line after its backoff. It declares ``order=fifo`` (no
priorities) and ``without=due_at``, and is otherwise the contract, so
``fencepost check`` at default settings must pass it: no coverage it cannot
reach may be required (tests/spec/test_fifo_queue.py).
"""

from __future__ import annotations

from fencepost.impl import kit
from fencepost.impl.simple import SimpleScheduler


class FifoQueue(SimpleScheduler):
    """The reference scheduler, offered as a FIFO queue: ``submit`` takes neither a priority nor a due time."""

    fencepost_variants = {"order": "fifo", "without": "due_at"}

    def submit(self, priority: int = 0, due_at: int | None = None, max_attempts: int | None = None,
               retry_delay: int = 1, key: str | None = None) -> int:
        """Raises ValueError for a priority or a due time (not offered), else as the contract."""
        if priority != 0:
            raise kit.not_offered("priority", priority, "this FIFO queue")
        if due_at is not None:
            raise kit.not_offered("due_at", due_at, "this FIFO queue")
        return super().submit(max_attempts=max_attempts, retry_delay=retry_delay, key=key)
