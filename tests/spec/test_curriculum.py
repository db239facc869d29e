"""The walkthroughs as a curriculum: in teaching order, every term defined and taught before use.

The glossary (``story/glossary.py``) is what the help screen shows; ``meta.teaches``
says which walkthrough teaches which of its terms; ``curriculum.txt`` orders the
walkthroughs. The checks here are what keep the three honest as walkthroughs
are added: a term a note names must be in the glossary, and taught by this
walkthrough or an earlier one; a walkthrough that teaches a term introduces it
in bold the first time it uses it.
"""

from __future__ import annotations

import re

import pytest

from fencepost.story.walkthroughs import BUILTIN_DIR, builtin_names, curriculum, resolve
from fencepost.spec.formats.scenario import LEASE_FIELDS, SIGNATURES, STATE_FIELDS, Scenario, load_scenario
from fencepost.spec.protocol import OPERATIONS, Reason, Status
from fencepost.story.glossary import BY_WORD, GLOSSARY

#: The protocol's own names a note may use: every one needs a glossary entry.
#: (Plain English argument names -- now, worker, task, before, limit -- are left to the jargon list.)
PROTOCOL_NAMES = sorted(
    ({*OPERATIONS, *(s.value for s in Status), *Reason.ALL, *LEASE_FIELDS, *STATE_FIELDS}
     | {p.name for params in SIGNATURES.values() for p in params})
    - {"now", "worker", "status", "id", "before", "tasks", "reports", "limit"}
)

#: Words a newcomer may not know, whatever the protocol calls them. A note that uses
#: one must find it in the glossary. "seed" is here so that no note speaks of design
#: documents a user has never seen.
JARGON = (
    "lease", "token", "fencing", "fencing token", "fence", "heartbeat", "slot", "timed call", "half-open",
    "closed interval", "closed-interval bug", "off-by-one", "at-least-once", "exactly-once", "idempotent",
    "idempotency", "idempotency key", "backoff", "budget", "eligible", "final", "stale", "heap",
    "lazy deletion", "compaction", "tie-break", "dispatch order", "logical time", "cooperative", "expiry",
    "seed", "restart", "durable", "durability", "model", "capacity", "priority", "due time",
)


def texts(scenario: Scenario) -> list[tuple[str, str]]:
    """(where, text) for everything a reader reads, in reading order."""
    out = [("title", scenario.title), ("description", scenario.description or "")]
    for number, step in enumerate(scenario.steps, start=1):
        q = step.question
        if q is not None:
            out += [(f"step {number} ask", q.ask), *((f"step {number} choice", c) for c in q.choices)]
        out.append((f"step {number} note", step.note or ""))
        if q is not None:
            out.append((f"step {number} why", q.why))
    return out


def plain(text: str) -> str:
    return text.replace("`", " ` ")


def find_tracked(text: str):
    """(word, start) for each protocol name or jargon word ``text`` uses."""
    text = plain(text)
    for name in PROTOCOL_NAMES:
        for match in re.finditer(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text):
            yield name, match.start()
    for word in JARGON:
        for match in re.finditer(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, re.IGNORECASE):
            yield word, match.start()


def defined_at(text: str, start: int) -> bool:
    """Some glossary term names the words at ``start`` of ``text``."""
    text = plain(text)
    return any(term.pattern.match(text, start) for term in GLOSSARY)


CURRICULUM = curriculum()
SCENARIOS = {name: load_scenario(resolve(name)) for name in builtin_names()}


def teaches(name: str) -> list[str]:
    return [w.strip() for w in SCENARIOS[name].meta.get("teaches", "").split(",") if w.strip()]


def test_the_curriculum_lists_every_walkthrough_once() -> None:
    assert len(CURRICULUM) == len(set(CURRICULUM))
    assert sorted(CURRICULUM) == sorted(path.stem for path in BUILTIN_DIR.glob("*.toml"))
    assert builtin_names() == CURRICULUM
    assert CURRICULUM[0] == "onboarding"


@pytest.mark.parametrize("name", CURRICULUM)
def test_a_walkthrough_says_what_you_will_learn_and_what_it_teaches(name: str) -> None:
    meta = SCENARIOS[name].meta
    assert isinstance(meta.get("learn"), str) and meta["learn"].strip() and "\n" not in meta["learn"]
    unknown = [word for word in teaches(name) if word not in BY_WORD]
    assert unknown == [], f"meta.teaches names terms the glossary lacks: {unknown}"


def test_every_glossary_term_is_taught_exactly_once() -> None:
    taught = [word for name in CURRICULUM for word in teaches(name)]
    assert sorted(taught) == sorted(set(taught)), "a term is taught by two walkthroughs"
    assert sorted(set(taught)) == sorted(BY_WORD), "terms the glossary has that no walkthrough teaches (or vice versa)"


@pytest.mark.parametrize("name", CURRICULUM)
def test_every_term_a_walkthrough_uses_is_in_the_glossary(name: str) -> None:
    missing = sorted({(word, where) for where, text in texts(SCENARIOS[name])
                      for word, start in find_tracked(text) if not defined_at(text, start)})
    assert missing == [], f"terms used but not in the glossary: {missing}"


@pytest.mark.parametrize("position", range(len(CURRICULUM)), ids=CURRICULUM)
def test_no_term_is_used_before_it_is_taught(position: int) -> None:
    name = CURRICULUM[position]
    known = {word for earlier in CURRICULUM[: position + 1] for word in teaches(earlier)}
    early = sorted({(term.word, where) for where, text in texts(SCENARIOS[name])
                    for term in GLOSSARY if term.word not in known and term.first_use(text) is not None})
    assert early == [], f"terms used before the walkthrough that teaches them: {early}"


#: Markdown bold: ``**`` touching a word on its inner side (``2 ** 3`` is not bold).
BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", re.DOTALL)


@pytest.mark.parametrize("name", CURRICULUM)
def test_a_walkthrough_introduces_what_it_teaches_in_bold(name: str) -> None:
    """The first time the teaching walkthrough names a term (after its title), the term is in bold."""
    unintroduced = []
    for word in teaches(name):
        term = BY_WORD[word]
        for where, text in texts(SCENARIOS[name])[1:]:
            start = term.first_use(text)
            if start is None:
                continue
            spans = [(m.start(), m.end()) for m in BOLD.finditer(plain(text))]
            if not any(a <= start < b for a, b in spans):
                unintroduced.append((word, where))
            break
        else:
            unintroduced.append((word, "never used"))
    assert unintroduced == [], f"terms first used without being introduced in bold: {unintroduced}"


@pytest.mark.parametrize("name", CURRICULUM)
def test_a_walkthrough_asks_a_few_questions_each_checked_by_replay(name: str) -> None:
    steps = SCENARIOS[name].steps
    asked = [n for n, step in enumerate(steps, 1) if step.question is not None]
    assert len(asked) >= 2, "a walkthrough asks at least two questions at its turning points"
    unchecked = [n for n in asked if steps[n - 1].expect is None and steps[n - 1].expect_state is None]
    assert unchecked == [], f"questions whose answer replay does not check (no expect): {unchecked}"


def test_the_checks_catch_what_they_are_for() -> None:
    """The term checks above are not vacuous: they see a design-document word, an undefined
    identifier, a term from a later lesson, and the difference between a code span and a part of one."""
    said = "As the first seed says, `dispatch` may return none; idempotency keys help; fencing tokens too."
    found = {word: defined_at(said, start) for word, start in find_tracked(said)}
    assert found["seed"] is False and found["dispatch"] is True and found["idempotency"] is True
    assert defined_at("a warp_drive", 2) is False
    first = set(teaches(CURRICULUM[0]))
    assert "heartbeat" not in first and BY_WORD["heartbeat"].first_use("a heartbeat every second") == 2
    assert BY_WORD["lease"].first_use("`lease_expired`") is None  # a reason code is not the word lease
    assert BY_WORD["fencing"].first_use("a fencing token") is None  # the token is its own term
    assert BOLD.search("2 ** (attempts - 1) and **attempt**").group(1) == "attempt"
