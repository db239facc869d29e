"""Histories on a real clock: each timed call's ``now`` is unknown inside its measured interval.

A history recorded from a queue that keeps its own time (a Redis server's, a
broker's) says so in its header (``spec.formats.history``)::

    {"type": "header", "variants": {...}, "clock": {"tick_ns": 50000000, "resolution_ns": 1000000, "offset_ns": 0}}

and ``fencepost linearize`` then judges it in real time, as follows.

* The queue's server reads a clock in whole units of ``resolution_ns`` (Redis:
  1 ms). A timed call (``dispatch``, ``complete``, ``fail``, ``cancel``,
  ``renew``, ``advance`` and their batches) takes effect at one reading ``t``:
  a whole number of units with ``floor((a - offset) / r) <= t <= ceil((b + offset) / r)``,
  ``a`` and ``b`` the call's invoke and return stamps (``time``, monotonic
  nanoseconds), ``r`` the resolution and ``offset`` the declared
  ``offset_ns`` (how far apart the clients' clocks may be; 0 on one machine).
  The server's clock and the clients' differ by a constant, which no rule can
  see (every rule compares two instants); rounding outwards covers the phase
  between the two, so the server's reading is always among the instants tried.
* A duration or a retry delay of ``n`` ticks lasts ``n * tick_ns / r``
  units: a lease set at ``t`` for ``D`` ticks is live exactly at the readings
  below ``t + D * tick_ns / r``, which is how a server that counts whole
  units decides (Redis: an entry is claimable once its idle time reaches
  ``min-idle-time``).
* The ``now`` a call was given (the harness's tick) is not used, and a lease
  result's ``started_at`` and ``expires_at`` (the adapter's arithmetic on it)
  are not compared; everything else is, as on logical time.
* The history is linearizable when some order of its calls and some reading
  for each timed call, non-decreasing along the order, explain every result.
  Calls precede one another in real time only when their widened intervals do
  not overlap, so the order respects real time up to the offset.

It never rejects a history that some timing at the server's resolution
explains, and the call it points at is one that no order and no timing
explains. ``tests/spec/test_linearize_realtime.py`` checks that against a
brute-force reference (every order, every reading) on hundreds of small random
histories.

How the search stays small (``RealTime.options``): a call that sets no time
(a ``complete``, a ``cancel``, a refused report, a dispatch that hands out
nothing) is tried only at the earliest reading of each stretch in which the
same leases have expired and the same tasks are due: within a stretch every
reading gives the same answer and the same state but for the clock, and the
earliest clock leaves every later call the most room. A call that sets a time
(a lease, a retry) is tried at every reading of its stretch, since when its
lease ends matters later. Calls with an unknown outcome (info) may take
effect up to the last stamp of the history (plus the offset); one that would
set a time over more than ``MAX_READINGS`` readings cannot be checked exactly
and is refused (``ValueError``), as is a history that holds a prune (its
``before`` is a logical instant), a submit with a ``due_at`` (likewise), or a
call without its stamps.

The logical-time path (``spec.checkers.linearize``) is untouched by all this:
a history without a clock is judged as before, at the same cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from fencepost.spec.formats.history import Call, History, check_clock
from fencepost.spec.protocol import DISPATCHABLE_STATUSES, Lease
from fencepost.spec.variants import Variants

#: The most readings one call with an unknown outcome that sets a time (a lease, a retry) is
#: tried at; past it the history is refused as not checkable exactly (see the module docstring).
MAX_READINGS = 4096

#: Operations whose ``now`` is the call's reading of the server's clock.
TIMED_OPS = frozenset({"dispatch", "complete", "fail", "cancel", "renew", "advance",
                       "dispatch_many", "complete_many", "fail_many"})

#: Arguments given in ticks, turned into units of the server's clock.
_TICK_ARGUMENTS = ("duration", "retry_delay")


@dataclass(frozen=True)
class RealTime:
    """A history's clock (its header's ``clock``), and each call's readings, in units of the resolution.

    ``readings[i]`` is call ``i``'s ``(lowest, highest)`` reading (``highest``
    None for a call with an unknown outcome: see ``horizon``); ``spans[i]`` is
    its widened interval in nanoseconds ``(a - offset, b + offset)``, ``b``
    infinite for an unknown outcome, which orders the calls.
    """

    tick_ns: int
    resolution_ns: int
    offset_ns: int
    readings: tuple[tuple[int, int | None], ...]
    spans: tuple[tuple[float, float], ...]
    horizon: int  # the last stamp of the history plus the offset, as a reading

    @property
    def units_per_tick(self) -> int:
        return self.tick_ns // self.resolution_ns

    @classmethod
    def of(cls, history: History, offset_ns: int | None = None) -> RealTime:
        """The clock of ``history``'s header, with ``offset_ns`` in place of its own if given. O(calls).

        Raises:
            ValueError: the history has no clock; ``offset_ns`` is not an int >= 0; a call has
                no ``time`` stamp on its invoke or its end; the history holds a prune, or a
                submit with a ``due_at`` (each a logical instant, which the real clock has not).
        """
        if history.clock is None:
            raise ValueError(f"{history.source}: the header has no 'clock': the history is on logical time")
        clock = dict(history.clock)
        if offset_ns is not None:
            clock["offset_ns"] = offset_ns
        clock = check_clock(clock)
        tick, resolution, offset = clock["tick_ns"], clock["resolution_ns"], clock["offset_ns"]
        events = history.events
        readings, spans = [], []
        for call in history.calls:
            line = events[call.invoked].line
            if call.op.startswith("prune"):
                raise ValueError(f"{history.source}: line {line}: prune's 'before' is a logical instant, which a "
                                 "history on a real clock has not: record it without prune")
            for entry in call.args.get("tasks", [call.args]) if call.op.startswith("submit") else ():
                if isinstance(entry, dict) and entry.get("due_at") is not None:
                    raise ValueError(f"{history.source}: line {line}: {call.op} with a due_at: a due time is a "
                                     "logical instant, which a history on a real clock has not")
            start = events[call.invoked].time
            end = events[call.ended].time if call.ended is not None else None
            if start is None or (call.ended is not None and end is None):
                missing = line if start is None else events[call.ended].line
                raise ValueError(f"{history.source}: line {missing}: no 'time': a history on a real clock needs "
                                 "every event's stamp")
            done = call.completed is not None
            low = (start - offset) // resolution
            high = -((-(end + offset)) // resolution) if done else None
            readings.append((low, high))
            spans.append((start - offset, end + offset if done else math.inf))
        last = max((e.time for e in events if e.time is not None), default=0)
        horizon = -((-(last + offset)) // resolution)
        return cls(tick, resolution, offset, tuple(readings), tuple(spans), horizon)

    # ------------------------------------------------------------ the model's units

    def variants(self, variants: Variants) -> Variants:
        """``variants`` with a fixed lease length (``duration=N``, in ticks) in units of the clock."""
        length = variants.lease_length()
        return variants if length is None else replace(variants, duration=str(length * self.units_per_tick))

    def at(self, call: Call, reading: int | None) -> Call:
        """``call`` as the model sees it at ``reading`` (None for an untimed call): its ``now`` the
        reading, its ticks in units, a lease result's times the model's own. O(size of the call)."""
        k = self.units_per_tick
        args = dict(call.args)
        if reading is not None:
            args["now"] = reading
        for name in _TICK_ARGUMENTS:
            value = args.get(name)
            if type(value) is int:
                args[name] = value * k
        if call.op == "submit" and "retry_delay" not in args:
            args["retry_delay"] = k  # the contract's default, one tick
        elif call.op == "submit_many" and isinstance(args.get("tasks"), list):
            args["tasks"] = [_in_units(e, k) for e in args["tasks"]]
        result = call.result
        if reading is not None and call.op in ("dispatch", "dispatch_many") and type(args.get("duration")) is int:
            end = reading + args["duration"]
            if isinstance(result, Lease):
                result = replace(result, started_at=reading, expires_at=end)
            elif isinstance(result, (list, tuple)):
                result = [replace(r, started_at=reading, expires_at=end) if isinstance(r, Lease) else r for r in result]
        return replace(call, args=args, result=result)

    def earliest(self, call: Call, state: object) -> Call:
        """``call`` as the model sees it at its earliest reading from ``state`` (``at``), for
        explaining a mismatch in the model's own units; an untimed call as ``at`` gives it."""
        if call.op not in TIMED_OPS:
            return self.at(call, None)
        return self.at(call, max(self.readings[call.index][0], state.now))

    # ------------------------------------------------------------ the search's choices

    def options(self, call: Call, state: object, step: Callable[[Call, object], tuple[object, object]],
                unknown: bool) -> Iterator[tuple[object, object]]:
        """Every ``(state after, answer)`` of ``call`` from ``state`` at the readings worth trying, earliest first.

        ``state`` is the search's (``linearize_states._State``); ``step`` applies a call to it
        (``linearize._step``: the next state, or None on a mismatch, and the model's answer).
        ``unknown``: the call's outcome is not checked (info, or past the search's cut), so it
        may take effect up to its recorded return, or ``horizon`` when it has none.

        Raises:
            ValueError: an unknown-outcome call that sets a time over more than ``MAX_READINGS`` readings.
        """
        if call.op not in TIMED_OPS:
            yield step(self.at(call, None), state)
            return
        low, high = self.readings[call.index]
        if high is None:
            high = self.horizon
        low = max(low, state.now)
        if low > high:
            return
        points = [low, *sorted(p for p in _thresholds(state) if low < p <= high)]
        for n, reading in enumerate(points):
            after, answer = step(self.at(call, reading), state)
            yield after, answer
            # Within a stretch the answer is the same at every reading: a mismatch here is one
            # there, and an answer that sets no time leaves states that differ only in the clock.
            if after is None or not _sets_time(call.op, answer):
                continue
            last = points[n + 1] - 1 if n + 1 < len(points) else high
            if unknown and last - reading > MAX_READINGS:
                raise ValueError(
                    f"{call.op} by {call.process} has an unknown outcome and would set a time at any of "
                    f"{last - reading + 1:,} readings; more than {MAX_READINGS:,} cannot be checked exactly: "
                    "record the history without client timeouts"
                )
            for later in range(reading + 1, last + 1):
                yield step(self.at(call, later), state)


def windows(history: History, cut: list[tuple[int, int]], timing: RealTime) -> list[tuple[int, int]]:
    """Quiescent windows ``cut`` merged where the offset lets a later call take effect before an earlier one.

    Two windows stay apart only when every call of the first returned more than
    twice the offset before any call of the second was invoked. O(calls).
    """
    if timing.offset_ns == 0 or not cut:
        return cut
    calls_at = {c.invoked: c.index for c in history.calls}
    merged = [cut[0]]
    latest = _latest_end(history, cut[0], calls_at, timing)
    for first, stop in cut[1:]:
        starts = [timing.spans[calls_at[p]][0] for p in range(first, stop) if p in calls_at]
        if starts and min(starts) <= latest:
            merged[-1] = (merged[-1][0], stop)
        else:
            merged.append((first, stop))
        latest = max(latest, _latest_end(history, (first, stop), calls_at, timing))
    return merged


def _latest_end(history: History, window: tuple[int, int], calls_at: dict[int, int], timing: RealTime) -> float:
    return max((timing.spans[calls_at[p]][1] for p in range(*window) if p in calls_at), default=-math.inf)


def _thresholds(state: object) -> set[int]:
    """The readings at which something in ``state`` changes: each running lease's end (and the
    reading after it, for ``interval=closed``), each parked task's due time (and the one after,
    for ``due=after``). O(R + D + F) for R running leases, D changed tasks, F parked tasks."""
    points: set[int] = set()
    for task in state.running.values():
        points.update((task.expires_at, task.expires_at + 1))
    for due, task_id in state.base.future:
        task = state.task(task_id)
        if task.status in DISPATCHABLE_STATUSES:
            points.update((task.due_at, task.due_at + 1))
    for task in state.delta.values():
        if task.status in DISPATCHABLE_STATUSES and not task.forgotten:
            points.update((task.due_at, task.due_at + 1))
    return points


def _sets_time(op: str, answer: object) -> bool:
    """Whether ``op``'s model ``answer`` set a time a later call compares with (a lease, a retry)."""
    if isinstance(answer, Exception) or answer is None:
        return False
    if isinstance(answer, Lease):
        return True
    if isinstance(answer, (list, tuple)):
        return any(_sets_time(op, a) for a in answer)
    return op in ("renew", "fail", "fail_many") and bool(getattr(answer, "accepted", False))


def _in_units(entry: object, k: int) -> object:
    """One ``submit_many`` entry with its retry delay (default one tick) in units; anything else as it is."""
    if not isinstance(entry, dict):
        return entry
    delay = entry.get("retry_delay", 1)
    return dict(entry, retry_delay=delay * k) if type(delay) is int else entry
