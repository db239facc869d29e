"""Redis Streams consumer groups on the Redis server's own clock: the pinned verdicts of ``fencepost check --clock real``.

``:group`` (XACK takes only the entry's id, XCLAIM ... 0 claims whoever holds
it) must be found with a zombie's report accepted; ``:fenced`` (the same with
one Lua script checking owner, delivery count and idle time) must conform.
Both verdicts hold whatever the timing: the zombie's stale token is accepted
while the new holder's lease is surely live, and the judge allows every
outcome the measured timing allows.
"""

from __future__ import annotations

import re

import pytest

from fencepost.cli import main
from tests.peers.peers_env import require


@pytest.fixture(autouse=True)
def _redis() -> None:
    require("redis_streams")


def test_group_is_found_with_a_zombies_stale_report_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["check", "fencepost.impl.peers.redis_streams:group", "--clock", "real"])
    out = capsys.readouterr().out
    assert status == 1, out
    diverging = [line for line in out.splitlines() if "<-- diverges" in line]
    assert len(diverging) == 1, out
    step = diverging[0]
    assert re.search(r"\b(complete|renew|complete_many)\(", step), step
    assert "expected: rejected (stale_token)" in step or "expected: rejected (not_running)" in step, step
    assert "got: accepted" in step, step
    assert "real clock: tick 50 ms" in out and "inconclusive" in out


def test_fenced_conforms(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["check", "fencepost.impl.peers.redis_streams:fenced", "--clock", "real"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "conforms to the fencepost spec" in out
    assert re.search(r"lateness median [\d.]+ ms, p99 [\d.]+ ms, max [\d.]+ ms", out)


def test_the_adapters_refuse_logical_time() -> None:
    assert main(["check", "fencepost.impl.peers.redis_streams:fenced", "--clock", "logical"]) == 2


@pytest.mark.parametrize("factory, verdict", [("group", 1), ("fenced", 0)])
def test_the_zombie_race_on_the_real_clock_is_judged_the_same_every_time(tmp_path, factory: str, verdict: int,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The pinned recorder command: the zombie's stale completion lands while the new holder holds the lease, every round."""
    import subprocess
    import sys

    out = tmp_path / "zombie.jsonl"
    recorded = subprocess.run(
        [sys.executable, "-m", "fencepost.impl.peers.record", f"fencepost.impl.peers.redis_streams:{factory}", "zombie",
         str(out), "--rounds", "3"], capture_output=True, text=True, timeout=120)
    assert recorded.returncode == 0, recorded.stderr
    assert ("saw 3 problem(s)" if verdict else "saw 0 problem(s)") in recorded.stdout, recorded.stdout
    assert main(["linearize", str(out)]) == verdict, capsys.readouterr().out
