"""Record concurrent histories of a real queue, driven from several real threads.

``python -m fencepost.impl.peers.record FACTORY RACE PATH [--rounds N]
[--threads N] [--switch-interval SECONDS]`` drives the scheduler FACTORY makes
(``fencepost.impl.peers.sqs:fifo``, ...) from ``--threads`` threads, each one
client with its own process name, in ``--rounds`` rounds of the race RACE,
and writes every call as a history in the pinned format
(``spec.formats.history``) to PATH, ready for ``fencepost linearize PATH``.

Races, each round at its own logical time (the calls that race carry the
same ``now``, so the clock never decides who wins; rounds run one after
another):

* ``claim``: ``threads - 1`` tasks are submitted, then every thread
  dispatches at once (released together by a barrier), one tick later so a
  queue whose tasks are due strictly after their due time has them ready; the
  holders complete at once. A queue that hands one message to two receivers
  at once shows it as two overlapping leases of one task.
* ``zombie``: one task is leased, left to expire, and leased again; then at
  once the expired holder completes with its old token, the new holder
  completes, another renews with the new token, and one more dispatches.

Every wait is bounded (``BOUND`` seconds); a thread that raises ends its
call as an error in the history and the recording goes on.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable

from fencepost.spec.formats.history import HistoryLog

#: The longest any thread waits at a barrier, in seconds; a round that takes longer is abandoned.
BOUND = 30.0
#: Logical time between rounds: longer than any lease a race hands out, so rounds never overlap.
ROUND_SPAN = 100
#: Lease length in the races; pgqueuer's only one (``fencepost.impl.peers.pgqueuer.DURATION``).
LEASE = 5


def clients_of(scheduler: object, count: int) -> list[object]:
    """``count`` clients of one scheduler: its own ``client()`` connections if it has them, else itself."""
    make = getattr(scheduler, "client", None)
    return [scheduler] + [make() if make else scheduler for _ in range(count - 1)]


def _together(calls: list[Callable[[], object]]) -> list[object]:
    """Run ``calls`` on as many threads released by one barrier; their results (an exception as itself)."""
    barrier = threading.Barrier(len(calls), timeout=BOUND)
    results: list[object] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = calls[i]()
        except Exception as exc:  # recorded in the history by the Recorder already
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BOUND)
    return results


def claim_race(cs: list[object], rounds: int) -> None:
    """Per round: fewer tasks than clients, everyone dispatches at once, holders complete at once."""
    first = cs[0]
    for i in range(len(cs)):
        first.add_worker(f"w{i + 1}", 1)
    for round_ in range(rounds):
        t = ROUND_SPAN * (round_ + 1)
        first.advance(t)
        for _ in range(len(cs) - 1):
            first.submit()
        now = t + 1  # one after the submits: a queue that makes a task due strictly after its due time
        leases = _together([lambda c=c, i=i: c.dispatch(f"w{i + 1}", now, LEASE) for i, c in enumerate(cs)])
        held = [(c, lease) for c, lease in zip(cs, leases) if lease is not None and not isinstance(lease, Exception)]
        if held:
            _together([lambda c=c, lease=lease: c.complete(lease.task_id, lease.token, now) for c, lease in held])


def zombie_race(cs: list[object], rounds: int) -> None:
    """Per round: an expired holder and the current one race to end one task, beside a renew and a dispatch."""
    first = cs[0]
    for i in range(len(cs)):
        first.add_worker(f"w{i + 1}", 1)
    for round_ in range(rounds):
        t = ROUND_SPAN * (round_ + 1)
        first.advance(t)
        task = first.submit()
        old = first.dispatch("w1", t + 1, LEASE)
        new = cs[1 % len(cs)].dispatch(f"w{1 % len(cs) + 1}", t + LEASE + 2, LEASE)
        if old is None or new is None:
            continue
        now = t + LEASE + 3
        calls = [
            lambda c=cs[0]: c.complete(task, old.token, now),  # the zombie
            lambda c=cs[1 % len(cs)]: c.complete(task, new.token, now),  # the current holder
            lambda c=cs[2 % len(cs)]: c.renew(task, new.token, now, LEASE) if hasattr(c, "renew") else None,
            lambda c=cs[3 % len(cs)]: c.dispatch(f"w{3 % len(cs) + 1}", now, LEASE),
        ][: max(2, len(cs))]
        _together(calls)


RACES = {"claim": claim_race, "zombie": zombie_race}


def record(factory: Callable[[], object], race: str, rounds: int = 20, threads: int = 4,
           switch_interval: float | None = None) -> HistoryLog:
    """Run ``race`` for ``rounds`` rounds on ``threads`` recorded clients of one scheduler from ``factory``.

    ``switch_interval`` (seconds), when given, is the interpreter's thread
    switch interval while recording (``sys.setswitchinterval``; restored
    after): a queue written in Python, like moto, runs its critical sections
    under the GIL, and the default 5 ms slice lets most of them finish
    untouched; a slice of about 10 microseconds interleaves threads the way
    a multi-core server's requests are, so a race shows within a few hundred
    rounds instead of never.

    Raises:
        ValueError: an unknown race, or fewer than 2 threads or 1 round.
    """
    if race not in RACES:
        raise ValueError(f"race must be one of {', '.join(RACES)}: {race!r}")
    if threads < 2 or rounds < 1:
        raise ValueError(f"threads must be >= 2 and rounds >= 1: threads={threads!r}, rounds={rounds!r}")
    scheduler = factory()
    log = HistoryLog()
    previous = sys.getswitchinterval()
    raw = clients_of(scheduler, threads)
    cs = [log.recorder(c, f"c{i + 1}") for i, c in enumerate(raw)]
    try:
        if switch_interval is not None:
            sys.setswitchinterval(switch_interval)
        RACES[race](cs, rounds)
    finally:
        sys.setswitchinterval(previous)
        for c in {id(c): c for c in raw}.values():
            close = getattr(c, "close", None)
            if close:
                close()
    return log


def main(argv: list[str] | None = None) -> int:
    from fencepost.spec.cli import UsageError, load_factory

    parser = argparse.ArgumentParser(prog="python -m fencepost.impl.peers.record", description=__doc__.split("\n\n")[0])
    parser.add_argument("factory", metavar="FACTORY")
    parser.add_argument("race", choices=sorted(RACES))
    parser.add_argument("path", metavar="PATH")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--switch-interval", type=float, default=None, metavar="SECONDS",
                        help="the interpreter's thread switch interval while recording (see record())")
    args = parser.parse_args(argv)
    try:
        factory = load_factory(args.factory)
        log = record(factory, args.race, args.rounds, args.threads, args.switch_interval)
    except (UsageError, ValueError) as exc:
        print(f"record: error: {exc}", file=sys.stderr)
        return 2
    log.write(args.path)
    print(f"{args.path}: {len(log.events)} events from {args.threads} threads, {args.rounds} rounds of {args.race}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
