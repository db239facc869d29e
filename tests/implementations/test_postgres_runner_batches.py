"""Shared runners over PostgreSQL with their default batches: four processes on ONE schema, as in production.

The workload of ``test_postgres_runner.py`` (``pg_runner_stress``: returns,
raises with retries, stalls past the lease, children, cancels), but with the
scheduler offering the batch operations, so each runner takes its default
``batch`` (its three slots, on PostgreSQL) and is one worker ``rN-pool3``:
its claims are ``dispatch_many`` for every free slot and its reports go out
as ``complete_many``/``fail_many``. Afterwards, as there: tokens unique, at
most one accepted completion per task, no overlapping leases, every end state
explained (on the history with each batch as its single calls, ``unbatched``),
every task ended, and the whole history, batches as single steps, linearizable.
Skipped, saying why, without a server.
"""

from __future__ import annotations

import json

import pytest

import pg_server
from fencepost.impl.postgres import PostgresScheduler, drop_schema, temporary_schema_name
from fencepost.impl.postgres_payloads import PostgresPayloads
from fencepost.spec.protocol import FINAL_STATUSES
from pg_runner_stress import WORKERS, merged_events, run_runners, unbatched
from test_postgres_stress import check_history_properties, pair_calls

#: Runner processes, and tasks each submits (parents submit more): half the single-call run's.
PROCESSES = 4
TASKS = 240
#: Bound on the linearizability search; a run that needs more fails as undecided instead of hanging.
MAX_STATES = 2_000_000


@pytest.fixture(scope="module")
def run():
    dsn = pg_server.require_server()
    schema = temporary_schema_name("fp_batched_runners")
    try:
        results = run_runners(dsn, schema, PROCESSES, TASKS, seed=5, batches=True)
        with PostgresScheduler(dsn, schema=schema) as s:
            final = s.snapshot()
        with PostgresPayloads(dsn, schema=schema) as p:
            orphans = p.orphans()
    finally:
        drop_schema(dsn, schema)
    return results, merged_events(results), final, orphans


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
    assert reports and max(reports) > 1  # reports of slots that ended together went in one call
    assert not any(c["op"] == "dispatch" and c["args"]["worker"].endswith("-w1") for c in calls)  # no slot workers
    # every batch call asked for no more than the slots had room for
    assert all(c["args"]["limit"] <= WORKERS for c in calls if c["op"] == "dispatch_many")
    refused = [o for c in ok if c["op"] == "complete_many" for o in c["result"] if not o["accepted"]]
    singles = [c for c in ok if c["op"] == "complete" and not c["result"]["accepted"]]
    assert refused or singles  # stalls' late completions were refused, alone or inside a batch


def test_the_whole_history_is_linearizable(run, tmp_path) -> None:
    from fencepost.spec.checkers import linearize, linearize_command
    from fencepost.spec.formats import history as histories

    events = run[1]
    path = tmp_path / "runners.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    history = histories.load_history(path)
    verdict = linearize.check_history(history, max_states=MAX_STATES)
    assert verdict.linearizable is True, linearize_command.report(history, verdict)
    assert verdict.windows > 1
