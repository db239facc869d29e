"""A brute-force reference for judging histories on a real clock (tests only).

``explains(history)`` tries every order of the calls that real time allows
(a call goes before another that was invoked after it returned, widened by the
offset) and, for every timed call, every reading of the server's clock inside
its interval, non-decreasing along the order; it answers whether one of them
gives every recorded result. It shares nothing with the checker's search but
the model and the result comparison (``same_result``), and it turns ticks
into units itself, so ``tests/spec/test_linearize_realtime.py`` can compare the
two. Exponential; for histories of a few calls. Histories under the default
variants only (no ``order=any`` or ``tokens=opaque``, which would need
``model.follow``).
"""

from __future__ import annotations

from dataclasses import replace

from fencepost.spec import model
from fencepost.spec.formats.history import ERROR, INFO, History
from fencepost.spec.formats.values import same_result
from fencepost.spec.protocol import Lease

#: The calls that read the server's clock.
TIMED = {"dispatch", "complete", "fail", "cancel", "renew", "advance"}


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def explains(history: History) -> bool:
    """Whether some order and some readings explain every result of ``history`` (see the module docstring)."""
    clock = history.clock
    tick, resolution, offset = clock["tick_ns"], clock["resolution_ns"], clock["offset_ns"]
    k = tick // resolution
    events, calls = history.events, history.calls
    last = max(e.time for e in events)
    spans, readings = [], []
    for c in calls:
        a = events[c.invoked].time
        b = events[c.completed].time if c.completed is not None else None
        spans.append((a - offset, b + offset if b is not None else float("inf")))
        readings.append(range(
            (a - offset) // resolution,
            (_ceil_div(b + offset, resolution) if b is not None else _ceil_div(last + offset, resolution)) + 1,
        ))

    def in_units(c, reading):
        args = dict(c.args)
        if c.op in TIMED:
            args["now"] = reading
        if "duration" in args:
            args["duration"] *= k
        if c.op == "submit":
            args["retry_delay"] = args.get("retry_delay", 1) * k
        return args

    def matches(c, value, reading, args) -> bool:
        if c.kind == INFO:
            return True
        if isinstance(value, ValueError):
            return c.kind == ERROR and c.error == "ValueError"
        if c.kind == ERROR:
            return False
        want = c.result
        if isinstance(want, Lease):
            want = replace(want, started_at=reading, expires_at=reading + args["duration"])
        return same_result(c.op, value, want)

    def search(remaining: frozenset, state: model.State, clock_at: int) -> bool:
        if all(calls[i].kind == INFO for i in remaining):
            return True  # an unknown outcome may never take effect
        for i in remaining:
            if any(spans[j][1] < spans[i][0] for j in remaining if j != i):
                continue  # another call left must go first: it returned before this one was invoked
            c = calls[i]
            choices = [r for r in readings[i] if r >= clock_at] if c.op in TIMED else [None]
            for reading in choices:
                args = in_units(c, reading)
                try:
                    after, value = model.apply(state, c.op, args)
                except ValueError as exc:
                    after, value = state, exc
                moved = reading is not None and not isinstance(value, ValueError)  # a refused call changes nothing
                if matches(c, value, reading, args) and search(remaining - {i}, after, reading if moved else clock_at):
                    return True
        return False

    return search(frozenset(range(len(calls))), model.initial(), 0)
