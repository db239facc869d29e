"""``fencepost crash`` over PostgreSQL: a client killed at random moments loses no returned call.

The crash checker (``spec/checkers/crash.py``) kills a child making calls
through ``impl.postgres:opener`` with SIGKILL and reopens its schema from the
parent: the state must be the model's after exactly the calls that returned,
or those plus the call in flight (the server may finish a call whose client
is already dead). Skipped, saying why, without a server.
"""

from __future__ import annotations

import pg_server
from fencepost.impl.postgres.scheduler import opener
from fencepost.spec.checkers.crash import crash_test

#: Kills per run: each costs a child process and a fresh schema (about 2 s here).
KILLS = 8


def test_a_killed_client_never_loses_a_returned_call_nor_half_applies_one() -> None:
    pg_server.require_server()
    report = crash_test(opener, kills=KILLS, seed=7)
    assert report.failure is None, report.failure
    assert report.kills == KILLS and report.acknowledged > 0
    assert report.exact + report.in_flight_applied == KILLS
