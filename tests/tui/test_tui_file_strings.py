"""Strings from a file reach the screen as text: markup is not styling, links are not hyperlinks.

Every place a scenario's strings are shown -- the title in the status bar,
the description and notes (Markdown) in the step panel, worker names in the
columns, the worker strip and the event log, a question's text, choices and
explanation -- is checked on the screen the
app draws, through its own screenshot export.
"""

from __future__ import annotations

import html
import re

from rich.console import Console

from fencepost.spec.formats.scenario import Question, Scenario, Step
from fencepost.tui.widgets import Narration
from tui_helpers import SIZE, app_for

#: Rich markup, a Textual action link and a would-be terminal escape, as plain words in a file.
MARKUP = "[bold red]x[/] [@click=app.quit]q[/]"

HOSTILE = Scenario(
    title=f"T {MARKUP}",
    description="Opening [link](https://evil.example/d) ![pic](https://evil.example/p.png) <b>bold?</b>",
    steps=(
        Step("add_worker", {"worker": "[blink]w[/]", "capacity": 1}, note=f"note {MARKUP} [a link](https://evil.example/n)"),
        Step("submit", {}),
        Step("dispatch", {"worker": "[blink]w[/]", "now": 0, "duration": 2}),
        Step("advance", {"now": 5}),
        Step("advance", {"now": 6}, question=Question(f"ask {MARKUP}", ("[b]one[/b]", "[i]two[/i]"), 1, f"why {MARKUP}")),
    ),
)


def screen_text(app) -> str:
    """What the screen shows, as one string (the SVG export's text, tags dropped)."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


async def test_markup_in_a_files_strings_is_shown_literally_everywhere():
    app = app_for(HOSTILE)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        opening = screen_text(app)
        assert f"T {MARKUP}" in opening  # the title, in the status bar
        # the panel is narrow: the address wraps, but it is on screen as text
        assert "Opening link (https://evil" in opening and "pic" in opening and "bold?" in opening
        for _ in range(4):
            await pilot.press("right")
        await pilot.pause()
        assert "[blink]w[/]" in screen_text(app)  # the worker strip and the event log
        await pilot.press("home", "right")
        await pilot.pause()
        text = screen_text(app)
        assert "note [bold red]x[/]" in text and "[@click=app.quit]q[/]" in text and "(https://evil.example/n)" in text
        await pilot.press("end")  # the question: asked, then answered
        await pilot.pause()
        asked = screen_text(app)
        assert "Predict: ask [bold red]x[/]" in asked and "[b]one[/b]" in asked and "[i]two[/i]" in asked
        await pilot.press("1")
        await pilot.pause()
        assert "why [bold red]x[/]" in screen_text(app)
        assert app.is_running  # the [@click=app.quit] was never an action


def test_a_note_renders_no_terminal_hyperlink(monkeypatch):
    shown = []
    monkeypatch.setattr(Narration, "update", lambda self, renderable: shown.append(renderable))
    Narration().show("see [here](https://evil.example/) and <https://auto.example/>")
    segments = list(Console(width=80, force_terminal=True).render(shown[0]))
    assert segments and all(seg.style is None or seg.style.link is None for seg in segments)
    assert "here (https://evil.example/)" in "".join(seg.text for seg in segments)
