"""A runner's memory: the live tasks plus a retention window, whatever it has run; the trace only when asked for.

Memory is checked by counting what the runner and its scheduler hold
(records, rows of the registry, heap entries, trace entries), never by
timing. Every wait is bounded (``BOUND``) and synchronised by the runner's
own ``wait_idle`` or by events.
"""

from __future__ import annotations

import threading

import pytest
from runner_helpers import BOUND, NoPayloads

from fencepost.impl.runner.clocks import MonotonicClock
from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.runner.core import DEFAULT_RETENTION, ManualClock, Runner
from fencepost.spec.protocol import Status


def value(ctx) -> int:
    return ctx.task_id * 10


def boom(ctx) -> None:
    raise RuntimeError(f"task {ctx.task_id}")


def held(runner: Runner) -> tuple[int, int, int]:
    """(runner records, scheduler registry slots, scheduler final-queue entries)."""
    scheduler = runner._scheduler
    return len(runner._tasks), len(scheduler._tasks) + len(scheduler._old), len(scheduler._final)


def test_records_and_scheduler_tasks_go_once_the_window_has_passed_and_say_they_were_forgotten() -> None:
    clock = ManualClock(0)
    with Runner(workers=2, clock=clock, lease=1000, retention=5, scheduler=IndexedScheduler()) as runner:
        old = [runner.submit(value) for _ in range(40)] + [runner.submit(boom, max_attempts=1) for _ in range(10)]
        runner.wait_idle(BOUND)
        assert held(runner) == (50, 50, 50)
        clock.advance(5)  # ended at 0: 0 < 5 - 5 is false, still kept
        keep = runner.submit(value)
        runner.wait_idle(BOUND)
        assert runner.result(old[0]) == old[0] * 10 and runner.result(old[0]) == old[0] * 10  # read twice: kept
        clock.advance(1)  # t=6: the first fifty ended more than 5 ticks ago
        live = runner.submit(value, due_at=100)  # waits: the dispatch that finds nothing is the timed call
        runner.wait_idle(BOUND)
        assert held(runner) == (2, 2, 1)  # the task kept (ended at 5) and the one waiting
        assert len(runner._scheduler._ready) + len(runner._scheduler._due) <= 1 + 64
        for task_id in (old[0], old[-1]):
            for read in (runner.result, runner.error, runner.task):
                with pytest.raises(ValueError, match=f"task {task_id} was forgotten"):
                    read(task_id)
        assert runner.result(keep) == keep * 10
        assert runner.task(live).status is Status.PENDING


def test_retention_none_keeps_every_record_and_bad_values_are_refused_by_name() -> None:
    clock = ManualClock(0)
    with Runner(workers=1, clock=clock, retention=None) as runner:
        ids = [runner.submit(value) for _ in range(5)]
        runner.wait_idle(BOUND)
        clock.advance(10**9)
        runner.submit(value)
        runner.wait_idle(BOUND)
        assert [runner.result(i) for i in ids] == [i * 10 for i in ids]
        assert len(runner._retention.ended) == 0
    for bad in (-1, 1.5, True, "5"):
        with pytest.raises(ValueError, match=f"retention must be None or an int >= 0.*{bad!r}"):
            Runner(clock=ManualClock(), retention=bad)
    with pytest.raises(ValueError, match="trace must be a bool"):
        Runner(clock=ManualClock(), trace=1)
    assert DEFAULT_RETENTION > 0


def test_the_trace_is_kept_only_when_asked_for(tmp_path) -> None:
    with Runner(workers=1, clock=ManualClock()) as quiet:
        quiet.submit(value)
        quiet.wait_idle(BOUND)
        assert quiet._trace is None
        with pytest.raises(RuntimeError, match=r"Runner\(trace=True\)"):
            quiet.save_trace(tmp_path / "none.toml")
    with Runner(workers=1, clock=ManualClock(), trace=True) as traced:
        traced.submit(value)
        traced.wait_idle(BOUND)
        ops = [op for op, *_ in traced._trace]  # when the slot first looks for work is the threads' choice
        assert ops[0] == "add_worker" and ops.count("submit") == ops.count("complete") == 1 and "dispatch" in ops


class CountingStore(NoPayloads):
    """An in-memory payload store for a shared runner: stamp() is its poll; ``reached(n)`` waits for n polls."""

    def __init__(self) -> None:
        self.polls = 0
        self._changed = threading.Condition()

    def stamp(self):
        with self._changed:
            self.polls += 1
            self._changed.notify_all()
        return (0, 0)

    def reached(self, polls: int) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self.polls >= polls, BOUND)


def test_a_shared_runner_idle_on_a_real_time_clock_holds_the_same_objects_after_many_polls() -> None:
    store, scheduler = CountingStore(), IndexedScheduler()
    runner = Runner(workers=2, clock=MonotonicClock(), scheduler=scheduler, payloads=store,
                    functions={"value": value}, poll=0.001)

    def held() -> tuple[int, ...]:
        return (len(runner._tasks), len(runner._retention.ended), len(runner._idle_proof.hints), len(runner._running),
                len(scheduler._tasks) + len(scheduler._old), len(scheduler._ready), len(scheduler._due), len(scheduler._expiry))

    with runner:
        assert store.reached(20)
        with runner._lock:
            before = held()
        assert store.reached(store.polls + 200)  # two hundred more looks at the queue, each with a dispatch
        with runner._lock:
            after = held()
    assert before == after == (0,) * 8
    assert runner._trace is None
