"""Server faults under a concurrent workload: what held afterwards, Jepsen-style.

``run_faults(factory, ...)`` starts a throw-away PostgreSQL cluster
(``impl/faults/cluster.py``), then ``clients`` OS processes, each calling
``factory(dsn)`` once for a scheduler over that server and driving it with the
protocol (keyed submits, dispatches, completions, failures, renewals,
cancels, clock moves; each client its own worker and its own history
process). Meanwhile the parent injects every fault of ``faults`` ``times``
times, at random moments of the run. Every call is recorded in the pinned
history format: a call that returned is ``ok`` (its result, or
``ValueError``), a call that raised ``OutcomeUnknown`` -- or anything else
that is not the protocol's ``ValueError``, since a scheduler under test may
signal a lost answer its own way -- is ``info``: it may or may not have taken
effect, and the client carries on (a lost lease is left to expire). Clients
work in rounds separated by a barrier, so the history has quiescent points,
and stop together once the faults are over and ``CALM_ROUNDS`` more rounds
are done, and not before ``min_rounds`` rounds: a run's size does not hang on
how fast the machine happened to be while the faults were injected.

Afterwards, from the history and a fresh scheduler's view of every task
(``Report.checks``, each a name, whether it held, and a line of detail):

* ``acknowledged calls kept``: every task an ``ok`` submit returned exists,
  every task an ``ok`` accepted completion ended is succeeded;
* ``one accepted completion per task``;
* ``leases never overlap`` (from the ``ok`` dispatches, renewals and ends);
* ``every task accounted for``: as many tasks as distinct ``ok`` submit ids,
  plus at most the ``info`` submits; a succeeded task has a completion, ok or info;
* ``linearizable``: the whole history, ``info`` calls included, by
  ``fencepost linearize``'s checker.

Every wait is bounded (``BOUND``); the fault pacing and the faults
themselves (a pause, a server held down) are the only sleeps.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import threading
import time
import traceback
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fencepost.impl.faults.cluster import FAULTS, Cluster
from fencepost.spec.formats.values import to_json
from fencepost.spec.protocol import Status

#: Real seconds any wait of the run may take (a barrier, a client's end) before it fails instead of hanging.
BOUND = 180.0
#: Protocol calls each client makes between two barriers.
OPS_PER_ROUND = 3
#: Ticks a lease lasts.
LEASE = 4
#: Slots of each client's worker.
CAPACITY = 2
#: Real seconds between faults (uniform in this range): calls run between them.
FAULT_GAP = (0.4, 1.2)
#: Rounds every client makes after the last fault, so the run ends in calm water.
CALM_ROUNDS = 5
#: Bound on the linearizability search.
MAX_STATES = 2_000_000
#: Seconds the "refuse" fault keeps the server down; seconds "pause" keeps it stopped.
REFUSE_DOWN = 1.5
PAUSE_SECONDS = 3.0


@dataclass
class Check:
    """One property checked after the run: its name, whether it held, one line of detail."""

    name: str
    held: bool
    detail: str


@dataclass
class Report:
    """What a run did and what held (``ok`` when every check held)."""

    injected: dict[str, int]
    calls: int
    info: int
    errors: int
    tasks: int
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0
    history: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.held for c in self.checks)


# ---------------------------------------------------------------- one client


class _Client:
    """One client process: a scheduler, its worker, the leases it believes it holds, its history."""

    def __init__(self, scheduler: object, name: str, rng: random.Random) -> None:
        self.s = scheduler
        self.name = name
        self.worker = f"{name}w"
        self.rng = rng
        self.events: list[dict] = []
        self.leases: list[tuple[int, int]] = []  # (task_id, token)
        self.tasks = 0  # highest task id this client has seen
        self.submits = 0
        self._last = -1

    def _stamp(self) -> int:
        self._last = max(time.monotonic_ns(), self._last + 1)
        return self._last

    def call(self, op: str, **args: object) -> tuple[str, object]:
        """Make and record one call: ("ok", value), ("error", exc) for ValueError, or ("info", exc)."""
        self.events.append({"process": self.name, "type": "invoke", "op": op, "args": args, "time": self._stamp()})
        try:
            value = getattr(self.s, op)(**args)
        except ValueError as exc:
            self.events.append({"process": self.name, "type": "ok", "error": "ValueError", "time": self._stamp()})
            return "error", exc
        except Exception as exc:  # noqa: BLE001 - OutcomeUnknown, or a scheduler's own way to say so
            self.events.append({"process": self.name, "type": "info", "time": self._stamp()})
            return "info", exc
        self.events.append({"process": self.name, "type": "ok", "result": to_json(op, value), "time": self._stamp()})
        return "ok", value

    def now(self) -> int | None:
        try:
            return self.s.now + self.rng.choice((0, 0, 1, 1, 2))
        except Exception:  # noqa: BLE001 - the server is away; this step is skipped
            return None

    def register(self) -> None:
        """Add this client's worker; after a lost answer, again (a "duplicate" then means it was added)."""
        for _ in range(20):
            kind, _value = self.call("add_worker", worker=self.worker, capacity=CAPACITY)
            if kind != "info":
                return
        raise RuntimeError(f"{self.name}: add_worker lost its answer 20 times in a row")

    def step(self) -> None:
        rng = self.rng
        op = rng.choices(("submit", "dispatch", "end", "renew", "cancel", "advance"), weights=(22, 30, 28, 8, 5, 7))[0]
        if op in ("end", "renew") and not self.leases:
            op = "dispatch"
        if op == "submit":
            # due_at given: a task's place in the queue then does not depend on where among
            # concurrent clock moves its submit took effect, which keeps the history cheap to check
            due_at = self.now()
            if due_at is None:
                return
            self.submits += 1
            kind, value = self.call("submit", priority=rng.randrange(3), due_at=due_at,
                                    max_attempts=rng.choice((None, 2, 3)), key=f"{self.name}-{self.submits}")
            if kind == "ok":
                self.tasks = max(self.tasks, value)
            return
        if op == "cancel":
            if self.tasks:
                now = self.now()
                if now is not None:
                    self.call("cancel", task_id=rng.randint(1, self.tasks), now=now)
            return
        now = self.now()
        if now is None:
            return
        if op == "dispatch":
            kind, lease = self.call("dispatch", worker=self.worker, now=now, duration=LEASE)
            if kind == "ok" and lease is not None:
                self.leases.append((lease.task_id, lease.token))
                self.tasks = max(self.tasks, lease.task_id)
            # info: the lease, if one was made, is left to expire
        elif op == "advance":
            self.call("advance", now=now + rng.choice((0, 1, LEASE)))
        else:
            task_id, token = self.leases[rng.randrange(len(self.leases))]
            if op == "renew":
                kind, outcome = self.call("renew", task_id=task_id, token=token, now=now, duration=LEASE)
                if kind == "ok" and not outcome.accepted:
                    self.leases.remove((task_id, token))
                return
            verb = "complete" if rng.random() < 0.8 else "fail"
            self.call(verb, task_id=task_id, token=token, now=now)
            self.leases.remove((task_id, token))  # ended, refused or unknown: this client is done with it


def _client_main(factory: Callable[[str], object], dsn: str, index: int, seed: int, barrier, stop, decision, ready,
                 out, min_rounds: int = 0) -> None:
    try:
        client = _Client(factory(dsn), f"c{index}", random.Random(f"{seed}:{index}"))
        client.register()
        barrier.wait(BOUND)
        if index == 0:
            ready.set()  # every client has its scheduler: the faults may start
        rounds = 0
        calm = 0  # rounds begun after the last fault was over (client 0 counts)
        while True:
            faults_over = bool(stop.value)  # read before the round: the whole round ran after the faults
            for _ in range(OPS_PER_ROUND):
                client.step()
            rounds += 1
            barrier.wait(BOUND)
            if index == 0:
                calm += faults_over
                decision.value = int(calm >= CALM_ROUNDS and rounds >= min_rounds)
            barrier.wait(BOUND)
            if decision.value:
                break
        out.put(json.dumps({"index": index, "events": client.events, "rounds": rounds}))
    except BaseException:  # noqa: BLE001 - reported at once, so the parent never waits out its bound on a dead client
        barrier.abort()
        out.put(json.dumps({"index": index, "error": traceback.format_exc()}))
        raise SystemExit(1) from None  # the parent says what happened, in one line


# ---------------------------------------------------------------- the run


def run_faults(factory: Callable[[str], object], *, faults: tuple[str, ...] = FAULTS, times: int = 3,
               clients: int = 3, seed: int = 0, cluster: Cluster | None = None,
               max_states: int = MAX_STATES, min_rounds: int = 0) -> Report:
    """Run the workload under faults and check it (see the module docstring).

    ``factory(dsn)`` must return a scheduler over the server at ``dsn``;
    every client's scheduler must be the same scheduler (same storage), empty
    at the start. ``cluster``: one already made (it is left running), else one
    is made and destroyed here. ``min_rounds``: rounds (``OPS_PER_ROUND``
    steps each) every client makes at least, faults or not.

    Raises:
        ValueError: an unknown fault, or ``times``/``clients`` below 1.
        ClusterUnavailable: no cluster can be made here (one line saying why).
        RuntimeError: a client process failed (its traceback is in the message).
    """
    unknown = [f for f in faults if f not in FAULTS]
    if unknown or not faults:
        raise ValueError(f"faults must be some of {', '.join(FAULTS)}: {', '.join(unknown) or 'none given'}")
    if times < 1 or clients < 1:
        raise ValueError(f"times and clients must be >= 1: times={times!r}, clients={clients!r}")
    own = cluster is None
    cluster = Cluster.create() if own else cluster
    started = time.monotonic()
    try:
        before = dict(cluster.injected)
        results = _drive(factory, cluster, faults, times, clients, seed, min_rounds)
        injected = {f: cluster.injected[f] - before[f] for f in faults}
        events = [e for r in results for e in r["events"]]
        events.sort(key=lambda e: (e["time"], e["type"] != "invoke"))
        views = _final_views(factory(cluster.dsn))
    finally:
        if own:
            cluster.destroy()
    report = judge(events, views, injected, max_states)
    report.seconds = time.monotonic() - started
    return report


def _drive(factory, cluster: Cluster, faults, times: int, clients: int, seed: int, min_rounds: int) -> list[dict]:
    ctx = multiprocessing.get_context("fork")  # any factory, importable or not, reaches the clients
    out = ctx.Queue()
    barrier = ctx.Barrier(clients)
    stop = ctx.Value("i", 0)
    decision = ctx.Value("i", 0)
    ready = ctx.Event()
    procs = [ctx.Process(target=_client_main, args=(factory, cluster.dsn, i, seed, barrier, stop, decision, ready, out, min_rounds))
             for i in range(clients)]
    for p in procs:
        p.start()
    problem: list[BaseException] = []
    gone = threading.Event()  # set when the clients ended before the faults began (one failed)

    def inject() -> None:
        try:
            if not ready.wait(BOUND):
                raise RuntimeError(f"the clients were not ready after {BOUND} s")
            if not gone.is_set():
                inject_faults(cluster, faults, times, seed)
        except BaseException as exc:  # noqa: BLE001 - reported after the clients are stopped
            problem.append(exc)
        finally:
            stop.value = 1

    injector = threading.Thread(target=inject, name="fault-injector", daemon=True)
    injector.start()
    try:
        results = [json.loads(out.get(timeout=BOUND * 2)) for _ in procs]
    finally:
        gone.set()
        ready.set()  # an injector still waiting for the clients wakes, and injects nothing
        injector.join(BOUND)
        for p in procs:
            p.join(BOUND)
            if p.is_alive():
                p.kill()
    failed = [r["error"] for r in results if "error" in r]
    if failed:
        raise RuntimeError("a client process failed:\n" + failed[0])
    if problem:
        raise RuntimeError(f"injecting a fault failed: {problem[0]}")
    return sorted(results, key=lambda r: r["index"])


def inject_faults(cluster: Cluster, faults: tuple[str, ...], times: int, seed: int) -> None:
    """Every fault of ``faults`` ``times`` times, in an order shuffled by ``seed``, ``FAULT_GAP`` seconds apart."""
    plan = [f for f in faults for _ in range(times)]
    rng = random.Random(f"{seed}:faults")
    rng.shuffle(plan)
    for fault in plan:
        time.sleep(rng.uniform(*FAULT_GAP))  # pacing: calls run between faults
        cluster.inject(fault, down=REFUSE_DOWN, seconds=PAUSE_SECONDS)


def _final_views(scheduler: object) -> list:
    """Every task's view, ids 1, 2, ... until the first unknown id."""
    views = []
    while True:
        try:
            views.append(scheduler.task(len(views) + 1))
        except ValueError:
            break
    close = getattr(scheduler, "close", None)
    if close is not None:
        close()
    return views


# ---------------------------------------------------------------- judging


def pair(events: list[dict]) -> list[dict]:
    """Each invoke with its completion: op, args, kind ("ok", "error", "info"), result, times; invoke order."""
    open_: dict[str, dict] = {}
    calls = []
    for e in events:
        if e["type"] == "invoke":
            call = {"op": e["op"], "args": e["args"], "process": e["process"], "start": e["time"], "kind": "info", "result": None}
            open_[e["process"]] = call
            calls.append(call)
        else:
            call = open_.pop(e["process"])
            call["end"] = e["time"]
            call["kind"] = "info" if e["type"] == "info" else ("error" if "error" in e else "ok")
            call["result"] = e.get("result")
    return calls


def _accepted(call: dict, op: str) -> bool:
    return call["op"] == op and call["kind"] == "ok" and call["result"]["accepted"]


def leases_by_task(calls: list[dict]) -> dict[int, list[dict]]:
    """Every acknowledged lease, per task in token order, with the time it really ended (``end``).

    A lease ends at its expiry, at an accepted ``renew``'s new end, or at an accepted ``complete``
    or ``fail``; a ``complete`` or ``fail`` whose outcome is unknown (``info``) may have ended it
    too, so it ends there as well: a later lease of the task before the expiry is then no overlap
    if that call took effect, and whether it could have is what the linearizable check decides.
    O(calls).
    """
    leases: dict[int, dict] = {}
    for c in calls:
        if c["op"] == "dispatch" and c["kind"] == "ok" and c["result"] is not None:
            leases[c["result"]["token"]] = dict(c["result"], end=c["result"]["expires_at"])
    for c in calls:
        if any(_accepted(c, op) for op in ("complete", "fail", "renew")) and c["args"]["token"] in leases:
            lease = leases[c["args"]["token"]]
            lease["end"] = c["args"]["now"] + c["args"]["duration"] if c["op"] == "renew" else c["args"]["now"]
    for c in calls:
        if c["op"] in ("complete", "fail") and c["kind"] == "info" and c["args"].get("token") in leases:
            lease = leases[c["args"]["token"]]
            lease["end"] = min(lease["end"], c["args"]["now"])
    per_task: dict[int, list[dict]] = defaultdict(list)
    for token in sorted(leases):
        per_task[leases[token]["task_id"]].append(leases[token])
    return per_task


def judge(events: list[dict], views: list, injected: dict[str, int], max_states: int = MAX_STATES) -> Report:
    """Check a recorded run against its final task views (see the module docstring)."""
    calls = pair(events)
    report = Report(injected, len(calls), sum(c["kind"] == "info" for c in calls),
                    sum(c["kind"] == "error" for c in calls), len(views), history=events)
    by_id = {v.id: v for v in views}
    add = report.checks.append

    ok_ids = {c["result"] for c in calls if c["op"] == "submit" and c["kind"] == "ok"}
    info_submits = sum(1 for c in calls if c["op"] == "submit" and c["kind"] == "info")
    completed = [c["args"]["task_id"] for c in calls if _accepted(c, "complete")]
    lost = sorted(i for i in ok_ids if i not in by_id)
    undone = sorted(t for t in completed if t not in by_id or by_id[t].status is not Status.SUCCEEDED)
    add(Check("acknowledged calls kept", not lost and not undone,
              f"{len(ok_ids)} acknowledged submits, {len(completed)} acknowledged completions; "
              f"missing tasks {lost[:5]}, completions undone {undone[:5]}"))

    twice = sorted(t for t in set(completed) if completed.count(t) > 1)
    add(Check("one accepted completion per task", not twice, f"tasks completed twice: {twice[:5]}"))

    overlaps = []
    for task_id, ls in leases_by_task(calls).items():
        for earlier, later in zip(ls, ls[1:]):
            if later["started_at"] < earlier["end"]:
                overlaps.append(task_id)
    leases = sum(1 for c in calls if c["op"] == "dispatch" and c["kind"] == "ok" and c["result"])
    add(Check("leases never overlap", not overlaps, f"{leases} acknowledged leases; overlapping on tasks {overlaps[:5]}"))

    maybe_completed = {c["args"]["task_id"] for c in calls if c["op"] == "complete" and (c["kind"] == "info" or _accepted(c, "complete"))}
    unexplained = sorted(v.id for v in views if v.status is Status.SUCCEEDED and v.id not in maybe_completed)
    counted = len(ok_ids) <= len(views) <= len(ok_ids) + info_submits
    add(Check("every task accounted for", counted and not unexplained,
              f"{len(views)} tasks for {len(ok_ids)} acknowledged and {info_submits} unknown submits; "
              f"succeeded without a completion: {unexplained[:5]}"))

    add(_linearizable(events, max_states))
    return report


def _linearizable(events: list[dict], max_states: int) -> Check:
    from fencepost.spec.checkers import linearize
    from fencepost.spec.formats.history import loads_history

    text = "".join(json.dumps(e) + "\n" for e in events)
    history = loads_history(text, "<faults run>")
    verdict = linearize.check_history(history, max_states=max_states)
    if verdict.linearizable:
        return Check("linearizable", True, f"{len(history.calls)} calls in {verdict.windows} windows, {verdict.states:,} states")
    said = "undecided: the search passed its bound" if verdict.linearizable is None else \
        " ".join(linearize.report(history, verdict)[:3])
    return Check("linearizable", False, said)


def write_history(report: Report, path: str | Path) -> None:
    """The run's history, in the pinned format (``fencepost linearize`` reads it)."""
    Path(path).write_text("".join(json.dumps(e) + "\n" for e in report.history))


def table(report: Report) -> list[str]:
    """The report as Markdown: the faults injected, then what was checked and whether it held."""
    lines = ["| fault | injected |", "|---|---|"]
    lines += [f"| {fault} | {count} |" for fault, count in report.injected.items()]
    lines += ["", f"{report.calls} calls ({report.info} info, {report.errors} ValueError), {report.tasks} tasks, "
              f"{report.seconds:.0f} s", "", "| checker | valid? | detail |", "|---|---|---|"]
    lines += [f"| {c.name} | {'true' if c.held else 'FALSE'} | {c.detail} |" for c in report.checks]
    return lines


def postgres_factory(dsn: str) -> object:
    """A ``PostgresScheduler`` for a fault run: one schema, calls cut after 1 s (so a pause bites),
    20 reconnect tries (15.6 to 31.2 s: a restart on a loaded machine can take longer than the default's)."""
    from fencepost.impl.postgres.scheduler import PostgresScheduler
    from fencepost.impl.postgres.session import Reconnect

    return PostgresScheduler(dsn, schema="fencepost", call_timeout=1.0, reconnect=Reconnect(attempts=20))


if __name__ == "__main__":  # a quick look: python -m fencepost.impl.faults.inject
    result = run_faults(postgres_factory, times=int(os.environ.get("FAULT_TIMES", "2")))
    print("\n".join(table(result)))
