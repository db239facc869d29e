"""The narration is usable outside the TUI: importing it loads no Textual, and it words a run on its own."""

from __future__ import annotations

import subprocess
import sys

from fencepost.impl import Scheduler
from fencepost.spec.formats.scenario import Scenario, Step
from fencepost.tui import narration
from fencepost.tui.timeline import build_timeline


def test_importing_the_narration_loads_no_textual() -> None:
    code = (
        "import sys, fencepost.tui.narration, fencepost.tui.timeline\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip() == "[]"


def test_the_timeline_log_is_the_narrators_words() -> None:
    steps = (
        Step("add_worker", {"worker": "w1", "capacity": 1}),
        Step("submit", {"priority": 0}),
        Step("dispatch", {"worker": "w1", "now": 0, "duration": 5}),
        Step("advance", {"now": 5}),
        Step("complete", {"task_id": 1, "token": 1, "now": 6}),
    )
    timeline = build_timeline(Scenario("t", steps, None, {}), Scheduler)
    kinds = [event.kind for _, event in timeline.log if event.kind != "call"]
    assert kinds == ["worker", "submit", "dispatch", "expiry", "rejection"]
    assert all(kind in narration.EVENT_KINDS for kind in kinds)
    rejection = timeline.log[-1][1]
    assert rejection.text == "rejected complete of task 1 with token 1: lease [0, 5) expired at t=5"
