"""The fencepost TUI: step through a scheduler's logical time, one protocol call at a time.

The app holds the state (which timeline, which step, playing or not, which
side is shown); ``story.timeline`` computed everything it shows; the widgets in
``tui.widgets`` format it; ``app.tcss`` decides how it looks.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from fencepost.spec.arguments import DEFAULT_IMPL, UsageError
from fencepost.spec.checkers.why import why_at
from fencepost.spec.formats.recorded import suggestions
from fencepost.spec.formats.scenario import (
    Scenario,
    ScenarioError,
    dump_scenario,
    load_scenario,
)
from fencepost.spec.variants import DEFAULT, Variants
from fencepost.spec.formats.trace import DIVERGES_NOTE
from fencepost.story.quiz import SKIPPED, Quiz
from fencepost.story.timeline import Timeline, build_timeline
from fencepost.story.walkthroughs import (
    builtin_names,
    builtin_summary,
    curriculum,
    resolve,
)
from fencepost.tui.commands import CommandError, parse_command
from fencepost.tui.lanes import LanesView
from fencepost.tui.screens import HelpScreen, PromptScreen
from fencepost.tui.textual_private import take_back_notice
from fencepost.tui.widgets import (
    Differences,
    EventLog,
    Narration,
    QuestionPanel,
    SidePanel,
    StatusBar,
    StepSummary,
    TaskColumn,
    WorkerStrip,
)
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import ActiveBinding, Binding
from textual.containers import Horizontal, Vertical
from textual.notifications import Notification, Notify
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Footer, Input, Static
from textual.worker import get_current_worker

#: Autoplay speeds, in steps per second.
SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
DEFAULT_SPEED = 2  # index into SPEEDS

#: Seconds the notice of m stays up (a step taken takes it down sooner: notices belong to their step).
SIDE_NOTICE_SECONDS = 4

#: What m says, by what it shows: the model's side (alike or not at this step), or the implementation's again.
SIDE_NOTICES = {
    "impl": "back to the implementation's state",
    "differs": "the model's expected state, in orange: it differs from the implementation's here (m: back)",
    "same": "the model's expected state, in orange: the same as the implementation's here (m: back)",
}

#: The notices shown one at a time (``FencepostApp.single_notice``).
SINGLE_NOTICES = frozenset(SIDE_NOTICES.values())

#: Up to this many steps the scenario is run and the model checked before the screen
#: opens (a small scenario takes milliseconds); past it, in a thread once the screen
#: is up: first the implementation's steps ("impl N%"), then the model ("model N%").
MODEL_UP_FRONT_STEPS = 2000

#: A jump at most this many steps past the steps run so far runs them at once (a fraction of a
#: second); a longer one is made when the background worker has run them, so the screen never stalls.
RUN_AT_ONCE_STEPS = 2000

#: Shown at step 0 of an empty interactive session.
NEW_SESSION_NOTE = """\
**An empty scheduler.** Type protocol calls in the line at the bottom, e.g.

* `add_worker w1 1`
* `submit priority=2`
* `dispatch w1 5 5` (worker, now, duration)
* `complete 1 1 9` (task_id, token, now)

Each accepted call is a step; a refused one shows the scheduler's message.
`Esc` leaves the line so the step keys work, `i` comes back, `w` writes the
session as a scenario file, `?` has the whole syntax.
"""


STEP_KEYS = Binding.Group("Step", compact=True)
SPEED_KEYS = Binding.Group("Speed", compact=True)
NOTABLE_KEYS = Binding.Group("Expiry/rejection", compact=True)
PROBLEM_KEYS = Binding.Group("Problem", compact=True)
TIME_KEYS = Binding.Group("Scroll time", compact=True)

#: The keys that answer a question: 1 to 9, one per choice (the footer shows the first as "1-9").
ANSWER_BINDINGS = [
    Binding(str(n), f"answer({n})", "Answer", key_display="1-9", show=n == 1) for n in range(1, 10)
]


#: The footer's keys by how much they matter, most first: a footer too narrow for all of them
#: shows the first that fit (``FencepostApp.footer_actions``), and ``?`` lists every key.
#: Stepping, help and quit always fit; then what the moment asks for (an answer, the next
#: walkthrough, the command line, the lanes' scrolling), then the views and the jumps.
FOOTER_PRIORITY = (
    ("next", "previous", "help", "quit"),
    ("answer",),
    ("open_next",),
    ("leave_command",),
    ("write",),
    ("scroll_lanes",),
    ("faster", "slower"),
    ("toggle_play",),
    ("next_problem", "previous_problem"),
    ("toggle_lanes",),
    ("toggle_side",),
    ("next_notable", "previous_notable"),
    ("toggle_log",),
    ("interact",),
    ("jump_prompt",),
)

#: Columns the footer gives one key beyond its key and words: a space between, one each side.
FOOTER_KEY_PADDING = 3

#: Columns the command palette's key takes at the footer's right end, when it is shown.
FOOTER_PALETTE_WIDTH = 12

#: Below both, a screen is narrow and short (80x24): the event log has no room beside the step panel
#: and ``e`` swaps it in (``app.tcss``: ``Screen.-narrow.-short``).
LOG_MIN_WIDTH, LOG_MIN_HEIGHT = 110, 34

#: Columns of the status line a title may not count on beyond step and clock (the marks of a problem
#: step, the score): a title longer than the rest is shown whole in the opening note.
STATUS_TITLE_SLACK = 4

#: The narrowest screen whose footer shows the command palette's key (ctrl+p); the help page names it.
PALETTE_MIN_WIDTH = 100


class StepScreen(Screen):
    """The app's main screen: its footer shows only the keys ``FencepostApp.footer_actions`` picks.

    The other keys still work (Textual dispatches keys by its binding chain,
    not by this map); they are only left out of the footer, and the help page
    (``?``) lists them all.
    """

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        bindings = super().active_bindings
        shown = self.app.footer_actions(bindings.values())
        return {
            key: active if active.binding.action.partition("(")[0] in shown or not active.binding.show
            else active._replace(binding=dataclasses.replace(active.binding, show=False))
            for key, active in bindings.items()
        }


def open_timeline(scenario: Scenario, factory: Callable[[], object], variants: Variants = DEFAULT) -> Timeline:
    """The timeline to open: run whole, with the model's checks, if the scenario is small
    (``MODEL_UP_FRONT_STEPS``); else with nothing run, so the first screen runs only
    what it shows and the app's background worker runs the rest, then the model.
    The model follows ``variants``, the declared contract variants."""
    if len(scenario.steps) <= MODEL_UP_FRONT_STEPS:
        return build_timeline(scenario, factory, variants=variants)
    return Timeline(scenario, factory, variants)


def status_title(timeline: Timeline) -> str:
    """The header line's title: the declared variants in force first (a long title is cut at its end), then the scenario's."""
    if timeline.variants == DEFAULT:
        return timeline.scenario.title
    return f"under {timeline.variants.describe()} · {timeline.scenario.title}"


def window_title(timeline: Timeline) -> str:
    """The header's title: the scenario's, and the declared variants in force when there are any."""
    title = f"fencepost · {timeline.scenario.title}"
    if timeline.variants != DEFAULT:
        title += f" · {timeline.variants.describe()}"
    return title


class FencepostApp(App[None]):
    """Step through a scenario run by a real scheduler, with the spec's model beside it."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses elsewhere find it too
    BINDINGS = [
        *ANSWER_BINDINGS,
        Binding("left,h", "previous", "Step back", key_display="←", group=STEP_KEYS),
        Binding("right,l", "next", "Step", key_display="→", group=STEP_KEYS),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
        Binding("space", "toggle_play", "Play"),
        Binding("plus,equals_sign", "faster", "Faster", key_display="+", group=SPEED_KEYS),
        Binding("minus", "slower", "Slower", key_display="-", group=SPEED_KEYS),
        Binding("g", "jump_prompt", "Jump"),
        # Help and quit early, so a narrow footer never cuts them off.
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        Binding("n", "next_notable", "Next expiry or rejection", group=NOTABLE_KEYS),
        Binding("N", "previous_notable", "Previous expiry or rejection", group=NOTABLE_KEYS),
        Binding("d", "next_problem", "Next problem", group=PROBLEM_KEYS),
        Binding("D", "previous_problem", "Previous problem", group=PROBLEM_KEYS),
        Binding("m", "toggle_side", "Model"),
        Binding("o", "open_next", "Next walkthrough"),
        Binding("t", "toggle_lanes", "Lanes"),
        Binding("e", "toggle_log", "Events"),
        Binding("left_square_bracket", "scroll_lanes(-1)", "Earlier", key_display="[", group=TIME_KEYS),
        Binding("right_square_bracket", "scroll_lanes(1)", "Later", key_display="]", group=TIME_KEYS),
        Binding("i", "interact", "Interact"),
        Binding("w", "write", "Write"),
        Binding("escape", "leave_command", "Leave line"),
        # The step panel scrolls by these; its border says when there is more (not in the footer).
        Binding("pagedown,shift+down", "scroll_note(1)", "Scroll the step panel down", show=False),
        Binding("pageup,shift+up", "scroll_note(-1)", "Scroll the step panel up", show=False),
        Binding("down", "scroll_note_line(1)", "Scroll the step panel down a line", show=False),
        Binding("up", "scroll_note_line(-1)", "Scroll the step panel up a line", show=False),
    ]
    AUTO_FOCUS = None  # nothing takes the keys until the command line is opened
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (LOG_MIN_WIDTH, "-wide"), (170, "-very-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (LOG_MIN_HEIGHT, "-tall"), (48, "-very-tall")]

    # The footer is refreshed by refresh_keys, only when a key's state changes:
    # rebuilding it on every step would cost more than drawing the step.
    # vars, not reactives: an App's reactive repaints the whole screen on every change,
    # where the watchers already update just the widgets that show the value.
    step: var[int] = var(0, init=False)
    playing: var[bool] = var(False, init=False)
    speed: var[int] = var(DEFAULT_SPEED, init=False)
    side: var[str] = var("impl", init=False)
    interactive: var[bool] = var(False, init=False)

    def __init__(
        self,
        timeline: Timeline,
        *,
        interactive: bool = False,
        impl_name: str | None = None,
        notice: str | None = None,
        save_path: str | None = None,
        walkthrough: str | None = None,
        freeze_collector: bool = False,
        opener: Callable[[Scenario], tuple[Callable[[], object], str, str | None]] | None = None,
    ) -> None:
        """``walkthrough``: the built-in's name when the scenario is one, so its last step
        can point to the next in the curriculum. ``freeze_collector``: the process is this
        app's alone (``fencepost tui``), so what stays alive is moved out of the garbage
        collector's sight (``gc.freeze``) once the screen is up and as the model runs;
        a library caller's heap is left as it is. ``opener``: how a scenario loaded later
        (``o``, the load prompt) gets its scheduler, as ``(factory, name, notice)``
        (``tui.launch.choose_factory``); without one it runs on this timeline's factory."""
        super().__init__()
        self.freeze_collector = freeze_collector
        self.walkthrough = walkthrough
        self.opener = opener
        self.timeline = timeline
        self.impl_name = impl_name
        self.notice = notice
        self.save_path = save_path
        self.model_progress = ""
        self._start_interactive = interactive
        self._note_shown: str | None = None
        self._timer = None
        self._key_state: tuple = ()
        self._shown_at: tuple[Timeline, int] | None = None  # where the step panel was last scrolled home
        self._single_notice: Notification | None = None  # the last notice of m
        self._quizzes: dict[str, Quiz] = {}  # by scenario title: a walkthrough keeps its score while another is open
        self._whys: dict[tuple[Timeline, int], str | None] = {}  # a diverging step's why: line, replayed once
        self._wanted: int | None = None  # a step jumped to that the background worker has not run yet (go_to)

    def watch_step(self, step: int) -> None:
        if self.playing and (step >= self.timeline.last or self.quiz.open(step)):
            self.playing = False  # autoplay stops at a question: the reader predicts first
        self.take_down_notices()
        self.show_step()

    def watch_playing(self, playing: bool) -> None:
        if playing:
            self._timer.resume()
        else:
            self._timer.pause()
        self.show_status()
        self.refresh_keys()

    def watch_speed(self, speed: int) -> None:
        self._timer.stop()
        self._timer = self.set_interval(1 / SPEEDS[speed], self.action_next, pause=not self.playing)
        self.show_status()
        self.refresh_keys()

    def watch_side(self) -> None:
        self.show_step()

    def watch_interactive(self, interactive: bool) -> None:
        self.set_class(interactive, "-interactive")
        if interactive:
            self.query_one("#command", Input).focus()
        self.show_status()
        self.refresh_keys()

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                with Horizontal(id="board"):
                    yield TaskColumn("pending", id="pending")
                    yield TaskColumn("running", id="running")
                    yield TaskColumn("done", id="done")
                yield LanesView(id="worker-lanes")
                yield WorkerStrip(id="workers")
                yield EventLog(id="log")
            with SidePanel(id="side"):
                yield StepSummary(id="summary")
                yield QuestionPanel(id="question")
                yield Differences(id="differences")
                yield Narration(id="note")
        with Vertical(id="command-bar"):
            yield Static(id="command-error")
            with Horizontal(id="command-line"):
                yield Static("call ›", id="command-prompt")
                yield Input(
                    id="command",
                    placeholder="e.g. dispatch worker=w1 now=5 duration=5 (Esc leaves the line)",
                    compact=True,
                )
        yield Footer()

    def on_mount(self) -> None:
        self.title = window_title(self.timeline)
        self._timer = self.set_interval(1 / SPEEDS[self.speed], self.action_next, pause=True)
        self.show_step()
        # Once the first screen is up, everything alive (the timeline, the widgets) stays
        # alive: out of the collector's sight, a full collection no longer stalls a step.
        self.call_after_refresh(self.freeze_survivors)
        if not self.timeline.model_done:
            self.call_after_refresh(self.check_against_model)
        if self.notice:
            self.notify(self.notice, severity="warning", timeout=8, markup=False)
        if self._start_interactive:
            self.action_interact()

    def on_resize(self) -> None:
        # ctrl+p stays on the help page; on a narrow footer the keys need the room
        self.query_one(Footer).show_command_palette = self.size.width >= PALETTE_MIN_WIDTH
        # Where the log has no room, the step panel's border says which key shows it (the footer may be full).
        self.query_one(SidePanel).border_title = "e: event log" if self.log_hidden() else ""
        self.show_step()

    @on(EventLog.Picked)
    def log_picked(self, event: EventLog.Picked) -> None:
        self.action_jump(event.index)

    @on(Input.Submitted, "#command")
    def command_submitted(self, event: Input.Submitted) -> None:
        self.run_command(event.value)

    @on(Input.Changed, "#command")
    def command_changed(self) -> None:
        self.query_one("#command-error", Static).set_class(False, "-shown")

    # ------------------------------------------------------------ showing

    def show_step(self) -> None:
        """Render the current step everywhere: a pure function of (timeline, step, side)."""
        if not self.is_mounted:
            return
        timeline, index = self.timeline, self.step
        frame, check = timeline.frames[index], timeline.check(index)
        asking = self.quiz.open(index) is not None
        shown = index - 1 if asking else index  # an open question hides what its step did
        board = timeline.board(shown, self.side) or timeline.board(shown)
        if self.has_class("-lanes"):
            self.query_one(LanesView).show(timeline, shown)
        else:
            for column in self.task_columns:
                column.show(board)
        self.query_one(WorkerStrip).show(board.workers)
        self.query_one(EventLog).show(timeline, shown)
        upcoming = timeline.frames[index + 1] if index < timeline.last else None
        self.query_one(StepSummary).show(frame, timeline.last, upcoming, hidden=asking)
        self.show_question(index)
        differences = self.query_one(Differences)
        lines = timeline.differences(index)
        differs = not asking and (bool(lines) or bool(check and check.divergence))
        differences.set_class(differs, "-shown")
        if differs:
            differences.show(frame, check, lines, self.why_line(index) if index in timeline.divergences else None)
        self.query_one("#board").set_class(board.side == "model", "-model")
        if self._shown_at != (timeline, index):  # a new step is read from its top
            self._shown_at = (timeline, index)
            self.query_one(SidePanel).scroll_home(animate=False, immediate=True)
            if differs and index in timeline.divergences:  # ...except the diverging step, read down to its why: line
                self.call_after_refresh(self.bring_why_into_view)
        note = frame.step.note if frame.step else self.opening_note()
        if differs and note and note.startswith(DIVERGES_NOTE):
            note = None  # check's note on its diverging step: the differences above say it already
        if asking:
            self.show_note(None)  # the narration tells the answer
        elif index == len(timeline.scenario.steps) and frame.step is not None:  # the walkthrough's own last step,
            self.show_note((note or "") + self.closing_note())  # never a step typed after it
        else:
            self.show_note(note)
        self.show_status()
        self.refresh_keys()

    def bring_why_into_view(self) -> None:
        """Scroll the step panel as little as brings the differences, whose last line is the ``why:``
        line, into view: on an 80x24 terminal they start below the fold."""
        differences = self.query_one(Differences)
        if differences.has_class("-shown"):
            self.query_one(SidePanel).scroll_to_widget(differences, animate=False, immediate=True)

    def why_line(self, index: int) -> str | None:
        """The ``why:`` line ``fencepost check`` would print for the calls up to step ``index`` (None: the lockstep
        does not part from the model exactly there); replayed once per timeline and step."""
        key = (self.timeline, index)
        if key not in self._whys:
            calls = [(step.op, dict(step.args)) for step in self.timeline.steps[:index]]
            try:
                found = why_at(self.timeline.factory, calls, index, self.timeline.variants)
            except Exception:  # noqa: BLE001 - a scheduler that breaks on replay must not take the viewer down
                found = None
            self._whys[key] = found.line() if found is not None else None
        return self._whys[key]

    @functools.cached_property
    def task_columns(self) -> tuple[TaskColumn, ...]:
        """Pending, Running, Done: composed once, looked up once (a query walks the DOM every step)."""
        return tuple(self.query(TaskColumn))

    def next_walkthrough(self) -> str | None:
        """The walkthrough after this one in the curriculum (None: not a curriculum walkthrough, or the last)."""
        order = curriculum()
        if self.walkthrough not in order:
            return None
        following = order[order.index(self.walkthrough) + 1 :]
        return next((name for name in following if name in builtin_names()), None)

    def closing_note(self) -> str:
        """Appended to a walkthrough's last note: the score, and what to open next."""
        if self.walkthrough not in curriculum():
            return ""
        quiz, order = self.quiz, curriculum()
        words = []
        if quiz.total:
            unanswered = quiz.total - quiz.answered
            skipped = f" ({unanswered} not answered)" if unanswered else ""
            words.append(f"**Predictions:** {quiz.right} of {quiz.total} right{skipped}.")
        following = self.next_walkthrough()
        if following is None:
            words.append("**That was the last walkthrough of the curriculum** (`fencepost tui --list`).")
        else:
            words.append(
                f"**Next** ({order.index(following) + 1} of {len(order)}, press **o**): "
                f"`fencepost tui {following}`, {builtin_summary(following)}."
            )
        return "\n\n" + " ".join(words)

    @property
    def quiz(self) -> Quiz:
        """The answers given to this scenario's questions."""
        scenario = self.timeline.scenario
        quiz = self._quizzes.get(scenario.title)
        if quiz is not None and quiz.scenario is not scenario and quiz.scenario == scenario:
            quiz.scenario = scenario  # the same walkthrough loaded again: its answers stand
        if quiz is None or quiz.scenario is not scenario:
            quiz = self._quizzes[scenario.title] = Quiz(scenario)
        return quiz

    def score_text(self) -> str:
        quiz = self.quiz
        if not quiz.answered:
            return "Nothing scored yet."
        return f"{quiz.right} of {quiz.answered} right so far."

    def show_question(self, index: int) -> None:
        quiz, panel = self.quiz, self.query_one(QuestionPanel)
        question = quiz.question(index)
        panel.set_class(question is not None, "-shown")
        if question is not None:
            panel.show(question, quiz.answers.get(index), self.score_text(), quiz.late.get(index))

    def get_default_screen(self) -> Screen:
        return StepScreen(id="_default")

    def footer_actions(self, active: Iterable[ActiveBinding]) -> set[str]:
        """The actions the footer has room for, by ``FOOTER_PRIORITY``: of the keys
        that apply now (``active``, as ``check_action`` left them), the most important
        that fit the screen's width, each tier whole or not at all."""
        shown: dict[str, list[Binding]] = {}
        for item in active:
            if item.binding.show:
                shown.setdefault(item.binding.action.partition("(")[0], []).append(item.binding)
        room = self.size.width - (FOOTER_PALETTE_WIDTH if self.size.width >= PALETTE_MIN_WIDTH else 0)
        chosen: set[str] = set()
        for tier in FOOTER_PRIORITY:
            present = [action for action in tier if action in shown]
            width = self._footer_width([binding for action in present for binding in shown[action]])
            if present and width <= room:
                chosen.update(present)
                room -= width
        return chosen

    def _footer_width(self, bindings: list[Binding]) -> int:
        """Columns the footer takes for ``bindings``: a compact group's keys share one label."""
        items: dict[object, list[Binding]] = {}
        for binding in bindings:
            items.setdefault(binding.group or binding.action, []).append(binding)
        width = 0
        for key, members in items.items():
            grouped = isinstance(key, Binding.Group) and len(members) > 1
            keys = sum(len(self.get_key_display(binding)) for binding in members)
            words = key.description if grouped else members[0].description
            width += keys + len(words) + FOOTER_KEY_PADDING + (0 if grouped else (len(members) - 1) * FOOTER_KEY_PADDING)
        return width

    def refresh_keys(self) -> None:
        """Redraw the footer if any key's state (shown, greyed, hidden) or the room for it changed."""
        state = (self.size.width, *(self.check_action(binding.action, ()) for binding in self.BINDINGS))
        if state != self._key_state:
            self._key_state = state
            self.refresh_bindings()

    def opening_note(self) -> str:
        scenario = self.timeline.scenario
        if scenario.description:
            return self.whole_title() + scenario.description
        if not scenario.steps:
            return NEW_SESSION_NOTE
        return "Press **→** (or `l`) to apply the first step, **space** to play, **?** for help."

    def whole_title(self) -> str:
        """The title in full, as the opening note's first line, when the status line has to cut it short
        (most walkthrough titles at 80 columns): a title is read whole once, then shortened."""
        timeline = self.timeline
        frame = timeline.frames[0]
        taken = len(f" step 0/{timeline.last}  t={frame.now}  ") + STATUS_TITLE_SLACK
        title = status_title(timeline)
        return f"**{title}**\n\n" if len(title) > self.size.width - taken else ""

    def show_note(self, note: str | None) -> None:
        note = note or ""
        if note != self._note_shown:
            self._note_shown = note
            narration = self.query_one(Narration)
            narration.set_class(bool(note), "-shown")
            narration.show(note)

    def show_status(self) -> None:
        if not self.is_mounted:
            return
        timeline, quiz = self.timeline, self.quiz
        self.query_one(StatusBar).show(
            status_title(timeline),
            timeline.frames[self.step],
            timeline.last,
            playing=self.playing,
            speed=SPEEDS[self.speed],
            side=self.side,
            interactive=self.interactive,
            check=timeline.check(self.step),
            model_progress=self.model_progress,
            clock=timeline.frames[self.step - 1].now if quiz.open(self.step) else None,
            score=(quiz.right, quiz.answered) if quiz.answers else None,  # once a question was met
            ahead=next((p for p in self.problems() if p > self.step), None),
        )

    def take_down_notices(self) -> None:
        """Take down every notice on screen: a notice is about the moment it was said, and one
        left up into later steps covers their text (the problem steps are on the status line)."""
        self.clear_notifications()
        self._single_notice = None

    # ------------------------------------------------------------ the model, in the background

    def freeze_survivors(self) -> None:
        """With ``freeze_collector``: move every object alive now out of the collector's sight.

        A big timeline is hundreds of thousands of long-lived objects; left to the
        collector, every full collection would walk them all in the middle of a step.
        Only the entry point asks for it: it is never undone, which is right only for
        a process that ends with the app."""
        if self.freeze_collector:
            gc.freeze()

    @work(thread=True, exclusive=True, group="model")
    def check_against_model(self) -> None:
        worker = get_current_worker()
        timeline = self.timeline
        total = len(timeline.frames)

        def progress(side: str) -> Callable[[int], None]:
            def advanced(done: int) -> None:
                self.freeze_survivors()  # the rows live as long as the timeline: keep them out of collections
                self.call_from_thread(self.model_advanced, timeline, f"{side} {100 * done // total}%")
            return advanced

        def stop() -> bool:
            return worker.is_cancelled

        if timeline.run_steps(should_stop=stop, progress=progress("impl")) and timeline.run_model(
                should_stop=stop, progress=progress("model")):
            self.freeze_survivors()
            self.call_from_thread(self.model_finished, timeline)

    def model_advanced(self, timeline: Timeline, progress: str) -> None:
        if timeline is self.timeline:
            self.model_progress = progress
            if self._wanted is not None and self._wanted < timeline.ran:  # the step jumped to has been run
                self.step, self._wanted = self._wanted, None
            self.show_status()

    def model_finished(self, timeline: Timeline) -> None:
        if timeline is self.timeline:
            timeline.run_model()  # a step typed while the thread was finishing
            self.model_progress = ""
            self.show_step()

    # ------------------------------------------------------------ interactive mode

    def run_command(self, text: str) -> None:
        """Parse one command line and append it as a step; show the error instead if refused."""
        timeline = self.timeline
        error = self.query_one("#command-error", Static)
        try:
            step = parse_command(text, timeline.frames[-1].now)
        except CommandError as exc:
            outcome: object = str(exc)
        else:
            outcome = timeline.append(step, record_expect=True)
            if isinstance(outcome, str):
                outcome = f"{step.op} refused: {outcome}"
        line = self.query_one("#command", Input)
        if isinstance(outcome, str):
            error.update(Text(outcome))  # not markup: "[priority]" in a usage is text
            error.set_class(True, "-shown")
            # The refused call stays, selected: typing the next call replaces it (it is never
            # appended to), and an arrow key or End keeps it to mend.
            line.select_all()
            return
        line.value = ""
        self.step = timeline.last

    def session(self) -> Scenario:
        """The scenario as it stands: the steps loaded plus the ones typed."""
        scenario = self.timeline.scenario
        meta = dict(scenario.meta)
        meta.pop("impl", None)  # the results below came from what ran, not from what the file recorded
        if self.impl_name:
            meta["impl"] = self.impl_name
        return Scenario(scenario.title, self.timeline.steps, scenario.description, meta, scenario.needs)

    def write_session(self, path: str | None) -> None:
        if not path:
            return
        try:
            dump_scenario(self.session(), path)
        except (ScenarioError, OSError) as exc:
            self.notify(f"not written: {exc}", severity="error", markup=False)
            return
        self.save_path = path
        self.notify(f"wrote {self.timeline.last} steps to {path}; replay it with: fencepost replay {path}", markup=False)

    # ------------------------------------------------------------ loading, jumping, screenshots

    def load(self, name_or_path: str | None) -> None:
        if not name_or_path:
            return
        try:
            scenario = load_scenario(resolve(name_or_path))
        except ScenarioError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        factory, notices = self.timeline.factory, None
        if self.opener is not None:  # the scenario's needs may choose another shipped scheduler
            try:
                factory, name, notice = self.opener(scenario)
            except UsageError as exc:
                self.notify(str(exc), severity="error", markup=False)
                return
            self.impl_name, notices = (None if name == DEFAULT_IMPL else name), [notice] if notice else []
        self.walkthrough = str(name_or_path) if str(name_or_path) in builtin_names() else None
        self.replace_timeline(open_timeline(scenario, factory, self.timeline.variants))
        if notices is None:
            notices = suggestions(scenario.meta, {"impl": self.impl_name or DEFAULT_IMPL})
        for line in notices:  # shown, never run: files are data
            self.notify(line, severity="warning", timeout=8, markup=False)

    def replace_timeline(self, timeline: Timeline) -> None:
        """Show ``timeline`` from its step 0, as if just opened: not playing, the implementation's
        side, and out of interactive mode (a session typed into one scenario is not the next one's)."""
        self.workers.cancel_group(self, "model")
        self.take_down_notices()
        self.timeline = timeline
        self.title = window_title(timeline)
        self.model_progress = ""
        self.playing = False
        self.side = "impl"
        if self.step == 0:
            self.show_step()
        self.step = 0
        self.leave_interactive()  # after the step: the status line it redraws is the new timeline's
        if not timeline.model_done:
            self.check_against_model()

    def screenshot_name(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.timeline.scenario.title.lower()).strip("-")[:40] or "fencepost"
        return f"{slug}-step-{self.step:04d}.svg"

    def save_step_screenshot(self, folder: str = "screenshots") -> str:
        """Save an SVG of the screen; the step number is in the file name."""
        Path(folder).mkdir(parents=True, exist_ok=True)
        path = self.save_screenshot(filename=self.screenshot_name(), path=folder)
        self.notify(f"saved {path}", markup=False)
        return path

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield SystemCommand("Load scenario", "Open a built-in walkthrough by name, or a scenario file", self.action_load_prompt)
        yield SystemCommand("Jump to step", "Go to a step by its number", self.action_jump_prompt)
        yield SystemCommand("Save screenshot", "Save an SVG of this step (step number in the file name)", self.save_step_screenshot)
        yield from super().get_system_commands(screen)

    # ------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide keys that never apply here; grey out the ones that don't apply at this step."""
        timeline, step, last = self.timeline, self.step, self.timeline.last
        if action.startswith("answer"):  # an open question, or one → revealed and not yet picked since
            quiz = self.quiz
            question = quiz.open(step) or (quiz.question(step) if quiz.answers.get(step) == SKIPPED
                                           and step not in quiz.late else None)
            choice = parameters[0] if parameters else 1  # refresh_keys asks without parameters
            return question is not None and choice <= len(question.choices)
        if action == "next":
            return step < last or bool(self.quiz.open(step)) or None
        if action == "last":
            return step < last or None
        if action in ("previous", "first"):
            return step > 0 or None
        if action == "toggle_play":
            return (step < last or self.playing) or None
        if action == "faster":  # speed only matters while playing
            return (self.speed < len(SPEEDS) - 1 or None) if self.playing else False
        if action == "slower":
            return (self.speed > 0 or None) if self.playing else False
        if action == "next_notable":
            if timeline.ran <= last:  # steps not run yet may hold one (n runs them to find it)
                return True
            return (timeline.next_notable(step) is not None or None) if timeline.notable else False
        if action == "previous_notable":
            return (timeline.previous_notable(step) is not None or None) if timeline.notable else False
        if action in ("next_problem", "previous_problem"):
            problems = self.problems()
            if not problems:
                return False
            ahead = any(p > step for p in problems) if action == "next_problem" else any(p < step for p in problems)
            return ahead or None
        if action == "toggle_side":  # greyed while the model has not reached this step
            return self.side == "model" or timeline.check(step) is not None or None
        if action == "toggle_log":  # only where the log has no room of its own (80x24): it takes the panel's
            return self.log_hidden()
        if action == "scroll_lanes":  # only when the lanes show part of a longer run
            return self.has_class("-lanes") and self.query_one(LanesView).can_pan()
        if action == "interact":  # also the way back to the command line after Esc
            return not (self.interactive and isinstance(self.focused, Input))
        if action == "open_next":
            return step == last and self.next_walkthrough() is not None
        if action == "write":
            return self.interactive
        if action == "leave_command":
            return self.interactive and isinstance(self.focused, Input)
        return True

    def problems(self) -> list[int]:
        """Steps that break their expect or part from the model, ascending."""
        return sorted(set(self.timeline.mismatches) | set(self.timeline.divergences))

    def action_next(self) -> None:
        self._wanted = None  # a step taken stands for a jump still waiting
        if self.quiz.open(self.step):  # → at a question shows its result, unscored
            self.quiz.reveal(self.step)  # the panel says it was revealed, not scored: no notice over it
            self.show_step()
        elif self.step < self.timeline.last:
            self.step += 1

    def action_answer(self, choice: int) -> None:
        quiz, question = self.quiz, self.quiz.question(self.step)
        if question is None or choice > len(question.choices):
            return
        if quiz.open(self.step) is not None:
            quiz.answer(self.step, choice)
        elif quiz.answers.get(self.step) == SKIPPED and self.step not in quiz.late:  # → revealed it: a verdict, unscored
            quiz.pick_late(self.step, choice)
        else:
            return  # answered: the first answer stands
        self.show_step()

    def action_previous(self) -> None:
        self._wanted = None
        if self.step > 0:
            self.step -= 1

    def action_first(self) -> None:
        self._wanted = None
        self.step = 0

    def action_last(self) -> None:
        self.go_to(self.timeline.last)

    def action_jump(self, index: int) -> None:
        self.go_to(max(0, min(self.timeline.last, index)))

    def go_to(self, index: int) -> None:
        """Show step ``index``: at once if it has been run or nearly (``RUN_AT_ONCE_STEPS``), else,
        with a notice, once the background worker has run it (``model_advanced``)."""
        timeline = self.timeline
        self._wanted = None
        if index < timeline.ran + RUN_AT_ONCE_STEPS or not any(w.group == "model" for w in self.workers):
            self.step = index
            return
        self._wanted = index
        self.notify(f"step {index:,} is not run yet ({timeline.ran - 1:,} of {timeline.last:,} are): "
                    "it shows once it is (a step key stays here instead)", markup=False)

    def action_jump_prompt(self) -> None:
        self.push_screen(
            PromptScreen(f"Jump to step (0 to {self.timeline.last})", placeholder=str(self.step)),
            self.jump_to_answer,
        )

    def jump_to_answer(self, answer: str | None) -> None:
        """Go to the step typed at the ``g`` prompt, saying so when that is not quite what was typed."""
        if answer is None:  # Escape: the user changed their mind
            return
        last = self.timeline.last
        try:
            wanted = int(answer)
        except ValueError:
            said = f"{answer!r} is not a step number" if answer else "no step number typed"
            self.notify(f"{said}: still at step {self.step} (steps are 0 to {last})", severity="warning", markup=False)
            return
        target = max(0, min(last, wanted))
        if target != wanted:
            where = "the last" if target == last else "the first"
            self.notify(f"there is no step {wanted}: went to step {target}, {where}", severity="warning", markup=False)
        self.action_jump(target)

    def action_next_notable(self) -> None:
        target = self.timeline.next_notable(self.step)
        if target is not None:
            self.step = target

    def action_previous_notable(self) -> None:
        target = self.timeline.previous_notable(self.step)
        if target is not None:
            self.step = target

    def action_next_problem(self) -> None:
        target = next((p for p in self.problems() if p > self.step), None)
        if target is not None:
            self.step = target

    def action_previous_problem(self) -> None:
        target = next((p for p in reversed(self.problems()) if p < self.step), None)
        if target is not None:
            self.step = target

    def action_toggle_play(self) -> None:
        if self.playing or self.step < self.timeline.last:
            self.playing = not self.playing

    def action_faster(self) -> None:
        self.speed = min(len(SPEEDS) - 1, self.speed + 1)

    def action_slower(self) -> None:
        self.speed = max(0, self.speed - 1)

    def action_scroll_note(self, pages: int) -> None:
        side = self.query_one(SidePanel)
        (side.scroll_page_down if pages > 0 else side.scroll_page_up)(animate=False)

    def action_scroll_note_line(self, lines: int) -> None:
        self.query_one(SidePanel).scroll_relative(y=lines, animate=False)

    def action_toggle_side(self) -> None:
        """Swap the implementation's board for the model's, and say what that shows."""
        self.side = "model" if self.side == "impl" else "impl"
        check = self.timeline.check(self.step)
        if self.side == "impl":
            words = SIDE_NOTICES["impl"]
        elif check is not None and (check.divergence or self.timeline.differences(self.step)):
            words = SIDE_NOTICES["differs"]
        else:
            words = SIDE_NOTICES["same"]
        self.single_notice(words, SIDE_NOTICE_SECONDS)

    def single_notice(self, message: str, seconds: float) -> None:
        """A notice that takes the place of the last one shown this way: keys pressed in a row
        (→ through several questions, m and m again) leave one notice, not a stack over the panel."""
        if self._single_notice is not None:
            take_back_notice(self, self._single_notice)
        self._single_notice = Notification(message, timeout=seconds)
        self.post_message(Notify(self._single_notice))

    def on_notify(self, event: Notify) -> None:
        # A single notice overtaken before its message arrived (keys faster than the screen) is never shown.
        # (Textual calls App's own handler, the one that shows it, after this one unless the default is prevented.)
        if event.notification.message in SINGLE_NOTICES and event.notification is not self._single_notice:
            event.prevent_default()

    def action_scroll_lanes(self, direction: int) -> None:
        """Move the lanes' time window by half its width, earlier (-1) or later (1)."""
        self.query_one(LanesView).scroll_time(direction)

    def log_hidden(self) -> bool:
        """True on a terminal too short and narrow for the event log beside the step panel (``app.tcss``)."""
        return self.size.width < LOG_MIN_WIDTH and self.size.height < LOG_MIN_HEIGHT

    def action_toggle_log(self) -> None:
        """On a short, narrow terminal, swap the step panel for the event log and back (elsewhere both show)."""
        self.toggle_class("-log")

    def action_toggle_lanes(self) -> None:
        """Swap the board for the lanes view (one lane per worker slot over time) and back."""
        self.toggle_class("-lanes")
        self.show_step()

    def action_interact(self) -> None:
        self.playing = False
        self.interactive = True
        self.step = self.timeline.last
        self.query_one("#command", Input).focus()

    def leave_interactive(self) -> None:
        """Close the command line: its text, its error and its focus go with it."""
        self.query_one("#command", Input).value = ""
        self.query_one("#command-error", Static).set_class(False, "-shown")
        if isinstance(self.focused, Input):
            self.set_focus(None)
        self.interactive = False

    def action_leave_command(self) -> None:
        self.set_focus(None)
        self.refresh_keys()

    def action_write(self) -> None:
        default = self.save_path or "fencepost-session.toml"
        self.push_screen(PromptScreen("Write the session as a scenario file (.toml or .json)", value=default), self.write_session)

    def action_load_prompt(self) -> None:
        self.push_screen(PromptScreen("Load a scenario: a built-in name or a file path", placeholder="onboarding"), self.load)

    def action_open_next(self) -> None:
        following = self.next_walkthrough()
        if following is not None:
            self.load(following)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())
