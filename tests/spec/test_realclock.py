"""The real-clock harness on a fake clock: waiting for ticks, skipping idle time, and a judge that allows what timing allows.

Nothing here sleeps or depends on timing luck: the clock is a number the
test moves (``FakeClock``), and a "server" that keeps its own time reads it.
"""

from __future__ import annotations

import pytest

from fencepost.impl.indexed import IndexedScheduler
from fencepost.spec import realclock
from fencepost.spec.checkers.deadline import Watch, Watched
from fencepost.spec.checkers.realtime import lease_may_be, TimedLockstep, TimedScheduler, Timing
from fencepost.spec.checkers.results import Divergence
from fencepost.spec.protocol import ACCEPTED, Lease, Outcome
from fencepost.spec.realclock import IDLE_MARGIN_TICKS, RealClock

MS = 1_000_000


class FakeClock:
    """A monotonic clock in ns that moves only when slept on or told to."""

    def __init__(self) -> None:
        self.t = 1_000 * MS
        self.slept: list[float] = []

    def now(self) -> int:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += int(round(seconds * 1e9))


def test_wait_for_sleeps_to_the_tick_and_the_first_wait_fixes_the_epoch() -> None:
    fake = FakeClock()
    clock = RealClock(50, clock=fake.now, sleep=fake.sleep)
    assert clock.wait_for(3) == 0  # the first timed call starts its tick: nothing before it keeps time
    assert clock.instant(3) == fake.t
    fake.t += 7 * MS
    assert clock.wait_for(3) == 7 * MS  # a tick already started: late by what passed
    assert clock.wait_for(4) == 0 and fake.t == clock.instant(4)
    assert fake.slept == [pytest.approx(0.043)]


def test_skip_idle_keeps_real_time_through_every_pending_end_and_the_margin() -> None:
    fake = FakeClock()
    clock = RealClock(10, clock=fake.now, sleep=fake.sleep)
    clock.wait_for(0)
    start = fake.t
    clock.skip_idle(100, pending=5)  # a lease ends at 5: real time runs to 5 + margin, then skips to 100
    clock.wait_for(100)
    assert fake.t - start == (5 + IDLE_MARGIN_TICKS) * 10 * MS
    before = fake.t
    clock.skip_idle(130, pending=140)  # something ends after the call: the whole stretch passes
    clock.wait_for(130)
    assert fake.t - before == 30 * 10 * MS


def test_the_wait_for_a_tick_does_not_count_against_the_call_timeout() -> None:
    """``--call-timeout`` counts from the end of the harness's wait: at a tick of a second, five ticks pass 5 s.

    The watching thread looks while the call waits (the fake sleep looks for
    it) and again while the queue is called; neither finds the call overdue.
    """
    fake, watch = FakeClock(), Watch(seconds=1.0)
    overdue: list[object] = []

    def sleep(seconds: float) -> None:
        fake.sleep(seconds)
        if watch.current is not None:  # as if the wait's real time had passed under the watch
            watch.current = (watch.current[0], watch.current[1] - seconds)
        overdue.append(watch.overdue())

    class Queue:
        def advance(self, now: int) -> None:
            overdue.append(watch.overdue())

    queue = Watched(TimedScheduler(Queue(), RealClock(1000, clock=fake.now, sleep=sleep), None,
                                   pending=lambda: 5, watch=watch), watch)  # a lease ends at 5: no tick is skipped
    queue.advance(now=0)
    queue.advance(now=5)
    assert fake.slept == [pytest.approx(5.0)]
    assert overdue == [None, None, None]


def test_ticking_sets_the_tick_adapters_read_and_restores_it() -> None:
    assert realclock.tick_ms() is None
    with realclock.ticking(20):
        assert realclock.tick_ms() == 20 == realclock.require_tick("x")
    assert realclock.tick_ms() is None
    with pytest.raises(ValueError, match="--clock real"):
        realclock.require_tick("redis_streams:group")
    with pytest.raises(ValueError, match="tick_ms"):
        with realclock.ticking(0):
            pass


@pytest.mark.parametrize("started, call, closed, expected", [
    ((0, 2), (10, 11), False, (True,)),  # returned before the earliest end (0 + 12)
    ((0, 2), (14, 15), False, (False,)),  # started at or after the latest end (2 + 12)
    ((0, 2), (11, 13), False, (True, False)),  # straddles [12, 14]
    ((0, 2), (11, 12), True, (True,)),  # closed: live through its earliest end
    ((0, 2), (14, 15), True, (True, False)),  # closed: 14 may be exactly the end
])
def test_lease_may_be(started: tuple[int, int], call: tuple[int, int], closed: bool, expected: tuple[bool, ...]) -> None:
    assert lease_may_be(started, 12, call, closed) == expected


class ServerClockQueue:
    """A queue that keeps lease time on the fake clock, as a server does: live while ``clock < start + D * tick``.

    ``stale_ok``: it accepts a completion from any token of the task (the Redis ``XACK`` pitfall).
    A dispatch takes ``dispatch_ns`` and stamps its lease at its end.
    """

    def __init__(self, fake: FakeClock, tick_ns: int, stale_ok: bool = False, dispatch_ns: int = 0) -> None:
        self.fake, self.tick_ns, self.stale_ok, self.dispatch_ns = fake, tick_ns, stale_ok, dispatch_ns
        self.now = 0
        self.tasks: list[dict] = []
        self.tokens = 0

    def _expire(self) -> None:
        for t in self.tasks:
            if t["holder"] and self.fake.t >= t["ends"]:
                t["holder"] = None

    def add_worker(self, worker: str, capacity: int) -> None:
        pass

    def submit(self) -> int:
        self.tasks.append({"holder": None, "ends": 0, "done": False, "tokens": []})
        return len(self.tasks)

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        self.now = now
        self.fake.t += self.dispatch_ns
        self._expire()
        for i, t in enumerate(self.tasks, 1):
            if not t["holder"] and not t["done"]:
                self.tokens += 1
                t.update(holder=self.tokens, ends=self.fake.t + duration * self.tick_ns)
                t["tokens"].append(self.tokens)
                return Lease(task_id=i, worker=worker, token=self.tokens, started_at=now, expires_at=now + duration)
        return None

    def complete(self, task_id: int, token: int, now: int) -> Outcome:
        self.now = now
        self._expire()
        t = self.tasks[task_id - 1]
        if not t["done"] and (t["holder"] == token or (self.stale_ok and t["holder"] and token in t["tokens"])):
            t.update(done=True, holder=None)
            return ACCEPTED
        return Outcome(False, "refused")


def _lockstep(fake: FakeClock, queue: object, timing: Timing) -> TimedLockstep:
    from fencepost.spec.variants import Variants

    clock = RealClock(timing.tick_ms, clock=fake.now, sleep=fake.sleep)
    variants = Variants.from_declared({"capacity": "none", "views": "none", "order": "fifo"})
    return TimedLockstep(lambda: queue, variants=variants, timing=timing, clock=clock)


def test_a_completion_at_the_lease_end_may_go_either_way_and_is_no_finding() -> None:
    fake, timing = FakeClock(), Timing(tick_ms=50, offset_ns=0)
    queue = ServerClockQueue(fake, 50 * MS, dispatch_ns=3 * MS)  # the server stamps the lease as the call ends ...
    run = _lockstep(fake, queue, timing)
    run.step("add_worker", {"worker": "w1", "capacity": 1})
    run.step("submit", {})
    run.step("dispatch", {"worker": "w1", "now": 0, "duration": 5})
    run.step("complete", {"task_id": 1, "token": 1, "now": 5})  # ... so at tick 5 it is still live: accepted
    assert run.trace[-1].got == ("outcome", True, None)
    assert timing.explained == 1 and timing.either == 1  # by the ticks it had expired; timing explains it


def test_a_stale_token_accepted_while_another_holds_the_task_is_found_whatever_the_timing() -> None:
    fake, timing = FakeClock(), Timing(tick_ms=50, offset_ns=0)
    queue = ServerClockQueue(fake, 50 * MS, stale_ok=True)
    run = _lockstep(fake, queue, timing)
    run.step("add_worker", {"worker": "w1", "capacity": 1})
    run.step("add_worker", {"worker": "w2", "capacity": 1})
    run.step("submit", {})
    run.step("dispatch", {"worker": "w1", "now": 0, "duration": 5})
    run.step("dispatch", {"worker": "w2", "now": 6, "duration": 5})  # lease 1 surely ended: w2 holds it
    with pytest.raises(Divergence, match="no timing within the measured uncertainty explains it"):
        run.step("complete", {"task_id": 1, "token": 1, "now": 6})
    assert timing.failing is not None and timing.failing[-1].op == "complete"


def test_a_scheduler_on_logical_time_is_judged_exactly_however_late_the_calls() -> None:
    fake, timing = FakeClock(), Timing(tick_ms=10, offset_ns=0)
    clock = RealClock(10, clock=fake.now, sleep=fake.sleep)
    run = TimedLockstep(IndexedScheduler, timing=timing, clock=clock)
    run.step("add_worker", {"worker": "w1", "capacity": 1})
    run.step("submit", {})
    run.step("dispatch", {"worker": "w1", "now": 0, "duration": 2})
    fake.t += 35 * MS  # three and a half ticks late: the ticks' own reading must still be allowed
    run.step("complete", {"task_id": 1, "token": 1, "now": 2})
    run.check_all()
    assert run.trace[-1].got == run.trace[-1].expected
    assert len(timing.lateness) == 2 and max(timing.lateness) >= 15 * MS
