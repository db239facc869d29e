"""Pitfall: ints are kept as doubles, so a scheduler refuses the contract's ints from 2**53 on.

Seed 000 ("All time is caller-supplied logical time, so tests can exercise
exact boundaries without sleeping."): the boundaries include the ends of
every value's range. This scheduler is a storage narrower than the contract
(a JSON reader that parses numbers as doubles, a column of 53-bit floats): it
refuses any int argument at or past 2**53 in size, where the contract accepts
every signed 64-bit int. The machine's small values never meet it; the
check's boundary probes (``spec.checkers.boundaries``) do.
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler

#: The first int a double cannot hold next to its neighbours: past it, doubles skip integers.
_DOUBLE_EXACT = 2**53


def _narrow(**arguments: object) -> None:
    for name, value in arguments.items():
        if type(value) is int and abs(value) >= _DOUBLE_EXACT:
            raise ValueError(f"{name} must be below 2**53 in size (kept as a double): {value}")


class Scheduler(SimpleScheduler):
    def add_worker(self, worker: str, capacity: int) -> None:
        _narrow(capacity=capacity)
        super().add_worker(worker, capacity)

    def submit(self, priority: int = 0, due_at: int | None = None, max_attempts: int | None = None,
               retry_delay: int = 1, key: str | None = None) -> int:
        _narrow(priority=priority, due_at=due_at, max_attempts=max_attempts, retry_delay=retry_delay)
        return super().submit(priority, due_at, max_attempts, retry_delay, key)

    def dispatch(self, worker: str, now: int, duration: int):
        _narrow(now=now, duration=duration)
        return super().dispatch(worker, now, duration)

    def advance(self, now: int) -> None:
        _narrow(now=now)
        super().advance(now)
