"""A concurrent history laid out for a person: lanes, intervals, the order found, the words around it.

The history view (``tui/history.py``) and the history report
(``report/history.py``) draw the same picture; this module computes it once,
with no drawing in it. ``picture(history, verdict)`` gives the lanes (one per
client, in order of first appearance), each call's columns, where the
checker's order places each call (``linearization_points``), its number in
that order, and the stretch that cannot be ordered; ``model_lines``,
``lead_up_lines`` and ``order_lines`` are the words a reader needs to see
why. Every event of the history gets ``SCALE`` columns, so the picture is in
real-time order.
"""

from __future__ import annotations

from dataclasses import dataclass

from fencepost.spec import model
from fencepost.spec.checkers.linearize import Verdict
from fencepost.spec.checkers.linearize_command import describe_call, describe_outcome
from fencepost.spec.formats.history import Call, History
from fencepost.spec.protocol import FINAL_STATUSES, Status

#: Columns per event: room for a point between an invocation and the next event.
SCALE = 3

#: Calls before a failing stretch shown as its lead-up: up to half of them the latest that name
#: a task the stretch names, the rest the calls just before it.
LEAD_UP_CALLS = 14

#: Calls shown on each side of the selected one, in the order found (a linearizable history).
ORDER_CONTEXT = 8


@dataclass(frozen=True)
class HistoryPicture:
    """What the history view draws, computed once from a history and its verdict."""

    history: History
    verdict: Verdict
    lanes: tuple[str, ...]  # process names, in order of first appearance
    by_lane: tuple[tuple[int, ...], ...]  # call indices per lane, in invocation order
    lane_ends: tuple[tuple[int, ...], ...]  # end_of each call in by_lane, for finding what is on screen
    points: dict[int, int]  # call index -> column where the order places it
    placed: dict[int, int]  # call index -> its 1-based position in the order
    stretch: tuple[int, int] | None  # first and last column of the stretch that cannot be ordered
    failing: int | None  # the call no order explains

    @property
    def width(self) -> int:
        """Columns in the whole picture: ``SCALE`` per event, and room after the last for open ends."""
        return (len(self.history.events) + 1) * SCALE

    def start_of(self, index: int) -> int:
        """The column where call ``index`` is drawn to start."""
        return self.history.calls[index].invoked * SCALE

    def end_of(self, index: int) -> int:
        """The column where call ``index`` is drawn to end (the last column if it never ended)."""
        return _end_column(self.history, index)


def picture(history: History, verdict: Verdict) -> HistoryPicture:
    """The picture of ``history`` as ``verdict`` decided it. O(calls)."""
    lanes = history.processes
    lane_of = {name: n for n, name in enumerate(lanes)}
    by_lane: list[list[int]] = [[] for _ in lanes]
    for call in history.calls:
        by_lane[lane_of[call.process]].append(call.index)
    points = linearization_points(history, verdict.order)
    failure = verdict.failure
    return HistoryPicture(
        history=history,
        verdict=verdict,
        lanes=lanes,
        by_lane=tuple(tuple(calls) for calls in by_lane),
        lane_ends=tuple(tuple(_end_column(history, i) for i in calls) for calls in by_lane),
        points=points,
        placed={index: n for n, index in enumerate(verdict.order, 1)},
        stretch=(failure.start * SCALE, failure.end * SCALE) if failure else None,
        failing=failure.call if failure else None,
    )


def _end_column(history: History, index: int) -> int:
    call = history.calls[index]
    return call.ended * SCALE if call.ended is not None else (len(history.events) + 1) * SCALE - 1


def linearization_points(history: History, order: tuple[int, ...], slots: int = SCALE) -> dict[int, int]:
    """A slot for each placed call, increasing along ``order`` where there is room, on the call's interval.

    Every event has ``slots`` slots (the TUI draws one a column, the report
    one a third of an event). Each call goes just after its invocation or
    just after the point before it, whichever is later. Since the order
    respects real time, every call placed earlier was invoked before this one
    completed, so the point lies within the call's interval, unless more
    points crowd into one event's slots than fit: then it stays at its
    interval's last inner slot. An info call's point may lie past its info
    event: it may take effect at any time after its invocation. O(len(order)).
    """
    points, last = {}, -1
    for index in order:
        call = history.calls[index]
        slot = max(call.invoked * slots + 1, last + 1)
        if call.completed is not None:
            slot = min(slot, call.completed * slots - 1)
        points[index] = last = slot
    return points


def tasks_named(call: Call) -> set[int]:
    """The task ids a call names: its ``task_id`` argument, the task a submit returned or a dispatch leased."""
    named = set()
    if isinstance(call.args.get("task_id"), int):
        named.add(call.args["task_id"])
    if call.op == "submit" and isinstance(call.result, int) and not isinstance(call.result, bool):
        named.add(call.result)
    task_id = getattr(call.result, "task_id", None)
    if isinstance(task_id, int):
        named.add(task_id)
    return named


def _line_of(history: History, call: Call) -> str:
    events = history.events
    end = events[call.ended].line if call.ended is not None else "open"
    return f"lines {events[call.invoked].line}-{end}"


def _call_rows(history: History, indices: list[int], marks: dict[int, str] | None = None) -> list[str]:
    """One aligned line per call: number, client, lines, the call, its recorded result, and a mark."""
    calls, marks = history.calls, marks or {}
    rows = [(f"#{i + 1}", calls[i].process, _line_of(history, calls[i]), describe_call(calls[i]), describe_outcome(calls[i]))
            for i in indices]
    if not rows:
        return []
    widths = [max(len(row[k]) for row in rows) for k in range(4)]
    return [
        f"  {a:>{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d:<{widths[3]}} -> {e}{marks.get(i, '')}"
        for i, (a, b, c, d, e) in zip(indices, rows)
    ]


def model_lines(history: History, verdict: Verdict) -> list[str]:
    """The model's state where the failing stretch begins: the clock, the workers, the tasks the
    stretch names one by one, and how many others are in each status. Empty unless the
    verdict is a failure that kept its states. O(tasks)."""
    failure = verdict.failure
    if failure is None or not failure.starts:
        return []
    state, events = failure.starts[0], history.events
    named = sorted(set().union(*(tasks_named(history.calls[i]) for i in failure.involved)))
    where = f"line {events[failure.start].line}" if failure.start < len(events) else "the end"
    more = len(failure.starts)
    head = f"The model where the stretch begins ({where}), at t={state.now}"
    if more > 1:
        head += f": the calls before it leave the model in one of {more}{'+' if more == 3 else ''} states; the first"
    lines = [head + ":"]
    leased = {name: 0 for name, _ in state.workers}
    counts: dict[str, int] = {}
    for task in state.tasks:
        if task is None:
            continue
        if task.status is Status.RUNNING and task.worker in leased:
            leased[task.worker] += 1
        kind = "forgotten" if task.forgotten else "final" if task.status in FINAL_STATUSES else task.status.value
        counts[kind] = counts.get(kind, 0) + 1
    workers = ", ".join(f"{name} {leased[name]}/{capacity} leased" for name, capacity in state.workers) or "none"
    lines.append(f"  workers: {workers}")
    held = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "none"
    lines.append(f"  tasks: {held}")
    for task_id in named:
        task = state.tasks[task_id - 1] if 1 <= task_id <= len(state.tasks) else None
        lines.append(f"  task {task_id}: {_task_words(task)}")
    return lines


def _task_words(task: model.Task | None) -> str:
    """A task as the checker's model holds it (canonical: a final task's details are not kept)."""
    if task is None:
        return "not submitted yet"
    if task.forgotten:
        return "forgotten by a prune: every call naming it is refused, and its id is never given again"
    if task.status in FINAL_STATUSES:
        return "final (which final status, no later call can tell: the checker keeps no more)"
    if task.status is Status.RUNNING:
        words = f"running on {task.worker} under token {task.token}, lease until t={task.expires_at}, attempt {task.attempts}"
        return words + (", cancel requested" if task.cancel_requested else "")
    return f"{task.status.value}, priority {task.priority}, due t={task.due_at}, {task.attempts} attempts so far"


def lead_up_lines(history: History, verdict: Verdict, limit: int = LEAD_UP_CALLS) -> list[str]:
    """What led to the failing stretch, oldest first, at most ``limit`` calls: the last
    ones before it that name a task the stretch names or are prunes (which may have forgotten
    one: marked), and the calls just before it by any client to make up the rest. O(calls)."""
    failure = verdict.failure
    if failure is None:
        return []
    calls = history.calls
    named = set().union(*(tasks_named(calls[i]) for i in failure.involved))
    before = [call for call in calls if call.invoked < failure.start and call.index not in set(failure.involved)]
    naming = [call.index for call in reversed(before) if tasks_named(call) & named or (named and call.op == "prune")][: limit // 2]
    found = set(naming)
    for call in reversed(before):
        if len(found) >= limit:
            break
        found.add(call.index)
    if not found:
        return []
    ids = ", ".join(str(t) for t in sorted(named))
    marks = {index: "   <-- a prune (it forgets final tasks)" if calls[index].op == "prune"
             else f"   <-- task {', '.join(str(t) for t in sorted(tasks_named(calls[index]) & named))}" for index in naming}
    prunes = " and the prunes" if any(calls[index].op == "prune" for index in naming) else ""
    head = (f"Before the stretch: the last calls on task{'s' if len(named) > 1 else ''} {ids}{prunes} (marked), "
            "and the calls just before it:")
    return [head] + _call_rows(history, sorted(found), marks)


def order_lines(history: History, verdict: Verdict, selected: int | None, context: int = ORDER_CONTEXT) -> list[str]:
    """The calls around ``selected`` in the order found (a linearizable history), numbered by place."""
    if not verdict.linearizable or selected is None:
        return []
    order = verdict.order
    place = {index: n for n, index in enumerate(order)}
    if selected not in place:
        return []
    at = place[selected]
    window = list(order[max(0, at - context): at + context + 1])
    marks = {selected: "   <-- selected"}
    return [f"In the order found, places {max(0, at - context) + 1} to {min(len(order), at + context + 1)} of {len(order)}:"] \
        + _call_rows(history, window, marks)
