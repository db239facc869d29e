"""The runner's condition variables: who waits for what, each woken only when it may concern them."""

from __future__ import annotations

import threading


class Signal(threading.Condition):
    """A condition variable whose notify costs nothing when no thread waits on it.

    A busy pool notifies at every submit and every finish, and then usually
    nobody waits (every slot is running work): ``Condition.notify`` would still
    check the lock's owner and look at its waiters, about 0.4 us a
    call. ``waiting`` counts the threads in ``wait`` (``wait_for`` waits through
    it); it changes only with the lock held, as ``notify`` is called.
    """

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock)
        self.waiting = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting += 1
        try:
            return super().wait(timeout)
        finally:
            self.waiting -= 1

    def notify(self, n: int = 1) -> None:
        if self.waiting:
            super().notify(n)

    def notify_all(self) -> None:
        if self.waiting:
            super().notify_all()

    def check_invariants(self) -> None:
        """Assert the count of waiters is never below zero (its lock held: it changes only so)."""
        assert self.waiting >= 0, f"{self.waiting} threads wait"
