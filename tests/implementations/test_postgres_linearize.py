"""``fencepost linearize`` over histories recorded from PostgreSQL schedulers, real and broken.

The races of ``test_postgres_concurrency.py`` run again with every client
wrapped in the history recorder (``spec.formats.history``): the real
scheduler's histories are linearizable, and the checker rejects the histories
of both broken schedulers -- the completion fenced by status (a zombie's
completion accepted where the model refuses it) and the claim without a lock
(one task leased to several clients at once). Skipped, saying why, without a
server.
"""

from __future__ import annotations

import pytest

import pg_server
from fencepost.impl.postgres.scheduler import temporary
from fencepost.impl.postgres.broken import status_fenced, unlocked_claim
from fencepost.spec.checkers.linearize import check_history
from fencepost.spec.formats.history import HistoryLog, dumps_event, loads_history
from pg_races import claim_race, forced_claim_race, forced_zombie_race, zombie_race


@pytest.fixture(autouse=True)
def _server() -> None:
    pg_server.require_server()


def recorded(race, scheduler, tmp_path=None):
    """Run ``race`` with every client recorded; the checker's verdict on the history (and the history)."""
    log = HistoryLog()
    problems = race(scheduler, wrap=log.recorder)
    scheduler.close()
    text = "\n".join(dumps_event(e) for e in log.events) + "\n"
    history = loads_history(text, "race")
    if tmp_path is not None:
        (tmp_path / "history.jsonl").write_text(text)
    return check_history(history), problems, history


def test_the_real_schedulers_race_histories_are_linearizable() -> None:
    for race in (zombie_race, claim_race):
        verdict, problems, history = recorded(race, temporary())
        assert problems == []
        assert verdict.linearizable is True, (race.__name__, verdict.failure)
        assert len(history.calls) > 100


def test_linearize_rejects_a_completion_fenced_by_status() -> None:
    verdict, problems, _ = recorded(forced_zombie_race, status_fenced())
    assert any("zombie" in p for p in problems)  # the race saw it too
    assert verdict.linearizable is False
    assert verdict.failure is not None


def test_linearize_rejects_a_claim_without_a_lock(tmp_path) -> None:
    verdict, problems, history = recorded(forced_claim_race, unlocked_claim(), tmp_path)
    assert any("leased twice" in p for p in problems)
    assert verdict.linearizable is False
    failing = history.calls[verdict.failure.call]
    assert failing.op == "dispatch"  # the second lease of one task is what no order explains
    from fencepost.cli import main

    assert main(["linearize", str(tmp_path / "history.jsonl")]) == 1
