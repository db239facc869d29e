"""Under ``interval=closed`` no lease prints half-open: the CLI, the TUI's data and the report say ``[0, 5]``.

A closed lease is live at exactly ``expires_at``; printing it ``[0, 5)``
says the opposite of the variant in force. Each listing is checked on the
same scenario, replayed on a scheduler whose leases are closed
(``variant_schedulers.ClosedInterval``), and the coverage label of the
refused completion says where it is refused under ``closed``.
"""

from __future__ import annotations

import re

from fencepost.cli import main
from fencepost.spec.checkers.coverage import required_boundaries
from fencepost.spec.checkers.results import describe, format_trace
from fencepost.spec.formats.scenario import loads_scenario
from fencepost.spec.formats.trace import TraceStep
from fencepost.spec.variants import Variants, show_span
from fencepost.story.timeline import build_timeline

#: A lease of [0, 5], renewed at its last instant, then completed: every listing shows a span.
SCENARIO = """
title = "closed leases"

[meta]
variants = { interval = "closed" }

[[steps]]
op = "add_worker"
worker = "w1"
capacity = 1

[[steps]]
op = "submit"
expect = { task_id = 1 }

[[steps]]
op = "dispatch"
worker = "w1"
now = 0
duration = 5
expect = { task_id = 1, worker = "w1", token = 1, started_at = 0, expires_at = 5 }

[[steps]]
op = "renew"
task_id = 1
token = 1
now = 5
duration = 5
expect = { accepted = true }

[[steps]]
op = "complete"
task_id = 1
token = 1
now = 10
expect = { accepted = true }
"""
CLOSED = Variants.parse(["interval=closed"])
HALF_OPEN = re.compile(r"\[\d+, \d+\)")


def test_a_span_is_closed_under_interval_closed_and_half_open_otherwise() -> None:
    assert show_span(0, 5, "closed") == "[0, 5]" and show_span(0, 5) == "[0, 5)"
    lease = ("lease", 1, "w1", 1, 0, 5)
    assert describe(lease, "dispatch", "closed").endswith("[0, 5]")
    trace = [TraceStep("dispatch", {"worker": "w1", "now": 0, "duration": 5}, lease, lease, None)]
    assert "[0, 5]" in format_trace(trace, "closed") and not HALF_OPEN.search(format_trace(trace, "closed"))


def test_replay_prints_closed_spans(tmp_path, capsys) -> None:
    path = tmp_path / "closed.toml"
    path.write_text(SCENARIO)
    assert main(["replay", str(path), "--impl", "variant_schedulers:ClosedInterval"]) == 0
    out = capsys.readouterr().out
    assert "[0, 5]" in out and not HALF_OPEN.search(out), out


def test_the_timeline_the_tui_and_report_show_words_closed_spans() -> None:
    from variant_schedulers import ClosedInterval

    timeline = build_timeline(loads_scenario(SCENARIO), ClosedInterval, variants=CLOSED)
    texts = [frame.result for frame in timeline.frames] + [event.text for frame in timeline.frames for event in frame.events]
    texts += [check.result for check in timeline.checks]
    assert any("[0, 5]" in text for text in texts), texts
    assert not [text for text in texts if HALF_OPEN.search(text)], texts
    board = timeline.board(3)  # what the TUI's Running column draws from: its spans and legend follow board.interval
    assert board is not None and board.interval == "closed"


def test_the_report_page_shows_closed_spans(tmp_path, capsys) -> None:
    path = tmp_path / "closed.toml"
    path.write_text(SCENARIO)
    page = tmp_path / "closed.html"
    assert main(["report", str(path), "--impl", "variant_schedulers:ClosedInterval", "-o", str(page)]) == 0
    html = page.read_text()
    assert "[0, 5]" in html and not HALF_OPEN.search(html)


def test_the_refused_completion_is_labelled_where_a_closed_lease_refuses_it() -> None:
    assert "(refused)" in required_boundaries()["completion_at_expiry"]
    closed = required_boundaries(CLOSED)["completion_at_expiry"]
    assert "expires_at + 1" in closed and "at exactly expires_at it is accepted" in closed

