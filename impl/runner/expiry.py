"""The runner's lease expiry: noticing leases whose time is up, and the thread that makes sure someone does.

Every slot may be busy (a stalled function, say), and then nobody else calls
the scheduler: the expiry thread makes a timed call as soon as a running
lease's time is up, so its task is eligible again (and, with process
isolation, its child terminated). After any timed call the runner notices
the leases the scheduler expired by then (``Expiry.notice``). ``soonest``
spares both the look at every running attempt until a lease may have ended.
"""

from __future__ import annotations

import threading

from fencepost.impl.runner.retention import NEVER
from fencepost.impl.runner.wakeups import Signal


class Expiry:
    """The soonest a running lease may end, and the expiry thread's plan and wake-up."""

    __slots__ = ("soonest", "wakes_at", "changed")

    def __init__(self, lock: threading.Lock) -> None:
        # At most the end of the soonest live lease the runner runs (a lease renewed or finished since
        # leaves it early, never late): no timed call before it can have expired one of them.
        self.soonest: float = NEVER
        self.wakes_at: float = NEVER  # the earliest lease end the expiry thread waits for
        # The expiry thread waits apart, woken only when a lease may end sooner than it planned
        # for, so the state changes of every task do not wake it (each wake costs a lock handoff).
        self.changed = Signal(lock)

    def leased(self, expires_at: int) -> None:
        """Under the lock: a lease running until ``expires_at`` began (or was renewed to end then)."""
        if expires_at < self.soonest:
            self.soonest = expires_at
        if expires_at < self.wakes_at:
            self.changed.notify()  # it sleeps past this lease's end: it must plan again

    def loop(self, runner: object) -> None:
        """The expiry thread: make a timed call as soon as a running lease's time is up.

        When a free slot's dispatch gets there first, there is nothing left to
        do. A shared runner's thread also looks, every ``poll`` seconds, for
        what other processes did (``SharedMode.look_around``).
        """
        with runner._lock:
            while not runner._stopping:
                runner._mode.look_around(runner)
                if self.expire_due(runner):
                    runner._wake_pool()
                    continue
                live = [a.expires_at for a in runner._running.values() if not a.expired]
                self.wakes_at = min(live) if live else NEVER
                wait = runner._clock.seconds_until(self.wakes_at) if live else None
                self.changed.wait(runner._mode.bound_wait(wait))

    @staticmethod
    def expire_due(runner: object) -> bool:
        """Under the lock: if a running lease's time is up, make a timed call (``advance``) so the
        scheduler takes it back; True if it did."""
        running = runner._running.values()
        if all(a.expired for a in running):
            return False  # no live lease: no need to read the clock (one round trip for a shared one)
        now = runner._clock.now
        if not any(not a.expired and a.expires_at <= now for a in running):
            return False
        runner._timed_call("advance", {"now": None})
        return True

    def notice(self, runner: object, now: int) -> None:
        """Under the lock, after a timed call at ``now`` at or past ``soonest``: mark the leases ended
        by then expired (O(workers)); their tasks are eligible again, or final."""
        soonest = NEVER
        for attempt in runner._running.values():
            if attempt.expired:
                continue
            if attempt.expires_at <= now:
                attempt.expired = True
                runner._refresh(attempt.task_id, now)
                runner._idle_proof.version += 1  # the task is eligible again (or final: out of attempts)
                runner._runs.lease_lost(attempt)  # process isolation: terminate its child
                runner._wake_pool()
            elif attempt.expires_at < soonest:
                soonest = attempt.expires_at
        self.soonest = soonest

    def check_invariants(self, running: dict) -> None:
        """Assert ``soonest`` is at most the end of every live lease the runner runs."""
        for attempt in running.values():
            assert attempt.expired or self.soonest <= attempt.expires_at, (
                f"task {attempt.task_id}'s lease ends at {attempt.expires_at}, before soonest={self.soonest}")
        self.changed.check_invariants()
