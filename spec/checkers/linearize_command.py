"""``fencepost linearize HISTORY``: could a concurrent history have come from the sequential model?

  fencepost linearize HISTORY [--max-states N] [--order]

HISTORY is a JSON-lines history (spec/formats/history.py). The history is
linearizable when some order of its calls (1) puts a call that completed
before another was invoked first (real-time order), (2) lets each call whose
outcome is unknown (info) take effect at any point after its invocation, or
never, and (3) gives every recorded result when applied to the model one call
at a time: the same Lease fields, task ids, Outcome accepted (reasons are not
compared), a recorded ValueError exactly where the model raises one (such a
call changes nothing).

Declared variants: the history's header (``{"type": "header", "variants":
{...}}``) names the contract variants it is judged under, so no flag is
needed; ``--variant NAME=VALUE`` (repeatable) adds or repeats them, and one
that disagrees with the header is a usage error. The verdict's first line
says which were in force; where they allow several results for one call,
a result no order explains is shown with why the model allows no such
result after each order tried, and opaque tokens are cut short.

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
linearizable history. A step shows the model only the tasks the call can read
or change (``_State``), so it costs about the same whatever the number of tasks.
"""

from __future__ import annotations


from fencepost.spec.checkers.linearize import Verdict, describe
from fencepost.spec.formats.history import ERROR, INFO, Call, History
from fencepost.spec.variants import DEFAULT, Variants, show_token


#: Exit status when the search passed its budget before deciding.
EXIT_UNDECIDED = 3


# ---------------------------------------------------------------- words


def describe_call(call: Call) -> str:
    """``op(arg=value, ...)``; an opaque str token cut short."""
    shown = (f"{k}={show_token(v) if k == 'token' else repr(v)}" for k, v in call.args.items())
    return f"{call.op}({', '.join(shown)})"


def describe_outcome(call: Call, interval: str = "half-open") -> str:
    """What the history says a call returned (a lease's span as ``interval`` has it)."""
    if call.kind == INFO:
        return "unknown (info)"
    if call.kind == ERROR:
        return f"raised {call.error}"
    return describe(call.op, call.result, interval)


def duration_text(ns: int) -> str:
    """A span of nanoseconds in the largest unit that keeps it whole: ``50 ms``, ``250 us``, ``7 ns``."""
    for unit, size in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns and ns % size == 0:
            return f"{ns // size} {unit}"
    return f"{ns} ns"


def report(history: History, verdict: Verdict, show_order: bool = False, variants: Variants = DEFAULT,
           timing: object = None) -> list[str]:
    """The lines ``fencepost linearize`` prints for ``verdict``, judged under ``variants``
    (on a real clock with ``timing``, a ``linearize_realtime.RealTime``)."""
    events, calls = history.events, history.calls
    size = f"{len(calls)} calls by {len(history.processes)} processes"
    if variants != DEFAULT:
        size += f", under {variants.describe()}"
    if timing is not None:
        size += (f", on a real clock (tick {duration_text(timing.tick_ns)}, resolution "
                 f"{duration_text(timing.resolution_ns)}, offset {duration_text(timing.offset_ns)}): "
                 "each timed call at some instant inside its interval")
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
                      f" -> {describe_outcome(calls[i], variants.interval)}" for n, i in enumerate(verdict.order, 1)]
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
        if timing is not None:  # where on the real clock the call may have taken effect, from the first stamp
            low, high = timing.readings[i]
            ms = timing.resolution_ns / 1e6
            first = timing.readings[0][0] if timing.readings else 0
            span += f" at +{(low - first) * ms:g}..{'' if high is None else f'{(high - first) * ms:g}'} ms"
        mark = "   <-- no order explains this result" if i == f.call else ""
        rows.append((c.process, span, describe_call(c), (describe_outcome(c, variants.interval) if done else "not yet known") + mark))
    widths = [max(len(row[k]) for row in rows) for k in range(3)]
    lines += [f"  {p:<{widths[0]}}  {s:<{widths[1]}}  {call:<{widths[2]}} -> {result}" for p, s, call, result in rows]
    if any(answer.why for answer in f.answers):
        lines.append(f"the model allows no such result of {describe_call(bad)} by {bad.process} (line {events[f.end].line}):")
    else:
        lines.append(f"the model would have answered {describe_call(bad)} by {bad.process} (line {events[f.end].line}):")
    for answer in f.answers:
        after = ", ".join(f"{describe_call(calls[i])} by {calls[i].process}" for i in answer.before) or "nothing else"
        if answer.why:
            holder = _lease_with(history, answer.holding) if answer.holding is not None else None
            lines.append(f"  not allowed after {after}: {answer.why}" + (f", the lease {holder}" if holder else ""))
        else:
            lines.append(f"  {describe(bad.op, answer.value)}   (after {after})")
    if not f.answers:
        lines.append("  nothing: in no order consistent with real time do the calls before it reach it")
    return lines


def _lease_with(history: History, token: object) -> str | None:
    """Which call got the lease with ``token``: ``c1 got at line 19``, or None."""
    for call in history.calls:
        if call.op == "dispatch" and getattr(call.result, "token", None) == token and type(call.result.token) is type(token):
            return f"{call.process} got at line {history.events[call.completed].line}"
    return None
