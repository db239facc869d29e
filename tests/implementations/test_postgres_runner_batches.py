"""Shared runners over PostgreSQL with their default batches: four processes on ONE schema, as in production.

The workload of ``test_postgres_runner.py`` (``pg_runner_stress``) with the
scheduler offering the batch operations, so each runner takes its default
``batch`` (its three slots, on PostgreSQL) and is one worker ``rN-pool3``:
its claims are ``dispatch_many`` for every free slot, and reports that queue
while another slot holds the lock go out as one ``complete_many`` or
``fail_many``. The same properties are checked (on the history with each batch
as its single calls, ``unbatched``), and the whole history, each batch one
step, is linearizable. Skipped, saying why, without a server.
"""

from __future__ import annotations

import pytest

import pg_server
from fencepost.spec.protocol import FINAL_STATUSES
from pg_runner_stress import WORKERS, assert_linearizable, run_and_look, unbatched
from pg_stress import check_history_properties, pair_calls

#: Runner processes, and tasks each submits (parents submit more): half the single-call run's.
PROCESSES = 4
TASKS = 240


@pytest.fixture(scope="module")
def run():
    return run_and_look(pg_server.require_server(), "fp_batched_runners", PROCESSES, TASKS, seed=5, batches=True)


def test_every_task_ended_and_the_history_keeps_the_contract(run) -> None:
    results, events, final, orphans = run
    now, views = final
    assert len(views) == sum(r["submitted"] for r in results) > PROCESSES * TASKS
    assert all(v.status in FINAL_STATUSES for v in views)
    check_history_properties(unbatched(events), final)
    assert orphans == 0


def test_each_runner_is_one_worker_whose_claims_and_reports_went_in_batches(run) -> None:
    calls = pair_calls(run[1])
    workers = {(c["args"]["worker"], c["args"]["capacity"]) for c in calls if c["op"] == "add_worker" and not c["error"]}
    assert workers == {(f"r{i}-pool{WORKERS}", WORKERS) for i in range(PROCESSES)}
    ok = [c for c in calls if not c["error"] and c["result"] is not None]
    claims = [len(c["result"]) for c in ok if c["op"] == "dispatch_many"]
    reports = [len(c["result"]) for c in ok if c["op"] in ("complete_many", "fail_many")]
    assert claims and max(claims) == WORKERS  # a claim took a lease for every slot
    assert reports and max(reports) > 1  # reports that queued together went in one call
    assert all(c["args"]["limit"] <= WORKERS for c in calls if c["op"] == "dispatch_many")
    assert all(c["args"]["worker"].endswith(f"-pool{WORKERS}") for c in calls if c["op"] == "dispatch")
    late = [o for c in ok if c["op"] == "complete_many" for o in c["result"] if not o["accepted"]]
    alone = [c for c in ok if c["op"] == "complete" and not c["result"]["accepted"]]
    assert late or alone  # stalls' late completions were refused, alone or inside a batch


def test_the_whole_history_is_linearizable(run, tmp_path) -> None:
    assert_linearizable(run[1], tmp_path)
