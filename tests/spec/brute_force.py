"""Histories against every order of their calls, on the model's whole states: the brute force that
``linearize``'s agreement tests compare it with, and the random histories they draw (with prunes,
lost answers and calls that take effect after their client gave up).

A helper module, not a test module: tests/spec/test_linearize_prune.py and
test_linearize_unknown.py import it (a test module never imports another).
"""

from __future__ import annotations

import random

from fencepost.spec import model
from fencepost.spec.formats.history import ERROR, INFO, OK, Event, dumps_event, read_history
from fencepost.spec.formats.values import to_json
from fencepost.spec.variants import Variants

def brute_force(events: list[Event], variants: Variants = Variants(), outcomes=None) -> bool:
    """Whether some order of the calls keeps real time and gives every recorded result, on the
    model's whole states (nothing erased, no differences, no windows). Memoised on (calls placed,
    state), which is exact since the states are whole. For small histories only.
    ``outcomes(call, state)``: the states the call may leave (default ``_outcomes``)."""
    calls = as_history(events).calls
    known = [c for c in calls if c.kind != INFO]
    seen: set = set()

    def go(placed: frozenset, state: model.State) -> bool:
        if all(c.index in placed for c in known):
            return True
        if (placed, state) in seen:
            return False
        seen.add((placed, state))
        for call in calls:
            if call.index in placed or any(d.index not in placed and d.precedes(call) for d in calls):
                continue
            for after in (outcomes or _outcomes)(call, state):
                if go(placed | {call.index}, after):
                    return True
        return False

    return go(frozenset(), model.initial(variants))


def _outcomes(call, state: model.State) -> list[model.State]:
    """The states ``call`` may leave ``state`` in, given its recorded outcome."""
    try:
        if call.kind == OK:
            followed = model.follow(state, call.op, dict(call.args), call.result)
            return [] if followed is None else [followed[0]]
        after, _ = model.apply(state, call.op, dict(call.args))
        return [after] if call.kind == INFO else []
    except ValueError:
        return [state] if call.kind in (ERROR, INFO) else []


def as_history(events: list[Event]):
    return read_history([(dumps_event(e) + "\n").encode() for e in events], "generated")


#: The prunes' ``before`` values: few, so that tasks ending at different times between two of
#: them are kept alike, and a wrong bound would show.
BEFORES = (2, 4, 7)


def random_history(rng: random.Random, processes: int, calls: int, lost: float = 0.05, next_call=None) -> list[Event]:
    """A linearizable history with prunes: each call takes effect on the model between its
    invocation and completion (now and then lost as ``info``, each with probability ``lost``:
    after its effect, so it took effect; or before, and then, half the time, it takes effect
    later, at any point after its ``info`` -- a server that ran a statement its client gave up
    on -- and otherwise never). ``next_call(rng, process, state, leases)`` makes each call
    (default: ``random_call``'s, one worker for every client)."""
    state = model.initial()
    events: list[Event] = []
    idle = [f"c{n}" for n in range(1, processes + 1)]
    open_calls: dict[str, tuple[str, dict]] = {}
    done: dict[str, Event] = {}
    late: list[tuple[str, dict]] = []  # lost calls still to take effect
    leases: list = []
    invoked = 0

    def apply(op: str, args: dict) -> Event:
        nonlocal state
        try:
            state, value = model.apply(state, op, args)
        except ValueError:
            return Event(process, "ok", error="ValueError")
        if op == "dispatch" and value is not None:
            leases.append(value)
        return Event(process, "ok", result=to_json(op, value))

    while invoked < calls or open_calls or done or late:
        moves = (["invoke"] if idle and invoked < calls else []) + (["effect"] if open_calls else []) + (
            ["complete"] if done else []) + (["late"] if late else [])
        move = rng.choice(moves)
        if move == "invoke":
            process = idle.pop(rng.randrange(len(idle)))
            op, args = next_call(rng, process, state, leases) if next_call else random_call(rng, state, leases)
            open_calls[process] = (op, args)
            events.append(Event(process, "invoke", op=op, args=args))
            invoked += 1
        elif move == "effect":
            process = rng.choice(sorted(open_calls))
            op, args = open_calls.pop(process)
            if rng.random() < lost:
                events.append(Event(process, "info"))
                idle.append(process)
                if rng.random() < 0.5:
                    late.append((op, args))
                continue
            done[process] = apply(op, args)
        elif move == "late":
            process = "late"
            apply(*late.pop(rng.randrange(len(late))))
        else:
            process = rng.choice(sorted(done))
            completion = done.pop(process)
            events.append(Event(process, "info") if rng.random() < lost else completion)
            idle.append(process)
    return events


def random_call(rng: random.Random, state: model.State, leases: list) -> tuple[str, dict]:
    now = state.now + rng.choice((0, 1, 1, 2))
    if not state.workers:
        return "add_worker", {"worker": "w1", "capacity": 2}
    verb = rng.choice(("submit", "submit", "dispatch", "dispatch", "complete", "fail", "cancel", "prune", "prune"))
    if verb == "submit":
        args = {"due_at": 0, "max_attempts": rng.choice((None, 1))}
        if rng.random() < 0.5:
            args["key"] = rng.choice(("a", "b"))
        return "submit", args
    if verb in ("complete", "fail") and leases:
        lease_ = rng.choice(leases)
        return verb, {"task_id": lease_.task_id, "token": lease_.token, "now": now}
    if verb == "cancel" and state.tasks:
        return "cancel", {"task_id": rng.randrange(1, len(state.tasks) + 1), "now": now}
    if verb == "prune":
        return "prune", {"before": rng.choice(BEFORES), "now": max(now, rng.choice(BEFORES))}
    return "dispatch", {"worker": "w1", "now": now, "duration": rng.randrange(1, 4)}


def changed(rng: random.Random, events: list[Event]) -> list[Event]:
    """``events`` with one completion's result changed to another of the same shape."""
    results = [i for i, e in enumerate(events) if e.type == "ok" and e.error is None]
    position = rng.choice(results)
    result = events[position].result
    if isinstance(result, dict) and "token" in result:
        result = {**result, "token": result["token"] + 1}
    elif isinstance(result, dict):
        result = {"accepted": not result["accepted"]}
    elif isinstance(result, int):
        result += rng.choice((-1, 1))
    else:
        return events[:position] + [Event(events[position].process, "ok", error="ValueError")] + events[position + 1:]
    return events[:position] + [Event(events[position].process, "ok", result=result)] + events[position + 1:]
