"""Concurrent histories of the real queues, from real threads, judged by ``fencepost linearize``.

Two kinds:

* shipped histories (``tests/peers/histories/``): the round in which a race
  went wrong, cut out of a longer recording with ``impl.peers.record``'s
  ``--excerpt`` (the command is in each test's docstring and in
  docs/findings.md); ``fencepost linearize`` must reject each, pointing at the
  call that breaks it;
* live recordings made here from four threads: pgqueuer's claims, which its
  row locks make safe, must be linearizable under its variants; its zombie
  completion (the same job id at every pick) must not be.

Each history carries its queue's variants in its header, so ``fencepost
linearize FILE`` needs no flags.
"""

from __future__ import annotations

import pytest

from fencepost.cli import main
from peers_env import HISTORIES, require

#: Shipped history -> what ``fencepost linearize`` must say of the call no order explains.
#: Each was cut from a recording made with (PATH the file; the race stops at its first problem):
#: ``python -m fencepost.impl.peers.record FACTORY RACE PATH --rounds 600 --switch-interval 1e-5 --excerpt``
SHIPPED = {
    # sqs:fifo claim (S8): two receivers get task 2 at once
    "sqs_fifo_claim_duplicate_receive.jsonl": ("dispatch(", "task 2 is running under"),
    # sqs:standard claim (S6): two receivers get task 2 at once, with the same receipt handle
    "sqs_standard_claim_duplicate_receive.jsonl": ("dispatch(", "task 2 is running under"),
    # sqs:standard delete (S7): a deleted message comes back
    "sqs_standard_delete_race_resurrects.jsonl": ("dispatch(", "task 1 is final"),
    # pgqueuer:queue capacity (P4), without the switch interval: one worker of capacity 1 gets 4 jobs
    "pgqueuer_capacity_race.jsonl": ("dispatch(", "w1 is full (1 of 1)"),
    # litequeue:queue_file claim --shared (L4): a pop raises OperationalError
    "litequeue_shared_instance_raises.jsonl": ("dispatch(", "raised OperationalError"),
    # redis_streams:group zombie, on the real clock (``--rounds 3 --excerpt``, no switch interval): the
    # expired holder's XACK of an entry another consumer claimed is accepted (docs/real-clock.md)
    "redis_streams_group_zombie.jsonl": ("complete(", "rejected (stale_token)"),
    # celery_redis:queue zombie, on the real clock (``--rounds 3 --threads 2 --excerpt``; tests/peers/test_celery_redis.py):
    # the redelivery after the visibility timeout carries the first delivery's tag (docs/findings.md, K1)
    "celery_redis_queue_zombie.jsonl": ("dispatch(worker='w2'", "lease task 1 to w2"),
}


def failing_line(out: str) -> str:
    """The line ``fencepost linearize`` marks as the call no order explains."""
    marked = [line for line in out.splitlines() if "no order explains" in line]
    assert marked, out
    return marked[0]


def test_every_shipped_history_is_checked() -> None:
    assert sorted(p.name for p in HISTORIES.glob("*.jsonl")) == sorted(SHIPPED)


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_linearize_rejects_the_shipped_history_and_says_why(name, capsys) -> None:
    """No queue needed: the history is the queue's recorded behaviour, judged under its header's variants."""
    op, why = SHIPPED[name]
    status = main(["linearize", str(HISTORIES / name)])
    out = capsys.readouterr().out
    assert status == 1, out
    assert "NOT linearizable" in out and "under order=" in out.splitlines()[0], out
    assert op in failing_line(out), out
    assert why in out, out


def record_and_linearize(factory: str, race: str, rounds: int, tmp_path, capsys) -> tuple[int, str, object]:
    from fencepost.commands.record import main as record

    path = tmp_path / f"{race}.jsonl"
    assert record([factory, race, str(path), "--rounds", str(rounds)]) == 0
    capsys.readouterr()
    status = main(["linearize", str(path)])
    return status, capsys.readouterr().out, path


def test_pgqueuers_claim_race_is_linearizable_under_its_variants(tmp_path, capsys) -> None:
    require("pgqueuer")
    status, out, _ = record_and_linearize("fencepost.impl.peers.pgqueuer:queue", "claim", 10, tmp_path, capsys)
    assert status == 0, out


def test_pgqueuers_zombie_race_is_not_and_the_report_names_the_reused_job_id(tmp_path, capsys) -> None:
    require("pgqueuer")
    status, out, _ = record_and_linearize("fencepost.impl.peers.pgqueuer:queue", "zombie", 3, tmp_path, capsys)
    assert status == 1, out
    assert "dispatch(" in failing_line(out), out  # the second pick of one job carries its id again
    assert "was issued before (for task 1)" in out, out


def test_an_sqs_claim_history_is_linearizable_exactly_when_the_race_saw_nothing_wrong(tmp_path, capsys) -> None:
    """Both directions, on whatever moto does this time: a clean recording passes, a broken one fails.

    Without the short switch interval moto's receive races rarely show, so
    this is mostly the positive control (moto's claims, when they do not
    collide, are judged linearizable under the queue's declared variants);
    when a round does go wrong, the checker must say so.
    """
    require("sqs")
    from fencepost.impl.peers import sqs
    from fencepost.impl.peers.record import record

    recording = record(sqs.fifo, "claim", rounds=20, threads=4)
    recording.log.write(tmp_path / "claim.jsonl")
    status = main(["linearize", str(tmp_path / "claim.jsonl")])
    out = capsys.readouterr().out
    assert status == (1 if recording.problems else 0), (recording.problems, out)
