"""Could a concurrent history have come from the sequential model? The search.

``check_history(history)`` returns a ``Verdict``: linearizable or not (with
the smallest stretch that cannot be ordered), or undecided past a bound on
the states explored. The search is Wing and Gong's, with Lowe's memoisation,
over windows cut at quiescent points; its model states are
``spec.checkers.linearize_states``, and the ``fencepost linearize`` command
that prints a verdict is ``spec.checkers.linearize_command`` (whose docstring
says what linearizable means here and what the search costs).

Declared variants (the history's header, ``spec.variants``) are the model's:
the search starts from ``model.initial(variants)``, and where they allow
several results for one call (``order=any``: any eligible task;
``tokens=opaque``: any fresh token) a recorded result the model's own pick
does not match is followed (``model.follow``) when the model allows it. A
dispatch whose result is unknown (info) under those two, the normal case in
a real history cut short, is judged: it took the model's pick (under
``order=any`` any task the model allows) under a fresh token nobody
recorded (``_steps``), or never took effect. Only a lost ``dispatch_many``
(every set of tasks it may have taken), and a lost dispatch under
``order=any`` on a real clock, are refused (``ValueError``) rather than guessed.

``prune`` (the optional retention operation) is one timed call like the
others, judged as ``model.prune``: it forgets the final tasks that ended
before its ``before`` in the order tried, so a prune overlapping a call that
ends a task may or may not count it, and after it every call naming a
forgotten id must be refused (``ValueError``) and a forgotten key makes a new
task. Only a history that holds a prune keeps when each final task ended in
its states (``linearize_states.prune_bounds``, as far as its prunes can tell
the times apart), so one without costs what it did before.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from fencepost.spec import model
from fencepost.spec.checkers.linearize_realtime import RealTime, windows as realtime_windows
from fencepost.spec.checkers.linearize_states import _State, canonical, prune_bounds
from fencepost.spec.formats.history import Call, ERROR, History, INFO, OK
from fencepost.spec.formats.values import BATCH_OF, same_result
from fencepost.spec.variants import DEFAULT, Variants, show_span, show_token


#: Default bound on (placed calls, model state) pairs explored, over the whole
#: history. A pair costs about 300 bytes with few tasks and under 1 KB with a
#: thousand (peak memory over pairs, measured), so the default stays under 2 GB.
DEFAULT_MAX_STATES = 2_000_000

#: How many of the model's different answers to the failing call are shown.
MAX_ANSWERS = 3
#: At most this many of the model states before a failing stretch are kept in its Failure.
MAX_STARTS = 3


class Undecided(Exception):
    """The search explored ``max_states`` pairs without deciding."""


# ---------------------------------------------------------------- results


@dataclass(frozen=True)
class Answer:
    """What the model answered the failing call after the calls ``before`` (call indices, in order)."""

    value: object  # the model's result, or the ValueError it raised
    before: tuple[int, ...]
    why: str = ""  # under order=any or tokens=opaque: why the model allows no such result there (model.why_not)
    holding: object = None  # then, the token of the lease that holds the task the result hands out, if one does


@dataclass(frozen=True)
class Failure:
    """The smallest stretch that cannot be ordered: from a quiescent point to the completion no order explains."""

    start: int  # event position where the stretch starts (no call open before it, but carried info calls)
    end: int  # event position of the completion that no order explains
    call: int  # the call that completion ends
    involved: tuple[int, ...]  # every call that could be ordered in the stretch
    answers: tuple[Answer, ...]  # what the model answered ``call`` instead
    # The model states the history before the stretch can end in (up to MAX_STARTS, in the
    # order met), for a reader to see what the model held; canonical (``canonical``): a final
    # task's fields (its ``ended_at`` kept only as far as the history's prunes tell it apart), a
    # forgotten task's, ``started_at`` and ``expired_token`` are erased. Not compared: two
    # failures are the same failure whatever states are kept for showing.
    starts: tuple[model.State, ...] = field(default=(), compare=False)


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


class _Budget:
    """The search's bound on (placed calls, model state) pairs explored."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0

    def spend(self) -> None:
        self.spent += 1
        if self.spent > self.limit:
            raise Undecided


def _step(call: Call, state: _State) -> tuple[_State | None, object]:
    """Apply ``call`` to the model: (next state, the model's answer), next state None on a mismatch.

    Where the variants allow the recorded answer though the model's own pick
    differs (``_chooses``), the model follows it.
    """
    try:
        after, value = state.apply(call.op, call.args)
    except ValueError as exc:
        matches = call.kind == INFO or (call.kind == ERROR and call.error == "ValueError")
        return (state if matches else None), exc
    variants = state.base.variants
    if call.kind == ERROR or (call.kind != INFO and not same_result(call.op, value, call.result, variants.tokens == "opaque")):
        if call.kind == OK and call.op in _CHOOSING_OPS and _chooses(variants):
            followed = state.follow(call.op, call.args, call.result)
            if followed is not None:
                return followed
        return None, value
    return after, value


#: What a lease whose dispatch's answer was lost carries as its token: a str no scheduler hands out
#: (``str.format``-ed with the call's index), so no recorded token is ever taken for it.
UNKNOWN_TOKEN = "\u2047{}"


def _steps(call: Call, state: _State) -> Iterator[tuple[_State | None, object]]:
    """Every way ``call`` may take effect from ``state``: ``_step``'s one, except for a dispatch
    whose answer was lost (info) under variants that allow choices (``_chooses``).

    That dispatch took the model's pick under an unknown, fresh token (``UNKNOWN_TOKEN``
    under ``tokens=opaque``, so it is never confused with a recorded one), or under
    ``order=any`` any task the model allows it to take. O(T) follows for T tasks under
    ``order=any``, else one.
    """
    if not (call.kind == INFO and call.op == "dispatch" and _chooses(state.base.variants)):
        yield _step(call, state)
        return
    try:
        after, value = state.apply(call.op, call.args)
    except ValueError as exc:
        yield state, exc
        return
    if value is None:  # nothing to take: the only answer
        yield after, value
        return
    # under tokens=int the token is known all the same: the next one
    token = UNKNOWN_TOKEN.format(call.index) if state.base.variants.tokens == "opaque" else value.token
    candidates = range(1, state.size + 1) if state.base.variants.order == "any" else (value.task_id,)
    for task_id in candidates:
        followed = state.follow(call.op, call.args, replace(value, task_id=task_id, token=token))
        if followed is not None:
            yield followed


def _why_not(state: _State, call: Call) -> str:
    """Under variants that allow choices, why the model allows no result like ``call``'s here ("" otherwise)."""
    if call.kind != OK or call.op not in _CHOOSING_OPS or not _chooses(state.base.variants):
        return ""
    try:
        return model.why_not(state.materialise(), call.op, dict(call.args), call.result)
    except ValueError as exc:
        return f"the call is invalid: {exc}"


def _holding(state: _State, call: Call) -> object:
    """The token of the live lease on the task ``call``'s lease hands out, or None."""
    task_id = getattr(call.result, "task_id", None)
    if isinstance(task_id, int) and not isinstance(task_id, bool) and 1 <= task_id <= state.size:
        return state.task(task_id).token
    return None


#: The operations whose answer a variant may leave to the scheduler.
_CHOOSING_OPS = frozenset({"dispatch", "dispatch_many"})


def _chooses(variants: object) -> bool:
    """Whether ``variants`` allow several answers to a dispatch (``order=any``, ``tokens=opaque``)."""
    return variants.order == "any" or variants.tokens == "opaque"


#: What a real clock's readings of one call end with (``RealTime.options`` exhausted).
_TRIED_ALL = object()

#: Kinds of entries in the search's list.
_CALL, _RETURN, _UNKNOWN_RETURN = 0, 1, 2


@dataclass
class _Found:
    state: _State
    pending: frozenset[int]  # info calls not taken, carried into the next window
    path: tuple[int, ...]  # call indices placed in this window, in order


def _orders(
    start: _State,
    calls: list[Call],
    unknown: set[int],
    budget: _Budget,
    watch: int | None = None,
    answers: list[Answer] | None = None,
    timing: RealTime | None = None,
) -> Iterator[_Found]:
    """Orders of ``calls`` from ``start``, one per distinct end (state, info calls not taken), found lazily.

    ``calls`` are in invocation order (carried info calls first); those in
    ``unknown`` may take effect at any point after invocation, or never, and
    match any answer. The model's answers to the call at ``watch`` that did
    not match are collected in ``answers``. Raises Undecided past the budget.
    With ``timing`` (a history on a real clock, ``linearize_realtime``) the
    calls are ordered by their widened real intervals, and a timed call is
    tried at each reading ``timing.options`` gives.

    Two reductions keep unknown calls from multiplying the search, each
    keeping every order that matters. An unknown call is placed only where it
    changes the state: placed where it changes nothing (refused, or accepted
    without effect), it leaves the same state as leaving it pending, and a
    pending call may still be placed later, so nothing is lost, while each
    such placement would have doubled the (placed calls, state) pairs. And an
    unknown call whose ``now`` is behind the state's clock is dropped from the
    pending calls at a window's end: time never goes back, so the model
    refuses it wherever it is placed from there on; carried on, every later
    window would try it again.
    """
    # Entries in real-time order: an invocation, then its completion; unknown completions last.
    entries: list[tuple[float, int, int]] = []  # (position, kind, local call index)
    for local, call in enumerate(calls):
        invoked, completed = (call.invoked, call.completed) if timing is None else timing.spans[call.index]
        entries.append((invoked, _CALL, local))
        if local in unknown:
            entries.append((float("inf"), _UNKNOWN_RETURN, local))
        else:
            entries.append((completed, _RETURN, local))
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

    seen: set[tuple[int, _State]] = set()
    # (entry placed, the state before it, and on a real clock the readings not tried yet)
    stack: list[tuple[int, _State, Iterator | None]] = []
    ends: set[tuple[_State, frozenset[int]]] = set()
    state, placed = start, 0
    entry = nxt[head]
    options: Iterator | None = None  # the (state, answer) pairs left to try at ``entry`` (``_steps``, or readings)
    while True:
        if entry == end or kind[entry] == _UNKNOWN_RETURN:
            # Every call with a known completion is placed: an order exists.
            pending = frozenset(calls[i].index for i in unknown if not placed >> i & 1 and not _expired(calls[i], state, timing))
            end_key = state
            if (end_key, pending) not in ends:
                ends.add((end_key, pending))
                yield _Found(end_key, pending, tuple(calls[local_of[e]].index for e, _, _ in stack))
        elif kind[entry] == _CALL:
            local = local_of[entry]
            if options is None:  # every way the call may take effect here (one, but for a reading or a lost answer)
                options = (_steps(calls[local], state) if timing is None
                           else timing.options(calls[local], state, _step, local in unknown))
            tried = next(options, _TRIED_ALL)
            if tried is _TRIED_ALL:
                options = None
                entry = nxt[entry]
                continue
            after, answer = tried
            if after is not None and local in unknown and after == state:
                after = None  # an unknown call that would change nothing here is left pending instead (_orders)
            if after is not None:
                key = (placed | 1 << local, after)
                if key not in seen:
                    budget.spend()
                    seen.add(key)
                    stack.append((entry, state, options))
                    state, placed = after, placed | 1 << local
                    lift(entry)
                    entry, options = nxt[head], None
                    continue
            elif local == watch and answers is not None and len(answers) < MAX_ANSWERS:
                call = calls[local]
                why = _why_not(state, call if timing is None else timing.earliest(call, state))
                if not any(describe(call.op, a.value) == describe(call.op, answer) and a.why == why for a in answers):
                    answers.append(Answer(answer, tuple(calls[local_of[e]].index for e, _, _ in stack), why,
                                          _holding(state, call) if why else None))
            if options is None:
                entry = nxt[entry]
            continue  # on a real clock: the next reading of the same call
        # An end was reached, or a completion whose call is not placed (nothing after it
        # may go first): undo the last step and try what comes after it.
        if not stack:
            return
        entry, state, options = stack.pop()
        placed &= ~(1 << local_of[entry])
        unlift(entry)
        if options is None:
            entry = nxt[entry]


def _expired(call: Call, state: _State, timing: RealTime | None) -> bool:
    """Whether the model refuses the unknown ``call`` in ``state`` and every state after it: its ``now``
    is behind the clock (logical time only: on a real clock the reading, not the argument, is the time)."""
    now = call.args.get("now")
    return timing is None and isinstance(now, int) and not isinstance(now, bool) and now < state.now


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
Config = tuple[_State, frozenset[int]]


def _window_orders(
    history: History,
    config: Config,
    window: tuple[int, int],
    budget: _Budget,
    cut: int | None = None,
    watch: int | None = None,
    answers: list[Answer] | None = None,
    timing: RealTime | None = None,
) -> Iterator[_Found]:
    """Orders of one window's calls (up to event ``cut``, if given) from ``config``, lazily.

    Info calls not taken before the window are carried in, invoked at its
    start; with ``cut``, a call not completed by then counts as unknown.
    """
    first, stop = window
    last = stop - 1 if cut is None else cut
    state, pending = config
    carried = [_carried(history.calls[i], first) for i in sorted(pending)]
    # A call that completes after the cut counts as unknown: its recorded result is not checked.
    calls = carried + [c if c.completed is None or c.completed <= last else _unknown(c)
                       for c in _invoked_between(history, first, last)]
    unknown = {local for local, c in enumerate(calls) if c.kind == INFO or c.completed is None}
    watch_local = next((i for i, c in enumerate(calls) if c.index == watch), None)
    return _orders(state.settled(), calls, unknown, budget, watch_local, answers, timing)


def _invoked_between(history: History, first: int, last: int) -> list[Call]:
    """The calls invoked at event positions ``first`` to ``last``. O(log n + those calls):
    calls are numbered in invocation order."""
    calls = history.calls
    lo = bisect.bisect_left(calls, first, key=lambda c: c.invoked)
    hi = bisect.bisect_right(calls, last, key=lambda c: c.invoked)
    return list(calls[lo:hi])


def _unknown(call: Call) -> Call:
    """``call`` with its outcome unknown (info): what a call not completed by a cut counts as."""
    return Call(call.index, call.process, call.op, call.args, INFO, None, None, call.invoked, None, call.ended)


def _carried(call: Call, start: int) -> Call:
    """An info call from an earlier window, invoked (for this window's search) at its start."""
    return Call(call.index, call.process, call.op, call.args, INFO, None, None, start - 1, None, call.ended)


@dataclass
class _Frame:
    """One window being searched from one config, and the order chosen in it so far."""

    window: int
    orders: Iterator[_Found]
    path: tuple[int, ...] = ()


def check_history(history: History, max_states: int = DEFAULT_MAX_STATES, start: model.State | None = None,
                  variants: Variants = DEFAULT, timing: RealTime | None = None) -> Verdict:
    """Decide whether ``history`` is linearizable with respect to the model (see the module docstring).

    ``start`` is the model state before the first call (default: a fresh
    scheduler under ``variants``, whose variants it carries otherwise).
    ``timing``: judge on a real clock (``linearize_realtime``; by default, when the
    history's header has a ``clock``, ``RealTime.of(history)``), each timed call at
    some reading inside its interval; times in the states are then in the clock's units.
    Raises ValueError for an info dispatch_many under ``order=any`` or
    ``tokens=opaque`` (see the module docstring), and where ``RealTime.of`` and
    ``RealTime.options`` do. The windows are searched depth first: the first order found in
    a window goes on to the next, and another of its end states is tried only
    if the next cannot go on from it, so a linearizable history costs little
    more than one pass. Each window's search is bounded by 2^k sets of placed
    calls times the model states reached, for k calls open at once in it; each
    step costs O(R + D + log T) for R running leases, D tasks changed since the
    state's base and T tasks (``_State.apply``), independent of T in practice.
    """
    budget = _Budget(max_states)
    if timing is None and history.clock is not None:
        timing = RealTime.of(history)
    windows = quiescent_windows(history)
    if timing is not None:
        windows = realtime_windows(history, windows, timing)
        variants = timing.variants(variants if start is None else start.variants)
        start = None if start is None else replace(start, variants=variants)
    if not windows:
        return Verdict(True, (), 0, 0)
    first = model.initial(variants) if start is None else start
    if _chooses(first.variants):
        # A lost dispatch is judged (``_steps``); a lost dispatch_many, or on a real clock under order=any,
        # would need every set of tasks it may have taken, at every reading: refused.
        refused = {"dispatch_many"} | ({"dispatch"} if timing is not None and first.variants.order == "any" else set())
        unknown = next((c for c in history.calls if c.kind == INFO and c.op in refused), None)
        if unknown is not None:
            raise ValueError(
                f"{history.source}: line {history.events[unknown.invoked].line}: {unknown.op} by {unknown.process} has an unknown "
                f"result (info), which cannot be checked exactly under {first.variants.describe()}: the task and token it "
                "may have taken are not known; record the history without client timeouts"
            )
    # Only a history that holds a prune keeps when final tasks ended (as far as its prunes can
    # tell): one without keeps the states, and the cost, it had before prune existed.
    bounds = prune_bounds(c.args.get("before") for c in history.calls if c.op == "prune")
    origin: Config = (_State.of(canonical(first, bounds), bounds), frozenset())
    # Configs each window was searched from, in the order met (a dict, not a set: the failing
    # window's are tried in that order, so the answers shown do not depend on hash seeds).
    reached: list[dict[Config, None]] = [{} for _ in windows]
    reached[0][origin] = None
    frames = [_Frame(0, _window_orders(history, origin, windows[0], budget, timing=timing))]
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
            reached[following][config] = None
            frames.append(_Frame(following, _window_orders(history, config, windows[following], budget, timing=timing)))
        deepest = max(i for i, configs in enumerate(reached) if configs)
        failure = _locate(history, reached[deepest], windows[deepest], budget, timing)
    except Undecided:
        stuck = frames[-1].window if frames else 0
        return Verdict(None, (), budget.limit, len(windows), undecided_at=windows[stuck][0])
    return Verdict(False, (), budget.spent, len(windows), failure)


def _locate(history: History, configs: dict[Config, None], window: tuple[int, int], budget: _Budget,
            timing: RealTime | None = None) -> Failure:
    """The shortest prefix of the failing window that cannot be ordered from any of ``configs``.

    ``configs`` are every state the history before the window can end in, so
    the prefix's failure is exact. Binary search on the prefix's last event,
    among the completions with a recorded answer only: a prefix that ends
    anywhere else orders as the one ending at the completion before it (a call
    invoked at the cut, or whose answer was lost, is unknown there, may be left
    out, and no call of the prefix may follow it), so it never ends the
    shortest. A prefix that cannot be ordered is searched once: the model's
    answers to its last call are collected on the way (``watch``), and kept for
    the failure if it turns out the shortest.
    """
    first, stop = window
    cuts = sorted(c.completed for c in history.calls if c.completed is not None and first <= c.completed < stop)
    answers_at: dict[int, list[Answer]] = {}

    def orderable(cut: int) -> bool:
        answers: list[Answer] = []
        watch = next(c.index for c in history.calls if c.completed == cut)
        if any(next(_window_orders(history, c, window, budget, cut, watch, answers, timing), None) for c in configs):
            return True
        answers_at[cut] = answers  # every config searched to the end: the answers a failure shows
        return False

    lo, hi = 0, len(cuts) - 1  # the whole window cannot be ordered, so neither can its last completion's prefix
    while lo < hi:
        mid = (lo + hi) // 2
        if orderable(cuts[mid]):
            lo = mid + 1
        else:
            hi = mid
    end = cuts[hi]
    failing = next(c.index for c in history.calls if c.completed == end)
    if end not in answers_at:  # the last completion's prefix, known from the search not to order
        orderable(end)
    carried = sorted({i for _, pending in configs for i in pending})
    involved = tuple(carried + [c.index for c in _invoked_between(history, first, end)])
    starts = tuple(state.materialise() for state, _ in itertools.islice(configs, MAX_STARTS))
    return Failure(first, end, failing, involved, tuple(answers_at[end]), starts)


def describe(op: str, value: object, interval: str = "half-open") -> str:
    """A result or the model's exception, in the words counterexamples use."""
    if isinstance(value, Exception):
        return f"ValueError: {value}" if isinstance(value, ValueError) else f"{type(value).__name__}: {value}"
    if value is None:
        return "none" if op == "dispatch" else "ok"
    if isinstance(value, (list, tuple)):  # a batch: its entries' results, one call
        single = BATCH_OF.get(op, op)
        return "[" + "; ".join(describe(single, item, interval) for item in value) + "]"
    if op == "prune" and isinstance(value, int) and not isinstance(value, bool):
        return f"forgot {value} task{'' if value == 1 else 's'}"
    if hasattr(value, "accepted"):
        return "accepted" if value.accepted else f"rejected ({value.reason})" if value.reason else "rejected"
    if hasattr(value, "token"):
        return f"lease task {value.task_id} to {value.worker}, token {show_token(value.token)}, {show_span(value.started_at, value.expires_at, interval)}"
    return f"task {value}"
