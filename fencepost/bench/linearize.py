"""How the linearizability check's cost grows with concurrency: generated histories of growing width.

  fencepost bench linearize [--calls N] [--widths 1,2,4,...] [--seed S] [--prune-every K]

Each history has ``width`` clients calling at once, round after round: in a
round every client invokes one call, the calls take effect in a random order
(applied to the model, which gives their results), and they complete in
another random order, so every call of a round overlaps every other and the
rounds are the quiescent windows. Its twin changes the last call's result to
one the model never gives in any order, beside width - 1 calls that commute,
so the last window must be searched in full (2^(width-1) sets of placed
calls), and again to find the stretch that fails. The table gives the
(placed calls, model state) pairs explored and the time, for both.
"""

from __future__ import annotations

import random
import time

from fencepost.spec import model
from fencepost.spec.checkers.linearize import check_history
from fencepost.spec.formats.history import Event, History, read_history, dumps_event
from fencepost.spec.formats.values import to_json
from fencepost.spec.variants import DEFAULT, Variants

#: Workers in the generated runs, each with room for two leases.
WORKERS = ("w1", "w2", "w3")

#: When the parked tasks fall due: never, within a generated run.
PARKED_DUE = 10**9


def generate(width: int, calls: int, seed: int, due_now: bool = False, tasks: int = 0, prune_every: int = 0) -> list[Event]:
    """A linearizable history of about ``calls`` calls by ``width`` clients, all of a round overlapping.

    Tasks are submitted due at 0, unless ``due_now``: then due at the current
    time (``due_at`` left out), so a submit overlapping a call that moves time
    leaves two states the results do not tell apart (see the README).
    ``tasks`` more are submitted one by one before the rounds (due at 0, of
    random priority), so that the model holds at least that many tasks.
    With ``prune_every`` (k > 0), the first call of every k-th round is a
    ``prune(before, now)`` forgetting what ended two ticks or more before, so
    the checker keeps when final tasks ended (see ``linearize_states.prune_bounds``).
    """
    rng = random.Random(seed)
    state = model.initial()
    events: list[Event] = []
    for worker in WORKERS:
        state, _ = model.apply(state, "add_worker", {"worker": worker, "capacity": 2})
        events += [Event("setup", "invoke", op="add_worker", args={"worker": worker, "capacity": 2}),
                   Event("setup", "ok", result=None)]
    parked = []  # tasks due far ahead, never dispatched, cancelled in the last round
    for _ in range(width):
        state, task_id = model.apply(state, "submit", {"due_at": PARKED_DUE})
        parked.append(task_id)
        events += [Event("setup", "invoke", op="submit", args={"due_at": PARKED_DUE}), Event("setup", "ok", result=task_id)]
    for _ in range(tasks):
        args = {"priority": rng.randrange(3), "due_at": 0}
        state, task_id = model.apply(state, "submit", args)
        events += [Event("setup", "invoke", op="submit", args=args), Event("setup", "ok", result=task_id)]
    leases: list = []
    for number in range(max(1, calls // width)):
        round_calls = [(f"c{n}", _pick(rng, state, leases, due_now)) for n in range(1, width + 1)]
        if prune_every and number % prune_every == prune_every - 1:
            now = state.now + 1
            round_calls[0] = ("c1", ("prune", {"before": max(0, now - 2), "now": now}))
        results = {}
        for index in rng.sample(range(width), width):  # the order they take effect in
            op, args = round_calls[index][1]
            try:
                state, value = model.apply(state, op, args)
                results[index] = Event(round_calls[index][0], "ok", result=to_json(op, value))
                if op == "dispatch" and value is not None:
                    leases.append(value)
            except ValueError:
                results[index] = Event(round_calls[index][0], "ok", error="ValueError")
        events += [Event(process, "invoke", op=op, args=args) for process, (op, args) in round_calls]
        events += [results[index] for index in rng.sample(range(width), width)]
    # The last round: width - 1 cancels, which commute, beside one submit. Any subset of the
    # cancels may go before the submit, so a wrong answer to it makes the search try all 2^(width-1).
    last = [(f"c{n}", "cancel", {"task_id": parked[n - 1], "now": state.now}) for n in range(1, width)]
    events += [Event(process, "invoke", op=op, args=args) for process, op, args in last]
    events.append(Event(f"c{width}", "invoke", op="submit", args={"due_at": PARKED_DUE}))
    events += [Event(process, "ok", result={"accepted": True}) for process, _, _ in last]
    events.append(Event(f"c{width}", "ok", result=len(state.tasks) + 1))
    return events


def _pick(rng: random.Random, state: model.State, leases: list, due_now: bool) -> tuple[str, dict]:
    verb = rng.choice(("submit", "submit", "dispatch", "dispatch", "complete", "advance"))
    now = state.now + rng.choice((0, 1))
    if verb == "submit":
        return "submit", {"priority": rng.randrange(3)} if due_now else {"priority": rng.randrange(3), "due_at": 0}
    if verb == "complete" and leases:
        lease = leases.pop(rng.randrange(len(leases)))
        return "complete", {"task_id": lease.task_id, "token": lease.token, "now": now}
    if verb == "advance":
        return "advance", {"now": now}
    return "dispatch", {"worker": rng.choice(WORKERS), "now": now, "duration": rng.randrange(2, 6)}


def broken(events: list[Event]) -> list[Event]:
    """The same history with the last submit answered with task 1, which the setup already got."""
    last = events[-1]
    return events[:-1] + [Event(last.process, "ok", result=1)]


def as_history(events: list[Event]) -> History:
    """The events written and read back, as ``fencepost linearize`` would read them."""
    return read_history([(dumps_event(e) + "\n").encode() for e in events], "generated")


def measure(width: int, calls: int, seed: int, max_states: int, due_now: bool = False, tasks: int = 0,
            variants: Variants = DEFAULT, prune_every: int | None = None) -> list[str]:
    """One row of the table per history: width, calls, windows, verdict, states, seconds;
    with ``prune_every`` given (0 for none), also the number of prune calls, after the width.

    The histories are the contract's; checked under ``variants`` (``order=any``
    allows every result the contract gives, so the verdicts stay the same).
    """
    rows = []
    every = prune_every or 0
    for name, events in (("linearizable", generate(width, calls, seed, due_now, tasks, every)), ("one result changed", None)):
        if events is None:
            events = broken(generate(width, calls, seed, due_now, tasks, every))
        history = as_history(events)
        started = time.perf_counter()
        verdict = check_history(history, max_states=max_states, variants=variants)
        seconds = time.perf_counter() - started
        said = {True: "linearizable", False: "not", None: "undecided"}[verdict.linearizable]
        prunes = "" if prune_every is None else f"  {sum(c.op == 'prune' for c in history.calls):>6}"
        rows.append(f"{width:>5}{prunes}  {name:<18}  {len(history.calls):>5}  {verdict.windows:>7}  {said:<12}  "
                    f"{verdict.states:>10,}  {seconds:>8.2f}")
    return rows


def run(calls: int, widths: list[int], seed: int, max_states: int, due_now: bool, tasks: int,
        variants: Variants, prune_every: list[int] | None) -> int:
    """``fencepost bench linearize``: one row per width (and prune interval); 0."""
    prunes = [None] if prune_every is None else list(prune_every)
    column = "" if prune_every is None else f"  {'prunes':>6}"
    print(f"{'width':>5}{column}  {'history':<18}  {'calls':>5}  {'windows':>7}  {'verdict':<12}  {'states':>10}  {'seconds':>8}")
    for width in widths:
        for every in prunes:
            for row in measure(width, calls, seed, max_states, due_now, tasks, variants, every):
                print(row, flush=True)
    return 0


if __name__ == "__main__":  # the same as `fencepost bench linearize`
    import sys

    from fencepost.cli import main

    raise SystemExit(main(["bench", "linearize", *sys.argv[1:]]))
