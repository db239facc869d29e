"""The real clock: logical ticks on the wall clock, for queues whose clock nobody can set.

Most queues keep time on a server (Redis, RabbitMQ): an adapter cannot move
their clock to a logical ``now``. Under ``--clock real`` the harness, not the
adapter, maps logical time onto the wall clock: tick ``t`` starts at
``instant(t)`` (``epoch + t * tick``, less any idle stretch skipped, see
``RealClock.skip_idle``), the harness waits until then before a call with
``now = t``, and measures the call's real start and end. The adapter only
turns durations into the server's units: a lease of ``D`` ticks is
``D * tick_ms()`` milliseconds on the server.

How an adapter learns the tick (the public way, re-exported by the adapter
kit as ``fencepost.impl.kit.tick_ms``): ``tick_ms()`` answers the tick in
force while the harness makes or calls a scheduler, and None under logical
time. An adapter reads it in its factory; a factory whose clock cannot be
set says so with ``fencepost_clock = "real"`` (``declares_real_clock``), so
``fencepost check`` runs it on the real clock without being told. A program
behind ``--exec`` gets the tick as the ``FENCEPOST_TICK_MS`` environment
variable (``TICK_ENV``) and as ``hello``'s ``tick_ms`` argument.

This module is plain bookkeeping with an injectable clock and sleep, so the
harness's own tests run on a fake clock and never depend on timing luck.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: The tick ``--clock real`` uses when ``--tick-ms`` is not given, in milliseconds.
#: Measured on this project's 2-core machine at load 4 to 6 (docs/real-clock.md):
#: a call's lateness (how long after its tick's start it begins) had a p99 of a few
#: milliseconds and spikes to about 15 ms; at 50 ms a spike is under a third of a
#: tick, so almost every call lands well inside its tick and only calls at exactly a
#: lease's end are within the measured uncertainty. Longer ticks cost time linearly.
DEFAULT_TICK_MS = 50
#: The environment variable that tells a program behind ``--exec`` the tick, in milliseconds.
TICK_ENV = "FENCEPOST_TICK_MS"
#: The values of a factory's ``fencepost_clock`` attribute and of ``--clock``.
CLOCKS = ("logical", "real")
#: Ticks of real time the harness keeps after the last pending lease end or due
#: time before it skips the rest of an idle stretch (``RealClock.skip_idle``):
#: enough that a server which lags a call by up to one tick still sees it ended.
IDLE_MARGIN_TICKS = 2

_lock = threading.Lock()
_tick_ms: int | None = None


def tick_ms() -> int | None:
    """The tick in force, in milliseconds, while the harness makes or drives a scheduler on the real clock.

    None under logical time (the scheduler is given every instant). Safe to
    call from any thread.
    """
    return _tick_ms


@contextmanager
def ticking(ms: int | None) -> Iterator[None]:
    """Make ``ms`` the tick ``tick_ms()`` answers inside the block (None: logical time), then restore it.

    Raises:
        ValueError: ``ms`` is not None nor an int >= 1.
    """
    global _tick_ms
    if ms is not None and (type(ms) is not int or ms < 1):
        raise ValueError(f"tick_ms must be a whole number of milliseconds >= 1: {ms!r}")
    with _lock:
        previous, _tick_ms = _tick_ms, ms
    try:
        yield
    finally:
        with _lock:
            _tick_ms = previous


def declares_real_clock(factory: object) -> bool:
    """Whether ``factory`` (or its class) says its clock cannot be set: ``fencepost_clock = "real"``."""
    return getattr(factory, "fencepost_clock", "logical") == "real"


def require_tick(who: str) -> int:
    """The tick in force, for an adapter that needs one: ``tick_ms()``, or an error saying how to get one.

    Raises:
        ValueError: no tick is in force (the adapter was made outside ``--clock real``).
    """
    ms = _tick_ms
    if ms is None:
        raise ValueError(f"{who} runs on its server's clock, which fencepost cannot set: check it with --clock real")
    return ms


class RealClock:
    """Logical ticks on a monotonic clock: where each tick starts, waiting for it, and what was late.

    ``instant(t)`` is the monotonic nanosecond tick ``t`` starts at:
    ``epoch + t * tick_ns`` less the idle stretches skipped so far. The
    epoch is fixed by the first ``wait_for``, so that its tick starts at that
    moment (nothing before the first timed call keeps time), or by
    ``start()``. Every instant and lateness is in nanoseconds.

    Args:
        tick_ms: milliseconds a tick lasts (an int >= 1).
        clock: the monotonic clock, in nanoseconds (``time.monotonic_ns``;
            a test passes a fake).
        sleep: sleeps a number of seconds (``time.sleep``; a test passes one
            that moves its fake clock).

    Raises:
        ValueError: ``tick_ms`` is not an int >= 1.
    """

    def __init__(self, tick_ms: int, clock: Callable[[], int] = time.monotonic_ns,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if type(tick_ms) is not int or tick_ms < 1:
            raise ValueError(f"tick_ms must be a whole number of milliseconds >= 1: {tick_ms!r}")
        self.tick_ms = tick_ms
        self.tick_ns = tick_ms * 1_000_000
        self.clock = clock
        self.sleep = sleep
        self.epoch: int | None = None
        self.skipped = 0  # ticks of idle time skipped so far
        self.last_tick = 0  # the latest tick waited for
        self._lock = threading.Lock()  # several recorded clients may wait on one clock

    def start(self) -> int:
        """Fix tick 0 at the present instant (once); return the epoch."""
        if self.epoch is None:
            self.epoch = self.clock()
        return self.epoch

    def instant(self, tick: int) -> int:
        """The monotonic nanosecond tick ``tick`` starts at."""
        return self.start() + (tick - self.skipped) * self.tick_ns

    def skip_idle(self, tick: int, pending: int | None) -> None:
        """Before waiting for ``tick``: skip the part of the stretch since the last tick that nothing can notice.

        ``pending`` is the latest tick at which something the queue keeps
        time for ends or falls due (a lease's ``expires_at``, a waiting
        task's ``due_at``), or None when nothing is. Real time must pass
        through every such instant and ``IDLE_MARGIN_TICKS`` more, so the
        server sees each of them pass as the model does; the rest of the
        stretch up to ``tick`` is skipped: every lease that spans it has ended
        on the server and in the model alike, so no answer can change.
        """
        keep_until = self.last_tick if pending is None else max(self.last_tick, pending)
        skip = tick - (keep_until + IDLE_MARGIN_TICKS)
        if skip > 0:
            self.skipped += skip

    def wait_for(self, tick: int) -> int:
        """Sleep until tick ``tick`` has started; return the lateness (ns past its start, >= 0).

        A tick already started returns at once; the lateness is then how
        long ago it started.
        """
        with self._lock:
            if self.epoch is None:
                self.epoch = self.clock() - (tick - self.skipped) * self.tick_ns
            target = self.instant(tick)
            self.last_tick = max(self.last_tick, tick)
        while True:
            now = self.clock()
            if now >= target:
                return now - target
            self.sleep((target - now) / 1e9)
