"""docs/curriculum.md: every rule of the contract is taught by a walkthrough, checked against its ``teaches``."""

from __future__ import annotations

import re
from pathlib import Path

from fencepost.spec.formats.scenario import load_scenario
from fencepost.story.walkthroughs import curriculum, resolve
from fencepost.spec.protocol import OPERATIONS, Reason, Status
from fencepost.story.glossary import BY_WORD

TABLE = Path(__file__).resolve().parents[2] / "docs" / "curriculum.md"

#: A row of the rule table: | rule | what it says | `lesson` | term |
ROW = re.compile(r"^\| (?P<rule>[a-z-]+) \| (?P<says>.+) \| `(?P<lesson>[a-z-]+)` \| (?P<term>[^|]+?) \|$")


def rows() -> list[dict[str, str]]:
    lines = TABLE.read_text(encoding="utf-8").splitlines()
    return [match.groupdict() for line in lines if (match := ROW.match(line))]


def teaches(name: str) -> set[str]:
    meta = load_scenario(resolve(name)).meta
    return {word.strip() for word in meta.get("teaches", "").split(",") if word.strip()}


def test_the_table_has_every_row_it_seems_to_have() -> None:
    table_lines = [line for line in TABLE.read_text(encoding="utf-8").splitlines()
                   if line.startswith("| ") and not line.startswith("| rule |")]
    assert len(rows()) == len(table_lines) >= 30
    names = [row["rule"] for row in rows()]
    assert len(names) == len(set(names)), "a rule is listed twice"


def test_each_rule_is_taught_by_its_lesson_under_the_term_named() -> None:
    order = curriculum()
    wrong = [(row["rule"], row["lesson"], row["term"]) for row in rows()
             if row["lesson"] not in order or row["term"] not in BY_WORD or row["term"] not in teaches(row["lesson"])]
    assert wrong == [], f"(rule, lesson, term) where the lesson does not teach the term: {wrong}"


def test_each_lesson_of_the_table_asks_a_question() -> None:
    silent = sorted({row["lesson"] for row in rows()
                     if not any(step.question for step in load_scenario(resolve(row["lesson"])).steps)})
    assert silent == []


def test_every_operation_status_and_reason_is_in_some_rule() -> None:
    said = " ".join(row["says"] for row in rows())
    quoted = set(re.findall(r"`([^`]+)`", said))
    words = set(re.findall(r"[a-z_]+", said))
    vocabulary = {*OPERATIONS, *(status.value for status in Status), *Reason.ALL, "cancel_requested"}
    assert sorted(name for name in vocabulary if name not in quoted and name not in words) == []


def test_every_walkthrough_has_a_place_in_the_table() -> None:
    text = TABLE.read_text(encoding="utf-8")
    placed = {row["lesson"] for row in rows()} | set(re.findall(r"`([a-z-]+)` \(", text))
    assert sorted(set(curriculum()) - placed) == []
