"""Shrinking a failing trace: fewer calls, earlier times, simpler arguments, the same failure.

``minimize`` repeats passes until none makes the trace shorter or simpler;
each candidate is replayed in lockstep (``spec.checkers.lockstep.run_calls``)
and kept only if it still fails.
"""

from __future__ import annotations

from collections.abc import Callable

from fencepost.spec.checkers.lockstep import run_calls
from fencepost.spec.variants import DEFAULT, Variants
from fencepost.spec.formats.trace import TraceStep


def _without(calls: list[tuple[str, dict, object]], start: int, count: int) -> list[tuple[str, dict, object]]:
    """``calls`` less ``count`` calls from ``start``, with later task ids and tokens renumbered.

    Deleting a submit shifts every later task id down by one, and deleting a
    successful dispatch shifts every later token, so later calls keep naming
    the same tasks and leases (a batch's ids, leases and report pairs count
    one by one). A call naming a deleted task or token is deleted with it; a
    batch's report pair naming one is dropped from the batch.
    """
    gone_ids: list[int] = []
    gone_tokens: list[int] = []
    issued = max((i for op, _, e in calls[:start] for i in _ids_issued(op, e)), default=0)
    for op, _, expected in calls[start : start + count]:
        for task_id in _ids_issued(op, expected):
            if task_id > issued:  # a duplicate by key issues no id
                issued = task_id
                gone_ids.append(task_id)
        gone_tokens += _tokens_issued(op, expected)
    kept = calls[:start]

    def renumbered(task_id: object, token: object) -> tuple[object, object] | None:
        if _is_int(task_id):
            if task_id in gone_ids:
                return None
            task_id -= sum(1 for g in gone_ids if g < task_id)
        if _is_int(token):
            if token in gone_tokens:
                return None
            token -= sum(1 for g in gone_tokens if g < token)
        return task_id, token

    for op, args, expected in calls[start + count :]:
        args = dict(args)
        if isinstance(args.get("reports"), list):
            pairs = []
            for pair in args["reports"]:
                if isinstance(pair, (list, tuple)) and len(pair) == 2:
                    pair = renumbered(*pair)
                    if pair is None:
                        continue
                    pair = list(pair)
                pairs.append(pair)
            args["reports"] = pairs
        moved = renumbered(args.get("task_id"), args.get("token"))
        if moved is None:
            continue
        for name, value in zip(("task_id", "token"), moved):
            if name in args:
                args[name] = value
        kept.append((op, args, expected))
    return kept


def _ids_issued(op: str, expected: object) -> list[int]:
    """The task ids a call's (normalized) result issued or named: a submit's, a submit_many's."""
    if op == "submit" and _is_int(expected):
        return [expected]
    if op == "submit_many" and isinstance(expected, tuple) and expected[:1] == ("batch",):
        return [i for i in expected[1] if _is_int(i)]
    return []


def _tokens_issued(op: str, expected: object) -> list[int]:
    """The tokens a call's (normalized) result handed out: a dispatch's lease, a dispatch_many's."""
    if op == "dispatch" and isinstance(expected, tuple) and expected[:1] == ("lease",):
        return [expected[3]]
    if op == "dispatch_many" and isinstance(expected, tuple) and expected[:1] == ("batch",):
        return [lease[3] for lease in expected[1] if isinstance(lease, tuple) and lease[:1] == ("lease",)]
    return []


#: Longest trace ``minimize`` tries deleting two separate calls from: O(n^2)
#: replays of n steps each, about 0.2 s at 20 steps; longer traces are first
#: cut down by deleting runs of calls.
PAIR_DELETION_LIMIT = 20


def _delete_pairs(best: list[TraceStep], attempt: Callable, calls_of: Callable) -> list[TraceStep]:
    """Delete two calls that are not neighbours, when neither can go alone.

    A submit and the dispatch that leased it are often such a pair: without
    the submit the dispatch leases the next task and the failure moves, and
    without the dispatch every later token is off. The later call is deleted
    first, so the renumbering of the earlier deletion applies to what is left.
    """
    improved = True
    while improved and len(best) <= PAIR_DELETION_LIMIT:
        improved = False
        for later in range(len(best) - 1, 1, -1):
            for earlier in range(later):  # neighbours too: runs of two were tried only where aligned
                failing = attempt(_without(_without(calls_of(best), later, 1), earlier, 1))
                if failing is not None and len(failing) < len(best):
                    best, improved = failing, True
                    break
            if improved:
                break
    return best


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: Small values ``minimize`` tries in place of larger ones, per argument.
_SIMPLER_VALUES = {"priority": (0, 1), "duration": (1,), "capacity": (1,), "retry_delay": (1,)}
#: Optional ``submit`` arguments ``minimize`` tries to drop.
_OPTIONAL_ARGS = ("priority", "due_at", "max_attempts", "retry_delay", "key")


def _simpler(op: str, args: dict) -> list[dict]:
    """Simpler versions of one call's arguments: optional ones dropped, small values tried."""
    options = []
    if op == "submit":
        options += [{k: v for k, v in args.items() if k != name} for name in _OPTIONAL_ARGS if name in args]
    for name, values in _SIMPLER_VALUES.items():
        if name in args:
            options += [{**args, name: v} for v in values if v != args[name]]
    return options


def _earlier(calls: list[tuple[str, dict, object]]) -> list[tuple[str, dict, object]] | None:
    """The same calls with every instant moved earlier by the first one, or None if it is 0."""
    times = [args["now"] for _, args, _ in calls if _is_int(args.get("now")) and args["now"] >= 0]
    shift = min(times, default=0)
    if shift <= 0:
        return None
    moved = []
    for op, args, expected in calls:
        args = dict(args)
        for name in ("now", "due_at"):
            if _is_int(args.get(name)) and args[name] >= 0:
                args[name] = max(0, args[name] - shift)
        moved.append((op, args, expected))
    return moved


def minimize(factory: Callable[[], object], trace: list[TraceStep], call_timeout: float | None = None,
             variants: Variants = DEFAULT, replay: Callable[..., list[TraceStep] | None] = run_calls) -> list[TraceStep]:
    """Shrink a failing trace to a short one that still fails.

    Hypothesis's own shrinker replays the whole machine hundreds of times; this
    works on the concrete calls instead: delete runs of calls, then pairs of
    separate calls (renumbering later task ids and tokens, see ``_without``),
    then simplify arguments. Each candidate is replayed from scratch in
    lockstep, so the result is a real counterexample. Cost: O(n^2) replays of
    at most n steps for the runs; the pairs, O(n^3) replays in the worst
    case, are tried only on traces of ``PAIR_DELETION_LIMIT`` calls or fewer.
    With ``call_timeout``, every replay runs under that deadline (see
    ``run_calls``), so a hang shrinks like any other failure; each replay
    that still hangs costs the deadline. Replays run under ``variants``
    (under ``tokens=opaque`` the trace names tokens by number, so a
    scheduler's fresh tokens in each replay stand for the same leases).
    ``replay`` replays candidates (``run_calls``' signature); ``--clock real``
    passes ``spec.checkers.realtime.run_timed_calls``.
    """
    best = replay(factory, [(s.op, s.args) for s in trace], call_timeout, variants)
    if best is None:
        return trace  # not reproducible from the calls alone (e.g. a flaky implementation)
    while True:  # until a whole pass changes nothing: a simpler argument can unlock a deletion
        shorter = _minimize_pass(factory, best, call_timeout, variants, replay)
        if [(s.op, s.args) for s in shorter] == [(s.op, s.args) for s in best]:
            return best
        best = shorter


def _minimize_pass(factory: Callable[[], object], best: list[TraceStep], call_timeout: float | None,
                   variants: Variants = DEFAULT, replay: Callable[..., list[TraceStep] | None] = run_calls) -> list[TraceStep]:
    """One round of ``minimize``: deletions, then an earlier clock, then simpler arguments."""

    def attempt(candidate: list[tuple[str, dict, object]]) -> list[TraceStep] | None:
        return replay(factory, [(op, args) for op, args, _ in candidate], call_timeout, variants) if candidate else None

    def calls_of(steps: list[TraceStep]) -> list[tuple[str, dict, object]]:
        return [(s.op, dict(s.args), s.expected) for s in steps]

    chunk = max(1, len(best) // 2)
    while chunk >= 1:
        start = 0
        while start < len(best):
            failing = attempt(_without(calls_of(best), start, chunk))
            if failing is not None and len(failing) < len(best):
                best = failing
            else:
                start += chunk
        chunk //= 2
    best = _delete_pairs(best, attempt, calls_of)
    shifted = _earlier(calls_of(best))
    if shifted is not None:
        best = attempt(shifted) or best
    index = 0
    while index < len(best):  # best may shrink as we go
        for simpler in _simpler(best[index].op, best[index].args):
            calls = calls_of(best)
            calls[index] = (calls[index][0], simpler, calls[index][2])
            failing = attempt(calls)
            if failing is not None and len(failing) <= len(best):
                best = failing
                break
        index += 1
    return best
