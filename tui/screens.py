"""The TUI's modal screens: a one-line prompt, and the help page."""

from __future__ import annotations

from rich.markdown import Markdown as RichMarkdown
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from fencepost.tui import commands
from fencepost.story.glossary import glossary_markdown

_USAGES = "\n".join(commands.usage(op) for op in commands.SIGNATURES)

HELP = f"""\
# fencepost: stepping through a lease scheduler

**Esc, q or ? closes this page**; ↑ ↓ PgUp PgDn scroll it.

The screen shows one moment of a scenario: **step K/N** is how many of its
protocol calls have been applied, **t=T** is the scheduler's logical clock.
Step 0 is before the first call. Stepping back is exact: every step is
computed once, up front, by the real implementation, with the spec's model
run beside it.

| Key | Does |
|---|---|
| `→` or `l` | next step |
| `←` or `h` | previous step |
| `Home` / `End` | first / last step |
| `space` | play or pause (autoplay steps forward on a timer) |
| `+` / `-` | play faster / slower |
| `g` | jump to a step by number |
| `n` / `N` | next / previous step with a lease expiry or a rejection |
| `d` / `D` | next / previous step that breaks its `expect` or differs from the model |
| `m` | show the model's expected state instead of the implementation's |
| `t` | lanes: one lane per worker slot over time, each lease a bar (again: the columns) |
| `[` / `]` | in the lanes: move the time window earlier / later (a step brings the cursor back) |
| `i` | interactive mode: type protocol calls (below) |
| `w` | write the session as a scenario file (interactive mode) |
| `PgDn` / `PgUp` | scroll the step panel (also `shift+↓` / `shift+↑`, or `↓` / `↑` a line) |
| `Esc` | leave the command line, so the keys above work again |
| `ctrl+p` | command palette: load scenario, jump to step, save screenshot |
| `1`-`9` | answer the step's question (`→` shows its result unscored) |
| `o` | at a walkthrough's last step: open the next one in the curriculum |
| `?` | this page (the glossary is at its end) |
| `q` | quit |

Clicking a line of the event log jumps to its step.

## The columns

* **Pending**: tasks waiting, in dispatch order: the **▸** task is the one
  the next dispatch picks (highest priority, then earliest due time, then
  lowest id). Tasks not due yet come after, by due time, which they show
  first. `retry` marks a task waiting out its backoff after an explicit
  failure.
* **Running**: worker, lease token and the lease `[start, expires)`, a
  half-open interval; the bar is the time left. At `t = expires` the lease
  has already ended.
* **Done**: `✓ succeeded`, `✗ failed`, `⊘ cancelled`, most recent first.

**Lanes** (`t`, in place of the columns): one lane per worker slot, time
running left to right, the step's time marked `▼`. Each lease is a bar
from its start to its expiry (as renewed), labelled `#task·token`; `✓` a
completion, `✗` a failure, `×` an expiry (in the lease's last tick), `!` a
rejected completion or failure, `›` a lease running on past the edge.

A row reads like `▸ #1 p2 a1 due t=0`. What matters most comes first; a
narrow column drops the least important parts (an idempotency key first;
then the bar, the time left and the worker; or a past due time, attempts and
priority), never the id, a future due time, `retry` or `cancel req`.

| Badge | Means |
|---|---|
| `#1` | task id (ids come only from `submit`: 1, 2, 3, ...) |
| `p2` | priority 2 (higher is dispatched first) |
| `due t=0` | due time, passed: dispatchable now |
| `due t=12` (first, in italics) | not due yet: not dispatchable before `t=12` |
| `retry t=6` | waiting out its backoff after an explicit `fail`, due again at `t=6` |
| `a1` | attempts (tries) so far: every dispatch of the task counts one |
| `retry` | `retry_wait`, due again: dispatchable now |
| `w1 tok 3` | running on worker `w1` under lease token 3 |
| `[5, 10) ███░░░ 3` | the lease, and the bar and number of time units left |
| `cancel req` | a cancellation was requested; the lease runs on |
| `k:order-7` | submitted with that idempotency key (a long one is cut short with `…`) |

**Predict, then reveal.** A walkthrough step may ask what its call will
do. The panel then shows the call and hides its result (the board stays as
it was before the step) until you press the number of a choice; it says
whether you were right and why, and the status line keeps your score for
the walkthrough. `→` shows the result without an answer (not scored).

The step panel (narration) scrolls when it is longer than the screen: its
border says `more ↓ PgDn`.

Rows that changed at this step are highlighted; so are this step's lines in
the event log. Expiries and rejections have their own colours.

## Interactive mode

Each line is one protocol call, by the protocol's own names:

```
OP [NAME=VALUE ...] [VALUE ...]

{_USAGES}
```

* Bare values fill the arguments in protocol order:
  `dispatch w1 5 5` is `dispatch worker=w1 now=5 duration=5`.
* Leave out `now` and the call happens at the current time.
* A call the scheduler refuses shows its error message and adds no step.

Examples: `add_worker w1 1`, `submit priority=2 due_at=12`,
`dispatch w1 5 5`, `complete 1 1 9`, `fail 1 1 9`, `cancel 2`,
`renew 1 1 8 5`, `advance 10`.

## Glossary

Every term the walkthroughs use (`fencepost tui --list` shows them in
teaching order).

{glossary_markdown()}
"""


class PromptScreen(ModalScreen[str | None]):
    """Ask for one line; dismiss with it on Enter (stripped, maybe ""), or with None on Escape."""

    AUTO_FOCUS = "#prompt-input"
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str, value: str = "", placeholder: str = "") -> None:
        super().__init__(classes="prompt")
        self.question = question
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box"):
            yield Label(self.question, id="prompt-question")
            yield Input(
                value=self.value,
                placeholder=self.placeholder,
                id="prompt-input",
            )

    @on(Input.Submitted, "#prompt-input")
    def submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Keys, columns and the interactive syntax."""

    AUTO_FOCUS = "#help-box"  # so the arrow keys scroll it
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "Help"
            box.border_subtitle = "Esc, q or ? closes"  # on the border: in sight however far it is scrolled
            yield Static(RichMarkdown(HELP))  # drawn at once, unlike the Markdown widget

    def action_close(self) -> None:
        self.dismiss(None)
