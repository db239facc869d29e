"""The report of a scenario or a counterexample: the leases over time, every step in words, the divergence.

``scenario_page(timeline, source, impl_name)`` reads a ``Timeline`` that has
run the scenario on an implementation with the model beside it, and returns
the page: a verdict, the first step where the implementation parts from the
model or from the scenario's ``expect`` shown side by side with the model,
the lease picture (``leases.read_leases``) and the step table, each step with
the narration the TUI shows (the timeline's events). Cost: O(steps + tasks at
the failing step) after the timeline is built.

A counterexample replayed on a scheduler that does not diverge (the default
one, say) still marks the step the file records as diverging
(``meta.diverging_step``), and says which option would show the divergence.
"""

from __future__ import annotations

from fencepost.report import svg
from fencepost.report.leases import Lease, Leases, read_leases
from fencepost.report.page import prose, render_page, table_sections, text
from fencepost.spec.checkers.why import Why, why_at
from fencepost.spec.formats.recorded import suggestions
from fencepost.spec.formats.trace import DIVERGES_NOTE
from fencepost.story.timeline import Board, Row, Timeline
from fencepost.spec.variants import DEFAULT


#: Tasks shown side by side at the failing step, at most (those that differ first).
MAX_TASKS_SIDE_BY_SIDE = 24

#: Task view fields compared side by side, in the order shown.
TASK_FIELDS = ("status", "worker", "token", "expires_at", "attempts", "due_at", "priority", "cancel_requested")

#: A lease label is written inside its bar once the bar is this many pixels wide.
LABEL_MIN_PX = 44


def scenario_page(timeline: Timeline, source: str, impl_name: str, running: dict[str, str | None]) -> str:
    """The page of ``timeline`` (built with the model), read from ``source``, run on ``impl_name``.

    ``running`` is what the command line chose (``{"impl": ..., "exec": ...}``),
    so a file's own record of its scheduler is shown only when it differs.
    """
    scenario = timeline.scenario
    problems = sorted(set(timeline.mismatches) | set(timeline.divergences))
    recorded = _recorded_step(scenario.meta, timeline.last)
    first = problems[0] if problems else None
    leases = read_leases(timeline)
    counterexample = recorded is not None or scenario.meta.get("generated_by") == "fencepost check"
    kind = "counterexample" if counterexample else "scenario"
    parts = [
        '<header><p class="kind">fencepost report · ', kind, "</p>",
        f"<h1>{text(scenario.title)}</h1>",
        f'<p class="meta">{text(source)} · {_count(timeline.last, "step")} · run on <code>{text(impl_name)}</code>'
        " with the model beside it"
        + ("" if timeline.variants == DEFAULT else f", under the declared variants {text(timeline.variants.describe())}")
        + "</p></header>",
        _verdict(timeline, problems, recorded, impl_name),
    ]
    notes = suggestions(scenario.meta, running)
    if notes:
        parts.append('<ul class="notes">' + "".join(f"<li>{text(n)}</li>" for n in notes) + "</ul>")
    if scenario.description:
        parts.append(f'<section class="description">{prose(scenario.description)}</section>')
    if first is not None:
        parts.append(_side_by_side(timeline, first))
    parts.append(_lease_picture(timeline, leases, first if first is not None else recorded))
    parts.append(_step_table(timeline, set(problems), first, recorded))
    data = {
        "kind": kind,
        "title": scenario.title,
        "steps": timeline.last,
        "problems": problems[:1000],
        "first_problem": first,
        "recorded_divergence": recorded,
        "implementation": impl_name,
        "leases": leases.count,
    }
    return render_page(f"{scenario.title} · fencepost report", "".join(parts), data)


def _recorded_step(meta: dict, last: int) -> int | None:
    step = meta.get("diverging_step")
    return step if isinstance(step, int) and not isinstance(step, bool) and 1 <= step <= last else None


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


# ---------------------------------------------------------------- the verdict


def _verdict(timeline: Timeline, problems: list[int], recorded: int | None, impl_name: str) -> str:
    if problems:
        first = problems[0]
        frame, check = timeline.frames[first], timeline.check(first)
        how = (check.divergence if check is not None and check.divergence else None) or frame.mismatch
        whom = "parts from the model" if first in timeline.divergences else "does not meet the scenario"
        more = f" ({_count(len(problems), 'step')} in all)" if len(problems) > 1 else ""
        found = _why(timeline, first) if first in timeline.divergences else None
        why = f'<br><span class="why">{text(found.line())}</span>' if found is not None else ""  # check's words
        return (f'<p class="verdict bad" id="verdict"><strong>Step {first}</strong> {whom}: {text(how)}{more}. '
                f'<a href="#s{first}">Go to step {first}</a> · <a href="#divergence">side by side</a>{why}</p>')
    expectations = sum(1 for step in timeline.steps if step.expect is not None)
    held = f"all {expectations} expectations hold" if expectations else "the scenario has no expectations to check"
    line = f"Every step agrees with the model, and {held}."
    if recorded is not None:
        line += (f' The file records that <a href="#s{recorded}">step {recorded}</a> diverged where it was found; '
                 f"on <code>{text(impl_name)}</code> it does not (the note below says how it did).")
    return f'<p class="verdict good" id="verdict">{line}</p>'


# ---------------------------------------------------------------- side by side


def _why(timeline: Timeline, index: int) -> Why | None:
    """The ``why:`` of step ``index``, as ``fencepost check`` says it for the same calls (None: no lockstep divergence there)."""
    calls = [(step.op, dict(step.args)) for step in timeline.steps[:index]]
    try:
        return why_at(timeline.factory, calls, index, timeline.variants)
    except Exception:  # noqa: BLE001 - a scheduler that breaks on replay: the page still shows what the timeline saw
        return None


def _side_by_side(timeline: Timeline, index: int) -> str:
    frame, check = timeline.frames[index], timeline.check(index)
    step = frame.step
    rows = [
        ("call", f"<code>{text(frame.call)}</code>", f"<code>{text(frame.call)}</code>"),
        ("answer", text(frame.result), text(check.result if check else "")),
        ("time after", f"t={frame.now}", f"t={check.now}" if check else ""),
    ]
    body = "".join(
        f'<tr><th scope="row">{name}</th><td class="{"differs" if impl != model and name != "call" else ""}">{impl}</td>'
        f"<td>{model}</td></tr>"
        for name, impl, model in rows
    )
    lines = []
    if check is not None and check.divergence:
        lines.append(f"<li><strong>How it parts from the model:</strong> {text(check.divergence)}</li>")
    if frame.mismatch:
        lines.append(f"<li><strong>The scenario's expect:</strong> {text(frame.mismatch)}</li>")
    said = check.divergence if check is not None else None
    lines += [f"<li>{text(d)}</li>" for d in timeline.differences(index)[:MAX_TASKS_SIDE_BY_SIDE] if d != said]
    if step.note and not step.note.startswith(DIVERGES_NOTE):  # check's note says again what the lines above say
        lines.append(f'<li class="note">{prose(step.note)}</li>')
    tasks = _task_tables(timeline, index)
    return (
        f'<section id="divergence" class="divergence"><h2>Step {index}: implementation and model side by side</h2>'
        f'<table class="versus"><thead><tr><th class="what"></th><th scope="col">implementation</th><th scope="col">model</th></tr></thead>'
        f"<tbody>{body}</tbody></table>"
        f'<ul class="how">{"".join(lines)}</ul>{tasks}</section>'
    )


def _rows(board: Board | None) -> dict[int, Row]:
    if board is None:
        return {}
    return {row.id: row for column in (board.pending, board.running, board.done) for row in column}


def _task_tables(timeline: Timeline, index: int) -> str:
    """The tasks after step ``index`` as each side holds them: the ones that differ, then the ones the step changed."""
    mine, theirs = _rows(timeline.board(index, "impl")), _rows(timeline.board(index, "model"))
    frame, check = timeline.frames[index], timeline.check(index)
    differing = [i for i in sorted(mine.keys() | theirs.keys())
                 if mine.get(i) is None or theirs.get(i) is None or mine[i].view != theirs[i].view]
    changed = sorted((frame.changed | (check.changed if check else frozenset())) - set(differing))
    ids = (differing + changed)[:MAX_TASKS_SIDE_BY_SIDE]
    if not ids:
        return ""
    head = "".join(f"<th scope=\"col\">{name}</th>" for name in ("task", *TASK_FIELDS))

    def table(rows: dict[int, Row], other: dict[int, Row], side: str) -> str:
        body = []
        for task_id in ids:
            row, twin = rows.get(task_id), other.get(task_id)
            if row is None:
                body.append(f'<tr class="differs"><td>{task_id}</td><td colspan="{len(TASK_FIELDS)}">absent</td></tr>')
                continue
            cells = "".join(
                f'<td class="differs">{text(getattr(row, name))}</td>'
                if twin is None or getattr(twin, name) != getattr(row, name) else f"<td>{text(getattr(row, name))}</td>"
                for name in TASK_FIELDS
            )
            body.append(f"<tr><td>{task_id}</td>{cells}</tr>")
        return (f'<div class="tasks"><h3>{side}</h3><div class="scroll"><table><thead><tr>{head}</tr></thead>'
                f"<tbody>{''.join(body)}</tbody></table></div></div>")

    more = len(differing) + len(changed) - len(ids)
    tail = f'<p class="more">and {more} more</p>' if more > 0 else ""
    return (f'<div class="pair">{table(mine, theirs, "implementation")}{table(theirs, mine, "model")}</div>{tail}')


# ---------------------------------------------------------------- the lease picture


def _lease_picture(timeline: Timeline, leases: Leases, marked: int | None) -> str:
    if not leases.lanes:
        return '<section class="leases"><h2>Leases</h2><p class="empty">No worker joined, so no lease was granted.</p></section>'
    durations = sorted(leases.durations)
    typical = durations[len(durations) // 2] if durations else 1
    scale = svg.Scale.fitting(0, max(1, leases.span), typical)
    height = svg.lane_y(len(leases.lanes))
    shapes = [svg.axis(scale, height, "logical time")]
    compact = svg.Paths() if leases.count > svg.DETAILED_UP_TO else None
    for number, lane in enumerate(leases.lanes):
        top = svg.lane_y(number)
        if compact is None:
            shapes += [_bar(lease, scale, top) for lease in lane.leases]
        else:
            for lease in lane.leases:
                _compact_bar(compact, lease, scale, top)
        for mark in lane.marks:
            x = scale.x(mark.time)
            shapes.append(
                f'<g class="mark rejected" data-s="{mark.step}"><circle cx="{x}" cy="{top + 11}" r="6"/>'
                f'<text x="{x}" y="{top + 15}">!</text><title>step {mark.step}: {mark.kind} of task {mark.task_id} '
                f"with token {text(mark.token)} at t={mark.time} rejected</title></g>"
            )
    if compact is not None:
        shapes.insert(1, compact.svg())
    if marked is not None:
        x = scale.x(timeline.frames[marked].now)
        shapes.append(f'<g class="cursor" data-s="{marked}"><line x1="{x}" y1="{svg.AXIS_HEIGHT - 4}" x2="{x}" y2="{height}"/>'
                      f"<title>step {marked}, t={timeline.frames[marked].now}</title></g>")
    caption = (f"<strong>Leases</strong>: {_count(leases.count, 'lease')} on {_count(len(leases.lanes), 'lane')} "
               "(a lane per worker slot), over logical time. A bar runs from <code>started_at</code> to "
               "<code>expires_at</code>; its solid part is held until an accepted completion or failure.")
    if marked is not None:
        caption += f" The red line is step {marked}, at t={timeline.frames[marked].now}."
    if compact is not None:
        caption += (f" Drawn compact (more than {svg.DETAILED_UP_TO:,} leases): a lease's end is a stroke, green "
                    "completed, red failed, orange expired, grey still running; the steps below say which lease is which.")
    legend = (
        '<span class="legend"><span class="key lease">lease</span> lease <span class="key lease retry">retry</span> retry '
        '<span class="key glyph">✓</span> completed <span class="key glyph">✗</span> failed '
        '<span class="key glyph">×</span> expired <span class="key glyph bad">!</span> rejected '
        '<span class="key glyph">›</span> still running</span>'
    )
    names = [lane.name for lane in leases.lanes]
    return (f'<section class="leases"><h2>Leases over time</h2>'
            f"{svg.figure(names, ''.join(shapes), scale.width, 'lease timeline, one lane per worker slot', caption, legend)}</section>")


def _compact_bar(paths: svg.Paths, lease: Lease, scale: svg.Scale, top: int) -> None:
    """``_bar``'s drawing, in the compact paths: the same classes, the glyphs as strokes at the end."""
    x0, x1 = scale.x(lease.started_at), scale.x(lease.expires_at)
    kind = "retry" if lease.retry else "first"
    width = max(1, round(x1 - x0, 1))
    if lease.ended is not None:
        end = scale.x(lease.ended)
        paths.rect(f"c-term {kind}", x0, top + 4, width, 14)
        paths.rect(f"c-held {kind}", x0, top + 4, max(1, round(end - x0, 1)), 14)
        paths.tick(f"c-end {lease.end_kind}", end, top + 2, 18)
    else:
        paths.rect(f"c-held {kind}", x0, top + 4, width, 14)
        paths.tick("c-end expiry" if lease.expired else "c-end running", x1, top + 2, 18)


def _bar(lease: Lease, scale: svg.Scale, top: int) -> str:
    x0, x1 = scale.x(lease.started_at), scale.x(lease.expires_at)
    held_end = scale.x(lease.ended) if lease.ended is not None else x1
    classes = ["lease"]
    if lease.retry:
        classes.append("retry")
    ended = lease.ended is not None
    classes.append("expired" if lease.expired else "ended" if ended else "open")
    words = [f"task {lease.task_id}, token {lease.token} on {lease.worker}: [{lease.started_at}, {lease.expires_at}), step {lease.step}"]
    if lease.retry:
        words.append(f"retry (lease {lease.attempt} of the task)")
    if lease.renewals:
        words.append(f"renewed {lease.renewals}×")
    glyph = ""
    if ended:
        mark = "✓" if lease.end_kind == "complete" else "✗"
        words.append(f"{'completed' if lease.end_kind == 'complete' else 'failed'} at t={lease.ended} (step {lease.end_step})")
        glyph = f'<text class="glyph {lease.end_kind}" x="{held_end + 1}" y="{top + 15}">{mark}</text>'
    elif lease.expired:
        words.append(f"expired at t={lease.expires_at}")
        glyph = f'<text class="glyph expiry" x="{x1 + 1}" y="{top + 15}">×</text>'
    else:
        words.append("still running at the end")
        glyph = f'<text class="glyph running" x="{x1 + 1}" y="{top + 15}">›</text>'
    width, held = max(1, round(x1 - x0, 1)), max(1, round(held_end - x0, 1))
    label = ""
    if width >= LABEL_MIN_PX:
        label = f'<text class="label" x="{x0 + 3}" y="{top + 15}">{"↻" if lease.retry else ""}#{lease.task_id}·{lease.token}</text>'
    return (
        f'<g class="{" ".join(classes)}" data-s="{lease.step}">'
        f'<rect class="term" x="{x0}" y="{top + 4}" width="{width}" height="14"/>'
        + (f'<rect class="held" x="{x0}" y="{top + 4}" width="{held}" height="14"/>' if ended else "")
        + f"{label}{glyph}"
        f"<title>{text('; '.join(words))}</title></g>"
    )


# ---------------------------------------------------------------- the step table


def _step_table(timeline: Timeline, problems: set[int], first: int | None, recorded: int | None) -> str:
    rows = []
    for frame in timeline.frames[1:]:
        index = frame.index
        check = timeline.check(index)
        classes = []
        if frame.notable:
            classes.append("notable")
        if index in problems:
            classes.append("problem")
        if index == first:
            classes.append("first")
        if index == recorded:
            classes.append("recorded")
        events = "".join(f'<li class="ev-{e.kind}">{text(e.text)}</li>' for e in frame.events if e.text and e.kind != "mismatch")
        verdict = []
        note = frame.step.note
        if index == first:  # the side-by-side section says how it differs: the row points there, once
            verdict.append('<strong class="flag">◀ first problem</strong> <a href="#divergence">side by side above</a>')
            if note and note.startswith(DIVERGES_NOTE):
                note = None
        else:
            if index == recorded and not problems:
                verdict.append('<strong class="flag">◀ diverged where found</strong>')
            if check is not None and check.divergence:
                verdict.append(f"<span>model: {text(check.result)}; {text(check.divergence)}</span>")
            if frame.mismatch:
                verdict.append(f"<span>{text(frame.mismatch)}</span>")
        note = f'<div class="note">{prose(note)}</div>' if note else ""
        cls = f' class="{" ".join(classes)}"' if classes else ""
        # End tags of cells and rows are left out (HTML allows it): a 10^4-step page is mostly this markup.
        rows.append(
            f'<tr id="s{index}"{cls}><td>{index}<td>{frame.now}<td><code>{text(frame.call)}</code><td>{text(frame.result)}'
            f"<td>{f'<ul>{events}</ul>' if events else ''}{note}<td>{''.join(verdict)}"
        )
    filters = ('<p class="filters js-only"><label><input type="checkbox" id="only-notable"> only steps with an expiry, '
               "a rejection or a problem</label></p>")
    return (
        f'<section class="steps"><h2>Steps</h2>{filters}<div class="scroll"><table class="steps-table">'
        "<thead><tr><th scope=\"col\">step</th><th scope=\"col\">t</th><th scope=\"col\">call</th>"
        "<th scope=\"col\">answer</th><th scope=\"col\">what happened</th><th scope=\"col\">check</th></tr></thead>"
        f"{table_sections(rows)}</table></div></section>"
    )
