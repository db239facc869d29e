"""A many-process, many-thread workload on one PostgreSQL schema, recorded as a concurrent history.

``run_stress`` starts ``processes`` OS processes with ``threads`` client threads
each; every client has its own ``PostgresScheduler`` connection on one shared
schema and is one ``process`` of the history. Time is logical and shared: a
client reads the scheduler's clock and calls with it or a tick or two later, so
clients race to move time, and a client that read an old time gets the
contract's ``ValueError`` (recorded like any result). The workload: submits
(some with keys, some with attempt budgets), dispatches, completions, random
failures, renewals, cancellations of random tasks, children submitted while a
lease is held, and stalls: a client keeps a lease while the others move time
past its end, then completes with the stale token.

Clients run in rounds separated by a barrier across all processes, so the
history has a quiescent point between rounds: the linearizability checker
cuts it there into windows of at most ``processes * threads * OPS_PER_ROUND``
calls. Each call is stamped with ``time.monotonic_ns()`` (one clock for the
whole machine), and the per-client events are merged by it.

Every wait is bounded in real seconds (``BOUND``); nothing sleeps.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import threading
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass, field

from fencepost.impl.postgres.scheduler import PostgresScheduler
from fencepost.spec.formats.values import to_json
from fencepost.spec.protocol import Status

#: Real seconds any wait may take (a barrier, a child process) before the run fails instead of hanging.
BOUND = 120
#: Protocol calls each client makes per round.
OPS_PER_ROUND = 2
#: Ticks a lease lasts; clients move time 0-2 ticks per call, so a lease held over a few rounds expires.
LEASE = 6
#: Workers per client (its own; capacity 2, so one client can stall on one lease and work another).
CAPACITY = 2


@dataclass
class Client:
    """One client's state: its scheduler connection, its leases and its part of the history."""

    name: str
    sched: PostgresScheduler
    rng: random.Random
    events: list[dict] = field(default_factory=list)
    leases: list = field(default_factory=list)  # leases this client believes it holds
    last_time: int = -1
    known_tasks: int = 1  # ids 1..known_tasks surely exist (submitted before the clients started)

    def stamp(self) -> int:
        self.last_time = max(time.monotonic_ns(), self.last_time + 1)
        return self.last_time

    def call(self, op: str, **args: object) -> object:
        """Make one protocol call, recording invoke and ok (result or error) around it."""
        self.events.append({"process": self.name, "type": "invoke", "op": op, "args": args, "time": self.stamp()})
        try:
            value = getattr(self.sched, op)(**args)
        except ValueError:
            self.events.append({"process": self.name, "type": "ok", "error": "ValueError", "time": self.stamp()})
            return ValueError
        self.events.append({"process": self.name, "type": "ok", "result": to_json(op, value), "time": self.stamp()})
        return value

    def step(self, round_: int) -> None:
        """One call of the workload, chosen at random from what this client can do now."""
        rng = self.rng
        now = self.sched.now + rng.choice((0, 0, 1, 2))
        roll = rng.random()
        if self.leases and roll < 0.55:
            lease = self.leases.pop(rng.randrange(len(self.leases)))
            if rng.random() < 0.2 and round_ % 7:  # stall: keep it while time moves on, finish it later
                self.leases.insert(0, lease)
                self.call("advance", now=now)
                return
            kind = rng.random()
            if kind < 0.6:
                self.call("complete", task_id=lease.task_id, token=lease.token, now=now)
            elif kind < 0.8:
                self.call("fail", task_id=lease.task_id, token=lease.token, now=now)
            else:
                if self.call("renew", task_id=lease.task_id, token=lease.token, now=now, duration=LEASE) is not ValueError:
                    self.leases.append(lease)
            if rng.random() < 0.15:  # a task that submits a task
                self.call("submit", priority=rng.randrange(3))
        elif roll < 0.75:
            lease = self.call("dispatch", worker=self.name, now=now, duration=LEASE)
            if lease is not None and lease is not ValueError:
                self.leases.append(lease)
        elif roll < 0.9:
            key = f"k{rng.randrange(40)}" if rng.random() < 0.3 else None
            self.call("submit", priority=rng.randrange(3), max_attempts=rng.choice((None, 1, 2, 3)), key=key)
        else:
            self.call("cancel", task_id=rng.randint(1, self.known_tasks), now=now)


def _client_thread(client: Client, rounds: int, barrier) -> None:
    for round_ in range(rounds):
        barrier.wait(BOUND)
        for _ in range(OPS_PER_ROUND):
            client.step(round_)
    barrier.wait(BOUND)


def _process(dsn: str, schema: str, index: int, threads: int, rounds: int, tasks: int, seed: int, barrier, out) -> None:
    try:
        _clients(dsn, schema, index, threads, rounds, tasks, seed, barrier, out)
    except BaseException:  # reported to the parent at once, so it never waits out its bound on a dead child
        barrier.abort()
        out.put(json.dumps({"error": traceback.format_exc()}))
        raise


def _clients(dsn: str, schema: str, index: int, threads: int, rounds: int, tasks: int, seed: int, barrier, out) -> None:
    clients = []
    for t in range(threads):
        name = f"p{index}t{t}"
        clients.append(Client(name, PostgresScheduler(dsn, schema=schema), random.Random(f"{seed}:{name}"), known_tasks=tasks))
    workers = [threading.Thread(target=_client_thread, args=(c, rounds, barrier)) for c in clients]
    for w in workers:
        w.start()
    for w in workers:
        w.join(BOUND * (rounds + 1))
    events = [e for c in clients for e in c.events]
    out.put(json.dumps(events))
    for c in clients:
        c.sched.close()


def run_stress(dsn: str, schema: str, *, processes: int = 4, threads: int = 3, rounds: int = 100,
               tasks: int = 1_000, seed: int = 0) -> list[dict]:
    """Run the workload; return every event, merged into real-time order (by ``time``).

    ``tasks`` tasks are submitted before the clients start (more come from the
    clients); every client gets its own worker of capacity ``CAPACITY``.
    """
    setup = PostgresScheduler(dsn, schema=schema)
    setup_events: list[dict] = []
    prelude = Client("setup", setup, random.Random(seed), setup_events)
    for index in range(processes):
        for t in range(threads):
            prelude.call("add_worker", worker=f"p{index}t{t}", capacity=CAPACITY)
    rng = random.Random(seed)
    for _ in range(tasks):
        prelude.call("submit", priority=rng.randrange(3), max_attempts=rng.choice((None, 2, 3)))
    setup.close()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(processes * threads)
    out = ctx.Queue()
    procs = [ctx.Process(target=_process, args=(dsn, schema, i, threads, rounds, tasks, seed, barrier, out))
             for i in range(processes)]
    for p in procs:
        p.start()
    recorded = [json.loads(out.get(timeout=BOUND * (rounds + 1))) for _ in procs]
    failed = [r["error"] for r in recorded if isinstance(r, dict)]
    if failed:
        raise RuntimeError("a stress client process failed:\n" + failed[0])
    for p in procs:
        p.join(BOUND)
        if p.exitcode != 0:
            raise RuntimeError(f"a stress client process exited with status {p.exitcode}")
    events = setup_events + [e for part in recorded for e in part]
    # one machine-wide monotonic clock, strictly increasing per client: sort by it, invocations first on a tie
    events.sort(key=lambda e: (e["time"], e["type"] != "invoke"))
    return events


def pair_calls(events: list[dict]) -> list[dict]:
    """Each invoke joined with the next event of its process: op, args, result or error, in invoke order."""
    open_: dict[str, dict] = {}
    calls = []
    for e in events:
        if e["type"] == "invoke":
            call = {"op": e["op"], "args": e["args"], "process": e["process"], "start": e["time"]}
            open_[e["process"]] = call
            calls.append(call)
        else:
            call = open_.pop(e["process"])
            call["end"] = e["time"]
            call["error"] = e.get("error")
            call["result"] = e.get("result")
    assert not open_, f"calls never completed: {open_}"
    return calls


def check_history_properties(events: list[dict], final: tuple) -> None:
    """Tokens unique, at most one accepted completion per task, no overlapping leases, end states explained."""
    now, views = final
    calls = pair_calls(events)
    tokens = [c["result"]["token"] for c in calls if c["op"] == "dispatch" and not c["error"] and c["result"]]
    assert len(tokens) == len(set(tokens)) > 0, "a token was issued twice"
    completions = defaultdict(int)
    for c in calls:
        if c["op"] == "complete" and not c["error"] and c["result"]["accepted"]:
            completions[c["args"]["task_id"]] += 1
    assert completions and max(completions.values()) == 1, "a task has two accepted completions"
    per_task = leases_by_task(calls)
    for task_id, ls in per_task.items():
        for earlier, later in zip(ls, ls[1:]):
            assert later["started_at"] >= earlier["end"], ("two leases overlap", task_id, earlier, later)
    budget: dict[int, int | None] = {}
    for c in calls:
        if c["op"] == "submit" and not c["error"]:
            budget.setdefault(c["result"], c["args"].get("max_attempts"))
    done = defaultdict(list)
    for c in calls:
        if c["op"] in ("complete", "fail", "cancel") and not c["error"] and c["result"]["accepted"]:
            done[c["args"]["task_id"]].append(c["op"])
    for view in views:
        leases = per_task.get(view.id, [])
        ended_by = done[view.id]
        assert view.attempts == len(leases), view
        assert (view.status is Status.SUCCEEDED) == ("complete" in ended_by), (view, ended_by)
        if view.status is Status.RUNNING:
            assert (view.token, view.expires_at) == (leases[-1]["token"], leases[-1]["end"]), (view, leases[-1])
            assert view.expires_at > now
        elif view.status is Status.CANCELLED:
            assert "cancel" in ended_by, (view, ended_by)
        elif view.status is Status.FAILED:
            assert budget[view.id] is not None and view.attempts == budget[view.id], view
        elif view.status is Status.RETRY_WAIT:
            assert "fail" in ended_by and leases, view
        elif view.status is Status.PENDING:
            assert not leases or leases[-1]["end"] <= now, view


def leases_by_task(calls: list[dict]) -> dict[int, list[dict]]:
    """Every lease handed out, per task, in token order, with the time it really ended (``end``)."""
    leases: dict[int, dict] = {}
    for c in calls:
        if c["op"] == "dispatch" and c["result"] is not None and not c["error"]:
            lease = dict(c["result"], end=c["result"]["expires_at"])
            leases[lease["token"]] = lease
    for c in calls:  # in invoke order; accepted calls on one task are serialised by the scheduler
        if c["op"] in ("complete", "fail", "renew") and not c["error"] and c["result"]["accepted"]:
            lease = leases[c["args"]["token"]]
            lease["end"] = c["args"]["now"] + c["args"]["duration"] if c["op"] == "renew" else c["args"]["now"]
    per_task: dict[int, list[dict]] = defaultdict(list)
    for token in sorted(leases):
        per_task[leases[token]["task_id"]].append(leases[token])
    return per_task
