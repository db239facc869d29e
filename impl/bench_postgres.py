"""``fencepost bench --postgres``: PostgresScheduler against a bare SKIP LOCKED queue, same server, one run.

A *cycle* is one ``dispatch`` + one ``complete`` of a task submitted before
timing started. Each client is its own process with its own connection (as
workers on other machines would be) and its own worker of capacity one; all
clients are released together and the figure is the total cycles divided by
the time from the release to the last client's end. Time stays at 0 and the
leases are long, so nothing expires: this measures the claim and the fenced
completion, nothing else.

The floors are the cheapest ways to hand out the same work with PostgreSQL:

* ``claim-and-delete``: one statement, ``DELETE FROM q WHERE id = (SELECT id
  FROM q ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id``: one round
  trip and one commit per cycle. A worker that dies loses its job; this is the
  floor the target is measured against.
* ``claim, then delete``: the claim marks the row (one commit), the delete
  removes it when the work is done (a second commit), so a crashed worker's
  job is still in the table: the same two round trips and two commits as a
  dispatch and a complete.
* ``bare lease``: the least a leasing queue can do: the claim takes a token
  from a sequence (``SKIP LOCKED``), the completion is an ``UPDATE`` fenced
  by that token. No clock, no capacity, no dispatch order, no locks beyond the
  row's: it is *not* linearizable (two claims may take tokens in the other
  order than their rows), so it bounds from above what any scheduler with
  fenced, durable dispatch and completion can reach on this server.

Measurements alternate (floor, two-step floor, scheduler, for each client
count, ``ROUNDS`` times) and each figure is the best round, so every ratio
compares runs made under the same load on a shared machine.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Sequence

import psycopg

from fencepost.impl.postgres import PostgresScheduler, drop_schema, temporary_schema_name

#: Client process counts measured; the target is judged at TARGET_CLIENTS.
CLIENT_COUNTS = (1, 4)
TARGET_CLIENTS = 4
#: PostgresScheduler must reach at least this fraction of the claim-and-delete floor at TARGET_CLIENTS.
TARGET_RATIO = 0.5
#: Timed cycles per client per round, and untimed warm-up cycles before them (plans, caches).
CYCLES = 1_000
QUICK_CYCLES = 200
WARM_CYCLES = 50
#: Rounds of every measurement; the best is reported.
ROUNDS = 3
#: Lease length: far longer than any run, so no lease expires.
DURATION = 1_000_000_000
#: Real seconds a client may take to start or to finish before the run is abandoned.
BOUND = 300

KINDS = ("floor", "two_step", "lease", "scheduler", "floor_async", "scheduler_async")
LABELS = {
    "floor": "floor: claim-and-delete",
    "two_step": "floor: claim, then delete",
    "lease": "floor: bare lease",
    "scheduler": "PostgresScheduler",
    "floor_async": "floor, async commit",
    "scheduler_async": "scheduler, async commit",
}


def _floor_setup(conn: psycopg.Connection, schema: str, tasks: int) -> None:
    conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    conn.execute(f'DROP TABLE IF EXISTS "{schema}".q')
    conn.execute(f'CREATE TABLE "{schema}".q (id bigserial PRIMARY KEY, claimed_by text)')
    conn.execute(f'INSERT INTO "{schema}".q (claimed_by) SELECT NULL FROM generate_series(1, %s)', (tasks,))
    conn.execute(f'ANALYZE "{schema}".q')
    # the bare lease's table: waiting rows found by a partial index, as the scheduler's are
    conn.execute(f'CREATE TABLE "{schema}".leases (id bigserial PRIMARY KEY, status text NOT NULL DEFAULT \'waiting\','
                 f' worker text, token bigint)')
    conn.execute(f'CREATE INDEX ON "{schema}".leases (id) WHERE status = \'waiting\'')
    conn.execute(f'CREATE SEQUENCE "{schema}".tokens')
    conn.execute(f'INSERT INTO "{schema}".leases (worker) SELECT NULL FROM generate_series(1, %s)', (tasks,))
    conn.execute(f'ANALYZE "{schema}".leases')


def _client(kind: str, dsn: str, schema: str, worker: str, cycles: int, barrier, results) -> None:
    """One client process: warm up, wait for the others, run ``cycles`` cycles, report (start, end)."""
    synchronous = not kind.endswith("_async")
    kind = kind.removesuffix("_async")
    if kind == "scheduler":
        s = PostgresScheduler(dsn, schema=schema, synchronous_commit=synchronous)

        def cycle() -> None:
            lease = s.dispatch(worker, 0, DURATION)
            assert lease is not None and s.complete(lease.task_id, lease.token, 0).accepted
    else:
        conn = psycopg.connect(dsn, autocommit=True)
        if not synchronous:
            conn.execute("SET synchronous_commit = off")
        if kind == "floor":
            take = f'DELETE FROM "{schema}".q WHERE id = (SELECT id FROM "{schema}".q ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id'

            def cycle() -> None:
                assert conn.execute(take).fetchone() is not None
        elif kind == "lease":
            lease = (f'UPDATE "{schema}".leases SET status = \'running\', worker = %s, token = nextval(\'"{schema}".tokens\')'
                     f' WHERE id = (SELECT id FROM "{schema}".leases WHERE status = \'waiting\' ORDER BY id LIMIT 1'
                     f' FOR UPDATE SKIP LOCKED) RETURNING id, token')
            finish = (f'UPDATE "{schema}".leases SET status = \'done\', worker = NULL, token = NULL'
                      f' WHERE id = %s AND status = \'running\' AND token = %s')

            def cycle() -> None:
                job, token = conn.execute(lease, (worker,)).fetchone()
                assert conn.execute(finish, (job, token)).rowcount == 1
        else:
            claim = (f'UPDATE "{schema}".q SET claimed_by = %s WHERE id = (SELECT id FROM "{schema}".q'
                     f' WHERE claimed_by IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id')
            done = f'DELETE FROM "{schema}".q WHERE id = %s AND claimed_by = %s'

            def cycle() -> None:
                (job,) = conn.execute(claim, (worker,)).fetchone()
                assert conn.execute(done, (job, worker)).rowcount == 1
    for _ in range(WARM_CYCLES):
        cycle()
    barrier.wait(BOUND)
    start = time.monotonic()
    for _ in range(cycles):
        cycle()
    results.put((start, time.monotonic()))


def measure_once(kind: str, dsn: str, clients: int, cycles: int) -> float:
    """Cycles per second for ``clients`` processes of ``kind``, on a fresh schema dropped afterwards."""
    schema = temporary_schema_name("fp_bench")
    tasks = clients * (cycles + WARM_CYCLES)
    try:
        if kind.startswith("scheduler"):
            with PostgresScheduler(dsn, schema=schema) as s:
                for i in range(clients):
                    s.add_worker(f"w{i}", 1)
                with s._conn.cursor() as cur:  # the submit function itself, pipelined
                    cur.executemany(s._q["submit"], [(0, None, None, 1, None)] * tasks)
                s._conn.execute(f'ANALYZE "{schema}".tasks')
        else:
            with psycopg.connect(dsn, autocommit=True) as conn:
                _floor_setup(conn, schema, tasks)
        ctx = multiprocessing.get_context("spawn")
        barrier = ctx.Barrier(clients + 1)
        results = ctx.Queue()
        procs = [ctx.Process(target=_client, args=(kind, dsn, schema, f"w{i}", cycles, barrier, results))
                 for i in range(clients)]
        for p in procs:
            p.start()
        barrier.wait(BOUND)
        released = time.monotonic()
        spans = [results.get(timeout=BOUND) for _ in procs]
        for p in procs:
            p.join(BOUND)
            if p.exitcode != 0:
                raise RuntimeError(f"a {kind} client exited with status {p.exitcode}")
        return clients * cycles / (max(end for _, end in spans) - released)
    finally:
        drop_schema(dsn, schema)


def measure(dsn: str, counts: Sequence[int] = CLIENT_COUNTS, cycles: int = CYCLES, rounds: int = ROUNDS,
            progress=print) -> dict[tuple[str, int], float]:
    """The best cycles/s of each (kind, clients) over ``rounds`` alternating rounds."""
    best: dict[tuple[str, int], float] = {}
    for round_ in range(rounds):
        for clients in counts:
            for kind in KINDS:
                rate = measure_once(kind, dsn, clients, cycles)
                best[kind, clients] = max(rate, best.get((kind, clients), 0.0))
                progress(f"  round {round_ + 1}/{rounds}: {LABELS[kind]}, {clients} client(s): {rate:,.0f} cycles/s")
    return best


def server_line(dsn: str) -> str:
    with psycopg.connect(dsn) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]
        sync = conn.execute("SHOW synchronous_commit").fetchone()[0]
        fsync = conn.execute("SHOW fsync").fetchone()[0]
    return (f"PostgreSQL {version} on this machine ({os.cpu_count()} CPUs shared by server and clients; "
            f"synchronous_commit={sync}, fsync={fsync}); load average {os.getloadavg()[0]:.1f} at the start")


def format_table(best: dict[tuple[str, int], float], counts: Sequence[int]) -> list[str]:
    ratios = ("sched/floor", "async/async", "lease/floor", "sched/lease")
    lines = [f"{'clients':>7}" + "".join(f"  {LABELS[k]:>25}" for k in KINDS) + "".join(f"  {r:>11}" for r in ratios)]
    for clients in counts:
        rates = [best[k, clients] for k in KINDS]
        values = (
            best["scheduler", clients] / best["floor", clients],
            best["scheduler_async", clients] / best["floor_async", clients],
            best["lease", clients] / best["floor", clients],
            best["scheduler", clients] / best["lease", clients],
        )
        lines.append(f"{clients:>7}" + "".join(f"  {r:>25,.0f}" for r in rates) + "".join(f"  {v:>10.2f}x" for v in values))
    lines.append("cycles/s: one dispatch + one complete (scheduler), one claim-and-delete statement (floor),")
    lines.append("one claim + one delete (two-step floor), one token-taking claim + one token-fenced completion")
    lines.append("(bare lease: not linearizable, the ceiling for fenced durable leases); best of the rounds.")
    lines.append("async: synchronous_commit=off for both sides (a server crash may lose the last returned calls).")
    if TARGET_CLIENTS in counts:
        for label, kind, floor in (("synchronous commit", "scheduler", "floor"), ("async commit", "scheduler_async", "floor_async")):
            ratio = best[kind, TARGET_CLIENTS] / best[floor, TARGET_CLIENTS]
            verdict = "holds" if ratio >= TARGET_RATIO else "MISSED"
            lines.append(f"target ({label}): scheduler / claim-and-delete floor at {TARGET_CLIENTS} clients >= {TARGET_RATIO}x"
                         f"   {ratio:.2f}x  {verdict}")
    return lines


def run(dsn: str, quick: bool) -> int:
    """Measure and print; the caller has checked ``dsn``."""
    cycles = QUICK_CYCLES if quick else CYCLES
    rounds = 1 if quick else ROUNDS
    print(f"fencepost bench --postgres: {server_line(dsn)}", flush=True)
    print(f"{cycles:,} timed cycles per client per round, {rounds} round(s), after {WARM_CYCLES} warm-up cycles", flush=True)
    best = measure(dsn, CLIENT_COUNTS, cycles, rounds, progress=lambda line: print(line, flush=True))
    print()
    print("\n".join(format_table(best, CLIENT_COUNTS)))
    return 0
