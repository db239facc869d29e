"""Benchmark the report on big inputs (a measurement, not a test).

  fencepost bench report [--steps 10000] [--calls 10000] [--keep FOLDER]

Makes a ``--steps`` trace (``tui.bench.generate``'s workload: four workers,
dispatches, completions, failures, expiries, stale completions, cut to that
many steps) and a ``--calls`` history (``linearize_cost.generate``: four
clients at once, and its broken twin, which is not linearizable), writes
each one's page, and opens the pages in the distribution's Chromium
(Playwright, the test extra) to time them. For each it prints:

* make: building the page in this process (the trace's timeline with the
  model beside it, or the linearizability check, then the HTML);
* bytes: the page's size;
* render: in the browser, from the start of navigation until two animation
  frames after the load event, i.e. parsed, styled, laid out and painted once
  (``performance.now()``, the page's own clock), median of ``--repeats`` loads.

Targets (issue 21): under 5 MB, rendered in under 2 s.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

#: Issue 21's targets for a 10^4-step trace and a 10^4-call history.
MAX_BYTES = 5 * 1000 * 1000
MAX_RENDER_S = 2.0

#: Clients calling at once in the generated history.
WIDTH = 4

#: Resolves once the page has painted after its load event: two animation frames later.
_PAINTED = "new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now()))))"


def trace_page(steps: int) -> tuple[str, float]:
    """A ``steps``-step generated trace's page, and the seconds it took to make."""
    from fencepost.impl import Scheduler
    from fencepost.report.scenario import scenario_page
    from fencepost.spec.formats.scenario import Scenario
    from fencepost.bench.tui import generate
    from fencepost.story.timeline import build_timeline

    # Submits come first in the workload; a quarter of the steps are, the rest is work on them.
    generated = generate(tasks=steps // 4, rounds=steps)
    scenario = Scenario(f"A generated trace of {steps:,} steps", generated.steps[:steps])
    started = time.perf_counter()
    timeline = build_timeline(scenario, Scheduler)
    page = scenario_page(timeline, "generated", "impl:Scheduler", {"impl": "impl:Scheduler"})
    return page, time.perf_counter() - started


def history_page(calls: int, broken: bool) -> tuple[str, float]:
    """A ``calls``-call generated history's page (its not linearizable twin with ``broken``), and the seconds to make it."""
    from fencepost.report.history import history_page as page_of
    from fencepost.bench import linearize as linearize_cost
    from fencepost.spec.checkers.linearize import check_history

    events = linearize_cost.generate(WIDTH, calls, seed=1)
    history = linearize_cost.as_history(linearize_cost.broken(events) if broken else events)
    started = time.perf_counter()
    page = page_of(history, check_history(history))
    return page, time.perf_counter() - started


def render_seconds(paths: list[Path], repeats: int) -> list[float]:
    """Each page's median render time in Chromium (see the module docstring)."""
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("FENCEPOST_CHROMIUM") or shutil.which("chromium")
    if chromium is None:
        raise SystemExit("no chromium on PATH: apt-get install chromium")
    times = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        for path in paths:
            runs = []
            for _ in range(repeats):
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(path.resolve().as_uri(), wait_until="load")
                runs.append(page.evaluate(_PAINTED) / 1000)
                page.close()
            times.append(statistics.median(runs))
        browser.close()
    return times


def run(steps: int, calls: int, repeats: int, keep: str | None = None) -> int:
    """``fencepost bench report``: make the pages, render them in the browser, print the table; 0."""
    folder = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="fencepost-report-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    made = [
        (f"trace, {steps:,} steps", "trace.html", *trace_page(steps)),
        (f"history, {calls:,} calls, linearizable", "history.html", *history_page(calls, False)),
        (f"history, {calls:,} calls, not linearizable", "history-broken.html", *history_page(calls, True)),
    ]
    paths = []
    for _, name, page, _ in made:
        paths.append(folder / name)
        paths[-1].write_text(page, encoding="utf-8")
    rendered = render_seconds(paths, repeats)
    print(f"{'page':<42} {'make':>8} {'bytes':>11} {'render':>8}")
    ok = True
    for (label, _, page, seconds), path, render in zip(made, paths, rendered):
        size = path.stat().st_size
        ok &= size < MAX_BYTES and render < MAX_RENDER_S
        print(f"{label:<42} {seconds:>7.2f}s {size:>11,} {render:>7.2f}s")
    kept = f"; pages in {folder}" if keep else ""
    print(f"targets: under {MAX_BYTES:,} bytes and {MAX_RENDER_S:g} s rendered: {'met' if ok else 'MISSED'}{kept}")
    if not keep:
        shutil.rmtree(folder)
    return 0


if __name__ == "__main__":  # the same as `fencepost bench report`
    import sys

    from fencepost.cli import main

    raise SystemExit(main(["bench", "report", *sys.argv[1:]]))
