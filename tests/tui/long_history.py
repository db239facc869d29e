"""A long concurrent history for the TUI's tests: five clients on one real scheduler, then a zombie.

``long_history(rounds)`` runs rounds of submit, dispatch and complete (with
an expiry and a late, rightly rejected completion now and then) on
``IndexedScheduler``, the clients taking turns and two of them overlapping a
call each round (calls that commute, so the checker's search stays linear); at the end a worker whose lease expired completes under its
old token and the history records it accepted, which no order explains.
"""

from __future__ import annotations

import json

from fencepost.impl.indexed import IndexedScheduler
from fencepost.spec.formats.history import History, loads_history
from fencepost.spec.formats.values import to_json
from fencepost.spec.protocol import Outcome

CLIENTS = ("c1", "c2", "c3", "c4", "c5")


def long_history(rounds: int = 400) -> History:
    """About ``6 * rounds`` calls by five clients, not linearizable at its very end."""
    scheduler = IndexedScheduler()
    lines: list[dict] = []
    turn = 0

    def call(op: str, result: object = None, **args: object) -> object:
        nonlocal turn
        process = CLIENTS[turn % len(CLIENTS)]
        turn += 1
        value = getattr(scheduler, op)(**args)
        lines.append({"process": process, "type": "invoke", "op": op, "args": args})
        lines.append({"process": process, "type": "ok", "result": to_json(op, value if result is None else result)})
        return value

    def overlapping(first: tuple, second: tuple) -> None:
        """Two calls by two clients, the second invoked before the first returns (and applied after it)."""
        nonlocal turn
        a, b = CLIENTS[turn % len(CLIENTS)], CLIENTS[(turn + 1) % len(CLIENTS)]
        turn += 2
        (op1, args1), (op2, args2) = first, second
        value1 = getattr(scheduler, op1)(**args1)
        value2 = getattr(scheduler, op2)(**args2)
        lines.append({"process": a, "type": "invoke", "op": op1, "args": args1})
        lines.append({"process": b, "type": "invoke", "op": op2, "args": args2})
        lines.append({"process": a, "type": "ok", "result": to_json(op1, value1)})
        lines.append({"process": b, "type": "ok", "result": to_json(op2, value2)})

    call("add_worker", worker="w1", capacity=2)
    call("add_worker", worker="w2", capacity=1)
    now = 0
    for n in range(rounds):
        call("submit", priority=n % 3)
        lease = call("dispatch", worker="w1", now=now, duration=5)
        if n % 7 == 3:  # this lease runs out; its late completion is rejected
            now += 5
            call("advance", now=now)
            overlapping(("complete", {"task_id": lease.task_id, "token": lease.token, "now": now}), ("submit", {"due_at": 0}))
        else:
            overlapping(("complete", {"task_id": lease.task_id, "token": lease.token, "now": now + 1}), ("submit", {"due_at": 0}))
        now += 2
    call("submit", due_at=0)
    zombie = call("dispatch", worker="w2", now=now, duration=3)
    now += 3
    # The end, three clients at once: c1 dispatches again (the zombie's lease is over), c2
    # submits, and c3, the zombie, completes under its expired token and is told accepted: the bug.
    fresh = scheduler.dispatch(worker="w2", now=now, duration=3)
    assert fresh is not None and fresh.task_id == zombie.task_id
    late = {"task_id": zombie.task_id, "token": zombie.token, "now": now + 1}
    lines += [
        {"process": "c1", "type": "invoke", "op": "dispatch", "args": {"worker": "w2", "now": now, "duration": 3}},
        {"process": "c2", "type": "invoke", "op": "submit", "args": {"due_at": 0}},
        {"process": "c3", "type": "invoke", "op": "complete", "args": late},
        {"process": "c1", "type": "ok", "result": to_json("dispatch", fresh)},
        {"process": "c2", "type": "ok", "result": scheduler.submit(due_at=0)},
        {"process": "c3", "type": "ok", "result": to_json("complete", Outcome(True))},
    ]
    return loads_history("".join(json.dumps(line) + "\n" for line in lines), "long-history.jsonl")
