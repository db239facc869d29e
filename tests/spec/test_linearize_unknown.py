"""Histories like a fault run's, with many unknown outcomes, judged as every order on whole states judges them.

Issue 34: a fault run's history holds dozens of calls whose answer was lost
(``info``), and the search (``spec/checkers/linearize.py``) keeps their cost
down by leaving an unknown call pending where placing it would change
nothing, and by dropping one whose ``now`` the clock has passed. Here random
histories in the fault clients' manner (``impl/faults/inject.py``: priorities,
tasks due a little later, a few attempts each, renewals, cancels and clock
moves, several clients on one clock) lose the answers of 10 or more of their
12 to 26 calls (11 to 22 at the seed below; 40 calls with 30 lost take minutes
for either search where the history is not linearizable), some of which take
effect only after their ``info``, and the
checker's verdict on each, and on a twin with one answer changed, is compared
with a search over every order on the model's whole states (nothing erased,
no differences from a base, no windows).
"""

from __future__ import annotations

import random

from fencepost.spec import model
from fencepost.spec.checkers.linearize import check_history
from fencepost.spec.formats.history import ERROR, INFO, OK, Event, dumps_event, read_history
from brute_force import brute_force, changed, random_history

#: Ticks a lease lasts, as in the fault clients (``impl/faults/inject.py``'s ``LEASE``).
LEASE = 2


def every_order(events: list[Event]) -> bool:
    """Whether some order of the calls keeps real time and gives every recorded result, on the
    model's whole states (``test_linearize_prune.brute_force``).

    One reduction, so that 30 unknown calls stay within reach: an unknown call is placed only
    where it changes the state. Placed where it changes nothing, it leaves the state that
    leaving it unplaced leaves, and unplaced it may still go anywhere later (no call has to
    follow it: it never completed), so every order the first allows the second allows too.
    """
    return brute_force(events, outcomes=_outcomes)


def _outcomes(call, state: model.State) -> list[model.State]:
    """The states ``call`` may leave ``state`` in given its recorded outcome (an unknown call's
    only where it changes the state: see ``every_order``)."""
    try:
        if call.kind == OK:
            followed = model.follow(state, call.op, dict(call.args), call.result)
            return [] if followed is None else [followed[0]]
        after, _ = model.apply(state, call.op, dict(call.args))
    except ValueError:
        return [state] if call.kind == ERROR else []
    return [after] if call.kind == INFO and after != state else []


def fault_history(rng: random.Random, processes: int, calls: int, lost: float) -> list[Event]:
    """A linearizable history of ``client_call``'s calls (``test_linearize_prune.random_history``:
    each call takes effect between its invocation and completion, and loses its answer with
    probability ``lost``, before or after its effect, and then may take effect later)."""
    return random_history(rng, processes, calls, lost, next_call=client_call)


def client_call(rng: random.Random, process: str, state: model.State, leases: list) -> tuple[str, dict]:
    """One call in the manner of the fault clients: the time read a little ahead of the clock;
    a client's first call adds its worker."""
    if f"{process}w" not in dict(state.workers):
        return "add_worker", {"worker": f"{process}w", "capacity": 2}
    now = state.now + rng.choice((0, 0, 1, 1, 2))
    verb = rng.choices(("submit", "dispatch", "end", "renew", "cancel", "advance"), weights=(22, 30, 28, 8, 5, 7))[0]
    if verb in ("end", "renew") and not leases:
        verb = "dispatch"
    if verb == "submit":
        return "submit", {"priority": rng.randrange(3), "due_at": now, "max_attempts": rng.choice((None, 1, 2))}
    if verb == "cancel" and state.tasks:
        return "cancel", {"task_id": rng.randint(1, len(state.tasks)), "now": now}
    if verb == "advance":
        return "advance", {"now": now + rng.choice((0, 1, LEASE))}
    if verb in ("end", "renew"):
        lease = rng.choice(leases)
        if verb == "renew":
            return "renew", {"task_id": lease.task_id, "token": lease.token, "now": now, "duration": LEASE}
        return rng.choice(("complete", "complete", "fail")), {"task_id": lease.task_id, "token": lease.token, "now": now}
    return "dispatch", {"worker": f"{process}w", "now": now, "duration": LEASE}


def test_fault_histories_with_many_unknown_outcomes_get_the_verdict_of_every_order():
    rng = random.Random(20261234)
    verdicts = {True: 0, False: 0}
    unknowns = []
    while len(unknowns) < 20:
        events = fault_history(rng, processes=3, calls=rng.randrange(12, 27), lost=0.5)
        unknown = sum(e.type == "info" for e in events)
        if unknown < 10:
            continue
        unknowns.append(unknown)
        for twin in (events, changed(rng, events)):
            verdict = check_history(read_history([(dumps_event(e) + "\n").encode() for e in twin], "generated"))
            assert verdict.linearizable is every_order(twin), [dumps_event(e) for e in twin]
            verdicts[verdict.linearizable] += 1
    assert min(unknowns) >= 10 and max(unknowns) >= 20  # many unknown outcomes, not a few (11 to 22 at this seed)
    assert verdicts[True] >= 15 and verdicts[False] >= 8
