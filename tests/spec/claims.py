"""The curriculum's claims and the machinery that runs a check on every reference scheduler.

A *claim* is one sentence of the curriculum that states behaviour, named by an
id a lesson's author can read beside it:

* ``rule-NAME``: the row NAME of the rule table in ``docs/curriculum.md`` (the
  row's first column is its id);
* ``term-WORD``: the glossary entry WORD (``story/glossary.py``), spaces and
  underscores written ``-``: ``term-stale-token``, ``term-half-open-interval``;
* a walkthrough's ``meta.claims`` names the claims its steps state (see
  ``test_claims.py``).

``test_claims.py`` holds the table of checks: each check is a short function
over a fresh scheduler, registered with ``@check("rule-x", "term-y")`` for
the claims it runs. Each runs on the model and on the three reference
schedulers (``simple``, ``indexed``, ``durable``) unless it names fewer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fencepost.impl.durable import temporary
from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec import model
from fencepost.story.glossary import GLOSSARY
from schedulers import ModelScheduler

TABLE = Path(__file__).resolve().parents[2] / "docs" / "curriculum.md"

#: A row of the rule table: | rule | what it says | `lesson` | term |
ROW = re.compile(r"^\| (?P<rule>[a-z-]+) \| (?P<says>.+) \| `(?P<lesson>[a-z-]+)` \| (?P<term>[^|]+?) \|$")


def term_claim(word: str) -> str:
    """The claim id of glossary entry ``word``: ``term-`` and the word, spaces and underscores as ``-``."""
    return "term-" + re.sub(r"[ _]+", "-", word.lower())


def rule_claims() -> dict[str, str]:
    """``rule-NAME`` -> what the row says, for every row of the rule table."""
    lines = TABLE.read_text(encoding="utf-8").splitlines()
    return {f"rule-{m['rule']}": m["says"] for line in lines if (m := ROW.match(line))}


def glossary_claims() -> dict[str, str]:
    """``term-WORD`` -> the entry's meaning, for every glossary entry."""
    return {term_claim(term.word): term.meaning for term in GLOSSARY}


def all_claims() -> dict[str, str]:
    return {**rule_claims(), **glossary_claims()}


class Model(ModelScheduler):
    """The pure model in the protocol's method form, with ``prune`` and a ``reopen`` that changes nothing."""

    def prune(self, before, now):
        return self._do("prune", before=before, now=now)

    def reopen(self):
        self.state, _ = model.apply(self.state, "restart", {})
        return self


#: The schedulers every check runs on unless it names fewer: the model and the three references.
SCHEDULERS: dict[str, Callable[[], object]] = {
    "model": Model,
    "simple": SimpleScheduler,
    "indexed": IndexedScheduler,
    "durable": temporary,
}
#: The schedulers that keep their state across a restart (``reopen()``).
RESTARTABLE = ("model", "durable")


@dataclass(frozen=True)
class Check:
    """One executable check: ``run(scheduler)`` raises AssertionError when a claim it names is false."""

    claims: tuple[str, ...]
    run: Callable[[object], None]
    on: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.run.__name__


CHECKS: list[Check] = []


def check(*claims: str, on: tuple[str, ...] = tuple(SCHEDULERS)) -> Callable:
    """Register the decorated function as the check of ``claims``, run on the schedulers ``on``."""
    def register(run: Callable[[object], None]) -> Callable[[object], None]:
        CHECKS.append(Check(claims, run, on))
        return run
    return register


# ---------------------------------------------------------------- helpers a check reads with


def leased(s, *, capacity: int = 1, duration: int = 5, now: int = 0, **submit: object):
    """Worker ``w`` (``capacity``) and one task, leased to it at ``now``: (task_id, lease)."""
    s.add_worker("w", capacity)
    task_id = s.submit(**submit)
    lease = s.dispatch("w", now, duration)
    assert lease is not None and lease.task_id == task_id
    return task_id, lease


def seen(s, count: int) -> tuple:
    """Everything a caller can see of ``s``: its time and the views of tasks 1..count."""
    return (s.now, tuple(s.task(task_id) for task_id in range(1, count + 1)))


def raises(call: Callable[[], object], *words: str) -> str:
    """Run ``call``, which must raise ValueError whose message names every one of ``words``; the message."""
    try:
        call()
    except ValueError as exc:
        message = str(exc)
        assert all(word in message for word in words), (message, words)
        return message
    raise AssertionError(f"no ValueError; the message should have named {words}")


def refused(outcome, reason: str) -> bool:
    return outcome.accepted is False and outcome.reason == reason
