"""What the peers tests need, found or skipped visibly.

The real queues are the ``peers`` extra (``pip install 'fencepost[peers]'``,
which ``.ci/run`` installs). Without a queue's package its tests skip, saying
which package and how to install it (``pytest -ra`` prints the reason); an
import error in fencepost's own code is never a skip: the adapters import
their queue only when a factory is called, so ``fencepost.impl.peers.*``
always imports. pgqueuer also needs the PostgreSQL server named by
``FENCEPOST_PG_DSN``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

import pytest

#: The shipped findings.
SCENARIOS = Path(__file__).parent / "scenarios"
HISTORIES = Path(__file__).parent / "histories"

#: The packages each adapter module drives.
PACKAGES = {
    "sqs": ("moto", "boto3"),
    "litequeue": ("litequeue",),
    "pgqueuer": ("pgqueuer", "psycopg"),
}
#: Seconds to wait for the PostgreSQL server before deciding it is not there.
CONNECT_TIMEOUT = 3


def adapter_of(impl: str) -> str:
    """``fencepost.impl.peers.sqs:standard`` -> ``sqs``."""
    return impl.partition(":")[0].rsplit(".", 1)[-1]


def require(adapter: str) -> None:
    """Skip the calling test unless ``adapter``'s queue (and for pgqueuer its server) is there."""
    for package in PACKAGES[adapter]:
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed: pip install 'fencepost[peers]'")
    if adapter == "pgqueuer":
        problem = _server_problem()
        if problem:
            pytest.skip(problem)


@functools.cache
def _server_problem() -> str:
    dsn = os.environ.get("FENCEPOST_PG_DSN")
    if not dsn:
        return "FENCEPOST_PG_DSN is not set: no PostgreSQL server for pgqueuer"
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"no PostgreSQL server answers at FENCEPOST_PG_DSN: {type(exc).__name__}"
    return ""
