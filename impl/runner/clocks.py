"""The runner's clocks: logical time a test moves by hand, and real time as ticks.

A clock offers ``now`` (an ``int`` >= 0 that never goes backwards),
``subscribe(listener)`` / ``unsubscribe(listener)`` (called with no
arguments after time moves by hand) and ``seconds_until(t)``: how many real
seconds until ``now`` reaches ``t`` on its own, or ``None`` when it never will
(a manual clock moves only when told). ``fencepost.impl.runner.Runner`` needs
nothing else of a clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from fencepost.spec.protocol import says_backwards


def _check_int(name: str, value: object, rule: str, ok: Callable[[int], bool]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not ok(value):
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return value


class _MovedByHand:
    """What the clocks that move only when told share: listeners called after each move.

    ``_lock`` serialises moves and the listener list; it is never held while
    listeners run (a listener may read the clock, or take its own locks).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after every move made through this object (in the moving thread)."""
        with self._lock:
            self._listeners.append(listener)

    def unsubscribe(self, listener: Callable[[], None]) -> None:
        """Stop calling ``listener``; unknown listeners are ignored."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def seconds_until(self, t: int) -> float | None:
        """Always ``None``: this time never moves on its own."""
        return None

    def _notify(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()


class ManualClock(_MovedByHand):
    """Logical time for tests: it moves only when ``advance`` or ``advance_to`` is called.

    Moving it calls every subscribed listener (the runner wakes its pool), so
    whatever became due or expired is handled without any sleeping in tests.
    ``now`` is read without a lock (one attribute read); moves are serialised.
    """

    def __init__(self, start: int = 0) -> None:
        """Raises ``ValueError`` unless ``start`` is an int >= 0."""
        self._now = _check_int("start", start, "an int >= 0", lambda v: v >= 0)
        super().__init__()

    @property
    def now(self) -> int:
        """The current logical time."""
        return self._now

    def advance(self, ticks: int) -> int:
        """Move time forward by ``ticks`` (>= 0) and return the new ``now``.

        Raises:
            ValueError: ``ticks`` is not an int >= 0 (time can't go backwards); nothing moves.
        """
        _check_int("ticks", ticks, "an int >= 0 (time can't go backwards)", lambda v: v >= 0)
        with self._lock:
            self._now += ticks
            now = self._now
        self._notify()
        return now

    def advance_to(self, t: int) -> int:
        """Move time forward to ``t`` (>= ``now``) and return it.

        Raises:
            ValueError: ``t`` is not an int, or is before ``now`` (time can't go backwards); nothing moves.
        """
        with self._lock:
            _check_int("t", t, f"an int >= now ({self._now}): time can't go backwards", lambda v: v >= self._now)
            self._now = t
        self._notify()
        return t


#: Ticks are milliseconds unless told otherwise.
DEFAULT_TICK_NS = 1_000_000


class MonotonicClock:
    """Real time as integer ticks since the clock was made (default: milliseconds).

    Built on ``time.monotonic_ns``, so it never goes backwards. Nothing is
    notified when it moves: the runner waits ``seconds_until`` the next due
    time or expiry instead.
    """

    def __init__(self, tick_ns: int = DEFAULT_TICK_NS) -> None:
        """Raises ``ValueError`` unless ``tick_ns`` is an int >= 1."""
        self._tick_ns = _check_int("tick_ns", tick_ns, "an int >= 1 (nanoseconds per tick)", lambda v: v >= 1)
        self._origin = time.monotonic_ns()

    @property
    def now(self) -> int:
        """Whole ticks elapsed since the clock was made."""
        return (time.monotonic_ns() - self._origin) // self._tick_ns

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Nothing to do: real time is not moved by anyone."""

    def unsubscribe(self, listener: Callable[[], None]) -> None:
        """Nothing to do (see ``subscribe``)."""

    def seconds_until(self, t: int) -> float | None:
        """Real seconds until ``now`` reaches ``t`` (0.0 if it already has)."""
        remaining = t * self._tick_ns + self._origin - time.monotonic_ns()
        return max(0.0, remaining / 1e9)


#: How many times a ``SchedulerClock`` move is retried when another client moved time past the
#: value it read meanwhile; each retry means some client did move time, so a bound is only a guard.
TIME_RETRIES = 1_000

class SchedulerClock(_MovedByHand):
    """Logical time kept by the scheduler itself: one time for every process sharing it, moved by hand.

    ``now`` reads the scheduler's own clock (``scheduler.now``: for a
    ``PostgresScheduler``, the clock in its ``meta`` row, one round trip), so
    every process sharing the scheduler reads the same time, and never a time
    the scheduler would refuse as behind. ``advance(ticks)`` moves it with
    the protocol's own ``advance(now + ticks)``, which expires every lease
    whose time is up, for every client, before it returns. Tests move it, as
    they move a ``ManualClock``; nothing sleeps.

    Subscribers in this process are called after each move made through this
    object. Moves made by other processes are not announced: a runner on a
    shared scheduler polls for them (``Runner(poll=...)``). ``seconds_until``
    is ``None``: this time never moves on its own.

    Args:
        scheduler: any object with the protocol's ``advance(now)`` and a ``now`` property.

    Raises:
        ValueError: ``scheduler`` lacks ``now`` or ``advance``.
    """

    def __init__(self, scheduler: object) -> None:
        missing = [name for name in ("now", "advance") if not hasattr(type(scheduler), name) and not hasattr(scheduler, name)]
        if missing:
            raise ValueError(f"scheduler must offer now and advance; {scheduler!r} lacks {', '.join(missing)}")
        self._scheduler = scheduler
        super().__init__()

    @property
    def now(self) -> int:
        """The scheduler's clock, now (one read of it)."""
        return self._scheduler.now

    def advance(self, ticks: int) -> int:
        """Move the scheduler's clock ``ticks`` (>= 0) past the time it shows; return the time moved to.

        If another client moves time past the target between the read and the
        move, the scheduler refuses the move ("time can't go backwards") and
        it is made again from the new time, so time always ends at least
        ``ticks`` past the time read at the call.

        Raises:
            ValueError: ``ticks`` is not an int >= 0; nothing moves.
            RuntimeError: other clients moved time past every target, ``TIME_RETRIES`` times.
        """
        _check_int("ticks", ticks, "an int >= 0 (time can't go backwards)", lambda v: v >= 0)
        for _ in range(TIME_RETRIES):
            with self._lock:
                target = self._scheduler.now + ticks
                try:
                    self._scheduler.advance(now=target)
                except ValueError as exc:
                    if not says_backwards(exc):
                        raise
                    continue  # another client moved time past target after our read: read again
            self._notify()
            return target
        raise RuntimeError(f"advance({ticks}): other clients moved time past the target {TIME_RETRIES} times in a row")

    def advance_to(self, t: int) -> int:
        """Move the scheduler's clock to ``t`` and return it.

        Raises:
            ValueError: ``t`` is not an int >= 0, or is behind the scheduler's
                clock (the scheduler's "time can't go backwards"); nothing moves.
        """
        _check_int("t", t, "an int >= 0", lambda v: v >= 0)
        with self._lock:
            self._scheduler.advance(now=t)
        self._notify()
        return t
