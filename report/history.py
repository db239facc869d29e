"""The report of a concurrent history: a lane per client, each call an interval, the checker's verdict.

``history_page(history, verdict)`` draws the history in real-time order (the
horizontal axis is the position of each event in the file, as in the TUI's
history view): a call is a bar from its invocation to its completion, an
unknown (info) call a dashed bar that stays open. For a linearizable history
the order found is drawn as numbered points, one on each placed call's
interval, joined in order; for one that is not, the stretch that cannot be
ordered is shaded, its calls are marked, the call no order explains is red,
and the model's answers to it are listed, in ``linearize``'s words. The call
table below lists every call. Cost: O(calls).
"""

from __future__ import annotations

from pathlib import Path

from fencepost.report import svg
from fencepost.report.page import render_page, table_sections, text
from fencepost.spec.checkers.linearize import Verdict, describe
from fencepost.spec.checkers.linearize_command import describe_call, describe_outcome
from fencepost.spec.formats.history import ERROR, INFO, OK, Call, History
from fencepost.spec.variants import DEFAULT, Variants
from fencepost.story.history import linearization_points


#: Sub-positions per event: a linearization point sits on one of these, between two events.
SLOTS = 3


def history_page(history: History, verdict: Verdict, variants: Variants = DEFAULT) -> str:
    """The page of ``history`` as ``verdict`` decided it under ``variants`` (see the module docstring)."""
    calls, events = history.calls, history.events
    failure = verdict.failure
    involved = set(failure.involved) if failure else set()
    failing = failure.call if failure else None
    placed = {index: n for n, index in enumerate(verdict.order, 1)}
    name = Path(history.source).name
    parts = [
        '<header><p class="kind">fencepost report · history</p>',
        f"<h1>History {text(name)}</h1>",
        f'<p class="meta">{text(history.source)} · {len(calls):,} calls by {len(history.processes):,} clients · '
        f"{len(events):,} events · checked against the model: {verdict.windows:,} windows, "
        f"{verdict.states:,} states explored"
        + ("" if variants == DEFAULT else f" · under the declared variants {text(variants.describe())}")
        + "</p></header>",
        _verdict(history, verdict),
    ]
    if failure is not None:
        parts.append(_failure(history, verdict))
    parts.append(_lanes(history, verdict, placed, involved, failing))
    parts.append(_call_table(history, placed, involved, failing))
    data = {
        "kind": "history",
        "source": history.source,
        "calls": len(calls),
        "linearizable": verdict.linearizable,
        "variants": variants.declared(),
        "failing_call": failing,
        "involved": sorted(involved),
        "stretch_lines": [events[failure.start].line, events[failure.end].line] if failure else None,
    }
    return render_page(f"History {name} · fencepost report", "".join(parts), data)


def _lines(history: History, call: Call) -> str:
    events = history.events
    return f"lines {events[call.invoked].line}–{events[call.ended].line if call.ended is not None else 'open'}"


def _verdict(history: History, verdict: Verdict) -> str:
    events, calls = history.events, history.calls
    if verdict.linearizable is None:
        at = verdict.undecided_at
        line = events[at].line if at is not None and at < len(events) else 0
        return (f'<p class="verdict unknown" id="verdict"><strong>Undecided</strong>: the search explored '
                f"{verdict.states:,} states in the window from line {line} without deciding "
                "(raise <code>--max-states</code>, or record shorter or less concurrent runs). "
                "The calls are drawn without an order.</p>")
    if verdict.linearizable:
        return ('<p class="verdict good" id="verdict"><strong>Linearizable</strong>: one order of the calls keeps '
                "real time and gives every recorded result from the model; the points on the lanes are that "
                "order, each on its call's interval and joined to the next in turn.</p>")
    f = verdict.failure
    bad = calls[f.call]
    return (
        f'<p class="verdict bad" id="verdict"><strong>Not linearizable</strong>: no order of the calls from line '
        f"{events[f.start].line} to line {events[f.end].line} gives the recorded results. "
        f"No order explains <code>{text(describe_call(bad))}</code> by <code>{text(bad.process)}</code> "
        f"answering {text(describe_outcome(bad))}. "
        f'<a href="#c{f.call}">Go to the call</a> · <a href="#stretch">the stretch</a></p>'
    )


def _failure(history: History, verdict: Verdict) -> str:
    f, calls, events = verdict.failure, history.calls, history.events
    bad = calls[f.call]
    rows = []
    for i in f.involved:
        c = calls[i]
        cls = ' class="failing"' if i == f.call else ""
        flag = '<strong class="flag">◀ no order explains this result</strong>' if i == f.call else ""
        # The same lines and answer as under "Every call"; an answer recorded after the stretch says so.
        later = "" if c.ended is None or c.ended <= f.end else \
            f' <span class="later">(recorded at line {events[c.ended].line}, after the stretch: unknown inside it)</span>'
        rows.append(
            f'<tr{cls} data-c="{i}"><td>{text(c.process)}</td><td>{_lines(history, c)}</td>'
            f"<td><code>{text(describe_call(c))}</code></td>"
            f"<td>{text(describe_outcome(c))}{later}{flag}</td></tr>"
        )
    answers = []
    for answer in f.answers:
        after = ", ".join(f"{describe_call(calls[i])} by {calls[i].process}" for i in answer.before) or "nothing else"
        answers.append(f"<li><strong>{text(describe(bad.op, answer.value))}</strong> (after {text(after)})</li>")
    if not answers:
        answers.append("<li>nothing: in no order consistent with real time do the calls before it reach it</li>")
    return (
        f'<section id="stretch" class="divergence"><h2>The stretch that cannot be ordered: lines '
        f"{events[f.start].line} to {events[f.end].line}</h2>"
        f'<div class="scroll"><table class="stretch-calls"><thead><tr><th scope="col">client</th><th scope="col">lines</th>'
        f'<th scope="col">call</th><th scope="col">recorded answer</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
        f"<h3>What the model would have answered <code>{text(describe_call(bad))}</code> by "
        f"<code>{text(bad.process)}</code> (line {events[f.end].line})</h3>"
        f'<ul class="answers">{"".join(answers)}</ul></section>'
    )


def points(history: History, order: tuple[int, ...]) -> dict[int, float]:
    """Where each placed call's point is drawn, in event positions: the story's linearization points,
    ``SLOTS`` to an event. O(len(order))."""
    return {index: slot / SLOTS for index, slot in linearization_points(history, order, SLOTS).items()}


def _lanes(history: History, verdict: Verdict, placed: dict[int, int], involved: set[int], failing: int | None) -> str:
    calls, events = history.calls, history.events
    lanes = history.processes
    if not calls:
        return '<section class="calls"><h2>Calls</h2><p class="empty">The history has no calls.</p></section>'
    lane_of = {name: n for n, name in enumerate(lanes)}
    end = len(events) + 1
    spans = sorted((c.ended if c.ended is not None else end) - c.invoked for c in calls)
    scale = svg.Scale.fitting(0, end, spans[len(spans) // 2], 16)
    height = svg.lane_y(len(lanes))
    shapes = [svg.axis(scale, height, "event position in the history")]
    failure = verdict.failure
    if failure is not None:
        x0, x1 = scale.x(failure.start - 0.3), scale.x(failure.end + 0.3)
        shapes.append(f'<g id="stretch-mark"><rect class="stretch" x="{x0}" y="{svg.AXIS_HEIGHT - 2}" width="{round(x1 - x0, 1)}" '
                      f'height="{height - svg.AXIS_HEIGHT + 2}"/><title>the stretch that cannot be ordered</title></g>')
    compact = svg.Paths() if len(calls) > svg.DETAILED_UP_TO else None
    for call in calls:
        top = svg.lane_y(lane_of[call.process]) + 11
        x0 = scale.x(call.invoked)
        x1 = scale.x(call.ended if call.ended is not None else end)
        if call.kind == INFO:
            x1 = scale.x(end)
        classes = ["call"] + ([{INFO: "info", ERROR: "error"}[call.kind]] if call.kind != OK else [])
        if call.index in involved:
            classes.append("involved")
        if call.index == failing:
            classes.append("failing")
        if compact is not None and call.index not in involved:
            compact.rect(f"c-call c-{ {INFO: 'info', ERROR: 'error'}.get(call.kind, 'ok')}", x0, top - 4, max(1, round(x1 - x0, 1)), 8)
            continue
        title = ""
        if compact is None:
            words = f"{call.process}: {describe_call(call)} → {describe_outcome(call)} ({_lines(history, call)})"
            if call.index in placed:
                words += f"; placed {placed[call.index]} of {len(placed)}"
            title = f"<title>{text(words)}</title>"
        shapes.append(
            f'<g class="{" ".join(classes)}" data-c="{call.index}"><rect class="span" x="{x0}" y="{top - 4}" '
            f'width="{max(1, round(x1 - x0, 1))}" height="8"/>{title}</g>'
        )
    if verdict.order:
        found = points(history, verdict.order)
        path = " ".join(f"{scale.x(found[i])},{svg.lane_y(lane_of[calls[i].process]) + 11}" for i in verdict.order)
        shapes.append(f'<polyline class="order-line" points="{path}"/>')
        for n, i in enumerate(verdict.order, 1):
            x, y = scale.x(found[i]), svg.lane_y(lane_of[calls[i].process]) + 11
            if compact is not None:
                compact.dot("point", x, y, 3.5)
                continue
            tip = f"<title>{n}. {text(describe_call(calls[i]))} by {text(calls[i].process)}</title>"
            shapes.append(f'<circle class="point" data-c="{i}" cx="{x}" cy="{y}" r="3.5">{tip}</circle>')
    if compact is not None:
        shapes.insert(2 if failure is not None else 1, compact.svg())
    caption = ("<strong>Calls</strong>: a lane per client; a bar from a call's invocation to its completion, along the "
               "history's real-time order (the axis counts events).")
    if verdict.order:
        caption += " Points: where the order found places each call, joined in that order."
    if failure is not None:
        caption += " Shaded: the stretch that cannot be ordered; red: the call no order explains; violet: the other calls in it."
    if compact is not None:
        caption += (f" Drawn compact (more than {svg.DETAILED_UP_TO:,} calls): only the stretch's calls can be "
                    "clicked; the table below has every call.")
    legend = ('<span class="legend"><span class="key lease">call</span> a call; dashed: unknown outcome (info), '
              "which may take effect any time after it was invoked, or never</span>")
    figure = svg.figure(list(lanes), "".join(shapes), scale.width, "calls, one lane per client", caption, legend)
    return f'<section class="calls"><h2>Calls over the history</h2>{figure}</section>'


def _call_table(history: History, placed: dict[int, int], involved: set[int], failing: int | None) -> str:
    rows = []
    for call in history.calls:
        classes = []
        if call.index in involved:
            classes.append("involved")
        if call.index == failing:
            classes.append("failing")
        cls = f' class="{" ".join(classes)}"' if classes else ""
        # The order found, when there is one; without one (not linearizable, undecided) no column at all.
        order = f"<td>{placed.get(call.index, '—')}" if placed else ""
        flag = '<strong class="flag">◀ no order explains this result</strong>' if call.index == failing else ""
        rows.append(  # no end tags for cells and rows (HTML allows it): a 10^4-call page is mostly this markup
            f'<tr id="c{call.index}"{cls}><td>{call.index}<td>{text(call.process)}<td>{_lines(history, call)}'
            f"<td><code>{text(describe_call(call))}</code><td>{text(describe_outcome(call))}{flag}{order}"
        )
    placed_head = '<th scope="col">placed</th>' if placed else ""
    return (
        '<section class="call-list"><h2>Every call</h2><div class="scroll"><table class="calls-table">'
        '<thead><tr><th scope="col">call</th><th scope="col">client</th><th scope="col">lines</th><th scope="col">call</th>'
        f'<th scope="col">recorded answer</th>{placed_head}</tr></thead>{table_sections(rows)}</table></div></section>'
    )
