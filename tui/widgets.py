"""The widgets of the fencepost TUI. They format what ``story.timeline`` hands them.

No scheduler logic lives here: which task is next, which lease expired and
why a completion was refused are all decided in the timeline; a widget only
turns rows and events into lines. Looks live in ``app.tcss``: every styled
piece of text names a component class, and the stylesheet gives it colour.

Long lists (the three task columns, the event log) are ``LineList``\\ s: one
widget, with only the lines on screen formatted, whatever the number of tasks.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Self

from fencepost.spec.formats.scenario import Question
from fencepost.story.quiz import SKIPPED
from fencepost.story.narration import EVENT_KINDS, lease_text
from fencepost.story.timeline import (
    Board,
    Check,
    Frame,
    Row,
    Timeline,
    WorkerLoad,
    short_key,
)
from fencepost.tui.textual_private import (
    KeepLayoutOnVirtualSize,
    cached_rows,
    divide_line,
)
from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.markdown import Markdown as RichMarkdown
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.containers import VerticalScroll
from textual.content import Content, Span
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.widgets import Static

#: A line: the class for the whole row (or None), then (text, class or None) parts.
Line = tuple[str | None, tuple[tuple[str, str | None], ...]]

#: Width of the bar of time left on a running lease, in cells.
BAR_WIDTH = 6

#: Badges for the final statuses: a symbol of fixed width, then the status.
DONE_BADGES = {"succeeded": "✓", "failed": "✗", "cancelled": "⊘"}


class ComponentStyles:
    """The Rich style of each of a widget's component classes, kept until the CSS changes.

    Textual recomputes a component's style after every repaint of the widget (its
    cache is cleared by ``refresh``), and a step asks for a few dozen of them.
    A mixin, named before the widget's Textual base (see ``BorderTitles``).
    """

    #: Component classes of a subclass are named ``PREFIX--name``.
    PREFIX = ""

    _component_styles_cache: dict[str, Style] | None = None

    def _style(self, name: str) -> Style:
        """The partial style (not combined with the widget's) of component ``PREFIX--name``."""
        cache = self._component_styles_cache
        if cache is None:
            cache = self._component_styles_cache = {}
        style = cache.get(name)
        if style is None:
            style = cache[name] = self.get_component_rich_style(f"{self.PREFIX}--{name}", partial=True)
        return style

    def _content(self, text: RenderableType) -> RenderableType:
        """A ``Text`` as Textual would show it (``Content.from_rich_text``, which ``Static.update``
        calls), each of its styles converted once until the CSS changes rather than once a
        span at every update; anything else, or a ``Text`` with a style by name, as it is."""
        if not isinstance(text, Text) or (
            isinstance(text.style, str) and text.style or any(isinstance(span.style, str) for span in text.spans)
        ):
            return text
        visual = self._visual_styles
        if visual is None:  # a theme comes with new CSS, so its terminal colours are read with it
            visual = self._visual_styles = {}
            self._ansi_theme = self.app.ansi_theme
        theme = self._ansi_theme

        def convert(style: Style) -> VisualStyle:
            converted = visual.get(style)
            if converted is None:
                converted = visual[style] = VisualStyle.from_rich_style(style, theme)
            return converted

        content = Content(text.plain, [Span(span.start, span.end, convert(span.style)) for span in text.spans])
        return content.stylize_before(convert(text.style)) if text.style else content

    _visual_styles: dict[Style, VisualStyle] | None = None
    _ansi_theme = None

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._component_styles_cache = None  # new CSS (a theme, a class): every style is stale
        self._visual_styles = None


class BorderTitles:
    """Border titles that repaint only their border row, and only when their words change.

    Textual repaints the whole widget on every assignment to ``border_title`` or
    ``border_subtitle``, the same words or not, and a step retitles most lists
    (their counts); here the assignment's own repaint is held back and only the
    row the title is drawn on is repainted.

    A mixin for a widget class, named before its Textual base: not a ``Widget`` itself,
    so Textual still takes the default CSS from that base (it follows the first base
    that is a DOM node).
    """

    _title_shown: str | None = None
    _subtitle_shown: str | None = None
    _retitling = False  # True while a title is assigned: its repaint of the whole widget is held back

    def show_title(self, title: str) -> None:
        if title != self._title_shown:
            self._title_shown = title
            self._retitle("border_title", title, 0)

    def show_subtitle(self, subtitle: str) -> None:
        if subtitle != self._subtitle_shown:
            self._subtitle_shown = subtitle
            self._retitle("border_subtitle", subtitle, self.outer_size.height - 1)

    def _retitle(self, name: str, words: str, row: int) -> None:
        """Assign ``words`` to the title ``name`` on row ``row`` of the widget (border included),
        repainting that row only."""
        if not self.outer_size:  # not laid out yet: the first paint draws everything
            setattr(self, name, words)
            return
        self._retitling = True
        try:
            setattr(self, name, words)
        finally:
            self._retitling = False
        # refresh takes regions relative to the content, which starts past the border and padding
        self.refresh(Region(-self.content_offset.x, row - self.content_offset.y, self.outer_size.width, 1))

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False) -> Self:
        if self._retitling and not (regions or layout or recompose):
            return self  # the title's own repaint of everything: _retitle repaints its row instead
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)


class LineList(ComponentStyles, BorderTitles, ScrollView, can_focus=False):
    """A scrolling list that formats only the lines on screen (Textual's Line API).

    A step repaints only the lines on screen whose words changed (``set_line_count``):
    Textual redraws a line, its border and background, for each line marked dirty;
    a row whose line was drawn before, at another height (the list scrolled, a row
    above it went), is taken whole from ``_finished`` instead (``render_lines``).
    """

    #: Shown, dimmed, when there are no lines.
    EMPTY = ""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._count = 0
        self._window: tuple = ()  # what the lines on screen were drawn for: (size, scroll offset)
        self._drawn: tuple = ()  # the lines on screen as last drawn, a Line (or EMPTY, or None) per row
        self._strips: LRUCache[tuple, Strip] = LRUCache(1024)  # a line's parts -> its drawn strip
        self._finished: LRUCache[tuple, Strip] = LRUCache(1024)  # (a line, scroll x, width) -> its row, borders and all
        self._base: Style | None = None  # self.rich_style, which is slow to compute per line

    def line(self, index: int) -> Line:
        """Line ``index`` (0 <= index < the count given to ``set_line_count``)."""
        raise NotImplementedError

    def set_line_count(self, count: int, width: int = 0, scroll_y: int | None = None) -> None:
        """Show ``count`` lines (``line`` already answers for them), scrolled to ``scroll_y``
        if given; repaint only the rows on screen whose line changed, so a step repaints
        the rows it touched and no others. O(rows on screen)."""
        self._count = count
        size = Size(width, count)
        if self.virtual_size != size:
            self._set_virtual_size(size)
        if scroll_y is not None:
            # force: before the first layout with enough lines there is no scrollbar yet,
            # and an unforced scroll would be refused
            self.scroll_to(y=scroll_y, animate=False, force=True)
        top, height = self.scroll_offset.y, self.scrollable_content_region.height
        drawn = tuple(
            self.line(i) if i < count else (self.EMPTY if i == 0 else None) for i in range(top, top + height)
        )
        window, old = (self.size, self.scroll_offset), self._drawn
        self._drawn = drawn
        if window != self._window or len(old) != len(drawn):
            self._window = window
            # moved or resized: every row, but not the border and its titles, which Textual
            # repaints itself on a resize (and a scroll has repainted the rows already)
            self.refresh(Region(0, 0, self.scrollable_content_region.width, height))
            return
        row = 0
        while row < height:  # runs of changed rows, one region each
            if drawn[row] == old[row]:
                row += 1
                continue
            end = row + 1
            while end < height and drawn[end] != old[end]:
                end += 1
            self.refresh(Region(0, row, self.scrollable_content_region.width, end - row))
            row = end

    def _set_virtual_size(self, size: Size) -> None:
        """Take ``size`` as the scrollable size, laying the screen out again only if that shows.

        Setting ``virtual_size`` lays out the whole screen (Textual's reactive is
        ``layout=True``), which costs more than drawing a step. For a list whose own
        size the stylesheet fixes, a new line count matters to the layout only when a
        scrollbar appears or goes, or a visible one has its thumb to redraw; otherwise
        the size is stored as it is and the scroll position kept within it.
        """
        width, height = self.container_size
        old = self.virtual_size
        crosses = (old.width > width) != (size.width > width) or (old.height > height) != (size.height > height)
        styles = self.styles
        drawn = (self.show_vertical_scrollbar and styles.scrollbar_size_vertical) or (
            self.show_horizontal_scrollbar and styles.scrollbar_size_horizontal
        )
        # A list that never shows a scrollbar (the task columns, the event log) needs no
        # layout when it starts or stops overflowing: nothing drawn changes.
        bare = styles.overflow_x == styles.overflow_y == "hidden"
        if (crosses and not bare) or drawn or not self.container_size:
            self.virtual_size = size
            return
        self.set_reactive(LineList.virtual_size, size)
        self.scroll_x = self.validate_scroll_x(self.scroll_x)
        self.scroll_y = self.validate_scroll_y(self.scroll_y)

    @property
    def allow_vertical_scroll(self) -> bool:
        """The mouse wheel scrolls a list longer than its height, scrollbar or not (Textual's
        asks for a scrollbar shown, and the stylesheet hides the task columns' and the log's)."""
        return not self._check_disabled() and self.max_scroll_y > 0

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()  # new colours: every cached strip is stale
        self._finished.clear()
        self._base = None

    def render_lines(self, crop: Region) -> list[Strip]:
        """The widget's rows in ``crop`` (Textual's), those drawn before for the same line taken whole.

        Textual keeps each row as last drawn by its height in the widget (``_styles_cache``)
        and draws a row again, its border and background included, whenever its height is
        marked dirty; a list that scrolls by a row, or loses its top row, marks them all.
        A content row shows nothing but its line, so here a dirty row whose line, scroll
        and width were drawn before is handed to Textual's cache as that row was, and the
        rows Textual draws are kept for the next time. O(rows in ``crop``).
        """
        width, kept, dirty = cached_rows(self)
        size, offset = self.size, self.scroll_offset
        if width != self.outer_size.width or not size:
            return super().render_lines(crop)  # a new width: Textual draws everything again
        top = self.styles.gutter.top
        drawn = self._drawn if self._window == (size, offset) else None  # else lines have moved since
        first, end = max(crop.y, top), min(crop.bottom, top + size.height)
        rows, drawn_rows = self._finished, {}
        for y in range(first, end):
            if y in dirty or y not in kept:
                key = (self._line_on_row(y - top, drawn), offset.x, size.width)
                strip = rows.get(key)
                if strip is None:
                    drawn_rows[y] = key
                else:
                    kept[y] = strip
                    dirty.discard(y)
        strips = super().render_lines(crop)
        for y, key in drawn_rows.items():
            rows[key] = kept[y]
        return strips

    def _line_on_row(self, row: int, drawn: tuple | None) -> Line | str | None:
        """What content row ``row`` shows: as ``_drawn`` has it (if given and it reaches that far)."""
        if drawn is not None and row < len(drawn):
            return drawn[row]
        index = self.scroll_offset.y + row
        return self.line(index) if index < self._count else (self.EMPTY if index == 0 else None)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        if self._base is None:
            self._base = self.rich_style
        base = self._base
        if index >= self._count:
            if index == 0 and self.EMPTY:
                style = base + self._style("empty")
                return Strip([Segment(self.EMPTY, style)]).crop_extend(0, width, base)
            return Strip.blank(width, base)
        row_class, parts = line = self.line(index)
        key = (line, scroll_x, width)
        strip = self._strips.get(key)
        if strip is None:
            row_style = base + self._style(row_class) if row_class else base
            segments = [Segment(text, row_style + self._style(name) if name else row_style) for text, name in parts]
            strip = self._strips[key] = Strip(segments).crop_extend(scroll_x, scroll_x + width, row_style)
        return strip


class TaskColumn(LineList):
    """One of Pending, Running and Done at one frame."""

    COMPONENT_CLASSES = {
        "task-column--empty",  # the hint shown in an empty column
        "task-column--changed",  # the row changed at this step
        "task-column--next",  # the task the next dispatch picks
        "task-column--id",
        "task-column--dim",
        "task-column--not-due",  # pending, but not due yet
        "task-column--retry",  # the retry_wait badge
        "task-column--worker",
        "task-column--bar-left",  # the part of the lease still to run
        "task-column--bar-used",
        "task-column--cancel-requested",
        "task-column--succeeded",
        "task-column--failed",
        "task-column--cancelled",
    }

    PREFIX = "task-column"
    TITLES = {"pending": "Pending", "running": "Running", "done": "Done"}

    EMPTIES = {"pending": "nothing waiting", "running": "no lease held", "done": "nothing finished yet"}

    #: The badges' key, on the bottom border (``?`` has the whole legend).
    LEGENDS = {"pending": "p=prio a=tries", "running": "[start, end) · time left", "done": "a=tries"}

    def __init__(self, kind: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes=f"task-column -{kind}")
        self.kind = kind
        self.EMPTY = self.EMPTIES[kind]
        self.show_title(self.TITLES[kind])
        self.show_subtitle(self.LEGENDS[kind])
        self._rows: Sequence[Row] = ()
        self._board: Board | None = None
        self._id_width = 1
        self._room = 0  # the columns a row has
        self._lines: LRUCache[tuple, Line] = LRUCache(1024)  # what a row's line depends on -> the line

    def show(self, board: Board) -> None:
        rows: Sequence[Row] = getattr(board, self.kind)
        self._rows, self._board = rows, board
        # ids are 1..n, so the widest is at most as wide as the number of tasks
        self._id_width = len(str(len(board.pending) + len(board.running) + len(board.done)))
        self._room = self.scrollable_content_region.width  # a slow property: once a show, not once a row
        self.show_title(f"{self.TITLES[self.kind]} {len(rows):,}")
        if self.kind == "running":  # the legend's span as the interval in force has it
            self.show_subtitle(self.LEGENDS["running"].replace("[start, end)", lease_text("start", "end", board.interval)))
        self.set_line_count(len(rows))

    def line(self, index: int) -> Line:
        """Row ``index``'s line, formatted once for all the boards that show it alike
        (a step leaves most rows as they were, and each step compares every row on screen)."""
        row, board = self._rows[index], self._board
        kind = self.kind
        if kind == "pending":  # what a pending row's words take from the board: due yet, next pick
            due = row.due_at <= board.now
            context: object = (due, due and board.pending[0] is row)
        else:
            context = board.now if kind == "running" else None  # the time left on its lease
        key = (row, context, row.id in board.changed, board.keys.get(row.id), self._id_width, self._room, board.interval)
        line = self._lines.get(key)
        if line is None:
            parts = getattr(self, f"_format_{kind}")(row, board)
            line = self._lines[key] = ("changed" if key[2] else None), fit(parts, self._room)
        return line

    def on_resize(self) -> None:
        if self._board is not None:  # a new width may show more of a row, or need less of it
            self.show(self._board)

    def _id_part(self, row: Row) -> Part:
        return (f"#{row.id:<{self._id_width}}", "id", KEEP)

    def _key_part(self, row: Row, board: Board) -> list[Part]:
        """The task's idempotency key, short, when it was submitted with one: the first part to go."""
        key = board.keys.get(row.id)
        return [(f" k:{short_key(key)}", "dim", KEY_RANK)] if key is not None else []

    def _format_pending(self, row: Row, board: Board) -> list[Part]:
        due = row.due_at <= board.now
        nxt = due and board.pending and board.pending[0] is row
        retry = row.status == "retry_wait"
        parts = [("▸ " if nxt else "  ", "next", KEEP), self._id_part(row)]
        if not due:  # when it may start is the first thing to know about it
            parts.append((f" {'retry' if retry else 'due'} t={row.due_at}", "retry" if retry else "not-due", KEEP))
        elif retry:
            parts.append((" retry", "retry", KEEP))
        parts.append((f" p{row.priority}", None, 2))
        if row.attempts:
            parts.append((f" a{row.attempts}", "dim", 3))
        if due:
            parts.append((f" due t={row.due_at}", "dim", 4))
        return parts + self._key_part(row, board)

    def _format_running(self, row: Row, board: Board) -> list[Part]:
        start, end = row.started_at, row.expires_at
        span = max(1, (end or 0) - (start or 0))
        left = max(0, (end or 0) - board.now)
        filled = min(BAR_WIDTH, round(BAR_WIDTH * left / span))
        parts = [self._id_part(row)]
        if row.cancel_requested:  # right after the id: it changes what the lease's end will mean
            parts.append((" cancel req", "cancel-requested", KEEP))
        parts += [
            (f" {row.worker}", "worker", 1),
            (f" tok {row.token}", None, KEEP),
            (" " + lease_text(start, end, board.interval), "dim", KEEP),
            (" ", None, 3),
            ("█" * filled, "bar-left", 3),
            ("░" * (BAR_WIDTH - filled), "bar-used", 3),
            (f" {left}", "dim", 2),
        ]
        return parts + self._key_part(row, board)

    def _format_done(self, row: Row, board: Board) -> list[Part]:
        return [
            (f"{DONE_BADGES.get(row.status, '?')} ", row.status, KEEP),
            self._id_part(row),
            (f" {row.status:<9}", row.status, KEEP),
            (f" a{row.attempts}", "dim", 1),
            *self._key_part(row, board),
        ]


#: A row's part: its text, its class (or None), and when it is dropped for want of room:
#: ``KEEP`` never; otherwise the highest number goes first.
Part = tuple[str, str | None, int]

#: The drop rank of a part a row is never shown without (its id, due time, retry, cancel request...).
KEEP = 0

#: The drop rank of an idempotency key: a detail (the help and the event log name it), dropped first.
KEY_RANK = 9


def fit(parts: Sequence[Part], width: int) -> tuple[tuple[str, str | None], ...]:
    """The parts that fit in ``width`` cells, in their order: the droppable ones go,
    highest rank first, until the rest fits (what is kept may still be cropped).

    O(p log p) for p parts.
    """
    length = sum(cell_len(text) for text, _, _ in parts)
    if length <= width:  # the common case: everything fits
        return tuple((text, name) for text, name, _ in parts)
    for rank in sorted({rank for _, _, rank in parts if rank != KEEP}, reverse=True):
        if length <= width:
            break
        length -= sum(cell_len(text) for text, _, r in parts if r == rank)
        parts = [part for part in parts if part[2] != rank]
    return tuple((text, name) for text, name, _ in parts)


class EventLog(LineList):
    """Every step's call and events up to the current step, the current one highlighted.

    A log entry longer than the log is wide is word-wrapped onto as many lines
    as it needs, so an explanation is never cut off. Entries are wrapped
    lazily: ``_starts`` (where each entry begins, in screen lines) is extended
    only as far as the step on screen, and only rebuilt when the width changes.
    Clicking a line jumps to its step (``g`` does the same from the keyboard).
    """

    COMPONENT_CLASSES = {
        "event-log--empty",
        "event-log--current",  # lines of the step on screen
        "event-log--step",  # the step number and clock
        "event-log--divergence",  # the "differs from the model" badge
        *(f"event-log--{kind}" for kind in EVENT_KINDS),
    }

    PREFIX = "event-log"
    EMPTY = "nothing has happened yet: → applies the first step"

    #: The call line's "step, clock" column, and the same width under it.
    STEP_WIDTH = 14
    #: Marks an event under its call.
    EVENT_PREFIX = " " * STEP_WIDTH + "↳ "
    #: Appended to a call the model disagrees with; room for it is kept on every call line,
    #: so the model finishing in the background never re-wraps the log.
    DIVERGENCE = "  ≠ model"
    #: Narrower than this (room for the text), lines are cropped rather than wrapped.
    MIN_WRAP = 12

    class Picked(Message):
        """A log line was clicked: go to its step."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.show_title("Events")
        self._timeline: Timeline | None = None
        self._index = 0
        self._wrap_width = 0  # the width _starts was computed for (0: no wrapping)
        self._starts: list[int] = [0]  # _starts[k]: the screen line log entry k begins on
        self._wrapped: LRUCache[int, tuple[str, ...]] = LRUCache(512)  # entry -> its pieces

    def show(self, timeline: Timeline, index: int) -> None:
        width = self.scrollable_content_region.width
        if timeline is not self._timeline or width != self._wrap_width:
            self._starts, self._wrap_width = [0], width
            self._wrapped.clear()
        self._timeline, self._index = timeline, index
        first, end = timeline.log_end[max(0, index - 1)] if index else 0, timeline.log_end[index]
        self._wrap_up_to(end)
        start, count = self._starts[first], self._starts[end]
        self.show_subtitle(f"step {index}" if index else "")
        height = self.scrollable_content_region.height or 1
        self.set_line_count(count, scroll_y=max(0, min(start, count - height)))

    def on_resize(self) -> None:
        if self._timeline is not None and self.scrollable_content_region.width != self._wrap_width:
            self.show(self._timeline, self._index)

    def _wrap_up_to(self, end: int) -> None:
        starts = self._starts
        for entry in range(len(starts) - 1, end):
            starts.append(starts[-1] + len(self._pieces(entry)))

    def _pieces(self, entry: int) -> tuple[str, ...]:
        """Log entry ``entry``'s text (without its prefix), cut into screen lines."""
        pieces = self._wrapped.get(entry)
        if pieces is None:
            frame_index, event = self._timeline.log[entry]
            room = self._wrap_width - len(self.EVENT_PREFIX)
            if event.kind == "call":  # starts under the arrow, goes on under the events' text
                frame = self._timeline.frames[frame_index]
                text, room = f"{frame.call} → {frame.result}", room - len(self.DIVERGENCE)
            else:
                text = event.text
            pieces = self._wrapped[entry] = wrap(text, room) if room >= self.MIN_WRAP else (text,)
        return pieces

    def line(self, index: int) -> Line:
        entry = bisect.bisect_right(self._starts, index) - 1
        piece = index - self._starts[entry]
        timeline = self._timeline
        frame_index, event = timeline.log[entry]
        row_class = "current" if frame_index == self._index else None
        pieces = self._pieces(entry)
        text = pieces[piece]
        if event.kind == "call":
            frame = timeline.frames[frame_index]
            head = f"{frame_index:>5} t={frame.now:<5} " if piece == 0 else " " * len(self.EVENT_PREFIX)
            parts = [(head, "step"), (text, "call")]
            check = timeline.check(frame_index)
            if piece == len(pieces) - 1 and check is not None and check.divergence:
                parts.append((self.DIVERGENCE, "divergence"))
            return row_class, tuple(parts)
        head = self.EVENT_PREFIX if piece == 0 else " " * len(self.EVENT_PREFIX)
        return row_class, ((head, "step"), (text, event.kind))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or self._timeline is None:
            return
        index = offset.y + self.scroll_offset.y
        if index < self._count:
            self.post_message(self.Picked(self.step_of_line(index)))

    def step_of_line(self, index: int) -> int:
        """The step that screen line ``index`` of the log (from the top, not the scroll) belongs to."""
        return self._timeline.log[bisect.bisect_right(self._starts, index) - 1][0]


def wrap(text: str, width: int) -> tuple[str, ...]:
    """``text`` cut at spaces into lines of at most ``width`` cells (a word longer
    than that is cut where it must be). Fast for the common case: one line."""
    if cell_len(text) <= width:
        return (text,)
    lines = []
    while cell_len(text) > width:
        cut = text.rfind(" ", 0, width + 1) if text.isascii() else _last_space(text, width)
        if cut <= 0:
            cut = _cells_prefix(text, width)
            lines.append(text[:cut])
            text = text[cut:]
        else:
            lines.append(text[:cut])
            text = text[cut + 1 :]
    lines.append(text)
    return tuple(lines)


def _cells_prefix(text: str, width: int) -> int:
    """The length of the longest prefix of ``text`` that fits in ``width`` cells."""
    cells = 0
    for at, char in enumerate(text):
        cells += cell_len(char)
        if cells > width:
            return max(1, at)
    return len(text)


def _last_space(text: str, width: int) -> int:
    return text.rfind(" ", 0, _cells_prefix(text, width) + 1)


class FittedStatic(KeepLayoutOnVirtualSize, Static):
    """A ``Static`` whose new content lays the screen out again only when it changes the widget's height.

    ``Static.update`` lays out the whole screen every time, which costs more than
    drawing a step; most steps change a panel's words, not its number of lines.
    """

    _shown: RenderableType | None = None

    def _content(self, content: RenderableType) -> RenderableType:
        """What ``update`` is given for ``content`` (``ComponentStyles`` converts a ``Text``)."""
        return content

    def show_content(self, content: RenderableType) -> None:
        """Show ``content``; a layout only if its height at the current width differs from
        the height laid out (or the widget has no size yet), and nothing at all if it is
        the content already shown (``Text`` compares by its words and styles).
        O(the content's length)."""
        if content == self._shown:
            return
        self._shown = content
        self.update(self._content(content), layout=False)
        width, height = self.content_size
        rule = self.styles.width  # None: as wide as the container, whatever the content
        if not (self.display and width) or (rule is not None and rule.is_auto):
            self.refresh(layout=True)
        elif self._height_at(content, width) != height:
            self.refresh(layout=True)

    def _height_at(self, content: RenderableType, width: int) -> int:
        """The lines ``content`` takes at ``width``. For a ``Text`` (no tabs, wrapped, folded,
        unpadded: every panel's), counted from its words as Textual counts them (its
        ``Content.get_height`` cuts each line where Rich's ``divide_line`` says), without
        the styled copy and the lines Textual builds to measure; otherwise Textual's
        measure. O(its length)."""
        styles = self.styles
        plain = content.plain if isinstance(content, Text) else None
        if (
            plain is not None and "\t" not in plain and styles.text_wrap == "wrap"
            and styles.text_overflow == "fold" and not styles.line_pad
        ):
            return sum(len(divide_line(line, width, fold=True)) + 1 for line in plain.split("\n"))
        return self.get_content_height(Size(0, 0), Size(0, 0), width)



class WorkerStrip(ComponentStyles, FittedStatic):
    """Every worker with its used/total slots."""

    PREFIX = "worker-strip"

    COMPONENT_CLASSES = {"worker-strip--name", "worker-strip--used", "worker-strip--free", "worker-strip--full"}

    #: More slots than this are drawn as a count only.
    MAX_SLOTS_DRAWN = 12

    def show(self, workers: Sequence[WorkerLoad]) -> None:
        if not workers:
            self.show_content(Text("no workers yet: add_worker adds one", style=self._style("free")))
            return
        text = Text()
        for number, w in enumerate(workers):
            if number:
                text.append("   ")
            full = w.used >= w.capacity
            text.append(w.name, self._style("full" if full else "name"))
            text.append(" ")
            if w.capacity <= self.MAX_SLOTS_DRAWN:
                text.append("▮" * w.used, self._style("used"))
                text.append("▯" * max(0, w.capacity - w.used), self._style("free"))
                text.append(" ")
            text.append(f"{w.used}/{w.capacity}", self._style("full" if full else "name"))
        self.show_content(text)



class StatusBar(ComponentStyles, Static):
    """Title, ``step K/N``, ``t=T``, autoplay, and the marks of the step on screen."""

    PREFIX = "status-bar"

    COMPONENT_CLASSES = {
        "status-bar--title",
        "status-bar--position",
        "status-bar--clock",
        "status-bar--playing",
        "status-bar--mode",
        "status-bar--mismatch",
        "status-bar--divergence",
        "status-bar--quiet",
        "status-bar--score",
    }

    def show(
        self,
        title: str,
        frame: Frame,
        last: int,
        *,
        playing: bool,
        speed: float,
        side: str,
        interactive: bool,
        check: Check | None,
        model_progress: str,
        clock: int | None = None,
        score: tuple[int, int] | None = None,
        ahead: int | None = None,
    ) -> None:
        """``clock``: the time to show instead of the frame's (an open question hides the step's);
        ``score``: (right, answered) when the scenario asks questions; ``ahead``: the next step
        that breaks its expect or parts from the model, said here rather than in a notice that
        would cover the step panel."""
        s = self._style
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" step {frame.index}/{last} ", s("position"))
        text.append(f" t={frame.now if clock is None else clock} ", s("clock"))
        if score is not None:
            text.append(f" score {score[0]}/{score[1]} ", s("score"))
        if playing:
            text.append(f" ▶ {speed:g}/s ", s("playing"))
        if interactive:
            text.append(" interactive ", s("mode"))
        if side == "model":
            text.append(" showing the model ", s("mode"))
        if frame.mismatch:
            text.append(" ✗ expect ", s("mismatch"))
        if check is not None and (check.divergence or check.differing):
            text.append(" ≠ model ", s("divergence"))
        if ahead is not None:
            text.append(f" problem at step {ahead}: d ", s("mismatch"))
        if model_progress:
            text.append(f" {model_progress} ", s("quiet"))
        text.append(" ")
        text.append(title, s("title"))
        self.update(self._content(text), layout=False)  # always one line



class SidePanel(BorderTitles, VerticalScroll, can_focus=False):
    """The step panel: summary, differences from the model, narration.

    It never takes the keys (they step through time): the app's PgUp/PgDn and
    shift+↑/↓ scroll it, as does the mouse. Its border says when there is more
    to read above or below, beside the scrollbar.
    """

    #: The border's hint, by (more above, more below).
    HINTS = {(False, False): "", (False, True): "more ↓ PgDn", (True, True): "↑ more ↓", (True, False): "↑ PgUp"}

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self.show_hint()

    def watch_virtual_size(self) -> None:  # the content's height changed
        self.show_hint()

    def virtual_size_given(self) -> None:  # a layout's new virtual size: the watcher does not run for it
        self.show_hint()

    def on_resize(self) -> None:
        self.show_hint()

    def show_hint(self) -> None:
        y, bottom = round(self.scroll_y), self.max_scroll_y
        self.show_subtitle(self.HINTS[y > 0, y < bottom])


class StepSummary(ComponentStyles, FittedStatic):
    """The step on screen: its call, its answer, what happened, and what comes next."""

    PREFIX = "step-summary"

    COMPONENT_CLASSES = {
        "step-summary--heading",
        "step-summary--result",
        "step-summary--next",
        *(f"step-summary--{kind}" for kind in EVENT_KINDS),
    }

    def show(self, frame: Frame, last: int, upcoming: Frame | None, hidden: bool = False) -> None:
        """``hidden``: a question is open, so the call is shown but not what it did."""
        s = self._style
        text = Text()
        if hidden:
            text.append(f"Step {frame.index} of {last}\n", s("heading"))
            text.append(frame.call + "\n", s("call"))
            text.append("→ ? (your prediction first)", s("next"))
            self.show_content(text)
            return
        if frame.step is None:
            text.append("Before the first step", s("heading"))
            text.append(f"  ({last} steps)\n" if last else "\n")
        else:
            text.append(f"Step {frame.index} of {last}  t={frame.now}\n", s("heading"))
            text.append(frame.call + "\n", s("call"))
            text.append("→ " + frame.result + "\n", s("error" if frame.error else "result"))
            for event in frame.events:
                text.append("• " + event.text + "\n", s(event.kind))
        if upcoming is not None:
            text.append("next: " + upcoming.call, s("next"))
        text.rstrip()  # the last step has no "next:" line: no blank line in its place
        self.show_content(text)



class Narration(Static):
    """The step's note (Markdown), rendered at once: a step never waits for it.

    A note comes from a file, so it may be hostile. Markdown is rendered
    (headings, emphasis, code, lists, quotes); Rich markup such as ``[red]``
    is text; a link is shown as its text and its address in brackets, never
    as a terminal hyperlink to click; an image is its alt text, never
    fetched; raw HTML is shown as the text inside it. Control characters
    never get here: the scenario reader refuses them.
    """

    def show(self, markdown: str) -> None:
        self.update(RichMarkdown(markdown, hyperlinks=False) if markdown else "")


class Differences(ComponentStyles, FittedStatic):
    """Where the implementation parts from the model at the step on screen."""

    PREFIX = "differences"

    COMPONENT_CLASSES = {"differences--heading", "differences--line", "differences--why"}

    def show(self, frame: Frame, check: Check | None, lines: Sequence[str], why: str | None = None) -> None:
        """The differences at ``frame``, then ``why`` (the ``why:`` line ``fencepost check`` prints) when given."""
        s = self._style
        text = Text()
        text.append("Expected (the model) vs this implementation\n", s("heading"))
        refused = getattr(getattr(frame.outcome, "value", None), "accepted", None) is False
        if check is not None and check.result != frame.result and refused and check.result.startswith("rejected") and lines:
            # Both refused the call: the reasons differ because the state does, so the state comes first.
            for line in lines:
                text.append(f"• {line}\n", s("line"))
            text.append(f"• so both rejected the call, for different reasons: {frame.result.removeprefix('rejected: ')} "
                        f"here, {check.result.removeprefix('rejected: ')} in the model\n", s("line"))
        else:
            if check is not None and check.result != frame.result:
                text.append(f"• returned {frame.result}\n  the model returned {check.result}\n", s("line"))
            for line in lines:
                text.append(f"• {line}\n", s("line"))
        if why:
            text.append(f"{why}\n", s("why"))
        self.show_content(text)



class QuestionPanel(ComponentStyles, FittedStatic):
    """A step's question: its choices while open; then the verdict, the right choice and why."""

    PREFIX = "question-panel"

    COMPONENT_CLASSES = {
        "question-panel--ask",
        "question-panel--choice",
        "question-panel--right",  # the right choice, once revealed
        "question-panel--wrong",  # the reader's choice, when it was not the right one
        "question-panel--hint",
    }

    def show(self, question: Question, picked: int | None, score: str, late: int | None = None) -> None:
        """``picked``: None while open, else the choice picked (1-based) or ``SKIPPED``; ``late``:
        the choice picked after → revealed the answer, if any (told right or not, never scored)."""
        s = self._style
        choices = Table.grid(padding=(0, 1))  # a long choice wraps under its own text, not under its number
        choices.add_column(no_wrap=True)
        choices.add_column()
        yours = late if picked == SKIPPED else picked
        for number, choice in enumerate(question.choices, start=1):
            if picked is None:
                choices.add_row(Text(f" {number}", s("choice")), Text(choice, s("choice")))
            elif number == question.answer:  # once answered, only the right choice and the reader's stay
                mine = "  ← yours" if number == yours else ""
                choices.add_row(Text(f"✓ {number}", s("right")), Text(choice + mine, s("right")))
            elif number == yours:
                choices.add_row(Text(f"✗ {number}", s("wrong")), Text(choice + "  ← yours", s("wrong")))
        if picked is None:
            after = Text(f"Press 1-{len(question.choices)} to answer; → shows the result unscored.", s("hint"))
        else:
            if picked == SKIPPED and late is not None:
                verdict = (f"You picked {late} after → showed the answer: "
                           f"{'right' if late == question.answer else 'not quite'}, not scored.")
            elif picked == SKIPPED:
                verdict = f"Skipped: the answer is {question.answer}. Revealed with → before an answer: not scored."
            elif picked == question.answer:
                verdict = "Right."
            else:
                verdict = f"Not quite: the answer is {question.answer}."
            after = Text(f"{verdict} {score}\n", s("right" if picked == question.answer else "wrong"))
            after.append(question.why.strip())
        self.show_content(Group(Text(f"Predict: {question.ask}", s("ask")), choices, after))

