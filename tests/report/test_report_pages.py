"""``fencepost report`` without a browser: every shipped input gives a page, data stays data, errors are one line."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from fencepost.report.page import DATA_ID, json_block, prose
from fencepost.cli import main
from fencepost.story.walkthroughs import builtin_names
from pages import (
    FORGOTTEN, FORGOTTEN_FAILING_CALL, HOSTILE_NAME, HOSTILE_NOTE, OVERLAPS, ZOMBIE, ZOMBIE_FAILING_CALL, hostile_history, make_page, parse,
    write_hostile_scenario,
)

TESTS = Path(__file__).resolve().parents[1]

#: Every scenario or counterexample file under tests/ (snapshots are pictures, not inputs).
SCENARIO_FILES = sorted(
    p for p in TESTS.rglob("*") if p.suffix in (".toml", ".json") and "__snapshots__" not in p.parts
)
#: Every history file under tests/.
HISTORY_FILES = sorted(p for p in TESTS.rglob("*.jsonl") if "__snapshots__" not in p.parts)


def data_of(page: Path) -> dict:
    tags = parse(page)
    blocks = [t for t in tags.named("script") if t.get("id") == DATA_ID]
    assert len(blocks) == 1
    index = [a for _, a in tags.tags if _ == "script"].index(blocks[0])
    return json.loads(tags.scripts[index])


def assert_self_contained(page: Path) -> None:
    """One policy that loads nothing, exactly our two scripts, and no tag that could fetch."""
    tags = parse(page)
    policies = [m["content"] for m in tags.named("meta") if m.get("http-equiv") == "Content-Security-Policy"]
    assert len(policies) == 1 and policies[0].startswith("default-src 'none'")
    assert "unsafe-inline" not in policies[0]
    scripts = tags.named("script")
    assert [s.get("type") for s in scripts] == ["application/json", None]
    assert not any(s.get("src") for s in scripts)
    for tag in ("img", "link", "iframe", "object", "embed", "image", "use", "base", "form", "a"):
        for attrs in tags.named(tag):
            assert tag == "a" and attrs.get("href", "").startswith("#"), f"<{tag} {attrs}> in {page}"
    assert not any(k.startswith("on") for _, attrs in tags.tags for k in attrs), "an event-handler attribute"
    assert not any("style" in attrs for _, attrs in tags.tags), "an inline style attribute (the policy forbids it)"


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda p: str(p.relative_to(TESTS)))
def test_every_scenario_file_under_tests_gives_a_page(path, tmp_path):
    page = make_page(path, tmp_path / "page.html")
    assert_self_contained(page)
    data = data_of(page)
    assert data["steps"] > 0 and data["kind"] in ("scenario", "counterexample")


@pytest.mark.parametrize("name", builtin_names())
def test_every_walkthrough_gives_a_page(name, tmp_path):
    page = make_page(name, tmp_path / f"{name}.html")
    assert_self_contained(page)
    assert data_of(page)["kind"] == "scenario"


@pytest.mark.parametrize("path", HISTORY_FILES, ids=lambda p: str(p.relative_to(TESTS)))
def test_every_history_file_under_tests_gives_a_page(path, tmp_path):
    assert_self_contained(make_page(path, tmp_path / "page.html"))


def test_a_counterexample_on_its_mutant_marks_the_diverging_step_side_by_side(tmp_path):
    path = TESTS / "regressions" / "token_reuse.toml"
    page = make_page(path, tmp_path / "page.html", "--impl", "impl.mutants.token_reuse:Scheduler")
    tags = parse(page)
    assert data_of(page)["first_problem"] == 5
    assert "first" in tags.with_id("s5")["class"].split()
    assert tags.with_id("divergence") is not None
    text = page.read_text(encoding="utf-8")
    assert "the model returned lease task 1 to w1, token 2, [9, 10)" in text
    # The narration is the TUI's: the expiry the mutant shows at step 5, in the timeline's words.
    assert "expired at t=1 (noticed at t=9)" in text


def test_a_counterexample_on_a_correct_scheduler_still_marks_the_step_it_records(tmp_path):
    page = make_page(TESTS / "regressions" / "token_reuse.toml", tmp_path / "page.html")
    tags = parse(page)
    data = data_of(page)
    assert data["first_problem"] is None and data["recorded_divergence"] == 5
    assert "recorded" in tags.with_id("s5")["class"].split()
    assert "--impl impl.mutants.token_reuse:Scheduler" in page.read_text(encoding="utf-8")


def test_the_lease_picture_marks_expiries_rejections_and_retries(tmp_path):
    page = make_page("fresh-token", tmp_path / "page.html")
    text = page.read_text(encoding="utf-8")
    tags = parse(page)
    groups = [attrs["class"].split() for attrs in tags.named("g") if "class" in attrs]
    assert any("lease" in g and "retry" in g for g in groups)
    assert any("lease" in g and "expired" in g for g in groups)
    assert any("rejected" in g for g in groups)
    assert "expired at t=" in text


def test_a_history_that_is_not_linearizable_marks_the_stretch_and_the_call(tmp_path):
    page = make_page(ZOMBIE, tmp_path / "page.html")
    tags = parse(page)
    data = data_of(page)
    assert data["linearizable"] is False and data["failing_call"] == ZOMBIE_FAILING_CALL
    assert "failing" in tags.with_id(f"c{ZOMBIE_FAILING_CALL}")["class"].split()
    assert tags.with_id("stretch") is not None and tags.with_id("stretch-mark") is not None
    text = page.read_text(encoding="utf-8")
    assert "rejected (stale_token)" in text  # what the model would have answered


def test_a_history_with_a_prune_describes_it_in_the_protocols_words(tmp_path):
    page = make_page(FORGOTTEN, tmp_path / "page.html")
    data = data_of(page)
    assert data["linearizable"] is False and data["failing_call"] == FORGOTTEN_FAILING_CALL
    text = page.read_text(encoding="utf-8")
    assert "<code>prune(before=3, now=3)</code><td>forgot 1 task" in text  # the call table
    assert "ValueError: task_id 1 was forgotten" in text  # what the model would have answered the cancel


def test_a_linearizable_history_draws_a_point_per_placed_call(tmp_path):
    page = make_page(OVERLAPS, tmp_path / "page.html")
    points = [c for c in parse(page).named("circle") if c.get("class") == "point"]
    assert data_of(page)["linearizable"] is True
    assert sorted(int(c["data-c"]) for c in points) == [0, 1, 2, 3, 4]


def test_hostile_names_and_notes_are_text(tmp_path):
    for source in (write_hostile_scenario(tmp_path / "hostile.toml"), hostile_history(tmp_path / "hostile.jsonl")):
        page = make_page(source, tmp_path / f"{source.stem}.html")
        assert_self_contained(page)
        raw = page.read_text(encoding="utf-8")
        assert "<img" not in raw and "<script>alert" not in raw
        assert raw.count("<script") == 2 and raw.count("</script>") == 2  # ours: the data block and the script
        assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in raw


def test_the_data_block_cannot_be_closed_from_inside():
    block = json_block({"title": HOSTILE_NOTE, "name": HOSTILE_NAME})
    assert "<" not in block and ">" not in block and "&" not in block
    assert json.loads(block) == {"title": HOSTILE_NOTE, "name": HOSTILE_NAME}


def test_prose_keeps_inline_marks_and_escapes_the_rest():
    assert prose("**The implementation diverges here.** See `complete()`.\n\nNext") == (
        "<p><strong>The implementation diverges here.</strong> See <code>complete()</code>.</p><p>Next</p>"
    )
    assert prose("<b>x</b> [a](http://x)") == "<p>&lt;b&gt;x&lt;/b&gt; [a](http://x)</p>"
    assert prose("`**not bold**`") == "<p><code>**not bold**</code></p>"
    assert prose("# Why <tokens>\nA lease.\n\n- one\n* *two*") == (
        "<h3>Why &lt;tokens&gt;</h3><p>A lease.</p><ul><li>one</li><li><em>two</em></li></ul>"
    )


def test_a_bad_file_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("title = 3\n", encoding="utf-8")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"process": "c1", "type": "ok"}\n', encoding="utf-8")
    out = tmp_path / "out.html"
    for source in (bad, broken, tmp_path / "missing.toml"):
        assert main(["report", str(source), "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("fencepost report: error: ") and str(source) in err
        assert not out.exists()


def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys):
    assert main(["report", "onboarding", "-o", str(tmp_path / "no" / "such" / "folder.html")]) == 2
    assert re.match(r"fencepost report: error: -o .*: the folder it would go in does not exist\n$", capsys.readouterr().err)
    assert main(["report", "onboarding", "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_impl_is_refused_for_a_history(tmp_path, capsys):
    assert main(["report", str(OVERLAPS), "-o", str(tmp_path / "o.html"), "--impl", "impl:Scheduler"]) == 2
    assert "for a scenario" in capsys.readouterr().err


REGRESSIONS = sorted((TESTS / "regressions").glob("*.toml"))


@pytest.mark.parametrize("path", REGRESSIONS, ids=lambda p: p.stem)
def test_each_shipped_counterexample_on_its_mutant_marks_the_step_it_records(path, tmp_path):
    from fencepost.spec.formats.scenario import load_scenario

    meta = load_scenario(path).meta
    page = make_page(path, tmp_path / "page.html", "--impl", meta["impl"])
    step = meta["diverging_step"]
    assert data_of(page)["first_problem"] == step
    assert "first" in parse(page).with_id(f"s{step}")["class"].split()


def test_only_full_sections_after_the_first_may_be_skipped_by_the_browser():
    from fencepost.report.page import ROWS_PER_SECTION, table_sections

    rows = [f"<tr id=s{n}>" for n in range(2 * ROWS_PER_SECTION + 7)]
    html = table_sections(rows)
    assert html.count("<tbody>") == 2 and html.count('<tbody class="section">') == 1
    assert html.index('class="section"') < html.index(f"<tr id=s{ROWS_PER_SECTION}>")
    assert "".join(re.findall(r"<tr id=s\d+>", html)) == "".join(rows)


def test_a_scenario_runs_on_a_program_behind_exec(tmp_path):
    import shlex
    import sys

    adapter = TESTS / "adapters" / "python_adapter.py"
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(adapter))}"
    page = make_page("fresh-token", tmp_path / "page.html", "--exec", command)
    data = data_of(page)
    assert data["implementation"].startswith("--exec ") and data["first_problem"] is None
    assert data["leases"] > 0


def test_a_program_that_does_not_start_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["report", "fresh-token", "-o", str(tmp_path / "o.html"), "--exec", "/no/such/program"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "o.html").exists()


#: The deadline the hang test gives each call (no honest call of four steps runs past it).
HANG_TIMEOUT = 0.3
#: Real seconds the hang test waits for ``report`` to return before it counts as hung.
HANG_BOUND = 120


def test_a_call_past_its_deadline_is_one_line_and_leaves_the_garbage_collector_running(tmp_path, capsys):
    """The collector, paused while the timeline is built, runs again though the hung call's thread never ends."""
    import gc
    import threading

    scenario = tmp_path / "hang.toml"
    scenario.write_text('title = "A cancel that hangs"\n\n[[steps]]\nop = "add_worker"\nworker = "w1"\ncapacity = 1\n\n[[steps]]\nop = "submit"\n\n'
                        '[[steps]]\nop = "dispatch"\nworker = "w1"\nnow = 0\nduration = 5\n\n'
                        '[[steps]]\nop = "cancel"\ntask_id = 1\nnow = 1\n', encoding="utf-8")
    argv = ["report", str(scenario), "-o", str(tmp_path / "o.html"), "--impl", "tests.spec.schedulers:DeadlocksOnCancel",
            "--call-timeout", str(HANG_TIMEOUT)]
    assert gc.isenabled()
    box: list = []
    worker = threading.Thread(target=lambda: box.append(main(argv)), daemon=True)
    worker.start()
    worker.join(HANG_BOUND)
    assert box == [2], f"fencepost report on a hanging scheduler: {box or 'still running'}"
    err = capsys.readouterr().err
    assert f"did not return within {HANG_TIMEOUT:g} s" in err and err.count("\n") == 1, err
    assert gc.isenabled()


def test_a_history_the_search_cannot_decide_says_so(tmp_path):
    page = make_page(ZOMBIE, tmp_path / "page.html", "--max-states", "1")
    assert data_of(page)["linearizable"] is None
    assert parse(page).with_id("verdict")["class"] == "verdict unknown"


def test_a_history_is_judged_under_its_headers_variants_and_the_page_names_them(tmp_path, capsys):
    path = TESTS / "peers" / "histories" / "sqs_fifo_claim_duplicate_receive.jsonl"
    page = make_page(path, tmp_path / "page.html")
    assert data_of(page)["variants"]["tokens"] == "opaque"
    assert "under the declared variants" in page.read_text(encoding="utf-8")


def test_a_variant_flag_that_disagrees_with_the_histories_header_is_one_line_exit_2(tmp_path, capsys):
    path = TESTS / "peers" / "histories" / "sqs_fifo_claim_duplicate_receive.jsonl"
    out = tmp_path / "page.html"
    assert main(["report", str(path), "-o", str(out), "--variant", "tokens=int"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tokens" in err and not out.exists()


def test_a_counterexample_page_says_why_in_the_words_check_prints(tmp_path):
    from fencepost.impl.mutants import token_reuse
    from fencepost.spec.checkers.lockstep import run_calls
    from fencepost.spec.checkers.why import why
    from fencepost.spec.formats.scenario import load_scenario

    path = TESTS / "regressions" / "token_reuse.toml"
    page = make_page(path, tmp_path / "page.html", "--impl", "impl.mutants.token_reuse:Scheduler")
    steps = load_scenario(path).steps[:5]
    line = why(run_calls(token_reuse.Scheduler, [(s.op, dict(s.args)) for s in steps])).line()
    verdict = page.read_text(encoding="utf-8").split('id="verdict"', 1)[1].split("</p>", 1)[0]
    assert line.startswith("why: ") and f'<span class="why">{html.escape(line, quote=True)}</span>' in verdict


#: The README tour's closed-interval counterexample as the check used to print it, in batches:
#: two slots, two tasks leased by one dispatch_many, one completed by a complete_many.
BATCHED = """
title = "Batch leases"
[[steps]]
op = "add_worker"
worker = "w1"
capacity = 2
[[steps]]
op = "submit_many"
tasks = [{}, {}]
[[steps]]
op = "dispatch_many"
worker = "w1"
now = 0
duration = 3
limit = 4
[[steps]]
op = "complete_many"
reports = [[1, 1]]
now = 1
[[steps]]
op = "complete_many"
reports = []
now = 3
"""


def test_batch_leases_are_drawn_and_a_batch_report_ends_its_lease(tmp_path):
    source = tmp_path / "batched.toml"
    source.write_text(BATCHED, encoding="utf-8")
    page = make_page(source, tmp_path / "page.html")
    text = page.read_text(encoding="utf-8")
    assert data_of(page)["leases"] == 2
    assert "2 leases on 2 lanes" in text
    bars = [attrs for attrs in parse(page).named("g") if "lease" in attrs.get("class", "").split()]
    assert len(bars) == 2
    assert "completed at t=1" in text  # task 1's lease ended by the batch's report, not drawn to its expiry
    assert "expired at t=3" in text  # task 2's ran out


def test_lanes_are_named_as_the_tui_names_them(tmp_path):
    source = tmp_path / "batched.toml"
    source.write_text(BATCHED, encoding="utf-8")
    make_page(source, tmp_path / "page.html")
    text = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert ">w1.1<" in text and ">w1.2<" in text and ">w1<" not in text


def test_a_list_whose_items_wrap_is_a_list():
    """The onboarding description's list wraps its items onto indented lines: it was one paragraph of '* ...'."""
    assert prose("Intro:\n* **Logical time**: an integer,\n  never going backwards.\n* A lease.") == (
        "<p>Intro:</p><ul><li><strong>Logical time</strong>: an integer, never going backwards.</li><li>A lease.</li></ul>"
    )


def test_the_onboarding_page_shows_its_description_list_as_a_list(tmp_path):
    text = make_page("onboarding", tmp_path / "page.html").read_text(encoding="utf-8")
    assert "<li><strong>Logical time</strong>" in text and "* <strong>Logical time" not in text


def test_a_counterexample_page_says_how_it_diverges_once_in_each_place_not_in_every_one(tmp_path):
    """The verdict and the side-by-side section say it; the step's row points there (it said it 4-5 times)."""
    page = make_page(TESTS / "regressions" / "closed_interval.toml", tmp_path / "page.html",
                     "--impl", "impl.mutants.closed_interval:Scheduler")
    body = page.read_text(encoding="utf-8").split(f'<script type="application/json" id="{DATA_ID}">')[0]
    assert body.count(html.escape("status 'running' (model: 'pending')")) == 2  # the verdict; side by side
    assert body.count(html.escape("expected 'pending', got 'running'")) == 1  # the file's own description
    assert "diverges here" not in body  # check's note in the file repeats the lines the page already has
    assert 'side by side above' in body


def test_a_history_page_gives_each_call_the_same_lines_and_answer_in_the_stretch_as_under_every_call(tmp_path):
    """sqs_fifo_claim_duplicate_receive: a call answered after the stretch read 'lines N–open / not yet known'
    in the stretch and 'lines N–M … lease …' under Every call; and the placed column was empty on every row."""
    source = TESTS / "peers" / "histories" / "sqs_fifo_claim_duplicate_receive.jsonl"
    page = make_page(source, tmp_path / "page.html")
    body = page.read_text(encoding="utf-8")
    stretch = body[body.index('id="stretch"'):body.index("</section>", body.index('id="stretch"'))]
    calls = body[body.index('class="call-list"'):]
    assert "open" not in stretch and "not yet known" not in stretch
    assert "after the stretch: unknown inside it" in stretch
    rows = re.findall(r'<tr[^>]*data-c="(\d+)"[^>]*><td>[^<]*</td><td>(lines [^<]*)</td>', stretch)
    assert rows
    for row in rows:
        assert f'<tr id="c{row[0]}"' in calls and f"<td>{row[1]}<td>" in calls.split(f'<tr id="c{row[0]}"')[1].split("<tr")[0]
    assert "placed" not in calls  # not linearizable: no order, so no column of dashes or blanks
