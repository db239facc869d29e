"""Shared runners over PostgreSQL: four processes, each a Runner with three slots, all on ONE schema.

``pg_runner_stress.run_runners`` runs the workload its docstring describes
(returns, raises with retries, stalls past the lease, children submitted from
user work, cancels), every process submitting its own tasks and any process
running any of them, on one logical clock kept by the schema. Afterwards, from
the merged history of all processes and against the database: tokens are
unique, no task has two accepted completions, no two leases of one task
overlap, every task's end state is explained by its history, every task
ended, a stall's late completion was refused, tasks ran in processes other
than the one that submitted them, every payload belongs to a task, and the
whole history is linearizable (cut by the checker at its quiescent points).
Skipped, saying why, without a server.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

import pg_server
from fencepost.spec.protocol import FINAL_STATUSES
from pg_runner_stress import assert_linearizable, run_and_look
from pg_stress import check_history_properties, pair_calls

#: Runner processes, and tasks each submits (parents submit more): over 2,000 tasks in all.
PROCESSES = 4
TASKS = 480


@pytest.fixture(scope="module")
def run():
    return run_and_look(pg_server.require_server(), "fp_runners", PROCESSES, TASKS, seed=3)


def test_every_task_ended_and_the_history_keeps_the_contract(run) -> None:
    results, events, final, orphans = run
    now, views = final
    assert len(results) == PROCESSES
    assert len(views) == sum(r["submitted"] for r in results) >= 2_000
    assert len(views) > PROCESSES * TASKS  # children were submitted too
    assert all(v.status in FINAL_STATUSES for v in views)
    check_history_properties(events, final)
    assert orphans == 0  # every payload written belongs to a task


def test_the_workload_did_what_it_says(run) -> None:
    results, events, final, orphans = run
    calls = pair_calls(events)
    refused = [c for c in calls if c["op"] == "complete" and not c["error"] and not c["result"]["accepted"]]
    fails = [c for c in calls if c["op"] == "fail" and not c["error"] and c["result"]["accepted"]]
    cancels = [c for c in calls if c["op"] == "cancel" and not c["error"] and c["result"]["accepted"]]
    assert refused and fails and cancels, (len(refused), len(fails), len(cancels))
    submitted_by: dict[int, str] = {}
    for c in calls:
        if c["op"] == "submit" and not c["error"]:
            submitted_by[c["result"]] = c["process"]
    ran_elsewhere = {c["result"]["task_id"] for c in calls
                     if c["op"] == "dispatch" and not c["error"] and c["result"]
                     and submitted_by[c["result"]["task_id"]] != c["process"]}
    assert len(ran_elsewhere) > len(submitted_by) // 10  # the queue is shared, not partitioned
    slots = {c["args"]["worker"] for c in calls if c["op"] == "add_worker" and not c["error"]}
    assert slots == {f"r{i}-w{n}" for i in range(PROCESSES) for n in (1, 2, 3)}


def test_the_whole_history_is_linearizable(run, tmp_path) -> None:
    assert_linearizable(run[1], tmp_path)


def test_time_races_were_met_and_retried(run) -> None:
    """Processes race on one clock: timed calls refused as behind happen, and each is made again at a later time.

    A refused call changed nothing (the linearizability check holds it to
    that); the next call of the same runner (or clock) is the same call with
    a later ``now``.
    """
    calls = pair_calls(run[1])
    by_process = defaultdict(list)
    for c in calls:
        by_process[c["process"]].append(c)
    refused = 0
    for mine in by_process.values():
        for call, after in zip(mine, mine[1:]):
            if call["error"] and "now" in call["args"]:
                refused += 1
                assert after["op"] == call["op"] and after["args"]["now"] > call["args"]["now"], (call, after)
                assert {k: v for k, v in after["args"].items() if k != "now"} == {
                    k: v for k, v in call["args"].items() if k != "now"} or call["op"] == "advance", (call, after)
    assert refused > 0
