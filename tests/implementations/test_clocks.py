"""The runner's clocks: manual time moves only when told and tells its listeners; real time never goes back."""

from __future__ import annotations

import pytest

from fencepost.impl.runner.clocks import ManualClock, MonotonicClock


def test_a_manual_clock_moves_only_when_told_and_tells_its_listeners() -> None:
    clock = ManualClock(3)
    heard: list[int] = []
    listener = lambda: heard.append(clock.now)  # noqa: E731
    clock.subscribe(listener)
    assert (clock.now, clock.advance(0), clock.advance(4), clock.advance_to(10), clock.advance_to(10)) == (3, 3, 7, 10, 10)
    assert heard == [3, 7, 10, 10]
    clock.unsubscribe(listener)
    clock.advance(1)
    assert heard == [3, 7, 10, 10] and clock.seconds_until(100) is None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda c: c.advance(-1), "ticks must be an int >= 0 (time can't go backwards), got -1"),
        (lambda c: c.advance(1.5), "ticks must be an int >= 0"),
        (lambda c: c.advance(True), "ticks must be an int >= 0"),
        (lambda c: c.advance_to(4), "t must be an int >= now (5): time can't go backwards, got 4"),
        (lambda c: ManualClock(-1), "start must be an int >= 0, got -1"),
        (lambda c: MonotonicClock(0), "tick_ns must be an int >= 1"),
    ],
)
def test_bad_time_is_refused_and_changes_nothing(call, message: str) -> None:
    clock = ManualClock(5)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(clock)
    assert clock.now == 5


def test_a_monotonic_clock_counts_whole_ticks_and_says_how_far_a_time_is() -> None:
    clock = MonotonicClock(tick_ns=1_000_000_000)  # seconds: the test never waits for one
    now = clock.now
    assert now in (0, 1) and clock.now >= now
    assert clock.seconds_until(0) == 0.0
    assert 0.0 < clock.seconds_until(now + 1000) <= 1000.0
