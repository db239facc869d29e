"""Races on one PostgreSQL schema from several connections, released together: the zombie and the claim.

Shared by ``test_postgres_concurrency.py`` (the races on the shipped scheduler
and on broken ones they must catch), ``test_postgres_linearize.py`` (the same
races recorded as histories) and ``test_batches.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from fencepost.impl.postgres.broken import StatusFencedScheduler, UnlockedClaimScheduler
from fencepost.impl.postgres.scheduler import PostgresScheduler


#: Real seconds any one wait may take before the test fails instead of hanging.
BOUND = 30


#: Rounds of each race (each on a fresh task, all on one schema).
ROUNDS = 15


def as_is(scheduler: PostgresScheduler, name: str) -> PostgresScheduler:
    return scheduler


def clients(first: PostgresScheduler, count: int, wrap: Callable = as_is) -> list:
    """``count`` clients on their own connections over ``first``'s schema (``first`` included as ``c0``).

    ``wrap(scheduler, name)`` may put each in a history recorder.
    """
    return [wrap(first, "c0")] + [wrap(first.reopen(), f"c{i}") for i in range(1, count)]


def race(calls: list[Callable[[], object]]) -> list[object]:
    """Run every call in its own thread, all released at once; their results (or exceptions) in order."""
    barrier = threading.Barrier(len(calls), timeout=BOUND)

    def run(call: Callable[[], object]) -> object:
        barrier.wait()
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - a result like any other: compared by the test
            return exc

    with ThreadPoolExecutor(len(calls)) as pool:
        futures = [pool.submit(run, call) for call in calls]
        return [f.result(timeout=BOUND) for f in futures]


def zombie_race(scheduler: PostgresScheduler, wrap: Callable = as_is) -> list[str]:
    """Per round: a zombie (expired token) and the current holder race to end one task.

    Returns the problems seen: more than one accepted completion or failure, or any accepted from the zombie.
    """
    cs = clients(scheduler, 8, wrap)
    first = cs[0]
    problems: list[str] = []
    try:
        first.add_worker("a", 1)
        first.add_worker("b", 1)
        for round_ in range(ROUNDS):
            t = 100 * round_
            task = first.submit(priority=1)
            old = first.dispatch("a", t, 5)
            new = first.dispatch("b", t + 5, 50)  # [t, t + 5) is over: the same task, a fresh token
            assert (old.task_id, new.task_id) == (task, task) and new.token != old.token
            now = t + 6
            results = race([
                lambda c=cs[0]: c.complete(task, old.token, now),  # the zombie
                lambda c=cs[1]: c.complete(task, old.token, now),
                lambda c=cs[2]: c.fail(task, old.token, now),
                lambda c=cs[3]: c.complete(task, new.token, now),  # the current holder (twice: a retried request)
                lambda c=cs[4]: c.complete(task, new.token, now),
                lambda c=cs[5]: c.fail(task, new.token, now),
                lambda c=cs[6]: c.renew(task, new.token, now, 10),
                lambda c=cs[7]: c.dispatch("a", now, 5),  # a reclaimer: the task is not free
            ])
            ended = [i for i in (0, 1, 2, 3, 4, 5) if results[i].accepted]
            if len(ended) != 1:
                problems.append(f"round {round_}: {len(ended)} completions/failures accepted: {results}")
            if any(i < 3 for i in ended):
                problems.append(f"round {round_}: the zombie's token {old.token} was accepted: {results}")
            if results[7] is not None and getattr(results[7], "task_id", None) == task:
                problems.append(f"round {round_}: task {task} leased again while running: {results[7]}")
            if results[7] is not None:
                first.complete(results[7].task_id, results[7].token, now)
    finally:
        for c in cs[1:]:
            c.close()
    return problems


def claim_race(scheduler: PostgresScheduler, hook: Callable[[threading.Barrier], None] | None = None,
               wrap: Callable = as_is) -> list[str]:
    """Per round: more clients than due tasks dispatch at once; each task must be leased at most once."""
    size, tasks = 6, 3
    cs = clients(scheduler, size, wrap)
    first = cs[0]
    problems: list[str] = []
    try:
        for i in range(size):
            first.add_worker(f"w{i}", 1)
        for round_ in range(ROUNDS):
            t = 100 * round_
            for _ in range(tasks):
                first.submit()
            if hook is not None:
                hook(threading.Barrier(size, timeout=BOUND))
            leases = [lease for lease in race([lambda c=c, i=i: c.dispatch(f"w{i}", t, 10) for i, c in enumerate(cs)])
                      if lease is not None]
            ids = [lease.task_id for lease in leases]
            tokens = [lease.token for lease in leases]
            if len(set(ids)) != len(ids):
                problems.append(f"round {round_}: one task leased twice at once: {sorted(ids)}")
            if len(set(tokens)) != len(tokens):
                problems.append(f"round {round_}: a token issued twice: {sorted(tokens)}")
            if len(set(ids)) != tasks:
                problems.append(f"round {round_}: {tasks} tasks due, {len(set(ids))} leased")
            for lease in leases:
                first.complete(lease.task_id, lease.token, t + 1)
            if hook is not None:
                hook(None)
    finally:
        for c in cs[1:]:
            c.close()
    return problems


def forced_zombie_race(s: StatusFencedScheduler, wrap: Callable = as_is) -> list[str]:
    """``zombie_race`` with the current holder's reports held back until a zombie's completion has ended.

    Left to the threads, the holder often wins every round and the bug goes unseen (a CI run on
    a loaded machine saw 15 rounds of it). The hooks make the bug's interleaving happen every
    round: a report whose token is not the task's current one (read on a connection of its own)
    goes at once; the holder's waits, at most ``BOUND`` seconds, for a zombie's ``complete`` (the
    broken verb) to end.
    """
    observer = s.reopen()
    lock = threading.Lock()
    ended: dict[int, threading.Event] = {}

    def event(task_id: int) -> threading.Event:
        with lock:
            return ended.setdefault(task_id, threading.Event())

    def is_zombie(task_id: int, token: int) -> bool:
        with lock:  # one connection, many threads: one question at a time
            return observer.task(task_id).token != token

    def before(verb: str, task_id: int, token: int) -> None:
        if not is_zombie(task_id, token):
            assert event(task_id).wait(BOUND), f"no zombie's report on task {task_id} ended within {BOUND} s"

    def after(verb: str, task_id: int, token: int) -> None:
        if verb == "complete" and is_zombie(task_id, token):
            event(task_id).set()

    s.before, s.after = before, after  # clients made by reopen() share the hooks
    try:
        return zombie_race(s, wrap)
    finally:
        s.before = s.after = None
        observer.close()


def forced_claim_race(s: UnlockedClaimScheduler, wrap: Callable = as_is) -> list[str]:
    """``claim_race`` with every client reading the best task before any of them writes (the bug's interleaving)."""
    holder: dict[str, threading.Barrier | None] = {"barrier": None}

    def between() -> None:
        if holder["barrier"] is not None:
            holder["barrier"].wait()

    s.between = between  # clients made by reopen() share the hook; the barrier is set per round
    return claim_race(s, hook=lambda barrier: holder.__setitem__("barrier", barrier), wrap=wrap)
