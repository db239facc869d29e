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

from fencepost.tui.timeline import Timeline
from fencepost.tui.widgets import Line, LineList

#: Columns between two time labels on the axis.
AXIS_EVERY = 10
#: When the run is wider than the lanes, the window shows about this many typical leases.
LEASES_PER_WINDOW = 8
#: Where the cursor sits in a window that scrolls with it, as a fraction of its width.
CURSOR_AT = 2 / 3

#: The characters of the marks (see the module docstring).
MARKS = {"complete": "✓", "fail": "✗", "expired": "×", "rejected": "!", "running": "›"}


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
        """Read the frames appended since the last call. O(new frames)."""
        frames = self.timeline.frames
        while self._read < len(frames):
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

    def scale(self, cells: int) -> int:
        """Ticks per column: 1 if the whole run fits, else enough for ``LEASES_PER_WINDOW`` typical leases."""
        if self.span < cells:
            return 1
        typical = sorted(self._durations)[len(self._durations) // 2] if self._durations else 1
        return max(1, -(-typical * LEASES_PER_WINDOW // cells))

    def window(self, now: int, cells: int) -> tuple[int, int]:
        """(first tick shown, ticks per column) for a cursor at ``now``."""
        scale = self.scale(cells)
        if self.span < cells:
            return 0, 1
        first = max(0, now - int(cells * scale * CURSOR_AT))
        return first - first % scale, scale

    def lines(self, index: int, width: int) -> list[Line]:
        """The axis line and one line per lane, as at frame ``index``, ``width`` cells wide."""
        name_width = max((len(lane.name) for lane in self.lanes), default=2) + 1
        cells = max(0, width - name_width)
        now = self.timeline.frames[index].now
        first, scale = self.window(now, cells)
        cursor = (now - first) // scale if cells else -1
        lines = [self._axis(first, scale, cells, cursor, name_width)]
        for lane in self.lanes:
            lines.append(self._lane_line(lane, index, now, first, scale, cells, cursor, name_width))
        return lines

    @staticmethod
    def _axis(first: int, scale: int, cells: int, cursor: int, name_width: int) -> Line:
        text = [" "] * cells
        for column in range(0, cells, AXIS_EVERY):
            label = f"{first + column * scale}"
            for offset, char in enumerate(label):
                if column + offset < cells:
                    text[column + offset] = char
        classes: list[str | None] = ["axis"] * cells
        if 0 <= cursor < cells:
            text[cursor], classes[cursor] = "▼", "cursor-head"
        return ("axis", (("t".ljust(name_width), "lane-name"), *_runs(text, classes)))

    def _lane_line(
        self, lane: Lane, index: int, now: int, first: int, scale: int, cells: int, cursor: int, name_width: int
    ) -> Line:
        text = [" "] * cells
        classes: list[str | None] = [None] * cells
        last = first + cells * scale
        marks: list[tuple[int, str]] = []
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
            start_cell = max(0, (bar.start - first) // scale)
            end_cell = min(cells, max(start_cell + 1, -(-(end - first) // scale)))
            style = "bar-running" if kind == "running" else "bar"
            label = f"#{bar.task_id}·{bar.token}"
            for column in range(start_cell, end_cell):
                offset = column - start_cell
                text[column] = label[offset] if offset < len(label) and end_cell - start_cell >= len(label) else " "
                classes[column] = style
            if kind == "expired":
                marks.append((end_cell - 1, kind))  # the lease's last tick: a late call at expires_at keeps its own cell
            elif kind != "running":
                marks.append((end_cell if end > bar.start else start_cell, kind))  # a lease ended in its first tick: the mark is the bar
            elif -(-(end - first) // scale) > cells:
                marks.append((cells - 1, kind))  # it runs on past the window's edge
        for time, frame, kind in lane.marks:
            if frame > index:
                break
            if first <= time < last:
                marks.append(((time - first) // scale, kind))
        for column, kind in marks:  # after every bar, so the next lease on the lane never hides a mark
            if 0 <= column < cells:
                text[column], classes[column] = MARKS[kind], kind
        if 0 <= cursor < cells:
            classes[cursor] = f"{classes[cursor]}-at-cursor" if classes[cursor] else "cursor"
        return (None, ((lane.name.ljust(name_width), "lane-name"), *_runs(text, classes)))


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
        self.border_title = "Lanes"
        self.border_subtitle = "#task·token ✓ done ✗ failed × expired ! rejected"
        self._lanes: Lanes | None = None
        self._lines: list[Line] = []
        self._shown: tuple[Timeline, int] | None = None  # what to draw again when the size changes

    def line(self, index: int) -> Line:
        return self._lines[index]

    def show(self, timeline: Timeline, index: int) -> None:
        """Draw ``timeline`` at frame ``index`` (reading any frames appended since the last call)."""
        self._shown = (timeline, index)
        if self._lanes is None or self._lanes.timeline is not timeline:
            self._lanes = Lanes(timeline)
        self._lanes.update()
        width = self.scrollable_content_region.width
        self._lines = self._lanes.lines(index, width) if self._lanes.lanes and width > 0 else []
        self.set_line_count(len(self._lines), width)

    def on_resize(self) -> None:
        # Shown the first time before it had a size (it was hidden): draw again at the real width.
        if self._shown is not None:
            self.show(*self._shown)
