"""A scenario executed once, up front, into the frames the TUI shows.

``build_timeline(scenario, factory)`` drives a fresh scheduler from
``factory`` through every step and records frame 0 (before any step) to
frame N (after the last): what the step was, what it returned, what happened
because of it (``Event``) and whether it broke its ``expect``. Beside it the
spec's model (``spec.model``) runs the same steps and records a ``Check`` per
frame: the model's answer, its task views, and where the implementation parts
from it. The three columns at a frame come from ``Timeline.board(index)``:
the view is a pure function of the step index, so stepping back is exact.

Nothing here imports Textual. The widgets only format what this module hands
them. This module is the frame store: the rows at every frame, the columns
and the model's checks. The words said about each step (why a task was
picked, which lease expired, why a completion was refused) are
``story.narration``'s, which any view can use.

Scale. Task views are not copied for every frame: each frame stores only the
rows that changed (before and after), a full copy is kept now and then
(``_Track.record`` says when: never more rows in the copies than
``CHECKPOINT_SHARE`` times the changes in the diffs, so memory grows with the
trace, not with its square), and a cursor walks the diffs from the nearest
known point, so a step forward or back costs the size of one diff and a far
jump about as much as copying the rows at that frame. Nothing is run before it is
read: ``Timeline(scenario, factory)`` holds frame 0 only, and reading frame k
(``frames[k]``, ``board(k)``) runs the implementation up to step k, so a
100,000-step scenario opens at its first screen in the time of a few steps;
``run_steps()`` (the TUI runs it in a thread) runs the rest. The model is the
contract written for reading, not for speed, so it comes after:
``run_model()`` fills in the checks frame by frame. ``build_timeline`` does
both at once (``model=False``: the implementation's side only), for callers
that want every frame, as the report does.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import operator
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from fencepost.spec import model
from fencepost.spec.formats.scenario import Scenario, Step, StepResult, expect_from
from fencepost.spec.checkers.steps import (
    apply_step,
    bool_field,
    check_expect,
    check_state,
    describe_call,
    describe_result,
    int_field,
)
from fencepost.spec.checkers.renaming import Renaming
from fencepost.spec.checkers.replay import check_clock, check_renamed
from fencepost.spec.protocol import RESTART, offers_restart, says_forgotten
from fencepost.spec.variants import DEFAULT, Variants
from fencepost.story.narration import (
    CALL,
    NOTABLE_KINDS,
    Event,
    Narrator,
    mismatch_event,
    result_divergence,
    view_difference,
)
from fencepost.story.rows import Change, Row, same_lease
from fencepost.story.sorted_rows import RowsView, SortedRows

#: A full copy of one side's task rows is kept at most every this many frames.
CHECKPOINT_EVERY = 256

#: A full copy of n rows is kept once the diffs since the last copy hold n / CHECKPOINT_SHARE
#: changed rows: all the copies then hold at most this many times the rows the diffs hold (a copy
#: every ``CHECKPOINT_EVERY`` frames of a trace that first submits 10^5 tasks held 20 million rows,
#: 15 kB a step), and a walk from a copy costs about what the copy does.
CHECKPOINT_SHARE = 2

#: Up to this many tasks (a shrunk counterexample has a handful), every task
#: view is re-read after every step, so any change an implementation makes is
#: seen. Past it only the tasks a step can touch under the protocol are re-read
#: (the one it names, the one it submitted or leased, and every running one
#: after a timed call), which keeps a 10,000-task scenario cheap to open.
FULL_SCAN_LIMIT = 64

Side = Literal["impl", "model"]

#: Boards ``Timeline.board`` keeps made, so that a screen redrawn at the same frame (either side)
#: reuses them; past this many it forgets them all, so a long walk through the frames holds no more.
BOARDS_KEPT = 8

#: Operations that take no time, so expire no lease.
UNTIMED = frozenset({"add_worker", "submit"})

WAITING = frozenset({"pending", "retry_wait"})

#: What a side's read returns for a task that ``prune`` forgot (its row leaves the board).
FORGOTTEN = object()


# The columns' orders. Every key ends in the task id, so no two rows tie.
_RANK = operator.attrgetter("rank")  # due pending tasks: the dispatch order
_DUE_THEN_RANK = operator.attrgetter("due_at", "rank")  # not-yet-due ones: when they become due


def _RUNNING_ORDER(row: Row) -> tuple:  # by worker, then lease start
    return (str(row.worker), row.started_at or 0, row.id)


def _DONE_ORDER(row: Row) -> tuple:  # most recently finished first
    return (-row.since, row.id)


@dataclass(frozen=True, slots=True)
class WorkerLoad:
    name: str
    used: int  # running tasks on this worker, counted from the task views
    capacity: int


@dataclass(frozen=True, slots=True)
class Frame:
    """The implementation at one step index: everything but the task columns."""

    index: int  # 0 is before the first step
    now: int  # the implementation's clock after this step
    step: Step | None  # None at frame 0
    outcome: StepResult | None  # what the implementation returned or raised (None at frame 0)
    error: str | None  # the implementation raised this message
    mismatch: str | None  # how the step's expect did not hold
    events: tuple[Event, ...]  # what happened because of this step
    changed: frozenset[int]  # task ids whose row changed at this step
    workers: tuple[WorkerLoad, ...]
    interval: str = "half-open"  # the interval variant in force: how a lease's span is worded

    # Worded on demand: a 10,000-step timeline shows a few dozen of them.

    @property
    def call(self) -> str:
        """The call as Python ("" at frame 0)."""
        return describe_call(self.step) if self.step is not None else ""

    @property
    def result(self) -> str:
        """The implementation's answer in words ("" at frame 0)."""
        return describe_result(self.step, self.outcome, self.interval) if self.step is not None else ""

    @property
    def notable(self) -> bool:
        """An expiry or a rejection happened at this step."""
        return any(e.kind in NOTABLE_KINDS for e in self.events)


@dataclass(frozen=True, slots=True)
class Check:
    """The model at the same step index, and where the implementation parts from it."""

    index: int
    now: int  # the model's clock after this step
    result: str  # the model's answer in words
    divergence: str | None  # how this step's result or changes differ from the model's
    differing: int  # tasks whose views differ after this step
    changed: frozenset[int]
    workers: tuple[WorkerLoad, ...]


@dataclass(frozen=True, slots=True)
class Board:
    """The three columns at one frame, for one side."""

    side: Side
    now: int
    # Read-only sequences (``RowsView``), never changed once the board is made:
    pending: Sequence[Row]  # the next pick first: due tasks in dispatch order, then the rest by due time
    running: Sequence[Row]  # by worker, then lease start
    done: Sequence[Row]  # most recently finished first
    workers: tuple[WorkerLoad, ...]
    changed: frozenset[int]
    keys: dict[int, str] = field(default_factory=dict)  # task id -> idempotency key, for tasks submitted with one
    interval: str = "half-open"  # the interval variant in force: how a lease's span is worded


#: Longest idempotency key a task column shows; a longer one is cut with an ellipsis.
KEY_SHOWN = 10


def short_key(key: str) -> str:
    """``key`` cut to ``KEY_SHOWN`` characters for a task column."""
    return key if len(key) <= KEY_SHOWN else key[: KEY_SHOWN - 1] + "…"


class _Track:
    """One side's per-frame row diffs, with a full copy of the rows now and then."""

    def __init__(self) -> None:
        self.diffs: list[tuple[Change, ...]] = [()]  # diffs[k]: what frame k changed
        self.checkpoints: dict[int, dict[int, Row]] = {0: {}}
        self._last = 0  # the frame of the last copy
        self._changed = 0  # rows changed in the diffs since it

    def record(self, changes: tuple[Change, ...], live: dict[int, Row]) -> None:
        """Append frame ``len(diffs)``'s ``changes``; copy ``live`` (its rows after them) when
        ``CHECKPOINT_EVERY`` frames and ``len(live) / CHECKPOINT_SHARE`` changed rows have passed
        since the last copy."""
        self.diffs.append(changes)
        index = len(self.diffs) - 1
        self._changed += len(changes)
        if index - self._last >= CHECKPOINT_EVERY and self._changed * CHECKPOINT_SHARE >= len(live):
            self.checkpoints[index] = dict(live)
            self._last, self._changed = index, 0


class _Cursor:
    """Walks a track's diffs to any frame, forward or back, from where it last was."""

    def __init__(self, track: _Track) -> None:
        self._track = track
        self._at = 0
        self._rows: dict[int, Row] = {}

    def rows_at(self, index: int) -> dict[int, Row]:
        """The rows at frame ``index``. The dict is the cursor's own: read it, don't keep it."""
        track = self._track
        if abs(index - self._at) > CHECKPOINT_EVERY // 2:
            anchor = min(list(track.checkpoints), key=lambda k: abs(k - index))
            if abs(anchor - index) < abs(self._at - index):
                self._at, self._rows = anchor, dict(track.checkpoints[anchor])
        rows = self._rows
        while self._at < index:
            self._at += 1
            for task_id, _before, after in track.diffs[self._at]:
                if after is None:  # forgotten by prune: the row is gone
                    del rows[task_id]
                else:
                    rows[task_id] = after
        while self._at > index:
            for task_id, before, _after in track.diffs[self._at]:
                if before is None:
                    del rows[task_id]
                else:
                    rows[task_id] = before
            self._at -= 1
        return rows


class _Waiting:
    """The waiting tasks (pending, retry_wait) of the live rows, for "who is next".

    Two heaps with lazy deletion: a row pushed when it becomes waiting is
    stale once ``rows`` holds another object for that id. Used only to explain
    a dispatch (the runner-up it beat) and an empty one (what is due next).
    """

    def __init__(self, rows: dict[int, Row]) -> None:
        self._rows = rows
        self._due: list[tuple] = []  # (due_at, -priority, id, seq, row): not yet due when last asked
        self._ready: list[tuple] = []  # (-priority, due_at, id, seq, row): due when last asked
        self._seq = itertools.count()
        self._time = 0

    def push(self, row: Row) -> None:
        heapq.heappush(self._due, (row.due_at, -row.priority, row.id, next(self._seq), row))

    def best_due(self, now: int) -> Row | None:
        """The waiting task a dispatch at ``now`` would pick."""
        self._catch_up(now)
        while self._ready and self._rows.get(self._ready[0][2]) is not self._ready[0][4]:
            heapq.heappop(self._ready)
        return self._ready[0][4] if self._ready else None

    def soonest(self, now: int) -> Row | None:
        """The waiting task that becomes due first after ``now``."""
        self._catch_up(now)
        while self._due and self._rows.get(self._due[0][2]) is not self._due[0][4]:
            heapq.heappop(self._due)
        return self._due[0][4] if self._due else None

    def _catch_up(self, now: int) -> None:
        if now < self._time:  # only an implementation whose clock went back
            for entry in self._ready:
                self.push(entry[4])
            self._ready.clear()
        self._time = now
        while self._due and self._due[0][0] <= now:
            row = heapq.heappop(self._due)[4]
            if self._rows.get(row.id) is row:
                heapq.heappush(self._ready, (-row.priority, row.due_at, row.id, next(self._seq), row))


def _due_by(now: int) -> tuple:
    """Above every waiting row's ``_DUE_THEN_RANK`` key that is due at ``now``, below every other."""
    return (now, (math.inf,))


class _Columns:
    """Pending (due, then not yet due), Running and Done of one side, kept sorted
    while walking the track's diffs, so a step re-sorts nothing.

    Invariant: ``waiting`` holds every waiting row by due time, ``due`` those with
    ``due_at <= now`` in dispatch order, for the ``now`` last asked for; the not yet
    due ones are ``waiting``'s rows past ``now``. Far jumps rebuild from a cursor.
    """

    #: Walk at most this many frames' diffs; further, rebuild from the rows.
    WALK_LIMIT = 64

    def __init__(self, track: _Track) -> None:
        self._track = track
        self._cursor = _Cursor(track)
        self._at: int | None = None
        self._now = 0

    def at(self, index: int, now: int) -> tuple[RowsView, RowsView, RowsView]:
        """Pending (due ones in dispatch order, then the rest by due time), Running and
        Done at frame ``index``, whose clock is ``now``: views that later calls leave as they are."""
        if self._at is None or abs(index - self._at) > self.WALK_LIMIT:
            self._rebuild(index, now)
        diffs = self._track.diffs
        while self._at < index:
            self._at += 1
            for _, before, after in diffs[self._at]:
                if before is not None:
                    self._remove(before)
                if after is not None:  # None: forgotten by prune, it leaves every column
                    self._add(after)
        while self._at > index:
            for _, before, after in diffs[self._at]:
                if after is not None:
                    self._remove(after)
                if before is not None:
                    self._add(before)
            self._at -= 1
        self._move_to(now)
        later = self.waiting.view(above=_due_by(now))
        return RowsView(self.due.view()._blocks + later._blocks), self.running.view(), self.done.view()

    def _rebuild(self, index: int, now: int) -> None:
        rows = self._cursor.rows_at(index).values()
        waiting = [r for r in rows if r.status in WAITING]
        self.waiting = SortedRows(_DUE_THEN_RANK, waiting)
        self.due = SortedRows(_RANK, (r for r in waiting if r.due_at <= now))
        self.running = SortedRows(_RUNNING_ORDER, (r for r in rows if r.status == "running"))
        self.done = SortedRows(_DONE_ORDER, (r for r in rows if r.status not in WAITING and r.status != "running"))
        self._at, self._now = index, now

    def _add(self, row: Row) -> None:
        if row.status in WAITING:
            self.waiting.add(row)
            if row.due_at <= self._now:
                self.due.add(row)
        else:
            (self.running if row.status == "running" else self.done).add(row)

    def _remove(self, row: Row) -> None:
        if row.status in WAITING:
            self.waiting.remove(row)
            if row.due_at <= self._now:
                self.due.remove(row)
        else:
            (self.running if row.status == "running" else self.done).remove(row)

    #: Moving more rows than a ``MOVE_SHARE``-th of Pending's due part is done by sorting it
    #: again: a move copies one block, a sort is a pass over every row with its key made again.
    MOVE_SHARE = 4

    def _move_to(self, now: int) -> None:
        """Move rows in or out of the due part for the clock ``now``: those due in between."""
        if now == self._now:
            return
        low, high = sorted((self._now, now))
        moving = self.waiting.between(_due_by(low), _due_by(high))
        if len(moving) > max(self.WALK_LIMIT, len(self.due) // self.MOVE_SHARE):
            self.due = SortedRows(_RANK, self.waiting.between((-math.inf,), _due_by(now)))
        elif now > self._now:  # the common way: tasks become due
            for row in moving:
                self.due.add(row)
        else:  # stepping back over a time advance
            for row in moving:
                self.due.remove(row)
        self._now = now


@dataclass
class _Side:
    """The live state of one side while its frames are recorded."""

    rows: dict[int, Row] = field(default_factory=dict)
    ids: list[int] = field(default_factory=list)  # task ids, in submit order
    running: set[int] = field(default_factory=set)
    capacity: dict[str, int] = field(default_factory=dict)  # from add_worker calls that did not raise
    track: _Track = field(default_factory=_Track)
    keys: dict[int, str] = field(default_factory=dict)  # task id -> the idempotency key it was submitted with
    duplicate: bool = False  # the last submit returned a task submitted before (by its key)

    def loads(self) -> tuple[WorkerLoad, ...]:
        used = dict.fromkeys(self.capacity, 0)
        for task_id in self.running:
            worker = self.rows[task_id].worker
            used[worker] = used.get(worker, 0) + 1
        return tuple(WorkerLoad(str(name), n, self.capacity.get(name, 0)) for name, n in used.items())

    def note_result(self, step: Step, result: StepResult) -> None:
        self.duplicate = False
        if result.error is not None:
            return
        if step.op == "submit" and isinstance(result.value, int) and not isinstance(result.value, bool):
            if self.ids and result.value <= self.ids[-1]:  # ids rise with every new task: a duplicate by key
                self.duplicate = True
                return
            self.ids.append(result.value)
            if isinstance(step.args.get("key"), str):
                self.keys[result.value] = step.args["key"]
        elif step.op == "add_worker":
            self.capacity[step.args["worker"]] = step.args["capacity"]
        elif step.op == "submit_many" and isinstance(result.value, (list, tuple)):
            for entry, task_id in zip(step.args.get("tasks", ()), result.value):
                if isinstance(task_id, int) and (not self.ids or task_id > self.ids[-1]):  # else a duplicate by key
                    self.ids.append(task_id)
                    if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                        self.keys[task_id] = entry["key"]

    def touched(self, step: Step, result: StepResult, also: Iterable[int] = ()) -> Iterable[int]:
        """The task ids to re-read after ``step``: all of them while there are few, or after a restart."""
        if len(self.ids) <= FULL_SCAN_LIMIT or step.op == RESTART:
            return self.ids
        ids = set(also)
        if step.op not in UNTIMED:  # an untimed call expires nothing
            ids.update(self.running)
        task_id = step.args.get("task_id")
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            ids.add(task_id)
        value = result.value
        if step.op == "prune":  # any final task may be forgotten
            ids.update(task_id for task_id, row in self.rows.items() if row.status not in WAITING and row.status != "running")
        if step.op == "submit" and isinstance(value, int):
            ids.add(value)
        elif step.op == "dispatch" and isinstance(getattr(value, "task_id", None), int):
            ids.add(value.task_id)
        elif step.op == "submit_many" and isinstance(value, (list, tuple)):
            ids.update(i for i in value if isinstance(i, int))
        elif step.op == "dispatch_many" and isinstance(value, (list, tuple)):
            ids.update(lease.task_id for lease in value if isinstance(getattr(lease, "task_id", None), int))
        elif step.op in ("complete_many", "fail_many"):
            ids.update(pair[0] for pair in step.args.get("reports", ()) if isinstance(pair, (list, tuple)) and pair
                       and isinstance(pair[0], int) and pair[0] in self.rows)
        return sorted(ids)

    def refresh(
        self,
        ids: Iterable[int],
        read: Callable[[int], object | None],
        now: int,
        index: int,
        waiting: _Waiting | None = None,
    ) -> tuple[Change, ...]:
        """Re-read the views of ``ids``; record and return the rows that changed."""
        changes = []
        for task_id in ids:
            view = read(task_id)
            if view is FORGOTTEN:  # prune forgot it: its row goes (a change to None)
                previous = self.rows.pop(task_id, None)
                if previous is not None:
                    changes.append((task_id, previous, None))
                continue
            if view is None:
                continue
            previous = self.rows.get(task_id)
            row = _row(view, previous, now, index)
            if previous is None or row.view != previous.view:
                self.rows[task_id] = row
                changes.append((task_id, previous, row))
                if row.status == "running":
                    self.running.add(task_id)
                else:
                    self.running.discard(task_id)
                    if waiting is not None and row.status in WAITING:
                        waiting.push(row)
        changes = tuple(changes)
        self.track.record(changes, self.rows)
        return changes


def _row(view: object, previous: Row | None, now: int, frame: int) -> Row:
    """Normalise a task view (any object with the protocol's attribute names)."""
    status = str(getattr(view.status, "value", view.status))
    row = Row(
        view.id, status, view.priority, view.due_at, view.attempts, view.worker,
        view.token, view.expires_at, bool(view.cancel_requested), None, frame,
        (-view.priority, view.due_at, view.id),
    )
    if status == "running":
        started_at = previous.started_at if previous is not None and same_lease(previous, row) else now
        row = row._replace(started_at=started_at)
    if previous is not None and previous.status == status:
        row = row._replace(since=previous.since)
    return row


def _result_key(result: StepResult, number: Callable[[object], object] = lambda token: token) -> object:
    """What implementation and model must agree on: raised or not, and the value's fields.

    ``number`` maps a lease's token to what is compared (under ``tokens=opaque``
    the model's number for it, ``Renaming.number_of``).
    """
    if result.error is not None:
        return "raised"
    value = result.value
    if hasattr(value, "accepted"):
        return ("outcome", bool_field(value.accepted))
    if hasattr(value, "token"):
        return ("lease", int_field(value.task_id), value.worker, int_field(number(value.token)),
                int_field(value.started_at), int_field(value.expires_at))
    return int_field(value)


class _Frames(Sequence[Frame]):
    """Frames 0..``last`` of a timeline. Reading frame k runs the implementation
    up to step k if it has not got there yet (``Timeline.run_to``); its length is
    every frame's, run or not."""

    __slots__ = ("_timeline",)

    def __init__(self, timeline: Timeline) -> None:
        self._timeline = timeline

    def __len__(self) -> int:
        return self._timeline.last + 1

    def __getitem__(self, index):  # type: ignore[override]  # int -> Frame, slice -> list[Frame]
        timeline = self._timeline
        if isinstance(index, slice):
            start, stop, stride = index.indices(len(self))
            timeline.run_to(max(start, stop - 1) if stride > 0 else start)
            return timeline._frames[index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"frame {index} is past the last step, {timeline.last}")
        timeline.run_to(index)
        return timeline._frames[index]

    def __eq__(self, other: object) -> bool:  # frame by frame, as two lists of frames compare
        if not isinstance(other, (_Frames, list)):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # equal by content, which grows

    def __repr__(self) -> str:
        return f"<frames 0..{self._timeline.last} of a timeline, {self._timeline.ran} run>"


class Timeline:
    """Frames 0..N of one scenario against one implementation, and the model's checks.

    Made with frame 0 only: a frame is run when it is first read
    (``frames[k]``, ``board(k)``, ``run_to(k)``, ``run_steps()``), from any
    thread, one step at a time under a lock, in order. ``build_timeline``
    runs them all. ``append`` extends it by one step (the interactive mode),
    keeping the live scheduler and model state. ``notable``, ``mismatches``,
    ``divergences``, ``log`` and ``log_end`` cover the frames run so far
    (``ran``), ``checks`` the frames the model has reached.
    """

    def __init__(self, scenario: Scenario, factory: Callable[[], object], variants: Variants = DEFAULT) -> None:
        self.scenario = scenario
        self.factory = factory
        self.variants = variants  # the declared contract variants the model beside the scheduler follows
        self._steps: list[Step] = list(scenario.steps)  # every step, run or not: the scenario's, then any appended
        self._frames: list[Frame] = [Frame(0, 0, None, None, None, None, (), frozenset(), ())]  # the frames run so far
        self._impl_lock = threading.Lock()  # held while a step runs: the scheduler is called from one thread at a time
        self.frames: Sequence[Frame] = _Frames(self)
        self.checks: list[Check] = [Check(0, 0, "", None, 0, frozenset(), ())]
        self.notable: list[int] = []  # frames with an expiry or a rejection, ascending
        self.mismatches: list[int] = []  # frames whose expect did not hold
        self.divergences: list[int] = []  # frames where the implementation parts from the model
        # The event log, flat: frame k owns log[log_end[k - 1]:log_end[k]], its call line first
    # (an Event of kind "call" with no text: the frame's call and result are the line).
        self.log: list[tuple[int, Event]] = []
        self.log_end: list[int] = [0]
        # Steps are judged as replay judges them (spec.checkers.replay), so report and replay name the
        # same first problem: under tokens=opaque a step's token N is the N-th the scheduler handed out.
        self._renaming = Renaming() if variants.tokens == "opaque" else None
        self._scheduler = factory()
        self._impl = _Side()
        self._waiting = _Waiting(self._impl.rows)
        self._narrator = Narrator(self._impl, self._waiting, variants.interval)
        self._results: list[object] = [None]  # _result_key of every frame's implementation result
        self._state = model.initial(variants)
        self._model = _Side()
        self._model_lock = threading.Lock()
        self._model_impl_cursor = _Cursor(self._impl.track)
        self._differing: set[int] = set()
        self._cursors = {"impl": _Cursor(self._impl.track), "model": _Cursor(self._model.track)}
        self._columns = {"impl": _Columns(self._impl.track), "model": _Columns(self._model.track)}
        self._boards: dict[tuple[int, Side], Board] = {}

    # ------------------------------------------------------------ reading

    @property
    def last(self) -> int:
        """The index of the last frame, which is the number of steps (run or not)."""
        return len(self._steps)

    @property
    def ran(self) -> int:
        """How many frames have been run so far (frame 0 counts): ``ran - 1`` steps."""
        return len(self._frames)

    @property
    def steps(self) -> tuple[Step, ...]:
        """The steps: the scenario's, then any appended (as recorded, with their ``expect``)."""
        return tuple(self._steps)

    @property
    def model_done(self) -> bool:
        """Every frame has its model check."""
        return len(self.checks) == len(self.frames)

    def check(self, index: int) -> Check | None:
        """The model's check of frame ``index``, or None while it is still being computed."""
        return self.checks[index] if index < len(self.checks) else None

    def board(self, index: int, side: Side = "impl") -> Board | None:
        """The Pending, Running and Done columns at frame ``index``
        (None for the model's side of a frame it has not reached yet)."""
        if side == "model" and index >= len(self.checks):
            return None
        self.run_to(index)
        key = (index, side)
        board = self._boards.get(key)
        if board is None:
            if len(self._boards) >= BOARDS_KEPT:
                self._boards.clear()
            board = self._boards[key] = self._make_board(index, side)
        return board

    def differences(self, index: int) -> list[str]:
        """Every task whose implementation view differs from the model's at frame
        ``index``, in words (empty before the model has reached it)."""
        check = self.check(index)
        if check is None or not check.differing:
            return []
        mine = dict(self._cursors["impl"].rows_at(index))
        theirs = self._cursors["model"].rows_at(index)
        ids = sorted(mine.keys() | theirs.keys())
        return [text for task_id in ids if (text := view_difference((task_id,), mine, theirs))]

    def next_notable(self, index: int) -> int | None:
        """The first frame after ``index`` with an expiry or a rejection, if any
        (running the steps after the frames run so far until one is found)."""
        at = bisect.bisect_right(self.notable, index)
        while at == len(self.notable) and self.ran <= self.last:
            self.run_to(self.ran)
        return self.notable[at] if at < len(self.notable) else None

    def previous_notable(self, index: int) -> int | None:
        """The last frame before ``index`` with an expiry or a rejection, if any."""
        self.run_to(min(index, self.last))
        at = bisect.bisect_left(self.notable, index)
        return self.notable[at - 1] if at > 0 else None

    # ------------------------------------------------------------ running the implementation

    def run_to(self, index: int) -> None:
        """Run the implementation until frame ``index`` exists (nothing if it does).

        Any thread may call it: each step runs under the lock, and a step
        another thread ran meanwhile is not run again.
        """
        while len(self._frames) <= index:
            with self._impl_lock:
                if len(self._frames) <= index:
                    self._run_next()

    def _run_next(self) -> None:
        """Run the first step not run yet (the caller holds the lock)."""
        step = self._steps[len(self._frames) - 1]
        self._run_impl(step, *self._apply_impl(step))

    def run_steps(
        self,
        should_stop: Callable[[], bool] = lambda: False,
        progress: Callable[[int], None] | None = None,
        every: int = 500,
    ) -> bool:
        """Run every step not run yet; True when all have been (False: ``should_stop()`` said so).

        ``progress(ran)`` is called every ``every`` frames. Safe beside readers in
        other threads, as ``run_model`` is.
        """
        while self.ran <= self.last:
            if should_stop():
                return False
            self.run_to(min(self.last, self.ran + every - 1))
            if progress is not None:
                progress(self.ran)
        return True

    def _make_board(self, index: int, side: Side) -> Board:
        if side == "impl":
            frame = self.frames[index]
            now, workers, changed = frame.now, frame.workers, frame.changed
        else:
            check = self.checks[index]
            now, workers, changed = check.now, check.workers, check.changed
        pending, running, done = self._columns[side].at(index, now)
        return Board(side, now, pending, running, done, workers, changed, self._impl.keys, self.variants.interval)

    # ------------------------------------------------------------ building: the implementation

    def append(self, step: Step, record_expect: bool = False) -> Frame | str:
        """Run one more step (interactive mode) and return its frame.

        A step the implementation refuses with an error is not recorded: its
        message is returned instead, and nothing changed (rule 2 of the
        protocol; the model is pure and was not asked). With
        ``record_expect`` the step is recorded with its result as ``expect``,
        so a scenario written from the session replays as a check. The
        model's check of the new frame is computed at once unless a
        ``run_model`` is under way.
        """
        with self._impl_lock:
            while len(self._frames) <= self.last:  # the scenario's steps first
                self._run_next()
            result, crash = self._apply_impl(step)
            if result.error is not None:
                return crash or result.error
            if record_expect:
                step = Step(step.op, step.args, step.note, expect_from(step, result))
            self._steps.append(step)
            self._run_impl(step, result, None)
        if not self._model_lock.locked():
            self.run_model()
        return self._frames[-1]

    def _apply_impl(self, step: Step) -> tuple[StepResult, str | None]:
        """The step's result, and how the implementation broke the protocol if it raised
        something other than ``ValueError`` (then the result is that error)."""
        if step.op == RESTART and not offers_restart(self._scheduler):
            problem = f"{type(self._scheduler).__name__} has no reopen(), so it cannot restart"
            return StepResult(error=problem), problem
        sent = step
        if self._renaming is not None:
            args = self._renaming.args_to_scheduler(step.op, step.args)
            if args is not step.args:
                sent = Step(op=step.op, args=args, note=step.note, expect=step.expect,
                            expect_state=step.expect_state, question=step.question)
        try:
            return apply_step(self._scheduler, sent), None
        except Exception as exc:  # noqa: BLE001 - a broken implementation must not take the viewer down
            crash = f"raised {type(exc).__name__}, but the protocol allows only ValueError"
            return StepResult(error=f"{type(exc).__name__}: {exc}"), crash

    def _check_state(self, step: Step) -> str | None:
        """How the implementation's state misses the step's ``expect_state`` (as replay says it:
        under ``views=none`` only its clock is checked)."""
        try:
            if self.variants.views == "none":
                return check_clock(step, self._scheduler)
            return check_state(step, self._scheduler, len(self._impl.ids))
        except Exception as exc:  # noqa: BLE001 - task() raising something other than ValueError
            return f"reading the state raised {type(exc).__name__}: {exc}"

    def _read_impl(self, task_id: int) -> object | None:
        """The view, ``FORGOTTEN`` when ``task()`` says prune forgot the task, or None if it cannot be read."""
        try:
            return self._scheduler.task(task_id)
        except ValueError as exc:
            return FORGOTTEN if says_forgotten(exc) else None
        except Exception:  # noqa: BLE001 - a broken implementation's read is shown as unreadable
            return None

    def _run_impl(self, step: Step, result: StepResult, crash: str | None) -> None:
        index = len(self._frames)
        impl = self._impl
        if step.op == RESTART and result.error is None:
            self._scheduler = result.value  # every later step goes to the reopened scheduler
        try:
            now = int(self._scheduler.now)
        except Exception:  # noqa: BLE001 - a broken implementation: keep the last clock seen
            now = self._frames[-1].now
        impl.note_result(step, result)
        changes = impl.refresh(impl.touched(step, result), self._read_impl, now, index, self._waiting)
        events = self._narrator.events(step, result, changes, now)
        interval = self.variants.interval
        expected = (check_expect(step, result, interval) if self._renaming is None
                    else check_renamed(step, result, self._renaming, interval))
        mismatch = crash or expected or self._check_state(step)
        if mismatch:
            events.append(mismatch_event(mismatch))
        frame = Frame(
            index=index,
            now=now,
            step=step,
            outcome=result,
            error=result.error,
            mismatch=mismatch,
            events=tuple(events),
            changed=frozenset(task_id for task_id, _, _ in changes),
            workers=impl.loads() if self._loads_may_change(step, changes) else self._frames[-1].workers,
            interval=interval,
        )
        # A restart's value is the reopened scheduler; what must agree with the model is only that it did not raise.
        number = self._renaming.number_of if self._renaming is not None else (lambda token: token)
        self._results.append(None if step.op == RESTART and result.error is None else _result_key(result, number))
        self.log.append((index, CALL))
        self.log.extend((index, event) for event in events)
        self.log_end.append(len(self.log))
        if frame.notable:
            self.notable.append(index)
        if mismatch:
            self.mismatches.append(index)
        self._frames.append(frame)  # last: a reader that sees the frame sees all of it

    @staticmethod
    def _loads_may_change(step: Step, changes: tuple[Change, ...]) -> bool:
        """Worker loads change only with a worker added or a lease begun or ended."""
        return step.op == "add_worker" or any(
            (after is not None and after.status == "running") or (before is not None and before.status == "running")
            for _, before, after in changes
        )

    # ------------------------------------------------------------ building: the model beside it

    def run_model(
        self,
        should_stop: Callable[[], bool] = lambda: False,
        progress: Callable[[int], None] | None = None,
        every: int = 500,
    ) -> bool:
        """Compute the model's check of every frame that lacks one; True when all have one.

        Safe to call from a thread while the UI reads: frames and checks are
        only ever appended. A frame not run yet is run first (``run_to``).
        ``progress(done)`` is called every ``every`` frames.
        """
        with self._model_lock:
            while len(self.checks) < len(self.frames):
                if should_stop():
                    return False
                self._run_model(len(self.checks))
                if progress is not None and len(self.checks) % every == 0:
                    progress(len(self.checks))
        return True

    def _read_model(self, task_id: int) -> object | None:
        if 1 <= task_id <= len(self._state.tasks):
            task = self._state.tasks[task_id - 1]
            return FORGOTTEN if task.forgotten else model.view(task)
        return None

    def _run_model(self, index: int) -> None:
        step = self.frames[index].step
        mod = self._model
        try:
            self._state, value = model.apply(self._state, step.op, dict(step.args))
            result = StepResult(value)
        except ValueError as exc:
            result = StepResult(error=str(exc))
        mod.note_result(step, result)
        impl_changes = self._impl.track.diffs[index]
        ids = mod.touched(step, result, also=(task_id for task_id, _, _ in impl_changes))
        changes = mod.refresh(ids, self._read_model, self._state.now, index)
        impl_rows = self._model_impl_cursor.rows_at(index)
        # Under views=none the scheduler's views are not part of its contract: only results are compared.
        compared = [] if self.variants.views == "none" else sorted({c[0] for c in changes} | {c[0] for c in impl_changes})
        for task_id in compared:
            mine, theirs = impl_rows.get(task_id), mod.rows.get(task_id)
            if (mine is None) != (theirs is None) or (mine is not None and mine.view != theirs.view):
                self._differing.add(task_id)
            else:
                self._differing.discard(task_id)
        said = describe_result(step, result, self.variants.interval)
        divergence = None
        if self._results[index] != _result_key(result):
            divergence = result_divergence(self.frames[index].result, said)
        else:
            divergence = view_difference(compared, impl_rows, mod.rows)
        check = Check(
            index=index,
            now=self._state.now,
            result=said,
            divergence=divergence,
            differing=len(self._differing),
            changed=frozenset(task_id for task_id, _, _ in changes),
            workers=mod.loads() if self._loads_may_change(step, changes) else self.checks[-1].workers,
        )
        if divergence:
            self.divergences.append(index)
        self.checks.append(check)


def build_timeline(scenario: Scenario, factory: Callable[[], object], *, model: bool = True,
                   variants: Variants = DEFAULT) -> Timeline:
    """Run every step of ``scenario`` against a fresh scheduler from ``factory`` and,
    unless ``model=False``, the spec's model beside it (else call ``run_model``
    later). ``Timeline(scenario, factory)`` runs nothing until a frame is read.

    Never raises for what the scheduler does: an invalid call is recorded as
    the step's error, and an implementation that crashes or disagrees with the
    model is recorded in that step's check.
    """
    timeline = Timeline(scenario, factory, variants)
    timeline.run_steps()
    if model:
        timeline.run_model()
    return timeline
