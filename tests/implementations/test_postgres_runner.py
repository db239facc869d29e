"""The runner, unchanged, over PostgreSQL: four processes, each a Runner on its own schema of one database.

``pg_runner_stress.run_runners`` runs the workload its docstring describes
(returns, raises with retries, stalls past the lease, children, cancels) in 4
processes with 3 worker threads each. Afterwards, for every runner, from its
recorded history alone and against the database: tokens are unique, no task
has two accepted completions, no two leases of one task overlap, every task's
end state is explained by its history (the same checks as the shared-schema
stress test), every task ended, a stall's late completion was refused, and
the history is linearizable. Skipped, saying why, without a server.
"""

from __future__ import annotations

import pytest

import pg_server
from fencepost.impl.postgres import PostgresScheduler, drop_schema, temporary_schema_name
from fencepost.spec.protocol import FINAL_STATUSES
from test_postgres_stress import check_history_properties, pair_calls

pytest.importorskip("fencepost.impl.runner", reason="the runner is not in this tree yet")
from pg_runner_stress import run_runners  # noqa: E402  (needs the runner)

#: Runner processes, and tasks each submits (parents submit more).
PROCESSES = 4
TASKS = 400


@pytest.fixture(scope="module")
def runs():
    dsn = pg_server.require_server()
    schemas = [temporary_schema_name(f"fp_runner{i}") for i in range(PROCESSES)]
    try:
        results = run_runners(dsn, schemas, TASKS, seed=3)
        for result in results:
            with PostgresScheduler(dsn, schema=result["schema"]) as s:
                result["final"] = s.snapshot()
    finally:
        for schema in schemas:
            drop_schema(dsn, schema)
    return results


def test_every_runners_history_keeps_the_contract(runs) -> None:
    assert len(runs) == PROCESSES
    for result in runs:
        now, views = result["final"]
        assert len(views) == result["submitted"] > TASKS  # children were submitted too
        assert all(v.status in FINAL_STATUSES for v in views)
        check_history_properties(result["events"], result["final"])


def test_the_workload_did_what_it_says(runs) -> None:
    for result in runs:
        calls = pair_calls(result["events"])
        refused = [c for c in calls if c["op"] == "complete" and not c["error"] and not c["result"]["accepted"]]
        fails = [c for c in calls if c["op"] == "fail" and not c["error"] and c["result"]["accepted"]]
        cancels = [c for c in calls if c["op"] == "cancel" and not c["error"] and c["result"]["accepted"]]
        assert refused and fails and cancels, (len(refused), len(fails), len(cancels))


def test_every_runners_history_is_linearizable(runs, tmp_path) -> None:
    histories = pytest.importorskip("fencepost.spec.formats.history", reason="the history format is not in this tree yet")
    linearize = pytest.importorskip("fencepost.spec.checkers.linearize", reason="fencepost linearize is not in this tree yet")
    import json

    for result in runs:
        path = tmp_path / f"runner{result['index']}.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in result["events"]))
        history = histories.load_history(path)
        verdict = linearize.check_history(history)
        assert verdict.linearizable is True, linearize.report(history, verdict)
