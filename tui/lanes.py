"""The lanes view: one lane per worker slot over logical time, each lease a bar.

``Lanes`` reads a ``Timeline``'s frames once (and the frames appended since,
in interactive mode) and keeps every lease as a ``Bar`` on the lane of the
worker it went to: a worker of capacity c has c lanes, and a lease takes the
first of its worker's lanes that is free when it starts. A bar covers
``[start, expires)`` as renewed, and ends early at an accepted completion or
failure. ``Lanes.lines(index, width)`` draws the lanes as they stood at frame
``index``: only the bars that had started by then, each ended as it was
known by then, and the frame's time as a cursor. Only the bars inside the
visible time window are visited (a bisect per lane), so a step costs the same
at 10 or 10,000 tasks.

The time axis is scaled to the run: a run whose leases fit the width is
stretched to fill it (several columns a tick), a longer one is shown a
window at a time (several ticks a column), which follows the cursor and
which ``pan`` moves by half its width, earlier or later, never past the run's
ends. Time labels are round numbers, and only whole ones are drawn.

``LanesView`` is the widget: a ``LineList`` (one widget, lines formatted on
demand), styled by ``app.tcss`` through its component classes.

Marks on a lane: ``✓`` an accepted completion and ``✗`` an accepted
failure (at its time; in the bar's one cell for a lease that ended in its
first tick), ``×`` an expiry (in the lease's last tick, so a late call at
exactly ``expires_at`` keeps its own cell), ``!`` a rejected completion or
failure (at its time, on the lane of the lease its token named), ``›`` a
lease still running past the window's edge. A bar is labelled ``#task·token``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from fencepost.story.timeline import Timeline
from fencepost.tui.widgets import Line, LineList

#: The fewest columns between two time labels on the axis.
AXIS_EVERY = 10
#: At most this many columns a tick when a short run is stretched to fill the lanes.
MAX_COLUMNS_PER_TICK = 12
#: When the run is wider than the lanes, the window shows about this many typical leases.
LEASES_PER_WINDOW = 8
#: Where the cursor sits in a window that scrolls with it, as a fraction of its width.
CURSOR_AT = 2 / 3

#: The characters of the marks (see the module docstring).
MARKS = {"complete": "✓", "fail": "✗", "expired": "×", "rejected": "!", "running": "›"}


@dataclass(frozen=True, slots=True)
class Window:
    """The time the lanes show: column ``c`` covers the ticks from ``first + c * ticks / columns``,
    ``ticks`` ticks for every ``columns`` columns (one of them is 1)."""

    first: int
    ticks: int = 1
    columns: int = 1

    def column(self, time: int) -> int:
        """The column where tick ``time`` starts (negative before the window)."""
        return (time - self.first) * self.columns // self.ticks

    def column_after(self, time: int) -> int:
        """The first column past everything before tick ``time``: a bar ending at ``time`` stops before it."""
        return -(-(time - self.first) * self.columns // self.ticks)

    def span(self, cells: int) -> int:
        """Ticks shown in ``cells`` columns."""
        return cells * self.ticks // self.columns


@dataclass(slots=True)
class Bar:
    """One lease on one lane."""

    task_id: int
    token: int
    start: int
    started_frame: int
    renewals: list[tuple[int, int]]  # (frame, expires_at) from the dispatch on, in frame order
    end: int | None = None  # when a completion or failure ended it early
    end_frame: int | None = None
    end_kind: str | None = None  # "complete" or "fail"

    def expires_at(self, index: int) -> int:
        """``expires_at`` as frame ``index`` knew it."""
        at = bisect.bisect_right(self.renewals, (index, float("inf"))) - 1
        return self.renewals[max(at, 0)][1]


@dataclass(slots=True)
class Lane:
    """One slot of one worker: its bars in start order, which never overlap, and its marks."""

    name: str
    bars: list[Bar] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # bars' starts, for bisect
    started_frames: list[int] = field(default_factory=list)  # the frames they started at, ascending
    marks: list[tuple[int, int, str]] = field(default_factory=list)  # (time, frame, kind), in frame order


class Lanes:
    """Every lease of a timeline, on the lanes of the workers it went to."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.lanes: list[Lane] = []
        self._worker_lanes: dict[str, list[int]] = {}
        self._by_token: dict[int, tuple[int, Bar]] = {}  # token -> (lane index, bar)
        self._read = 1  # frames read so far (frame 0 is before any step)
        self.span = 0  # the latest time any bar reaches
        self._durations: list[int] = []  # of the first leases, for the window's scale
        self.update()

    def update(self) -> None:
        """Read the frames run since the last call (``Timeline.ran``: the steps not
        run yet are drawn once they are). O(new frames)."""
        frames = self.timeline.frames
        while self._read < self.timeline.ran:
            frame = frames[self._read]
            if frame.step is not None and frame.error is None:
                self._read_step(self._read, frame.step.op, frame.step.args, frame.outcome.value, frame.now)
            self._read += 1

    def _read_step(self, index: int, op: str, args: dict, value: object, now: int) -> None:
        if op == "add_worker":
            capacity = args["capacity"]
            self._worker_lanes[args["worker"]] = list(range(len(self.lanes), len(self.lanes) + capacity))
            for slot in range(capacity):
                self.lanes.append(Lane(args["worker"] if capacity == 1 else f"{args['worker']}.{slot + 1}"))
        elif op == "dispatch" and value is not None:
            bar = Bar(value.task_id, value.token, value.started_at, index, [(index, value.expires_at)])
            lane_index = self._free_lane(value.worker, value.started_at, index)
            lane = self.lanes[lane_index]
            lane.bars.append(bar)
            lane.starts.append(bar.start)
            lane.started_frames.append(index)
            self._by_token[bar.token] = (lane_index, bar)
            self.span = max(self.span, value.expires_at)
            if len(self._durations) < 1000:
                self._durations.append(value.expires_at - value.started_at)
        elif op == "dispatch_many" and isinstance(value, (list, tuple)):
            for lease in value:  # a batch's leases are its dispatches, in order, at the one step
                self._read_step(index, "dispatch", args, lease, now)
        elif op in ("complete_many", "fail_many") and isinstance(value, (list, tuple)):
            single = op.removesuffix("_many")
            for (task_id, token), outcome in zip(args["reports"], value):  # each report as its single call
                self._read_step(index, single, {"task_id": task_id, "token": token, "now": args["now"]}, outcome, now)
        elif op in ("complete", "fail", "renew") and args.get("token") in self._by_token:
            lane_index, bar = self._by_token[args["token"]]
            if not getattr(value, "accepted", False):
                if op != "renew":
                    self.lanes[lane_index].marks.append((args["now"], index, "rejected"))
            elif op == "renew":
                bar.renewals.append((index, args["now"] + args["duration"]))
                self.span = max(self.span, args["now"] + args["duration"])
            else:
                bar.end, bar.end_frame, bar.end_kind = args["now"], index, op

    def _free_lane(self, worker: str, start: int, index: int) -> int:
        """The first lane of ``worker`` whose last lease had ended by ``start``; a new lane if none has."""
        for lane_index in self._worker_lanes.get(worker, ()):
            bars = self.lanes[lane_index].bars
            if not bars or bars[-1].end_frame is not None or bars[-1].expires_at(index) <= start:
                return lane_index
        self.lanes.append(Lane(f"{worker}+"))  # more leases than capacity: a broken implementation, drawn anyway
        self._worker_lanes.setdefault(worker, []).append(len(self.lanes) - 1)
        return len(self.lanes) - 1

    # ------------------------------------------------------------ drawing

    @property
    def extent(self) -> int:
        """Ticks from 0 to the end of the run so far: the last lease's expiry, or the clock's last time and its tick."""
        return max(self.span, self.timeline.frames[self._read - 1].now + 1)

    def scale(self, cells: int) -> tuple[int, int]:
        """(ticks, columns): a run that fits ``cells`` is stretched to fill them (up to
        ``MAX_COLUMNS_PER_TICK``); a longer one gets enough ticks a column for
        ``LEASES_PER_WINDOW`` typical leases."""
        if self.extent <= cells:
            return 1, max(1, min(MAX_COLUMNS_PER_TICK, cells // self.extent))
        typical = sorted(self._durations)[len(self._durations) // 2] if self._durations else 1
        return max(1, -(-typical * LEASES_PER_WINDOW // max(1, cells))), 1

    def window(self, now: int, cells: int, pan: int = 0) -> Window:
        """The window for a cursor at ``now``: the cursor at ``CURSOR_AT`` of the width, moved
        ``pan`` half-widths later (earlier if negative), kept within the run."""
        ticks, columns = self.scale(cells)
        if not self.can_pan(cells):
            return Window(0, ticks, columns)
        shown = cells * ticks
        first = now - int(shown * CURSOR_AT) + pan * (shown // 2)
        first = max(0, min(first, self.extent - shown + ticks))
        return Window(first - first % ticks, ticks, 1)

    def can_pan(self, cells: int) -> bool:
        """Whether the run is longer than ``cells`` columns show, so the window can move."""
        return cells > 0 and self.extent > cells * self.scale(cells)[0]

    def lines(self, index: int, width: int, pan: int = 0) -> list[Line]:
        """The axis line and one line per lane, as at frame ``index``, ``width`` cells wide,
        the window moved ``pan`` half-widths from where the cursor puts it."""
        cells = self.cells(width)
        now = self.timeline.frames[index].now
        window = self.window(now, cells, pan)
        cursor = window.column(now) if cells else -1
        name_width = width - cells
        lines = [self._axis(window, cells, cursor, name_width, self.extent)]
        for lane in self.lanes:
            lines.append(self._lane_line(lane, index, now, window, cells, cursor, name_width))
        return lines

    def cells(self, width: int) -> int:
        """Columns of time in a line ``width`` wide: what the lane names leave."""
        name_width = max((len(lane.name) for lane in self.lanes), default=2) + 1
        return max(0, width - name_width)

    @staticmethod
    def _axis(window: Window, cells: int, cursor: int, name_width: int, extent: int) -> Line:
        """Round time labels over the window, up to the run's ``extent``, and the cursor's ``▼``."""
        text = [" "] * cells
        step = _round_step(-(-AXIS_EVERY * window.ticks // window.columns))  # ticks between labels
        time = -(-window.first // step) * step
        last = min(window.first + window.span(cells), extent + 1)
        while time < last:
            label, column = f"{time}", window.column(time)
            # A label is drawn whole or not at all: not cut by the edge, nor by the cursor's mark.
            if column + len(label) <= cells and not column <= cursor < column + len(label):
                text[column:column + len(label)] = label
            time += step
        classes: list[str | None] = ["axis"] * cells
        if 0 <= cursor < cells:
            text[cursor], classes[cursor] = "▼", "cursor-head"
        return ("axis", (("t".ljust(name_width), "lane-name"), *_runs(text, classes)))

    def _lane_line(
        self, lane: Lane, index: int, now: int, window: Window, cells: int, cursor: int, name_width: int
    ) -> Line:
        text = [" "] * cells
        classes: list[str | None] = [None] * cells
        first, scale = window.first, window.ticks
        last = first + window.span(cells)
        marks: list[tuple[int, str]] = []
        labels: list[tuple[int, int, Bar]] = []  # each bar drawn: its cells, labelled once the marks are known
        at = max(0, bisect.bisect_right(lane.starts, first) - 1)
        limit = bisect.bisect_right(lane.started_frames, index)  # bars started by frame ``index``
        while at < limit:
            bar = lane.bars[at]
            if bar.start >= last:
                break
            # Leases on a lane never overlap, so of the bars starting in this bar's column all
            # but the last ended inside it and would be drawn over: skip to the last one.
            next_column = first + ((max(bar.start, first) - first) // scale + 1) * scale
            at = max(at, min(limit, bisect.bisect_left(lane.starts, next_column, at)) - 1) + 1
            bar = lane.bars[at - 1]
            ended = bar.end_frame is not None and bar.end_frame <= index
            expires = bar.expires_at(index)
            if ended:
                end, kind = bar.end, bar.end_kind
            elif expires <= now:
                end, kind = expires, "expired"
            else:
                end, kind = expires, "running"
            if max(end, bar.start + 1) <= first:
                continue  # over before the window (a lease ended in its first tick still takes a cell)
            start_cell = max(0, window.column(bar.start))
            end_cell = min(cells, max(start_cell + 1, window.column_after(end)))
            style = "bar-running" if kind == "running" else "bar"
            for column in range(start_cell, end_cell):
                classes[column] = style
            labels.append((start_cell, end_cell, bar))
            if kind == "expired":
                marks.append((end_cell - 1, kind))  # the lease's last tick: a late call at expires_at keeps its own cell
            elif kind != "running":
                marks.append((end_cell if end > bar.start else start_cell, kind))  # a lease ended in its first tick: the mark is the bar
            elif window.column_after(end) > cells:
                marks.append((cells - 1, kind))  # it runs on past the window's edge
        for time, frame, kind in lane.marks:
            if frame > index:
                break
            if first <= time < last:
                marks.append((window.column(time), kind))
        taken = {column for column, _ in marks}
        for start_cell, end_cell, bar in labels:
            _label(text, start_cell, end_cell, bar, taken)
        for column, kind in marks:  # after every bar, so the next lease on the lane never hides a mark
            if 0 <= column < cells:
                text[column], classes[column] = MARKS[kind], kind
        if 0 <= cursor < cells:
            classes[cursor] = f"{classes[cursor]}-at-cursor" if classes[cursor] else "cursor"
        return (None, ((lane.name.ljust(name_width), "lane-name"), *_runs(text, classes)))


def _label(text: list[str], start_cell: int, end_cell: int, bar: Bar, taken: set[int]) -> None:
    """Write ``#task·token`` (or ``#task`` where that does not fit) into the bar's free cells.

    A label starts after any mark in the bar's first cell (the previous lease's ``✓`` at the
    time this one starts) and never runs into a mark, so ``✓#10·2`` can never read as
    "task 10 done"; a bar too narrow for even ``#task`` stays unlabelled rather than cut.
    """
    start = start_cell + 1 if start_cell in taken else start_cell
    room = next((column for column in range(start, end_cell) if column in taken), end_cell) - start
    for label in (f"#{bar.task_id}·{bar.token}", f"#{bar.task_id}"):
        if len(label) <= room:
            text[start:start + len(label)] = label
            return


def _round_step(at_least: int) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, ... that is at least ``at_least``: the axis's label spacing."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= at_least:
                return step * factor
        step *= 10


def _runs(text: list[str], classes: list[str | None]) -> tuple[tuple[str, str | None], ...]:
    """Cells as runs of one class each: the parts of a ``Line``."""
    parts: list[tuple[str, str | None]] = []
    start = 0
    for column in range(1, len(text) + 1):
        if column == len(text) or classes[column] != classes[start]:
            parts.append(("".join(text[start:column]), classes[start]))
            start = column
    return tuple(parts)


class LanesView(LineList):
    """The lanes at one frame: an axis line, then a line per worker slot."""

    PREFIX = "lanes"
    EMPTY = "no worker yet: lanes appear with add_worker"
    COMPONENT_CLASSES = {
        "lanes--empty", "lanes--axis", "lanes--lane-name", "lanes--cursor", "lanes--cursor-head",
        "lanes--bar", "lanes--bar-running", "lanes--complete", "lanes--fail", "lanes--expired",
        "lanes--rejected", "lanes--running",
        *(f"lanes--{name}-at-cursor" for name in ("bar", "bar-running", "complete", "fail", "expired", "rejected", "running")),
    }

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.show_title("Lanes")
        self.show_subtitle("#task·token ✓ done ✗ failed × expired ! rejected")
        self._lanes: Lanes | None = None
        self._lines: list[Line] = []
        self._shown: tuple[Timeline, int] | None = None  # what to draw again when the size changes
        self.pan = 0  # half-widths the window is moved from where the cursor puts it; a step resets it

    def line(self, index: int) -> Line:
        return self._lines[index]

    def show(self, timeline: Timeline, index: int) -> None:
        """Draw ``timeline`` at frame ``index`` (reading any frames appended since the last call).
        Another frame brings the window back to its cursor."""
        if self._shown != (timeline, index):
            self.pan = 0
        self._shown = (timeline, index)
        if self._lanes is None or self._lanes.timeline is not timeline:
            self._lanes = Lanes(timeline)
        self._lanes.update()
        width = self.scrollable_content_region.width
        self._lines = self._lanes.lines(index, width, self.pan) if self._lanes.lanes and width > 0 else []
        self.set_line_count(len(self._lines), width)
        self._show_window()

    def can_pan(self) -> bool:
        """Whether there is more of the run than the window shows."""
        return self._lanes is not None and self._lanes.can_pan(self._lanes.cells(self.scrollable_content_region.width))

    def scroll_time(self, direction: int) -> None:
        """Move the window half its width later (``direction`` 1) or earlier (-1), within the run."""
        if self._shown is None or self._lanes is None or not self.can_pan():
            return
        timeline, index = self._shown
        cells = self._lanes.cells(self.scrollable_content_region.width)
        before = self._lanes.window(timeline.frames[index].now, cells, self.pan)
        after = self._lanes.window(timeline.frames[index].now, cells, self.pan + direction)
        if after != before:  # at an end of the run the window stays, and so does the pan
            self.pan += direction
            self.show(timeline, index)

    def _show_window(self) -> None:
        """The border's title names the ticks on screen, and whether the window can move."""
        if self._shown is None or self._lanes is None or not self._lanes.lanes:
            self.show_title("Lanes")
            return
        timeline, index = self._shown
        cells = self._lanes.cells(self.scrollable_content_region.width)
        window = self._lanes.window(timeline.frames[index].now, cells, self.pan)
        end = min(window.first + window.span(cells), self._lanes.extent)
        title = f"Lanes t={window.first} to {end}"
        if self.can_pan():
            title += f" of {self._lanes.extent} ([ ] scroll)"
        self.show_title(title)

    def on_resize(self) -> None:
        # Shown the first time before it had a size (it was hidden): draw again at the real width.
        if self._shown is not None:
            self.show(*self._shown)

    def watch_show_vertical_scrollbar(self) -> None:
        # More lanes than rows: the scrollbar that comes takes a column from the lanes, and the
        # widget's size stays (no resize): draw again at the new width, once the layout is done.
        if self._shown is not None:
            self.call_later(self.show, *self._shown)
