"""The narration is usable outside the TUI: importing it loads no Textual, and it words a run on its own."""

from __future__ import annotations

import subprocess
import sys

from fencepost.impl import Scheduler
from fencepost.spec.formats.scenario import Scenario, Step
from fencepost.story import narration
from fencepost.story.timeline import build_timeline


def test_importing_the_narration_loads_no_textual() -> None:
    code = (
        "import sys, fencepost.story.narration, fencepost.story.timeline\n"
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


def test_a_batch_is_one_step_with_its_parts_listed() -> None:
    steps = (
        Step("add_worker", {"worker": "w1", "capacity": 2}),
        Step("submit_many", {"tasks": [{"priority": 1}, {}, {}]}),
        Step("dispatch_many", {"worker": "w1", "now": 0, "duration": 5, "limit": 3}),
        Step("complete_many", {"reports": [[1, 1], [2, 9], [2, 2]], "now": 1}),
    )
    timeline = build_timeline(Scenario("t", steps, None, {}), Scheduler)
    assert timeline.last == 4  # one frame per batch
    texts = [event.text for _, event in timeline.log if event.kind != "call"]
    assert texts[1:4] == [
        "submit_many [1/3] task 1 submitted: priority 1, due t=0",
        "submit_many [2/3] task 2 submitted: priority 0, due t=0",
        "submit_many [3/3] task 3 submitted: priority 0, due t=0",
    ]
    dispatched = [t for t in texts if t.startswith("dispatch_many")]
    assert len(dispatched) == 3 and dispatched[0].startswith("dispatch_many [1/3] task 1 → w1, token 1")
    assert dispatched[2] == "dispatch_many [3/3] no dispatch: w1 is full (2/2); no token used"
    reports = [t for t in texts if t.startswith("complete_many")]
    assert reports[0].startswith("complete_many [1/3] task 1 succeeded (token 1)")
    # token 9 was never issued; the part is judged as the task was then: running under token 2
    assert reports[1] == ("complete_many [2/3] rejected complete of task 2 with token 9: token 9 is a token this "
                          "task never had: task 2 runs under token 2 (the scheduler's reason: stale_token)")
    assert reports[2].startswith("complete_many [3/3] task 2 succeeded (token 2)")
    assert not any("expired" in t for t in texts)  # the batch's own accepted reports are not expiries
