"""After shrinking, the canonical counterexample: no batch the bug does not need, and no longer than a search finds.

``minimize`` deletes and simplifies calls of the one failing run Hypothesis
found, so what it keeps depends on that run: a ``dispatch_many`` where a
``dispatch`` would do, an empty ``complete_many`` standing for the expiry it
makes. ``canonical`` goes on from there, each candidate replayed in lockstep
and kept only when it fails the same way (the same rule, ``Why.rule``) and is
better: fewer batch calls first, then fewer steps.

1. **Singles for batches**: each batch call is replaced by the single calls
   it is defined as, when it is valid (``submit_many`` by its submits, ``dispatch_many`` by as
   many dispatches as leases either side handed out, a report batch by its
   reports, an empty report batch by the ``advance`` it amounts to), then
   shrunk again with ``minimize``.
2. **A bounded breadth-first search around it**: ``spec.checkers.explore``
   over a small scope made of the counterexample's own values (its workers,
   capacity, tasks, priorities, budgets and durations; times 0..2, as the
   default scope) down to one step fewer than the best so far (as many steps
   when that still has a batch), under a budget of transitions. The first
   violation it finds is a shortest one in that scope, with single calls
   only, in a fixed order: the same counterexample for the same bug, however
   Hypothesis got there.

Chosen where issue 30 was silent: a batch-free counterexample is preferred to
a shorter one with a batch (a batch is defined as its single calls, and a
reader knows those first); a shorter counterexample of another rule is not
taken (it would be another bug, which the next run reports once this one is
fixed); the search is skipped for a hang (each replay would cost the call
timeout) and on the real clock (whose replays cost real time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from fencepost.spec.checkers.explore import DEFAULT_SCOPE, Scope, explore
from fencepost.spec.checkers.lockstep import run_calls
from fencepost.spec.checkers.minimize import minimize
from fencepost.spec.checkers.why import why
from fencepost.spec.formats.trace import TraceStep
from fencepost.spec.formats.values import BATCH_OF
from fencepost.spec.variants import DEFAULT, Variants

#: Most transitions one search around a counterexample may generate: about 3.5 s
#: against an in-process scheduler on a shared core (docs/checking.md). Depth 5 of
#: no_release_on_complete's own scope, which finds nothing shorter, took 8,540.
SEARCH_BUDGET = 60_000
#: The most of each value domain the search scope takes from a counterexample:
#: more would multiply the transitions per state past what the budget explores.
_MOST_WORKERS, _MOST_CAPACITY, _MOST_TASKS, _MOST_VALUES = 2, 2, 3, 3

Call = tuple[str, dict]


def batch_calls(trace: list[TraceStep]) -> int:
    """How many steps of ``trace`` are batch calls."""
    return sum(1 for step in trace if step.op in BATCH_OF)


def _better(candidate: list[TraceStep], best: list[TraceStep]) -> bool:
    return (batch_calls(candidate), len(candidate)) < (batch_calls(best), len(best))


def _leases(value: object) -> int:
    if isinstance(value, tuple) and value[:1] == ("batch",):
        return sum(1 for item in value[1] if isinstance(item, tuple) and item[:1] == ("lease",))
    return 0


def singles(trace: list[TraceStep]) -> list[Call]:
    """``trace``'s calls with each batch replaced by the single calls it stands for (see the module docstring)."""
    calls: list[Call] = []
    for step in trace:
        args = step.args
        if step.op in BATCH_OF and isinstance(step.expected, tuple) and step.expected[:1] == ("error",):
            calls.append((step.op, dict(args)))  # an invalid batch is all or nothing: no single calls stand for it
        elif step.op == "submit_many" and isinstance(args.get("tasks"), list):
            calls += [("submit", dict(entry)) for entry in args["tasks"] if isinstance(entry, dict)]
        elif step.op == "dispatch_many":
            single = {k: v for k, v in args.items() if k != "limit"}
            calls += [("dispatch", dict(single))] * max(1, _leases(step.expected), _leases(step.got))
        elif step.op in ("complete_many", "fail_many") and isinstance(args.get("reports"), list):
            reports = [pair for pair in args["reports"] if isinstance(pair, (list, tuple)) and len(pair) == 2]
            calls += [(BATCH_OF[step.op], {"task_id": pair[0], "token": pair[1], "now": args.get("now")}) for pair in reports]
            if not reports:
                calls.append(("advance", {"now": args.get("now")}))
        else:
            calls.append((step.op, dict(args)))
    return calls


def scope_around(trace: list[TraceStep]) -> Scope:
    """A small exploration scope made of ``trace``'s own values (see the module docstring)."""
    workers, capacities, tasks = set(), {1}, 0
    priorities, budgets, durations, prune = {0}, {None}, {1}, False
    valid = lambda value: isinstance(value, int) and not isinstance(value, bool) and value >= 1  # noqa: E731
    for op, args in singles(trace):
        if op == "add_worker" and isinstance(args.get("worker"), str) and args["worker"] and valid(args.get("capacity")):
            workers.add(args["worker"])
            capacities.add(args["capacity"])
        elif op == "submit":
            tasks += 1
            if isinstance(args.get("priority"), int) and not isinstance(args["priority"], bool):
                priorities.add(args["priority"])
            if valid(args.get("max_attempts")):
                budgets.add(args["max_attempts"])
        elif op in ("dispatch", "renew") and valid(args.get("duration")):
            durations.add(args["duration"])
        prune = prune or op == "prune"
    return Scope(
        workers=max(1, min(len(workers), _MOST_WORKERS)),
        capacity=min(max(capacities), _MOST_CAPACITY),
        tasks=max(1, min(tasks, _MOST_TASKS)),
        horizon=DEFAULT_SCOPE.horizon,
        priorities=tuple(sorted(priorities))[:_MOST_VALUES],
        max_attempts=(None, *sorted(b for b in budgets if b is not None))[:_MOST_VALUES],
        durations=tuple(sorted(durations))[:_MOST_VALUES],
        prune=prune,
    )


def canonical(
    factory: Callable[[], object], trace: list[TraceStep], call_timeout: float | None = None,
    variants: Variants = DEFAULT, replay: Callable[..., list[TraceStep] | None] = run_calls,
    search: bool = True, budget: int = SEARCH_BUDGET,
) -> list[TraceStep]:
    """The canonical counterexample for a minimized failing ``trace`` (see the module docstring).

    Args:
        factory, call_timeout, variants, replay: as for ``minimize``.
        search: also search around it breadth first (``explore``); False on
            the real clock, whose replays are not lockstep ones.
        budget: most transitions the search may generate.

    Returns:
        ``trace`` or a better counterexample of the same rule; never one
        that does not fail when replayed.
    """
    wanted = why(trace, variants)
    if wanted is None or wanted.rule == "no-answer":
        return trace

    def same_violation(candidate: list[TraceStep] | None) -> bool:
        found = why(candidate, variants) if candidate else None
        return found is not None and found.rule == wanted.rule

    best = trace
    if batch_calls(best):
        calls = singles(best)
        replayed = replay(factory, calls, call_timeout, variants)
        if replayed is not None:
            shrunk = minimize(factory, replayed, call_timeout, variants, replay)
            if same_violation(shrunk) and _better(shrunk, best):
                best = shrunk
    if not search:
        return best
    depth = len(best) - (0 if batch_calls(best) else 1)
    if depth < 1:
        return best
    scope = replace(scope_around(best), depth=depth)
    result = explore(scope, factory, jobs=1, call_timeout=call_timeout, variants=variants, budget=budget)
    found = result.violation.trace if result.violation is not None else None
    if found and same_violation(found) and _better(found, best):
        best = found
    return best
