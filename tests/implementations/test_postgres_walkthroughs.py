"""Every built-in walkthrough true on PostgresScheduler, the shipped scheduler that needs a server.

``fencepost.story.shipped.ON_A_SERVER`` names it with what it offers. Each
walkthrough whose needs it offers is replayed on it, and every step's
``expect`` must hold, as ``tests/spec/test_needs.py`` holds them on the
in-process schedulers of ``SHIPPED``. Skipped, with the reason, when no
server is named by ``FENCEPOST_PG_DSN``.
"""

from __future__ import annotations

import pytest

import pg_server as pg
from fencepost.story.shipped import ON_A_SERVER
from fencepost.spec.arguments import load_factory
from fencepost.spec.checkers.capabilities import detect
from fencepost.spec.checkers.replay import replay
from fencepost.spec.formats.scenario import load_scenario, needs_of
from fencepost.spec.protocol import BATCH_OPERATIONS, RESTART
from fencepost.story.walkthroughs import builtin_names, resolve

WALKTHROUGHS = {name: load_scenario(resolve(name)) for name in builtin_names()}


@pytest.fixture
def dsn() -> str:
    return pg.require_server()


def on_a_server_cases() -> list:
    """(walkthrough, scheduler) for every server scheduler that offers all the walkthrough needs."""
    return [pytest.param(name, shipped.name, id=f"{name}-{shipped.name}")
            for name, scenario in WALKTHROUGHS.items()
            for shipped in ON_A_SERVER if set(needs_of(scenario)) <= shipped.offers]


def test_every_walkthrough_has_a_server_scheduler_to_run_on() -> None:
    assert {case.values[0] for case in on_a_server_cases()} == set(WALKTHROUGHS)


@pytest.mark.parametrize("shipped", ON_A_SERVER, ids=lambda s: s.name)
def test_what_the_table_says_a_server_scheduler_offers_is_what_it_offers(shipped, dsn: str) -> None:
    factory = load_factory(shipped.name)
    assert detect(factory).restart == (RESTART in shipped.offers)
    sample = factory()
    try:
        assert callable(getattr(sample, "prune", None)) == ("prune" in shipped.offers)
        assert all(callable(getattr(sample, op, None)) for op in BATCH_OPERATIONS) == ("batch" in shipped.offers)
    finally:
        sample.close()


@pytest.mark.parametrize(("name", "impl"), on_a_server_cases())
def test_every_expect_holds_on_every_server_scheduler_that_offers_what_the_walkthrough_needs(
        name: str, impl: str, dsn: str) -> None:
    scheduler = load_factory(impl)()
    replayed = replay(WALKTHROUGHS[name], scheduler)
    # close every scheduler the replay used (a restart step's value is the reopened one)
    for opened in [scheduler] + [r.result.value for r in replayed if r.step.op == RESTART]:
        opened.close()
    assert [(r.number, r.mismatch) for r in replayed if r.mismatch] == []
    assert len(replayed) == len(WALKTHROUGHS[name].steps)
