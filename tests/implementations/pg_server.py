"""Finding the PostgreSQL server the PostgreSQL tests use, or skipping them visibly.

The server is named by ``FENCEPOST_PG_DSN`` (``.ci/run`` sets it). Without the
variable, without psycopg, or with no server answering, every test that asks
for it is skipped with the reason (``pytest -ra`` prints it), never failed and
never silently passed.
"""

from __future__ import annotations

import functools
import os
import threading

import pytest

#: Seconds to wait for the server before deciding it is not there.
CONNECT_TIMEOUT = 3

#: ``call_timeout`` for a conformance check whose every call is a round trip to the server. The
#: default 5 s is for finding hangs; at load 10 to 16 on 2 cores (two CI runs and a full suite beside
#: each other, 2026-12-06) one reopen and one call took longer than that, a slow answer reported as
#: a hang. A hang still ends the check within this bound.
SERVER_CALL_TIMEOUT = 60.0


@functools.cache
def _server() -> tuple[str | None, str]:
    """(dsn, "") when a server answers, else (None, why not). Asked once per test session."""
    dsn = os.environ.get("FENCEPOST_PG_DSN")
    if not dsn:
        return None, "FENCEPOST_PG_DSN is not set: no PostgreSQL server to test against"
    try:
        import psycopg
    except ImportError:
        return None, "psycopg is not installed (pip install 'fencepost[postgres]')"
    try:
        with psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        from fencepost.impl.postgres.scheduler import connect_failure

        return None, connect_failure("FENCEPOST_PG_DSN", dsn, exc)
    return dsn, ""


def require_server() -> str:
    """The DSN of a live server, or skip the calling test saying why."""
    dsn, why = _server()
    if dsn is None:
        pytest.skip(why)
    return dsn


def in_thread(fn):
    """Run ``fn`` in a new thread; returns (the thread, a list that gets ``fn``'s result or exception).

    The caller joins the thread, bounded, so a call that hangs fails the test instead of hanging it.
    """
    result: list = []

    def run() -> None:
        try:
            result.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            result.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result
