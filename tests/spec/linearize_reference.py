"""The linearizability checker as it was before its states became differences from a base (reference for tests).

A verbatim copy of ``spec/checkers/linearize.py`` at commit 1a5cbc3, where
every search step applied the model to the whole canonical ``State`` (O(T)
for T tasks). ``tests/spec/test_linearize_states.py`` checks that the current
checker gives the same verdicts, orders, state counts and reports. Not used
by fencepost itself; do not edit except to follow a change of the model's
contract or of the checker's documented rules (issue 29: a call completed
after the cut counts as unknown, see ``_window_orders``).

The original module docstring follows.

``fencepost linearize HISTORY``: could a concurrent history have come from the sequential model?

  fencepost linearize HISTORY [--max-states N] [--order]

HISTORY is a JSON-lines history (spec/formats/history.py). The history is
linearizable when some order of its calls (1) puts a call that completed
before another was invoked first (real-time order), (2) lets each call whose
outcome is unknown (info) take effect at any point after its invocation, or
never, and (3) gives every recorded result when applied to the model one call
at a time: the same Lease fields, task ids, Outcome accepted (reasons are not
compared), a recorded ValueError exactly where the model raises one (such a
call changes nothing).

Exit status: 0 linearizable; 1 not linearizable (the smallest stretch that
cannot be ordered is printed, with the calls in it and what the model would
have answered); 2 a bad file or argument; 3 undecided (the search passed
--max-states before it could decide either way).

The search is Wing and Gong's, with Lowe's memoisation as in Porcupine and
Knossos: walk the calls that may go next (invoked, and not preceded by a call
not yet placed), apply one to the model, recurse; undo on a dead end; never
enter the same (set of calls placed, model state) twice. The history is cut at
quiescent points (no call open) into windows, searched depth first: an order
of one window hands its end state (and the info calls it did not take) to the
next, and another end state of the window is tried only when the next window
cannot go on from it. That is exact, not an approximation: a window is never
checked from a guessed state. The cost is exponential in the number of calls
open at once (at most 2^k sets of placed calls for k overlapping calls, times
the model states they reach), and about linear in the number of windows for a
linearizable history.
"""

from __future__ import annotations

import argparse
import bisect
from collections.abc import Iterator
from dataclasses import dataclass, replace

from fencepost.spec import model
from fencepost.cli import EXIT_OK, EXIT_VIOLATION, UsageError, positive_int
from fencepost.spec.formats.history import ERROR, INFO, Call, History, HistoryError, load_history
from fencepost.spec.formats.values import same_result
from fencepost.spec.protocol import FINAL_STATUSES, Status

#: Exit status when the search passed its budget before deciding.
EXIT_UNDECIDED = 3

#: Default bound on (placed calls, model state) pairs explored, over the whole
#: history. A pair costs about 240 bytes (measured), so the default stays near 500 MB.
DEFAULT_MAX_STATES = 2_000_000

#: How many of the model's different answers to the failing call are shown.
MAX_ANSWERS = 3


class Undecided(Exception):
    """The search explored ``max_states`` pairs without deciding."""


# ---------------------------------------------------------------- results


@dataclass(frozen=True)
class Answer:
    """What the model answered the failing call after the calls ``before`` (call indices, in order)."""

    value: object  # the model's result, or the ValueError it raised
    before: tuple[int, ...]


@dataclass(frozen=True)
class Failure:
    """The smallest stretch that cannot be ordered: from a quiescent point to the completion no order explains."""

    start: int  # event position where the stretch starts (no call open before it, but carried info calls)
    end: int  # event position of the completion that no order explains
    call: int  # the call that completion ends
    involved: tuple[int, ...]  # every call that could be ordered in the stretch
    answers: tuple[Answer, ...]  # what the model answered ``call`` instead


@dataclass(frozen=True)
class Verdict:
    """The checker's decision. ``linearizable`` is None when undecided."""

    linearizable: bool | None
    order: tuple[int, ...]  # call indices in the order found (linearizable only); untaken info calls are absent
    states: int  # (placed calls, model state) pairs explored
    windows: int  # quiescent windows the history was cut into
    failure: Failure | None = None
    undecided_at: int | None = None  # event position of the window the budget ran out in


# ---------------------------------------------------------------- the search


class _StateKey:
    """A model state as a memo key: its hash computed once, from the hashes of its tasks."""

    __slots__ = ("state", "hash")

    def __init__(self, state: model.State, hash_: int) -> None:
        self.state = state
        self.hash = hash_

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _StateKey) and self.hash == other.hash and self.state == other.state


class _Budget:
    """The search's bound on pairs explored, and the hashes of the tasks it has met.

    A state's hash is the hash of every task in it, and a step changes one or
    two tasks of the many a state shares with the one before; hashing each
    task object once makes a state's key O(T) dictionary lookups instead of
    O(T) dataclass hashes, which dominated the search.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0
        self._task_hashes: dict[int, tuple[model.Task, int]] = {}  # id(task) -> (task, hash), the task kept alive

    def spend(self) -> None:
        self.spent += 1
        if self.spent > self.limit:
            raise Undecided

    def key(self, state: model.State) -> _StateKey:
        """``state`` as a memo key. O(T), a lookup per task."""
        cache = self._task_hashes
        hashes = []
        for task in state.tasks:
            entry = cache.get(id(task))
            if entry is None or entry[0] is not task:
                entry = cache[id(task)] = (task, hash(task))
            hashes.append(entry[1])
        # Equal states give equal hashes; fields not hashed here only make collisions likelier.
        return _StateKey(state, hash((state.now, state.last_token, state.workers, tuple(hashes))))


def _step(call: Call, state: model.State) -> tuple[model.State | None, object]:
    """Apply ``call`` to the model: (next state, the model's answer), next state None on a mismatch."""
    try:
        after, value = model.apply(state, call.op, call.args)
    except ValueError as exc:
        matches = call.kind == INFO or (call.kind == ERROR and call.error == "ValueError")
        return (state if matches else None), exc
    if call.kind == ERROR or (call.kind != INFO and not same_result(call.op, value, call.result)):
        return None, value
    return canonical(after), value


#: What a final task is kept as: every later call on a final task is refused
#: (only the reason's wording differs, which is not compared), and no dispatch
#: or load count looks at it, so final tasks answer alike whatever their fields.
#: Fields the model may add later (an idempotency key, say) are kept as they are.
#: ``retry_delay=0``, which the model never holds, marks a task already erased.
_FINAL = dict(
    priority=0, due_at=0, max_attempts=None, retry_delay=0, status=Status.SUCCEEDED, attempts=0,
    worker=None, token=None, started_at=None, expires_at=None, cancel_requested=False, expired_token=None,
    ended_at=0,  # added with prune: when a task ended shows only to prune, which histories do not hold
)


def canonical(state: model.State) -> model.State:
    """``state`` with what no later call's compared result can show erased, so that
    orders differing only there meet in the memo. O(T) for T tasks.

    Erased: a final task's fields (but its id and any the model adds), ``expired_token`` and
    ``started_at`` (they only shape a rejection's reason or a task view, and a
    history records neither), and the order workers were added in. Two states
    with the same canonical form give the same results to every sequence of
    calls, so the search stays exact.
    """
    tasks = tuple(_canonical_task(t) for t in state.tasks)
    workers = tuple(sorted(state.workers))
    if workers == state.workers and all(a is b for a, b in zip(tasks, state.tasks)):
        return state
    return replace(state, tasks=tasks, workers=workers)


def _canonical_task(task: model.Task) -> model.Task:
    if task.status in FINAL_STATUSES:
        return task if task.retry_delay == 0 else replace(task, **_FINAL)
    if task.expired_token is None and task.started_at is None:
        return task
    return replace(task, expired_token=None, started_at=None)


#: Kinds of entries in the search's list.
_CALL, _RETURN, _UNKNOWN_RETURN = 0, 1, 2


@dataclass
class _Found:
    state: _StateKey
    pending: frozenset[int]  # info calls not taken, carried into the next window
    path: tuple[int, ...]  # call indices placed in this window, in order


def _orders(
    start: model.State,
    calls: list[Call],
    unknown: set[int],
    budget: _Budget,
    watch: int | None = None,
    answers: list[Answer] | None = None,
) -> Iterator[_Found]:
    """Orders of ``calls`` from ``start``, one per distinct end (state, info calls not taken), found lazily.

    ``calls`` are in invocation order (carried info calls first); those in
    ``unknown`` may take effect at any point after invocation, or never, and
    match any answer. The model's answers to the call at ``watch`` that did
    not match are collected in ``answers``. Raises Undecided past the budget.
    """
    # Entries in real-time order: an invocation, then its completion; unknown completions last.
    entries: list[tuple[float, int, int]] = []  # (position, kind, local call index)
    for local, call in enumerate(calls):
        entries.append((call.invoked, _CALL, local))
        if local in unknown:
            entries.append((float("inf"), _UNKNOWN_RETURN, local))
        else:
            entries.append((call.completed, _RETURN, local))
    entries.sort(key=lambda e: (e[0], e[1], e[2]))
    n = len(entries)
    head, end = n, n + 1
    kind = [e[1] for e in entries]
    local_of = [e[2] for e in entries]
    return_of = {}
    invoke_entry = {}
    for i, (_, k, local) in enumerate(entries):
        if k == _CALL:
            invoke_entry[local] = i
        else:
            return_of[invoke_entry[local]] = i
    nxt, prv = [end] * (n + 2), [head] * (n + 2)  # a doubly linked list: head, entries..., end
    chain = [head, *range(n), end]
    for a, b in zip(chain, chain[1:]):
        nxt[a], prv[b] = b, a

    def lift(i: int) -> None:
        for node in (i, return_of[i]):
            nxt[prv[node]] = nxt[node]
            prv[nxt[node]] = prv[node]

    def unlift(i: int) -> None:
        for node in (return_of[i], i):
            nxt[prv[node]] = node
            prv[nxt[node]] = node

    seen: set[tuple[int, _StateKey]] = set()
    stack: list[tuple[int, model.State]] = []  # (entry placed, the state before it)
    ends: set[tuple[_StateKey, frozenset[int]]] = set()
    state, placed = start, 0
    entry = nxt[head]
    while True:
        if entry == end or kind[entry] == _UNKNOWN_RETURN:
            # Every call with a known completion is placed: an order exists.
            pending = frozenset(calls[i].index for i in unknown if not placed >> i & 1)
            end_key = budget.key(state)
            if (end_key, pending) not in ends:
                ends.add((end_key, pending))
                yield _Found(end_key, pending, tuple(calls[local_of[e]].index for e, _ in stack))
        elif kind[entry] == _CALL:
            local = local_of[entry]
            after, answer = _step(calls[local], state)
            if after is not None:
                key = (placed | 1 << local, budget.key(after))
                if key not in seen:
                    budget.spend()
                    seen.add(key)
                    stack.append((entry, state))
                    state, placed = after, placed | 1 << local
                    lift(entry)
                    entry = nxt[head]
                    continue
            elif local == watch and answers is not None and len(answers) < MAX_ANSWERS:
                if not any(describe(calls[local].op, a.value) == describe(calls[local].op, answer) for a in answers):
                    answers.append(Answer(answer, tuple(calls[local_of[e]].index for e, _ in stack)))
            entry = nxt[entry]
            continue
        # An end was reached, or a completion whose call is not placed (nothing after it
        # may go first): undo the last step and try what comes after it.
        if not stack:
            return
        entry, state = stack.pop()
        placed &= ~(1 << local_of[entry])
        unlift(entry)
        entry = nxt[entry]


# ---------------------------------------------------------------- windows


def quiescent_windows(history: History) -> list[tuple[int, int]]:
    """Event ranges ``[start, stop)`` cut where no call is open. O(events).

    A call is open from its invocation to its ok or info event; an info call
    is carried into the windows after it by the search, not by the cut.
    """
    windows, start, open_calls = [], 0, 0
    for position, event in enumerate(history.events):
        open_calls += 1 if event.type == "invoke" else -1
        if open_calls == 0:
            windows.append((start, position + 1))
            start = position + 1
    if start < len(history.events):
        windows.append((start, len(history.events)))
    return windows


#: A point between windows: the model state, and the info calls not taken so far.
Config = tuple[_StateKey, frozenset[int]]


def _window_orders(
    history: History,
    config: Config,
    window: tuple[int, int],
    budget: _Budget,
    cut: int | None = None,
    watch: int | None = None,
    answers: list[Answer] | None = None,
) -> Iterator[_Found]:
    """Orders of one window's calls (up to event ``cut``, if given) from ``config``, lazily.

    Info calls not taken before the window are carried in, invoked at its
    start; with ``cut``, a call not completed by then counts as unknown.
    """
    first, stop = window
    last = stop - 1 if cut is None else cut
    state, pending = config
    carried = [_carried(history.calls[i], first) for i in sorted(pending)]
    # Issue 29's fix, followed here: a call that completes after the cut counts as unknown (info),
    # as the docs always said; before it, its recorded result was still checked.
    calls = carried + [c if c.completed is None or c.completed <= last else
                       Call(c.index, c.process, c.op, c.args, INFO, None, None, c.invoked, None, c.ended)
                       for c in _invoked_between(history, first, last)]
    unknown = {local for local, c in enumerate(calls) if c.kind == INFO or c.completed is None}
    watch_local = next((i for i, c in enumerate(calls) if c.index == watch), None)
    return _orders(state.state, calls, unknown, budget, watch_local, answers)


def _invoked_between(history: History, first: int, last: int) -> list[Call]:
    """The calls invoked at event positions ``first`` to ``last``. O(log n + those calls):
    calls are numbered in invocation order."""
    calls = history.calls
    lo = bisect.bisect_left(calls, first, key=lambda c: c.invoked)
    hi = bisect.bisect_right(calls, last, key=lambda c: c.invoked)
    return list(calls[lo:hi])


def _carried(call: Call, start: int) -> Call:
    """An info call from an earlier window, invoked (for this window's search) at its start."""
    return Call(call.index, call.process, call.op, call.args, INFO, None, None, start - 1, None, call.ended)


@dataclass
class _Frame:
    """One window being searched from one config, and the order chosen in it so far."""

    window: int
    orders: Iterator[_Found]
    path: tuple[int, ...] = ()


def check_history(history: History, max_states: int = DEFAULT_MAX_STATES, start: model.State | None = None) -> Verdict:
    """Decide whether ``history`` is linearizable with respect to the model (see the module docstring).

    ``start`` is the model state before the first call (default: a fresh
    scheduler). The windows are searched depth first: the first order found in
    a window goes on to the next, and another of its end states is tried only
    if the next cannot go on from it, so a linearizable history costs little
    more than one pass. Each window's search is bounded by 2^k sets of placed
    calls times the model states reached, for k calls open at once in it; each
    step is O(T) model work for T tasks.
    """
    budget = _Budget(max_states)
    windows = quiescent_windows(history)
    if not windows:
        return Verdict(True, (), 0, 0)
    origin: Config = (budget.key(canonical(model.initial() if start is None else start)), frozenset())
    reached: list[set[Config]] = [set() for _ in windows]  # configs each window was searched from
    reached[0].add(origin)
    frames = [_Frame(0, _window_orders(history, origin, windows[0], budget))]
    try:
        while frames:
            frame = frames[-1]
            found = next(frame.orders, None)
            if found is None:
                frames.pop()  # no order of this window from this config goes on to the end
                continue
            frame.path = found.path
            if frame.window == len(windows) - 1:
                order = tuple(i for f in frames for i in f.path)
                return Verdict(True, order, budget.spent, len(windows))
            config, following = (found.state, found.pending), frame.window + 1
            if config in reached[following]:
                continue  # searched from there before, and it did not reach the end
            reached[following].add(config)
            frames.append(_Frame(following, _window_orders(history, config, windows[following], budget)))
        deepest = max(i for i, configs in enumerate(reached) if configs)
        failure = _locate(history, reached[deepest], windows[deepest], budget)
    except Undecided:
        stuck = frames[-1].window if frames else 0
        return Verdict(None, (), budget.limit, len(windows), undecided_at=windows[stuck][0])
    return Verdict(False, (), budget.spent, len(windows), failure)


def _locate(history: History, configs: set[Config], window: tuple[int, int], budget: _Budget) -> Failure:
    """The shortest prefix of the failing window that cannot be ordered from any of ``configs``.

    ``configs`` are every state the history before the window can end in, so
    the prefix's failure is exact. Binary search on the prefix's last event.
    """

    def orderable(cut: int) -> bool:
        return any(next(_window_orders(history, c, window, budget, cut), None) for c in configs)

    first, stop = window
    lo, hi = first, stop - 1  # orderable(stop - 1) is False
    while lo < hi:
        mid = (lo + hi) // 2
        if orderable(mid):
            lo = mid + 1
        else:
            hi = mid
    failing = next(c.index for c in history.calls if c.completed == hi)
    answers: list[Answer] = []
    for config in configs:
        for _ in _window_orders(history, config, window, budget, hi, failing, answers):
            pass
    carried = sorted({i for _, pending in configs for i in pending})
    involved = tuple(carried + [c.index for c in _invoked_between(history, first, hi)])
    return Failure(first, hi, failing, involved, tuple(answers))


# ---------------------------------------------------------------- words


def describe(op: str, value: object) -> str:
    """A result or the model's exception, in the words counterexamples use."""
    if isinstance(value, Exception):
        return f"ValueError: {value}" if isinstance(value, ValueError) else f"{type(value).__name__}: {value}"
    if value is None:
        return "none" if op == "dispatch" else "ok"
    if hasattr(value, "accepted"):
        return "accepted" if value.accepted else f"rejected ({value.reason})" if value.reason else "rejected"
    if hasattr(value, "token"):
        return f"lease task {value.task_id} to {value.worker}, token {value.token}, [{value.started_at}, {value.expires_at})"
    return f"task {value}"


def describe_call(call: Call) -> str:
    """``op(arg=value, ...)``."""
    return f"{call.op}({', '.join(f'{k}={v!r}' for k, v in call.args.items())})"


def describe_outcome(call: Call) -> str:
    """What the history says a call returned."""
    if call.kind == INFO:
        return "unknown (info)"
    if call.kind == ERROR:
        return f"raised {call.error}"
    return describe(call.op, call.result)


def report(history: History, verdict: Verdict, show_order: bool = False) -> list[str]:
    """The lines ``fencepost linearize`` prints for ``verdict``."""
    events, calls = history.events, history.calls
    size = f"{len(calls)} calls by {len(history.processes)} processes"
    where = f"{verdict.windows} windows, {verdict.states:,} states explored"
    if verdict.linearizable is None:
        line = events[verdict.undecided_at].line if verdict.undecided_at < len(events) else 0
        return [
            f"{history.source}: undecided ({size}): the search explored --max-states={verdict.states:,} states "
            f"in the window from line {line} without deciding; raise --max-states, or record shorter or less concurrent runs"
        ]
    if verdict.linearizable:
        lines = [f"{history.source}: linearizable ({size}; {where})"]
        if show_order:
            lines += [f"  {n:>4}. line {events[calls[i].invoked].line:>5}  {calls[i].process}  {describe_call(calls[i])}"
                      f" -> {describe_outcome(calls[i])}" for n, i in enumerate(verdict.order, 1)]
        return lines
    f = verdict.failure
    bad = calls[f.call]
    lines = [
        f"{history.source}: NOT linearizable ({size}; {where})",
        f"no order of the calls from line {events[f.start].line} to line {events[f.end].line} gives the recorded results:",
    ]
    rows = []
    for i in f.involved:
        c = calls[i]
        done = c.ended is not None and c.ended <= f.end
        span = f"lines {events[c.invoked].line}-{events[c.ended].line if done else 'open'}"
        mark = "   <-- no order explains this result" if i == f.call else ""
        rows.append((c.process, span, describe_call(c), (describe_outcome(c) if done else "not yet known") + mark))
    widths = [max(len(row[k]) for row in rows) for k in range(3)]
    lines += [f"  {p:<{widths[0]}}  {s:<{widths[1]}}  {call:<{widths[2]}} -> {result}" for p, s, call, result in rows]
    lines.append(f"the model would have answered {describe_call(bad)} by {bad.process} (line {events[f.end].line}):")
    for answer in f.answers:
        after = ", ".join(f"{describe_call(calls[i])} by {calls[i].process}" for i in answer.before) or "nothing else"
        lines.append(f"  {describe(bad.op, answer.value)}   (after {after})")
    if not f.answers:
        lines.append("  nothing: in no order consistent with real time do the calls before it reach it")
    return lines


# ---------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("history", metavar="HISTORY", help="a JSON-lines history file")
    parser.add_argument(
        "--max-states", type=positive_int, default=DEFAULT_MAX_STATES, metavar="N",
        help=f"give up (exit {EXIT_UNDECIDED}, undecided) after exploring N (placed calls, model state) pairs "
             f"(default {DEFAULT_MAX_STATES:,})",
    )
    parser.add_argument("--order", action="store_true", help="print the order found for a linearizable history")


def run(args: argparse.Namespace) -> int:
    try:
        history = load_history(args.history)
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    verdict = check_history(history, max_states=args.max_states)
    for line in report(history, verdict, args.order):
        print(line)
    if verdict.linearizable is None:
        return EXIT_UNDECIDED
    return EXIT_OK if verdict.linearizable else EXIT_VIOLATION
