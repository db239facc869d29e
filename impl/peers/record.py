"""Record concurrent histories of a real queue, driven from several real threads.

``python -m fencepost.impl.peers.record FACTORY RACE PATH [--rounds N]
[--threads N] [--switch-interval SECONDS] [--shared] [--excerpt]`` drives the scheduler FACTORY makes
(``fencepost.impl.peers.sqs:fifo``, ...) from ``--threads`` threads, each one
client with its own process name, in ``--rounds`` rounds of the race RACE,
and writes every call as a history in the pinned format
(``spec.formats.history``) to PATH, its header naming the factory's declared
variants, ready for ``fencepost linearize PATH``.

Races, each round at its own logical time (the calls that race carry the
same ``now``, so the clock never decides who wins; rounds run one after
another):

* ``claim``: ``threads - 1`` tasks are submitted, then every thread
  dispatches at once (released together by a barrier), one tick later so a
  queue whose tasks are due strictly after their due time has them ready; the
  holders complete at once. A queue that hands one message to two receivers
  at once shows it as two overlapping leases of one task.
* ``delete``: ``threads - 1`` tasks are leased, one to each client but the
  last; then at once the holders complete and the last client submits a new
  task; then, once every lease of the round is over, one client drains the
  queue (dispatch and complete until nothing is handed out). A queue whose deletes and sends race loses the new task
  (never handed out) or brings a completed one back (handed out again).
* ``capacity``: every client dispatches at once as the same worker, whose
  capacity is 1. A queue whose per-worker limit is read and then acted on
  without a lock gives that worker several leases at once.
* ``zombie``: one task is leased, left to expire, and leased again; then the
  expired holder completes with its old token, alone, while the new holder
  still holds the lease (forced, not hoped for: it returns before anything
  else starts); then at once the new holder completes, another renews with
  the new token, and one more dispatches.

A factory whose queue runs on its server's clock (``fencepost_clock =
"real"``, ``spec.realclock``) is recorded on the real clock: it is made with
the tick in force (``--tick-ms``, default ``spec.realclock.DEFAULT_TICK_MS``),
every timed call waits for its tick to start before it is invoked (so the
history's ``time`` stamps are the calls' real intervals), and the idle time
between rounds is skipped once every lease of the round has ended. Its
history's header then carries a ``clock`` (the tick, and the server clock's
resolution: the factory's ``fencepost_clock_resolution_ns``, default 1 ms), and
``fencepost linearize`` judges each timed call at some instant inside its
interval, not at its tick (``spec.checkers.linearize_realtime``).

Every wait is bounded (``BOUND`` seconds); a thread that raises ends its
call as an error in the history and the recording goes on.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

from dataclasses import dataclass, replace

from fencepost.spec.formats.history import Event, HistoryLog
from fencepost.spec.realclock import declares_real_clock, DEFAULT_TICK_MS, RealClock, ticking
from fencepost.spec.variants import Variants

#: The longest any thread waits at a barrier, in seconds; a round that takes longer is abandoned.
BOUND = 30.0
#: Logical time between rounds: longer than any lease a race hands out, so rounds never overlap.
ROUND_SPAN = 100
#: Lease length in the races; pgqueuer's only one (``fencepost.impl.peers.pgqueuer.DURATION``).
LEASE = 5
#: Ticks past its due tick the zombie race asks again for the second lease on a server's clock
#: (see ``zombie_round``); with the round's other ticks it stays well inside ``ROUND_SPAN``.
LATE_TICKS = 60


def clients_of(scheduler: object, count: int, shared: bool = False) -> list[object]:
    """``count`` clients of one scheduler: its own ``client()`` connections if it has them
    (and ``shared`` is false), else the one object ``count`` times."""
    make = None if shared else getattr(scheduler, "client", None)
    return [scheduler] + [make() if make else scheduler for _ in range(count - 1)]


def _together(calls: list[Callable[[], object]]) -> list[object]:
    """Run ``calls`` on as many threads released by one barrier; their results (an exception as itself)."""
    barrier = threading.Barrier(len(calls), timeout=BOUND)
    results: list[object] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = calls[i]()
        except Exception as exc:  # noqa: BLE001 - recorded in the history by the Recorder already
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BOUND)
    return results


def _add_workers(cs: list[object]) -> None:
    for i in range(len(cs)):
        cs[0].add_worker(f"w{i + 1}", 1)


def _raised(results: list[object]) -> str | None:
    """What the calls of a race raised, if any did: no protocol call may raise anything but ValueError."""
    raised = [f"{type(r).__name__}: {r}" for r in results if isinstance(r, Exception)]
    return f"{len(raised)} of {len(results)} racing calls raised: {raised[0]}" if raised else None


def claim_round(cs: list[object], t: int) -> str | None:
    """Fewer tasks than clients, everyone dispatches at once, the holders complete at once."""
    for _ in range(len(cs) - 1):
        cs[0].submit()
    now = t + 1  # one after the submits: a queue that makes a task due strictly after its due time
    results = _together([lambda c=c, i=i: c.dispatch(f"w{i + 1}", now, LEASE) for i, c in enumerate(cs)])
    held = [(c, r) for c, r in zip(cs, results) if r is not None and not isinstance(r, Exception)]
    if held:
        _together([lambda c=c, lease=lease: c.complete(lease.task_id, lease.token, now) for c, lease in held])
    ids = sorted(lease.task_id for _, lease in held)
    raised = _raised(results)
    if raised:
        return raised
    if len(ids) != len(set(ids)):
        return f"one task leased to two clients at once: the leases were of tasks {ids}"
    return None


def delete_round(cs: list[object], t: int) -> str | None:
    """Completions race each other and a submit; then a drain shows what the queue kept."""
    first, last = cs[0], cs[-1]
    now = t + 1
    for _ in range(len(cs) - 1):
        first.submit()
    leases = [c.dispatch(f"w{i + 1}", now, LEASE) for i, c in enumerate(cs[:-1])]
    calls = [lambda c=c, lease=lease: c.complete(lease.task_id, lease.token, now)
             for c, lease in zip(cs, leases) if lease is not None]
    results = _together([*calls, lambda: last.submit()])
    if _raised(results):
        return _raised(results)
    new = results[-1]
    drained = []
    later = now + LEASE + 1  # every lease of the round is over (closed interval too): all that is left shows
    for _ in range(len(cs) + 1):  # bounded: at most every task of the round, plus one
        lease = first.dispatch("w1", later, LEASE)
        if lease is None:
            break
        drained.append(lease.task_id)
        first.complete(lease.task_id, lease.token, later)
    if drained != [new]:
        return f"after the completions raced a submit of task {new}, the queue handed out {drained}"
    return None


def zombie_round(cs: list[object], t: int, renews: bool = True, real_clock: bool = False) -> str | None:
    """An expired holder and the current one race to end one task, beside a renew (when the
    queue offers ``renews``: a recorded client has every protocol method, so it cannot tell) and a dispatch.

    ``real_clock``: the queue runs on its server's clock, where the first lease ends ``LEASE`` ticks
    after the server really made it; a loaded machine may make it a tick or more late, so the
    second dispatch is asked again on each later tick (up to ``LATE_TICKS``) until the first lease
    has ended. On logical time it is asked once: the lease ends when its ``now`` says.
    """
    first, second = cs[0], cs[1]
    task = first.submit()
    old = first.dispatch("w1", t + 1, LEASE)
    at = t + LEASE + 2  # after the closed end of [t+1, t+1+LEASE]
    new = second.dispatch("w2", at, LEASE)
    while real_clock and old is not None and new is None and at < t + LEASE + 2 + LATE_TICKS:
        at += 1
        new = second.dispatch("w2", at, LEASE)
    if old is None or new is None:
        return f"task {task} was not leased twice: {old}, {new}"
    now = at + 1
    zombie = _together([lambda: first.complete(task, old.token, now)])  # alone: the new holder surely still holds it
    calls = [
        lambda: second.complete(task, new.token, now),  # the current holder
    ]
    if len(cs) > 2 and renews:
        calls.append(lambda c=cs[2]: c.renew(task, new.token, now, LEASE))
    if len(cs) > 3:
        calls.append(lambda c=cs[3]: c.dispatch("w4", now, LEASE))
    results = zombie + _together(calls)
    if _raised(results):
        return _raised(results)
    if getattr(results[0], "accepted", False):
        return f"the zombie's completion of task {task} with its expired token was accepted"
    return None


def capacity_round(cs: list[object], t: int) -> str | None:
    """Every client dispatches at once as the same worker, whose capacity is 1; then it completes what it got."""
    for _ in range(len(cs)):
        cs[0].submit()
    now = t + 1
    results = _together([lambda c=c: c.dispatch("w1", now, LEASE) for c in cs])
    held = [(c, r) for c, r in zip(cs, results) if r is not None and not isinstance(r, Exception)]
    for c, lease in held:
        c.complete(lease.task_id, lease.token, now)
    for _ in range(len(cs)):  # bounded: what is left of the round, one at a time
        lease = cs[0].dispatch("w1", now, LEASE)
        if lease is None:
            break
        cs[0].complete(lease.task_id, lease.token, now)
    if _raised(results):
        return _raised(results)
    if len(held) > 1:
        return f"worker w1 (capacity 1) got {len(held)} leases at once: tasks {sorted(lease.task_id for _, lease in held)}"
    return None


#: Each race: one round at logical time ``t`` on the clients; returns what went wrong, or None.
RACES: dict[str, Callable[[list[object], int], str | None]] = {
    "capacity": capacity_round, "claim": claim_round, "delete": delete_round, "zombie": zombie_round,
}


@dataclass
class Recording:
    """A recorded history and what the race itself saw go wrong, round by round."""

    log: HistoryLog
    problems: list[tuple[int, str]]  # (round, 1-based; what went wrong)
    rounds: int  # rounds run


#: Where ``now`` is among each timed call's positional arguments (the races pass it by position).
_NOW_AT = {"dispatch": 1, "complete": 2, "fail": 2, "cancel": 1, "renew": 2, "advance": 0, "prune": 1}


class _OnTicks:
    """A recorded client whose timed calls first wait for their tick on a shared ``RealClock``."""

    def __init__(self, client: object, clock: object) -> None:
        self._client, self._clock = client, clock

    def __getattr__(self, name: str) -> object:
        attribute = getattr(self._client, name)
        if name not in _NOW_AT:
            return attribute

        def on_tick(*args: object, **kwargs: object) -> object:
            now = kwargs.get("now", args[_NOW_AT[name]] if len(args) > _NOW_AT[name] else None)
            if type(now) is int and now >= 0:
                self._clock.wait_for(now)
            return attribute(*args, **kwargs)

        return on_tick


def record(factory: Callable[[], object], race: str, rounds: int = 20, threads: int = 4,
           switch_interval: float | None = None, stop_at_problem: bool = False, shared: bool = False,
           tick_ms: int | None = None) -> Recording:
    """Run ``race`` for ``rounds`` rounds on ``threads`` recorded clients of one scheduler from ``factory``.

    ``switch_interval`` (seconds), when given, is the interpreter's thread
    switch interval while recording (``sys.setswitchinterval``; restored
    after): a queue written in Python, like moto, runs its critical sections
    under the GIL, and the default 5 ms slice lets most of them finish
    untouched; a slice of about 10 microseconds interleaves threads the way
    a multi-core server's requests are, so a race shows within a few hundred
    rounds instead of never. ``stop_at_problem``: end after the first round
    in which the race saw something go wrong. ``shared``: every thread calls
    the one scheduler object, even one that can open more connections.
    ``tick_ms``: the tick for a factory on its server's clock (see the module
    docstring); default ``spec.realclock.DEFAULT_TICK_MS``.

    Raises:
        ValueError: an unknown race, or fewer than 2 threads or 1 round.
    """
    if race not in RACES:
        raise ValueError(f"race must be one of {', '.join(RACES)}: {race!r}")
    if threads < 2 or rounds < 1:
        raise ValueError(f"threads must be >= 2 and rounds >= 1: threads={threads!r}, rounds={rounds!r}")
    clock = RealClock(tick_ms or DEFAULT_TICK_MS) if declares_real_clock(factory) else None
    with ticking(clock.tick_ms if clock else None):
        scheduler = factory()
        raw = clients_of(scheduler, threads, shared)
    timing = None if clock is None else {"tick_ns": clock.tick_ms * 1_000_000,
                                         "resolution_ns": getattr(factory, "fencepost_clock_resolution_ns", 1_000_000)}
    log = HistoryLog(variants=getattr(factory, "fencepost_variants", None), timing=timing)
    # the zombie's renew only where the queue declares one (a recording client answers every name)
    options = {"renews": Variants.from_declared(getattr(factory, "fencepost_variants", None)).offers("renew"),
               "real_clock": clock is not None} if race == "zombie" else {}
    previous = sys.getswitchinterval()
    cs = [log.recorder(c, f"c{i + 1}") for i, c in enumerate(raw)]
    if clock is not None:
        cs = [_OnTicks(c, clock) for c in cs]
    problems: list[tuple[int, str]] = []
    done = 0
    try:
        if switch_interval is not None:
            sys.setswitchinterval(switch_interval)
        _add_workers(cs)
        for round_ in range(1, rounds + 1):
            t = ROUND_SPAN * round_
            if clock is not None:  # every lease of the round before has ended by now: skip the rest of the span
                clock.skip_idle(t, clock.last_tick + LEASE)
            cs[0].advance(t)
            problem = RACES[race](cs, t, **options)
            done = round_
            if problem:
                problems.append((round_, problem))
                if stop_at_problem:
                    break
    finally:
        sys.setswitchinterval(previous)
        for c in {id(c): c for c in raw}.values():
            close = getattr(c, "close", None)
            if close:
                close()
    return Recording(log, problems, done)


def excerpt(events: tuple[Event, ...], round_: int) -> list[Event]:
    """The set-up calls and the rounds up to ``round_`` (1-based) that it depends on, task ids renumbered from 1.

    Rounds are delimited by the ``advance`` each starts with. The excerpt
    starts at the earliest round that submitted a task round ``round_``
    touches (usually ``round_`` itself: every round drains what it
    submitted), so it is a history of its own once its ids count from 1: a
    finding in a few dozen lines instead of thousands.

    Raises:
        ValueError: ``round_`` was not recorded.
    """
    starts = [i for i, e in enumerate(events) if e.type == "invoke" and e.op == "advance" and e.process == "c1"]
    if not 1 <= round_ <= len(starts):
        raise ValueError(f"round must be 1..{len(starts)}: {round_!r}")
    bounds = [*starts, len(events)]
    ops = _ops_of(events)

    def submitted(r: int) -> set[int]:
        return {events[i].result for i in range(bounds[r - 1], bounds[r])
                if ops[i] == "submit" and events[i].type == "ok" and isinstance(events[i].result, int)}

    touched = set()
    for i in range(bounds[round_ - 1], bounds[round_]):
        e = events[i]
        if e.type == "invoke" and isinstance((e.args or {}).get("task_id"), int):
            touched.add(e.args["task_id"])
        if e.type == "ok" and isinstance(e.result, dict) and isinstance(e.result.get("task_id"), int):
            touched.add(e.result["task_id"])
    first = round_
    while first > 1 and touched and min(touched) < min(submitted(first) or {min(touched)}):
        first -= 1
    ids = submitted(first)
    base = min(ids) - 1 if ids else 0
    out = list(events[: starts[0]])
    for i in range(bounds[first - 1], bounds[round_]):
        e = events[i]
        if e.type == "invoke" and "task_id" in (e.args or {}):
            e = replace(e, args={**e.args, "task_id": e.args["task_id"] - base})
        elif e.type == "ok" and ops[i] == "submit" and isinstance(e.result, int):
            e = replace(e, result=e.result - base)
        elif e.type == "ok" and ops[i] == "dispatch" and isinstance(e.result, dict):
            e = replace(e, result={**e.result, "task_id": e.result["task_id"] - base})
        out.append(e)
    return out


def _ops_of(events: tuple[Event, ...]) -> list[str | None]:
    """The op of the call each event belongs to (an ok or info event: its process's open invoke)."""
    open_op: dict[str, str] = {}
    ops: list[str | None] = []
    for e in events:
        if e.type == "invoke":
            open_op[e.process] = e.op
        ops.append(open_op.get(e.process))
    return ops


if __name__ == "__main__":  # the pinned command; its arguments are parsed in the commands layer
    from fencepost.commands.record import main

    sys.exit(main())
