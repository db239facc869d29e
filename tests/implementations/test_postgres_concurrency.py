"""The fence under real concurrency: clients on their own connections racing on one task.

Each race starts its calls together behind a barrier, every call from its own
thread and its own connection (a separate ``PostgresScheduler`` over the same
schema, as separate processes would have). The same races run against the
two broken schedulers of ``impl/postgres/broken.py`` and must catch them, so
the tests are shown to be able to fail. Every wait is bounded in real
seconds (``pg_races.BOUND``); nothing sleeps.
"""

from __future__ import annotations

import pytest

import pg_server
from fencepost.impl.postgres.scheduler import temporary
from fencepost.impl.postgres.broken import StatusFencedScheduler, UnlockedClaimScheduler, status_fenced, unlocked_claim
from pg_races import ROUNDS, claim_race, forced_claim_race, forced_zombie_race, zombie_race


@pytest.fixture(autouse=True)
def _server() -> None:
    pg_server.require_server()


def test_a_zombie_and_the_current_holder_never_both_finish_a_task() -> None:
    s = temporary()
    assert zombie_race(s) == []
    s.close()


def test_racing_claims_never_lease_one_task_twice() -> None:
    s = temporary()
    assert claim_race(s) == []
    s.close()


def test_the_zombie_race_catches_a_completion_fenced_by_status() -> None:
    s = status_fenced()
    assert isinstance(s, StatusFencedScheduler)
    problems = forced_zombie_race(s)
    s.close()
    zombies = [p for p in problems if "zombie" in p]
    assert len(zombies) == ROUNDS, problems  # every round, now that the interleaving is forced


def test_the_claim_race_catches_a_claim_without_a_lock() -> None:
    s = unlocked_claim()
    assert isinstance(s, UnlockedClaimScheduler)
    problems = forced_claim_race(s)
    s.close()
    assert any("leased twice" in p for p in problems), problems
