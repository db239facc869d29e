"""Under ``interval=closed`` the Running column draws ``[0, 5]`` and its legend ``[start, end]`` (issue 29 bug b).

The CLI, the timeline's words and the report are in tests/spec/test_closed_interval_spans.py.
"""

from __future__ import annotations

import re

from fencepost.spec.formats.scenario import loads_scenario
from fencepost.spec.variants import Variants

HALF_OPEN = re.compile(r"\[\d+, \d+\)")
CLOSED = Variants.parse(["interval=closed"])
SCENARIO = """
title = "closed leases"

[[steps]]
op = "add_worker"
worker = "w1"
capacity = 1

[[steps]]
op = "submit"

[[steps]]
op = "dispatch"
worker = "w1"
now = 0
duration = 5
"""


async def test_the_tuis_running_column_draws_closed_spans_and_a_closed_legend() -> None:
    from fencepost.impl.mutants.closed_interval import Scheduler as ClosedInterval  # its leases are closed

    from fencepost.tui.app import FencepostApp, open_timeline
    from fencepost.tui.widgets import TaskColumn

    app = FencepostApp(open_timeline(loads_scenario(SCENARIO), ClosedInterval, CLOSED))
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(3):  # to the dispatch: the lease [0, 5] is running
            await pilot.press("right")
        await pilot.pause()
        running = app.query_one("#running", TaskColumn)
        line = "".join(text for text, _ in running.line(0)[1])
        assert "[0, 5]" in line and not HALF_OPEN.search(line), line
        assert "[start, end]" in str(running.border_subtitle), running.border_subtitle
