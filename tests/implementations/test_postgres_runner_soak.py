"""One short run of the traced runner soak under backend SIGKILLs (``pg_runner_soak.py``; issue 34).

The soak itself (20 runs) is a script: ``python tests/implementations/pg_runner_soak.py 20``.
Skipped, saying why, without the server binaries.
"""

from __future__ import annotations

import pytest

from fencepost.impl.faults.cluster import Cluster, unavailable
from pg_runner_soak import double_starts, soak_run


def test_a_traced_runner_under_backend_kills_never_starts_an_attempt_before_the_last_one_ended() -> None:
    why = unavailable()
    if why is not None:
        pytest.skip(why)
    with Cluster.create() as cluster:
        seen = soak_run(cluster, "soak", seed=34, tasks=12, kills=2)
    assert seen["problems"] == [], "\n".join(seen["table"])
    assert seen["kills"] == 2 and seen["started"] >= 12


def _call(process: str, op: str, args: dict, result: object, at: int) -> list[dict]:
    return [{"process": process, "type": "invoke", "op": op, "args": args, "time": at},
            {"process": process, "type": "ok", "result": result, "time": at + 1}]


def test_the_soak_names_an_attempt_started_before_the_last_lease_ended_and_one_on_no_lease() -> None:
    """The check itself, on a history with the issue's double start: token 2's lease began at 4 ms, token 1's ran to 3,000."""
    lease = {"task_id": 1, "worker": "w1"}
    events = (_call("r", "submit", {}, 1, 0)
              + _call("r", "dispatch", {"worker": "w1", "now": 0, "duration": 3_000},
                      dict(lease, token=1, started_at=0, expires_at=3_000), 10)
              + _call("r", "renew", {"task_id": 1, "token": 1, "now": 28, "duration": 3_000},
                      {"accepted": False, "reason": "stale_token"}, 20)
              + _call("r", "dispatch", {"worker": "w1", "now": 4, "duration": 3_000},
                      dict(lease, token=2, started_at=4, expires_at=3_004), 30))
    started = [(1, 1, 1), (1, 2, 2), (1, 3, 9)]
    assert double_starts(events, started) == [
        "task 1 attempt 3 started on token 9, which no acknowledged dispatch gave",
        "task 1: the lease of token 2 began at 4 ms, before token 1's ended at 3000 ms",
    ]
    assert double_starts(events, started[:1]) == []
