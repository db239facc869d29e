"""A traced runner under SIGKILLs of its server's backends: does an attempt ever start before the last one ended?

Issue 34 saw it once: task 1's attempts 1 and 2 started 4 ms apart while
attempt 1's 3 s lease had not expired, near a backend SIGKILL; later runs
never showed it again. This soak looks for it. Each run: one ``Runner``
(``trace=True``, 3 slots, a 3 s lease on a ``DatabaseClock`` of milliseconds)
over a ``PostgresScheduler`` on a private cluster, every protocol call
recorded (``pg_runner_stress.Recording``); ``TASKS`` tasks of real work (50 ms
to 1.5 s each, so many outlast a heartbeat), and ``KILLS`` times, once the work
has got that far, one client backend killed with SIGKILL -- every other kill
for certain in a call (the backend of a timed call waiting on the clock lock
the soak holds), the rest one in a call if any is --, which makes the
postmaster end every session and recover (``restart_after_crash``). Every
attempt's user work notes its token as it starts. Then, per run:

* every started attempt runs on a lease the history acknowledged (its token);
* per task, each started attempt's lease began at or after the previous
  acknowledged lease ended (its expiry, its last accepted renewal, or its
  accepted end): a lease that began earlier is the double start;
* the fault suite's checkers (``impl.faults.inject.judge``) hold on the history
  and the tasks' final views, and the runner's trace replays against the model.

``python tests/implementations/pg_runner_soak.py [RUNS] [SEED]`` runs the soak
(default 20 runs) and prints one line per run; the test suite makes one short
run (``test_postgres_runner_soak.py``).
"""

from __future__ import annotations

import functools
import logging
import os
import random
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg

from fencepost.impl.faults.cluster import Cluster
from fencepost.impl.faults.inject import judge, leases_by_task, pair, table
from fencepost.impl.postgres.scheduler import DatabaseClock, PostgresScheduler, lock_key
from fencepost.impl.postgres.sql import CLOCK_LOCK
from fencepost.impl.postgres.session import Reconnect
from fencepost.impl.runner.core import Runner
from pg_runner_stress import Recording
from runner_helpers import replay_mismatches

#: Real seconds any wait may take before the run fails instead of hanging.
BOUND = 120.0
#: Tasks per run, backends killed per run, the runner's slots, its lease in milliseconds.
TASKS, KILLS, WORKERS, LEASE_MS = 48, 6, 3, 3_000
#: Real seconds each task's work takes, uniform in this range: many outlast a heartbeat (every lease/3).
WORK_SECONDS = (0.05, 1.5)


class Starts:
    """The attempts whose user work has started: (task id, attempt, token), in order; waitable by count."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int, int]] = []
        self.changed = threading.Condition()

    def work(self, ctx, seconds: float) -> str:
        with self.changed:
            self.seen.append((ctx.task_id, ctx.attempt, ctx.token))
            self.changed.notify_all()
        time.sleep(seconds)  # the work itself
        return f"task {ctx.task_id} attempt {ctx.attempt}"

    def reached(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.seen) >= count, BOUND), f"{len(self.seen)} of {count} started"


def kill_a_backend(cluster: Cluster, rng: random.Random) -> int:
    """SIGKILL one client backend of ``cluster`` (not the one that finds it), one in a call if any is; its pid."""
    with psycopg.connect(cluster.dsn, autocommit=True, connect_timeout=10) as conn:
        rows = conn.execute("SELECT pid, state = 'active' FROM pg_stat_activity"
                            " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() ORDER BY pid").fetchall()
    pid = rng.choice([pid for pid, active in rows if active] or [pid for pid, _ in rows])
    os.kill(pid, signal.SIGKILL)
    return pid


def kill_in_a_call(cluster: Cluster, schema: str) -> int:
    """SIGKILL the backend of a timed call, for certain mid-call: the test holds the schema's clock lock
    until one waits on it (bounded); its pid. The crash ends the holder's session too."""
    with psycopg.connect(cluster.dsn, autocommit=True, connect_timeout=10) as holder:
        holder.execute("SELECT pg_advisory_lock(%s, %s)", (lock_key(schema), CLOCK_LOCK))
        deadline = time.monotonic() + BOUND
        while True:
            row = holder.execute("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                 " AND backend_type = 'client backend' LIMIT 1").fetchone()
            if row:
                break
            assert time.monotonic() < deadline, f"no call waited on the clock lock within {BOUND} s"
            time.sleep(0.005)  # polling the server's own view, bounded above
        os.kill(row[0], signal.SIGKILL)
    return row[0]


def double_starts(events: list[dict], started: list[tuple[int, int, int]]) -> list[str]:
    """What is wrong with the started attempts, by the history: one line each (empty: nothing)."""
    leases = {lease["token"]: lease for per_task in leases_by_task(pair(events)).values() for lease in per_task}
    problems = [f"task {task} attempt {attempt} started on token {token}, which no acknowledged dispatch gave"
                for task, attempt, token in started if token not in leases]
    by_task: dict[int, list[dict]] = {}
    for task, _attempt, token in started:
        if token in leases:
            by_task.setdefault(task, []).append(leases[token])
    for task, ls in by_task.items():
        ls.sort(key=lambda lease: lease["token"])
        for earlier, later in zip(ls, ls[1:]):
            if later["started_at"] < earlier["end"]:
                problems.append(f"task {task}: the lease of token {later['token']} began at {later['started_at']} ms, "
                                f"before token {earlier['token']}'s ended at {earlier['end']} ms")
    return problems


def soak_run(cluster: Cluster, schema: str, seed: int, tasks: int = TASKS, kills: int = KILLS) -> dict:
    """One run (see the module docstring); what it saw: ``problems`` (empty when everything held) and counts."""
    rng = random.Random(seed)
    starts = Starts()
    patient = dict(call_timeout=1.0, reconnect=Reconnect(attempts=20))
    scheduler = Recording(PostgresScheduler(cluster.dsn, schema=schema, **patient), "runner", serialise=True)
    clock = DatabaseClock(cluster.dsn, schema=schema, **patient)
    runner = Runner(workers=WORKERS, scheduler=scheduler, clock=clock, lease=LEASE_MS, trace=True)
    killed = []
    try:
        runner.start()
        ids = [runner.submit(functools.partial(starts.work, seconds=rng.uniform(*WORK_SECONDS))) for _ in range(tasks)]
        for k in range(kills):
            starts.reached((k + 1) * tasks // (kills + 1))  # spread over the run, by its progress
            killed.append(kill_in_a_call(cluster, schema) if k % 2 == 0 else kill_a_backend(cluster, rng))
        views = [runner.wait(task, BOUND) for task in ids]
    finally:
        runner.stop(BOUND)
    with tempfile.TemporaryDirectory() as folder:
        mismatches = replay_mismatches(runner.save_trace(Path(folder) / "trace.toml"))
    scheduler._scheduler.close()
    clock.close()
    report = judge(scheduler.events, views, {"backend SIGKILL": len(killed)})
    problems = double_starts(scheduler.events, starts.seen)
    problems += [f"{c.name}: {c.detail}" for c in report.checks if not c.held]
    problems += [f"the trace does not replay: {m}" for m in mismatches[:3]]
    retried = sum(1 for _task, attempt, _token in starts.seen if attempt > 1)
    return {"problems": problems, "kills": len(killed), "calls": report.calls, "info": report.info,
            "started": len(starts.seen), "retried": retried, "table": table(report)}


def main(runs: int = 20, seed: int = 0) -> int:
    """``runs`` soak runs on one private cluster; one line each; exit status 1 if any found a problem."""
    failed = 0
    logging.getLogger("fencepost.impl.postgres.session").setLevel(logging.ERROR)  # "waiting for the database", each kill
    with Cluster.create() as cluster:
        for run in range(runs):
            began = time.monotonic()
            seen = soak_run(cluster, f"soak_{run}", seed=seed * 1000 + run)
            failed += bool(seen["problems"])
            print(f"run {run + 1}: {seen['kills']} kills, {seen['calls']} calls ({seen['info']} info), "
                  f"{seen['started']} attempts started ({seen['retried']} retries), {time.monotonic() - began:.1f} s: "
                  + ("; ".join(seen["problems"]) if seen["problems"] else "every check held"), flush=True)
    print(f"{runs - failed} of {runs} runs held")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main(*(int(a) for a in sys.argv[1:3])))
