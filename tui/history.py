"""The history view: one lane per client, each call an interval, the checker's order as points.

``fencepost tui HISTORY.jsonl`` opens it. The app holds the state (the call
selected, the first event column on screen); ``HistoryPicture`` computes what
is drawn from the history and the checker's verdict; ``Lanes`` draws only the
columns on screen (Textual's line API), however long the history is; the
stylesheet (``app.tcss``) decides the colours.

Every event of the history gets ``SCALE`` columns, so the picture is in real-time order:
a call is drawn from its invocation to its completion (``├───┤``), an info
call to the event where its client gave up and then open (``├╌╌?``), and the
point where the checker's order places a call is a ``●`` on its interval. For
a history that is not linearizable, the stretch that cannot be ordered is
shaded and the call whose result no order explains is marked.

Under the lanes and the call selected, the rest of the screen holds what a
reader needs to see why: for a history that is not linearizable, the
checker's report (the stretch's calls, their arguments and results, what the
model would have answered), then the model's state where the stretch begins
(``model_lines``; a task a prune forgot is shown as forgotten), then the calls
before the stretch on the tasks it names, and the prunes, which may have
forgotten one (``lead_up_lines``); for one that is, the calls around the selected one in
the order found (``order_lines``).
"""

from __future__ import annotations

import bisect
from pathlib import Path

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Footer, Static

from textual.containers import VerticalScroll

from fencepost.spec.checkers.linearize import Verdict
from fencepost.spec.checkers.linearize_command import describe_call, describe_outcome, report
from fencepost.story.history import SCALE, HistoryPicture, lead_up_lines, model_lines, order_lines, picture
from fencepost.spec.formats.history import INFO, History

#: Columns the lane names may take; longer names are cut.
MAX_LABEL = 10

#: The axis names the history line of every this many events.
AXIS_EVERY = 5

#: Glyphs of an interval, each one cell wide.
START, BODY, END, OPEN_BODY, OPEN_END, POINT = "├", "─", "┤", "╌", "?", "●"


class Lanes(Widget):
    """One row of real-time columns per client, under a row of history line numbers.

    Draws only the columns on screen, from ``offset`` on; the app moves the
    offset and the selection.
    """

    COMPONENT_CLASSES = {
        "lanes--label", "lanes--axis", "lanes--call", "lanes--info", "lanes--point",
        "lanes--selected", "lanes--failing", "lanes--stretch",
    }

    offset: reactive[int] = reactive(0)
    selected: reactive[int | None] = reactive(None)

    def __init__(self, shown: HistoryPicture, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.shown = shown
        self.label_width = min(MAX_LABEL, max((len(name) for name in shown.lanes), default=1)) + 1

    def watch_offset(self) -> None:
        self.refresh()

    def watch_selected(self) -> None:
        self.refresh()

    @property
    def columns(self) -> int:
        """Event columns that fit beside the lane names."""
        return max(1, self.size.width - self.label_width)

    def get_content_height(self, container, viewport, width: int) -> int:  # unannotated: Textual's signature
        return len(self.shown.lanes) + 1

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if y == 0:
            return Strip([Segment(self._axis(), base + self._style("axis"))]).crop_extend(0, width, base)
        lane = y - 1
        if lane >= len(self.shown.lanes):
            return Strip.blank(width, base)
        name = self.shown.lanes[lane][: self.label_width - 1].ljust(self.label_width)
        segments = [Segment(name, base + self._style("label"))]
        segments += [Segment(text, base + style) for text, style in self._cells(lane)]
        return Strip(segments).crop_extend(0, width, base)

    def _axis(self) -> str:
        """History line numbers every ten columns, over the columns they name."""
        events, cells = self.shown.history.events, [" "] * self.columns
        step = AXIS_EVERY * SCALE
        for column in range(self.offset - self.offset % step, self.offset + self.columns, step):
            if self.offset <= column < len(events) * SCALE:
                mark = f"│line {events[column // SCALE].line}"
                at = column - self.offset
                for n, char in enumerate(mark[: self.columns - at]):
                    cells[at + n] = char
        return " " * self.label_width + "".join(cells)

    def _cells(self, lane: int) -> list[tuple[str, Style]]:
        """The visible columns of one lane, as runs of (text, style)."""
        first, count = self.offset, self.columns
        chars = [" "] * count
        kinds: list[str | None] = [None] * count
        shown, calls = self.shown, self.shown.history.calls
        indices = shown.by_lane[lane]
        # Calls of one process never overlap, so invocation order is also end order: start at
        # the first call that ends on or after the first column on screen.
        ends = shown.lane_ends[lane]
        for index in indices[bisect.bisect_left(ends, first):]:
            call = calls[index]
            begin = shown.start_of(index)
            if begin >= first + count:
                break
            stop = shown.end_of(index)
            point = shown.points.get(index)
            info = call.kind == INFO
            kind = "failing" if index == shown.failing else "selected" if index == self.selected else "info" if info else "call"
            reach = max(stop, point if point is not None else stop)
            for column in range(max(begin, first), min(reach, first + count - 1) + 1):
                if column == begin:
                    char = START
                elif column == stop and call.ended is not None:
                    char = OPEN_END if info else END
                elif column > stop or info:
                    char = OPEN_BODY
                else:
                    char = BODY
                if column == point:
                    char = POINT
                chars[column - first] = char
                kinds[column - first] = "point" if column == point and kind in ("call", "info") else kind
        stretch = shown.stretch
        runs: list[tuple[str, Style]] = []
        for at, (char, kind) in enumerate(zip(chars, kinds)):
            style = self._style(kind) if kind else Style()
            if stretch and stretch[0] <= first + at <= stretch[1]:
                style = self._style("stretch") + style
            if runs and runs[-1][1] == style:
                runs[-1] = (runs[-1][0] + char, style)
            else:
                runs.append((char, style))
        return runs

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"lanes--{name}", partial=True)


CALL_KEYS = Binding.Group("Call", compact=True)
LANE_KEYS = Binding.Group("Lane", compact=True)
TIME_KEYS = Binding.Group("Earlier/later", compact=True)


class HistoryApp(App[None]):
    """A concurrent history, lane by lane, with the order the linearizability checker chose."""

    CSS_PATH = Path(__file__).with_name("app.tcss")
    # Pairs share one label in the footer, so every key fits at 80 columns.
    BINDINGS = [
        Binding("left,h", "previous", "Previous call", key_display="←", group=CALL_KEYS),
        Binding("right,l", "next", "Next call", key_display="→", group=CALL_KEYS),
        Binding("up,k", "lane(-1)", "Lane above", key_display="↑", group=LANE_KEYS),
        Binding("down,j", "lane(1)", "Lane below", key_display="↓", group=LANE_KEYS),
        Binding("pageup,[", "scroll_page(-1)", "Earlier", key_display="[", group=TIME_KEYS),
        Binding("pagedown,]", "scroll_page(1)", "Later", key_display="]", group=TIME_KEYS),
        Binding("f", "failure", "Failing call"),
        Binding("q", "quit", "Quit"),
    ]

    selected: reactive[int | None] = reactive(None)

    def __init__(self, history: History, verdict: Verdict) -> None:
        super().__init__()
        self.shown = picture(history, verdict)

    def watch_selected(self, index: int | None) -> None:
        lanes = self.query_one(Lanes)
        lanes.selected = index
        self.query_one("#history-call", Static).update(self._call_text(index))
        lines = order_lines(self.shown.history, self.shown.verdict, index)
        order = self.query_one("#history-order", Static)
        order.display = bool(lines)
        order.update(Text("\n".join(lines), no_wrap=True, overflow="ellipsis"))
        self._keep_in_view()

    def compose(self) -> ComposeResult:
        yield Static(id="history-title")
        yield Lanes(self.shown, id="lanes")
        yield Static(id="history-call")
        with VerticalScroll(id="history-detail", can_focus=False):
            yield Static(id="history-verdict")
            yield Static(id="history-model")
            yield Static(id="history-lead-up")
            yield Static(id="history-order")
        yield Footer()

    def on_resize(self) -> None:
        self.query_one(Footer).show_command_palette = self.size.width >= 100  # the keys need the room

    def on_mount(self) -> None:
        self.title = self.shown.history.source
        tone = {True: "-ok", False: "-bad", None: "-unsure"}[self.shown.verdict.linearizable]
        self.query_one("#history-title", Static).set_class(True, tone).update(self._title())
        self.query_one("#history-verdict", Static).update(Text("\n".join(self._verdict_lines())))
        history, verdict = self.shown.history, self.shown.verdict
        for name, lines in (("model", model_lines(history, verdict)), ("lead-up", lead_up_lines(history, verdict))):
            widget = self.query_one(f"#history-{name}", Static)
            widget.display = bool(lines)
            widget.update(Text("\n".join(lines), no_wrap=True, overflow="ellipsis"))
        calls = self.shown.history.calls
        if self.shown.failing is not None:
            self.selected = self.shown.failing
        elif calls:
            self.selected = 0
        self.call_after_refresh(self._keep_in_view)

    def _title(self) -> Text:
        verdict, history = self.shown.verdict, self.shown.history
        words = {True: "linearizable", False: "NOT linearizable", None: "undecided"}[verdict.linearizable]
        return Text(f" {words}  {history.source}  {len(history.calls)} calls by {len(history.processes)} clients ",
                    no_wrap=True, overflow="ellipsis")

    def _verdict_lines(self) -> list[str]:
        lines = report(self.shown.history, self.shown.verdict)
        if self.shown.verdict.linearizable:
            lines.append("● marks where the order found places each call; ├╌╌? is a call whose outcome is unknown.")
        return lines

    def _call_text(self, index: int | None) -> Text:
        if index is None:
            return Text("no calls in this history")
        shown, call = self.shown, self.shown.history.calls[index]
        events = shown.history.events
        span = f"lines {events[call.invoked].line}-{events[call.ended].line}" if call.ended is not None else \
            f"line {events[call.invoked].line}-(never ended)"
        if index in shown.placed:
            where = f"placed {shown.placed[index]} of {len(shown.verdict.order)} in the order"
        elif shown.verdict.linearizable:
            where = "took no effect in the order found"
        elif index == shown.failing:
            where = "no order explains this result"
        else:
            where = ""
        text = Text()
        text.append(f" #{index + 1} {call.process}  ", "bold")
        text.append(f"{describe_call(call)} -> {describe_outcome(call)}")
        text.append(f"   {span}   {where}")
        return text

    def _keep_in_view(self) -> None:
        lanes = self.query_one(Lanes)
        if self.selected is None or not lanes.size.width:
            return  # not laid out yet: on_mount calls again after the first refresh
        start, stop = self.shown.start_of(self.selected), self.shown.end_of(self.selected)
        if start < lanes.offset or stop >= lanes.offset + lanes.columns:
            lanes.offset = max(0, min(start - SCALE, self.shown.width - lanes.columns))

    def history_call(self, index: int):
        """Call ``index`` of the history shown."""
        return self.shown.history.calls[index]

    def action_next(self) -> None:
        if self.selected is not None and self.selected + 1 < len(self.shown.history.calls):
            self.selected += 1

    def action_previous(self) -> None:
        if self.selected:
            self.selected -= 1

    def action_lane(self, step: int) -> None:
        """Select the call in the next lane up or down nearest in time to the one selected."""
        if self.selected is None:
            return
        shown = self.shown
        call = shown.history.calls[self.selected]
        lane = (shown.lanes.index(call.process) + step) % len(shown.lanes)
        candidates = shown.by_lane[lane]
        if candidates:
            self.selected = min(candidates, key=lambda i: abs(shown.history.calls[i].invoked - call.invoked))

    def action_scroll_page(self, direction: int) -> None:
        lanes = self.query_one(Lanes)
        page = max(1, lanes.columns // 2)
        lanes.offset = max(0, min(lanes.offset + direction * page, self.shown.width - lanes.columns))

    def action_failure(self) -> None:
        if self.shown.failing is not None:
            self.selected = self.shown.failing
