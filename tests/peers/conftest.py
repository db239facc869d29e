"""The peers tests leave nothing behind on the PostgreSQL server: pgqueuer's and procrastinate's schemas go at the end."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _drop_pgqueuer_schema_at_the_end():
    yield
    from fencepost.impl.peers import pgqueuer

    if pgqueuer.installed_here():
        pgqueuer.uninstall()
    from fencepost.impl.peers import procrastinate

    if procrastinate.installed_here():
        procrastinate.uninstall()
