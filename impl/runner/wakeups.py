"""The runner's lock, taken back after user work, and its condition variables: who waits for what,
each woken only when it may concern them."""

from __future__ import annotations

import threading
import time

#: Tries a slot makes to take the lock back after user work, yielding the GIL between them, before
#: it blocks on the lock (``relock``).
RELOCK_TRIES = 20


def relock(lock: threading.Lock) -> None:
    """Take ``lock`` back after user work: try, and while another thread holds it, yield the GIL.

    A thread blocked on the lock makes every release of it wake that thread
    (a system call), which then mostly finds the lock taken again: with
    no-op work, slots queued for the lock that way cost several calls per
    task. Held by a thread that runs Python, the lock is free again once
    that thread has had the GIL for a moment, so a slot yields the GIL
    (``time.sleep(0)``) and tries again, and blocks only after
    ``RELOCK_TRIES`` tries (the holder waits on something else: a
    scheduler over a network, say).
    """
    for _ in range(RELOCK_TRIES):
        if lock.acquire(False):
            return
        time.sleep(0)  # releases the GIL: the holder runs, and may release the lock meanwhile
    lock.acquire()


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
