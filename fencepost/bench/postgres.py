"""``fencepost bench --postgres``: PostgresScheduler against bare SKIP LOCKED floors and peer queues, one run.

A *cycle* is one ``dispatch`` + one ``complete`` of a task submitted before
timing started; at batch size B it is one ``dispatch_many(limit=B)`` + one
``complete_many`` of the B leases (the worker's capacity is B), and every
figure is in jobs per second, whatever the batch. Each client is its own process with its own connection (as
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

At batch size B each floor claims B rows per statement and acknowledges them
in one more (``= ANY``).

The peers (``fencepost/bench/peers.py``; the ``peers`` extra): pgqueuer's own
batched worker loop and its one-job (one-batch) cycle, and procrastinate's
fetch/finish, on fresh schemas of the same server; their rows are left out,
with a note, when the packages are not installed. Beside them,
``DurableScheduler`` (SQLite, ``synchronous=FULL``, one process) at batch
sizes 1 and 10, for the batch speed-up of a scheduler whose every call is a
local fsync.

Measurements alternate (every kind, for each client count and batch size,
``ROUNDS`` times) and each figure is the best round, so every ratio
compares runs made under the same load on a shared machine.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Sequence

import psycopg

from fencepost.bench import durable as bench_durable

from fencepost.bench import peers as bench_peers
from fencepost.impl.postgres.scheduler import PostgresScheduler, drop_schema, temporary_schema_name

#: Client process counts and batch sizes measured; the targets are judged at TARGET_CLIENTS.
CLIENT_COUNTS = (1, 4)
BATCH_SIZES = (1, 10)
TARGET_CLIENTS = 4
#: PostgresScheduler (batch 1) must reach at least this fraction of the claim-and-delete floor at TARGET_CLIENTS.
TARGET_RATIO = 0.5
#: At TARGET_BATCH and TARGET_CLIENTS, PostgresScheduler over pgqueuer's own batched worker loop (issue 22).
TARGET_BATCH = 10
TARGET_PEER_RATIO = 1.3
#: DurableScheduler at TARGET_BATCH over its own batch-size-1 rate (issue 22): bench_durable's batch rows.
TARGET_DURABLE_RATIO = bench_durable.TARGET_BATCH_RATIO
#: Timed jobs per client per round, and untimed warm-up cycles before them (plans, caches).
CYCLES = 1_000
QUICK_CYCLES = 200
WARM_CYCLES = 50
#: Jobs per round of DurableScheduler (one process; every call at batch size 1 is an fsync).
DURABLE_JOBS = bench_durable.BATCH_JOBS
QUICK_DURABLE_JOBS = bench_durable.QUICK_BATCH_JOBS
#: Rounds of every measurement; the best is reported.
ROUNDS = 3
#: Lease length: far longer than any run, so no lease expires.
DURATION = 1_000_000_000
#: Real seconds a client may take to start or to finish before the run is abandoned.
BOUND = 300

FLOORS = ("floor", "two_step", "lease")
PEERS = tuple(bench_peers.PACKAGES)
KINDS = ("floor", "two_step", "lease", "scheduler", "floor_async", "scheduler_async", *PEERS)
LABELS = {
    "floor": "floor: claim-and-delete",
    "two_step": "floor: claim, then delete",
    "lease": "floor: bare lease",
    "scheduler": "PostgresScheduler",
    "floor_async": "floor, async commit",
    "scheduler_async": "scheduler, async commit",
    "pgqueuer_loop": "pgqueuer: its worker loop",
    "pgqueuer_cycle": "pgqueuer: dequeue + log_jobs",
    "procrastinate": "procrastinate: fetch + finish",
}


def _nothing_to_close() -> None:
    """What a bench client without a connection of its own closes: nothing."""


def kinds_at(batch: int, offered: dict[str, bool]) -> list[str]:
    """The kinds measured at ``batch``: every kind whose package is here and that has a batched claim."""
    return [k for k in KINDS if offered.get(k, True) and (batch == 1 or k not in bench_peers.SINGLE_ONLY)]


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


def _floor_cycle(kind: str, conn: psycopg.Connection, schema: str, worker: str, batch: int) -> Callable[[], None]:
    """One floor cycle of ``batch`` jobs: the single-row statements at batch 1, ``LIMIT batch`` / ``= ANY`` above."""
    q, leases, tokens = f'"{schema}".q', f'"{schema}".leases', f'"{schema}".tokens'
    pick = "= (SELECT" if batch == 1 else "IN (SELECT"
    if kind == "floor":
        take = f"DELETE FROM {q} WHERE id {pick} id FROM {q} ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING id"

        def cycle() -> None:
            assert len(conn.execute(take, (batch,)).fetchall()) == batch
    elif kind == "lease":
        lease = (f"UPDATE {leases} SET status = 'running', worker = %s, token = nextval('{tokens}')"
                 f" WHERE id {pick} id FROM {leases} WHERE status = 'waiting' ORDER BY id LIMIT %s"
                 f" FOR UPDATE SKIP LOCKED) RETURNING id, token")
        finish = (f"UPDATE {leases} l SET status = 'done', worker = NULL, token = NULL"
                  f" FROM unnest(%s::bigint[], %s::bigint[]) AS u(id, token)"
                  f" WHERE l.id = u.id AND l.status = 'running' AND l.token = u.token")

        def cycle() -> None:
            rows = conn.execute(lease, (worker, batch)).fetchall()
            assert conn.execute(finish, ([r[0] for r in rows], [r[1] for r in rows])).rowcount == batch
    else:
        claim = (f"UPDATE {q} SET claimed_by = %s WHERE id {pick} id FROM {q}"
                 f" WHERE claimed_by IS NULL ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING id")
        done = f"DELETE FROM {q} WHERE id = ANY(%s) AND claimed_by = %s"

        def cycle() -> None:
            jobs = [r[0] for r in conn.execute(claim, (worker, batch)).fetchall()]
            assert conn.execute(done, (jobs, worker)).rowcount == batch
    return cycle


def _scheduler_cycle(s: PostgresScheduler, worker: str, batch: int) -> Callable[[], None]:
    return bench_durable.job_cycle(s, worker, batch, DURATION)


def _client(kind: str, dsn: str, schema: str, worker: str, jobs: int, batch: int, warm: int, barrier, results) -> None:
    """One client process: warm up, wait for the others, run ``jobs`` jobs in batches, report (start, end, jobs)."""
    if kind == "pgqueuer_loop":
        bench_peers.pgqueuer_loop(dsn, schema, batch, entrypoint=f"warm_{worker}")  # plans and caches
        barrier.wait(BOUND)
        start = time.monotonic()
        ran, acknowledged = bench_peers.pgqueuer_loop(dsn, schema, batch)
        results.put((start, acknowledged, ran))
        return
    synchronous = not kind.endswith("_async")
    base = kind.removesuffix("_async")
    closing: Callable[[], None] = _nothing_to_close
    if base == "scheduler":
        s = PostgresScheduler(dsn, schema=schema, synchronous_commit=synchronous)
        cycle = _scheduler_cycle(s, worker, batch)
        closing = s.close
    elif kind in bench_peers.CYCLES:
        peer = bench_peers.CYCLES[kind](dsn, schema, batch)
        cycle, closing = peer.cycle, peer.close
    else:
        conn = psycopg.connect(dsn, autocommit=True)
        if not synchronous:
            conn.execute("SET synchronous_commit = off")
        cycle = _floor_cycle(base, conn, schema, worker, batch)
        closing = conn.close
    for _ in range(warm):
        cycle()
    barrier.wait(BOUND)
    start = time.monotonic()
    for _ in range(jobs // batch):
        cycle()
    end = time.monotonic()
    closing()
    results.put((start, end, jobs // batch * batch))


def _setup(kind: str, dsn: str, schema: str, clients: int, jobs: int, batch: int) -> None:
    """Fill a fresh ``schema`` with the work of one run: ``clients * jobs`` jobs plus every client's warm-up."""
    warm = WARM_CYCLES * batch
    tasks = clients * (jobs + warm)
    if kind.startswith("scheduler"):
        with PostgresScheduler(dsn, schema=schema) as s:
            for i in range(clients):
                s.add_worker(f"w{i}", batch)
            for start in range(0, tasks, 10_000):
                s.submit_many([{}] * min(10_000, tasks - start))
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'ANALYZE "{schema}".tasks')
    elif kind == "pgqueuer_loop":
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        bench_peers.pgqueuer_setup(dsn, schema, clients * jobs, {f"warm_w{i}": warm for i in range(clients)})
    elif kind == "pgqueuer_cycle":
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        bench_peers.pgqueuer_setup(dsn, schema, tasks, {})
    elif kind == "procrastinate":
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        bench_peers.procrastinate_setup(dsn, schema, tasks)
    else:
        with psycopg.connect(dsn, autocommit=True) as conn:
            _floor_setup(conn, schema, tasks)


def measure_once(kind: str, dsn: str, clients: int, jobs: int, batch: int = 1) -> float:
    """Jobs per second for ``clients`` processes of ``kind`` at ``batch``, on a fresh schema dropped afterwards."""
    schema = temporary_schema_name("fp_bench")
    try:
        _setup(kind, dsn, schema, clients, jobs, batch)
        ctx = multiprocessing.get_context("spawn")
        barrier = ctx.Barrier(clients + 1)
        results = ctx.Queue()
        procs = [ctx.Process(target=_client, args=(kind, dsn, schema, f"w{i}", jobs, batch, WARM_CYCLES, barrier, results))
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
        done = sum(ran for _, _, ran in spans)
        return done / (max(end for _, end, _ in spans) - released)
    finally:
        drop_schema(dsn, schema)


def measure(dsn: str, counts: Sequence[int] = CLIENT_COUNTS, cycles: int = CYCLES, rounds: int = ROUNDS,
            batches: Sequence[int] = BATCH_SIZES, offered: dict[str, bool] | None = None,
            durable_jobs: int = DURABLE_JOBS, progress=print) -> dict[tuple[str, int, int], float]:
    """The best jobs/s of each (kind, clients, batch) over ``rounds`` alternating rounds.

    ``("durable", 1, batch)`` holds DurableScheduler's rate (one process) when ``durable_jobs``.
    """
    offered = bench_peers.available() if offered is None else offered
    best: dict[tuple[str, int, int], float] = {}
    for round_ in range(rounds):
        for batch in batches:
            for clients in counts:
                for kind in kinds_at(batch, offered):
                    rate = measure_once(kind, dsn, clients, cycles, batch)
                    best[kind, clients, batch] = max(rate, best.get((kind, clients, batch), 0.0))
                    progress(f"  round {round_ + 1}/{rounds}: {LABELS[kind]}, {clients} client(s), batch {batch}:"
                             f" {rate:,.0f} jobs/s")
        if durable_jobs:  # the batch sizes in turns, on one disk (bench_durable.batch_rates)
            for batch, rate in bench_durable.batch_rates(durable_jobs, tuple(batches)).items():
                best["durable", 1, batch] = max(rate, best.get(("durable", 1, batch), 0.0))
                progress(f"  round {round_ + 1}/{rounds}: DurableScheduler, batch {batch}: {rate:,.0f} jobs/s")
    return best


def server_line(dsn: str) -> str:
    with psycopg.connect(dsn) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]
        sync = conn.execute("SHOW synchronous_commit").fetchone()[0]
        fsync = conn.execute("SHOW fsync").fetchone()[0]
    return (f"PostgreSQL {version} on this machine ({os.cpu_count()} CPUs shared by server and clients; "
            f"synchronous_commit={sync}, fsync={fsync}); load average {os.getloadavg()[0]:.1f} at the start")


def format_table(best: dict[tuple[str, int, int], float], counts: Sequence[int],
                 batches: Sequence[int] = (1,)) -> list[str]:
    """One row per (batch, clients), one column per kind measured (``-`` where a kind has no such row)."""
    kinds = [k for k in KINDS if any((k, c, b) in best for c in counts for b in batches)]
    lines = [f"{'batch':>5} {'clients':>7}" + "".join(f"  {LABELS[k]:>29}" for k in kinds)]
    for batch in batches:
        for clients in counts:
            cells = [f"{best[k, clients, batch]:>29,.0f}" if (k, clients, batch) in best else f"{'-':>29}" for k in kinds]
            lines.append(f"{batch:>5} {clients:>7}" + "".join(f"  {c}" for c in cells))
    if any(key[0] == "durable" for key in best):
        lines.append(bench_durable.rates_line({b: best["durable", 1, b] for b in batches if ("durable", 1, b) in best}))
    lines.append("jobs/s: a job is claimed and acknowledged; at batch B, B jobs per claim and per acknowledgement")
    lines.append("(PostgresScheduler: dispatch + complete at 1, dispatch_many + complete_many above); best of the rounds.")
    lines.append("Floors: claim-and-delete (one statement), claim then delete (two), bare lease (token-fenced, not")
    lines.append("linearizable: the ceiling for fenced durable leases). async: synchronous_commit=off for both sides.")
    return lines


def _ratio(best: dict, a: tuple, b: tuple) -> float | None:
    return best[a] / best[b] if a in best and b in best and best[b] else None


def format_targets(best: dict[tuple[str, int, int], float], counts: Sequence[int], batches: Sequence[int],
                   offered: dict[str, bool]) -> list[str]:
    """The issue's targets, each with its measured ratio and whether it holds; a note for what was not run."""
    lines: list[str] = []

    def target(label: str, ratio: float | None, limit: float, missing: str) -> None:
        if ratio is None:
            lines.append(f"target: {label} >= {limit}x   not measured ({missing})")
        else:
            lines.append(f"target: {label} >= {limit}x   {ratio:.2f}x  {'holds' if ratio >= limit else 'MISSED'}")

    c = TARGET_CLIENTS
    for label, kind, floor in (("synchronous commit", "scheduler", "floor"), ("async commit", "scheduler_async", "floor_async")):
        target(f"({label}) scheduler / claim-and-delete floor, batch 1, {c} clients",
               _ratio(best, (kind, c, 1), (floor, c, 1)), TARGET_RATIO, f"needs {c} clients")
    hint = f"not installed: {bench_peers.install_hint()}"
    target(f"PostgresScheduler / pgqueuer's worker loop, batch {TARGET_BATCH}, {c} clients",
           _ratio(best, ("scheduler", c, TARGET_BATCH), ("pgqueuer_loop", c, TARGET_BATCH)), TARGET_PEER_RATIO,
           hint if not offered.get("pgqueuer_loop") else f"needs batch {TARGET_BATCH} and {c} clients")
    for peer in PEERS:
        for clients in counts:
            if offered.get(peer):
                target(f"PostgresScheduler / {LABELS[peer]}, batch 1, {clients} client(s)",
                       _ratio(best, ("scheduler", clients, 1), (peer, clients, 1)), 1.0, "needs batch 1")
    target(f"DurableScheduler batch {TARGET_BATCH} / its batch 1",
           _ratio(best, ("durable", 1, TARGET_BATCH), ("durable", 1, 1)), TARGET_DURABLE_RATIO,
           f"needs batches 1 and {TARGET_BATCH}")
    for peer in PEERS:
        if not offered.get(peer):
            lines.append(f"note: {LABELS[peer]} left out: {bench_peers.PACKAGES[peer]} is not installed ({bench_peers.install_hint()})")
    return lines


def _notes(best: dict[tuple[str, int, int], float]) -> list[str]:
    """Sentences computed from the figures: the batch speed-ups, and what the commits cost."""
    lines = []
    for clients in CLIENT_COUNTS:
        one, ten = best.get(("scheduler", clients, 1)), best.get(("scheduler", clients, TARGET_BATCH))
        floor_one, floor_ten = best.get(("floor", clients, 1)), best.get(("floor", clients, TARGET_BATCH))
        loop = best.get(("pgqueuer_loop", clients, TARGET_BATCH))
        if one and ten:
            text = (f"- {clients} client(s): PostgresScheduler does {ten:,.0f} jobs/s at batch {TARGET_BATCH}, "
                    f"{ten / one:.1f}x its {one:,.0f} at batch 1")
            if floor_one and floor_ten:
                text += (f"; the claim-and-delete floor gains {floor_ten / floor_one:.1f}x "
                         f"({floor_one:,.0f} to {floor_ten:,.0f})")
            if loop:
                text += f"; pgqueuer's loop does {loop:,.0f} at batch {TARGET_BATCH}"
            lines.append(text + ".")
    one, ten = best.get(("durable", 1, 1)), best.get(("durable", 1, TARGET_BATCH))
    if one and ten:
        lines.append(f"- DurableScheduler: {ten:,.0f} jobs/s at batch {TARGET_BATCH}, {ten / one:.1f}x its {one:,.0f} "
                     "at batch 1: a batch is one transaction, one fsync (`synchronous=FULL`), of a few statements whatever its size.")
    if lines:
        lines.append("- Every kind here waits for the disk at every commit (`synchronous_commit=on`), and the "
                     "server shares its CPUs with the clients and the rest of the machine's load (above): the "
                     "ratios between kinds measured in the same rounds are the figures to read, not the rates.")
    return lines


def run(dsn: str, quick: bool) -> int:
    """Measure and print (the figure ``python -m fencepost.figures batches -- fencepost bench --postgres``
    stamps and writes to ``docs/figures/batches.md``); the caller has checked ``dsn``."""
    cycles = QUICK_CYCLES if quick else CYCLES
    rounds = 1 if quick else ROUNDS
    offered = bench_peers.available()
    print(f"fencepost bench --postgres: {server_line(dsn)}", flush=True)
    print(f"{cycles:,} timed jobs per client per round, {rounds} round(s), after {WARM_CYCLES} warm-up cycles;"
          f" batch sizes {', '.join(map(str, BATCH_SIZES))}", flush=True)
    best = measure(dsn, CLIENT_COUNTS, cycles, rounds, BATCH_SIZES, offered,
                   durable_jobs=QUICK_DURABLE_JOBS if quick else DURABLE_JOBS,
                   progress=lambda line: print(line, flush=True))
    print()
    print("\n".join(format_table(best, CLIENT_COUNTS, BATCH_SIZES) + format_targets(best, CLIENT_COUNTS, BATCH_SIZES, offered)))
    notes = _notes(best)
    if notes:
        print()
        print("\n".join(notes))
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0
