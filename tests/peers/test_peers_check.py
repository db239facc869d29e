"""``fencepost check`` on each real queue under its declared variants: the verdict, reproducibly.

Derandomized (the ``ci`` profile) with a small budget per queue, so CI pays
seconds, not minutes. Each queue breaks the core or a declared rule within
that budget, and the shrunk counterexample ends in the call docs/findings.md
reports (its written-up form is the scenario tests/peers/test_peers_scenarios.py
replays): SQS and pgqueuer accept a renew of a lease that already ended
(findings S3, P5), litequeue hands out a token issued before (L1), procrastinate
finishes a job under its new holder (PR1).
"""

from __future__ import annotations

import pytest

from fencepost.cli import main
from peers_env import BUDGETS, SERVER_CALL_TIMEOUT, adapter_of, require

#: Runs per check: enough for each queue's first finding, few enough for CI.
EXAMPLES = "25"

#: Each factory, and the call its shrunk counterexample diverges at (op, what the queue answered).
VERDICTS = {
    "fencepost.impl.peers.sqs:standard": ("renew(", "got: accepted"),
    "fencepost.impl.peers.sqs:fifo": ("renew(", "got: accepted"),
    "fencepost.impl.peers.litequeue:queue": ("dispatch(", "was issued before"),
    "fencepost.impl.peers.pgqueuer:queue": ("renew(", "got: accepted"),
    "fencepost.impl.peers.procrastinate:queue": ("complete(", "expected: rejected (stale_token); got: accepted"),
}


@pytest.mark.parametrize("impl", sorted(VERDICTS), ids=lambda i: i.rsplit(".", 1)[-1])
def test_check_rejects_the_queue_under_its_declared_variants(impl, capsys) -> None:
    require(adapter_of(impl))
    # --jobs 1: the verdict is the same for any number of jobs (tests/commands/test_check_jobs.py), and a shard
    # forked from this test process would inherit its queues' server sessions and threads.
    status = main(["check", impl, "--max-examples", BUDGETS.get(impl, EXAMPLES), "--jobs", "1",
                   "--call-timeout", SERVER_CALL_TIMEOUT])
    out = capsys.readouterr().out
    assert status == 1, out
    assert f"{impl} does NOT conform" in out, out
    assert "declared variants in force:" in out, out
    diverges = [line for line in out.splitlines() if "<-- diverges" in line]
    op, answer = VERDICTS[impl]
    assert len(diverges) == 1 and op in diverges[0], out
    assert answer in out, out
