"""Slips a newcomer met in the docs (issue 30), each held by a test so it cannot come back."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def test_each_queues_findings_come_in_their_numbered_order():
    text = (DOCS / "findings.md").read_text(encoding="utf-8")
    headings = re.findall(r"^### ([A-Z])(\d+)\b", text, flags=re.MULTILINE)
    by_queue: dict[str, list[int]] = {}
    for letter, number in headings:
        by_queue.setdefault(letter, []).append(int(number))
    assert by_queue, "findings.md has no numbered findings"
    assert {q: n for q, n in by_queue.items() if n != sorted(n)} == {}


def test_the_readme_says_the_sqs_it_checks_is_motos_model():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if "peers.sqs" in line]
    assert lines and all("moto" in line for line in lines), lines
    for paragraph in text.split("\n\n"):
        if re.search(r"\bSQS\b", paragraph):
            assert "moto" in paragraph, paragraph


def test_no_page_measures_on_an_unnamed_loaded_machine():
    """A figure says where it was measured and at what load; "this loaded machine" tells a reader neither."""
    said = [(page.name, line) for page in [REPO / "README.md", *DOCS.rglob("*.md")]
            for line in page.read_text(encoding="utf-8").splitlines()
            if re.search(r"\bthis loaded machine\b", line)]
    assert said == []


def test_the_home_page_shows_how_to_start_and_where_to_go():
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    assert "```sh" in text and "fencepost check" in text
    for page in ("setup.md", "contract.md", "checking.md", "tui.md", "report.md", "findings.md"):
        assert f"]({page})" in text, page
