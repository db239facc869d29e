"""The narration: what happened at each step of a timeline, in the words every view shows.

The frame store (``story.timeline``) records the task rows at every frame; this
module words each step from them: why a task was the pick, which lease
expired and what became of its task, why a completion was refused, where the
implementation parts from the model. The TUI's log shows these words, and so
can any other view (an HTML report): nothing here imports Textual or a
widget, only the spec's scenario format and ``story.rows``.

Everything is read from the protocol's public task views and return values.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from fencepost.spec.formats.scenario import BATCH_OF, Step, StepResult
from fencepost.spec.protocol import RESTART
from fencepost.spec.variants import show_span
from fencepost.story.rows import Change, Row, same_lease

#: Event kinds; the stylesheet gives each its colour.
EVENT_KINDS = (
    "call",  # the step's call and result (the first log line of every step)
    "worker",  # a worker joined
    "submit",  # a task was submitted
    "dispatch",  # a task was leased, and why it was the pick
    "idle",  # a dispatch that leased nothing, and why
    "expiry",  # a lease reached its end and the task was taken back
    "rejection",  # complete, fail, renew or cancel refused, with the reason in words
    "complete",  # a completion accepted
    "fail",  # an explicit failure accepted (retry, failed or cancelled)
    "cancel",  # a cancellation accepted (or requested, for running work)
    "renew",  # a lease extended
    "time",  # time moved and nothing else happened
    "restart",  # the scheduler was reopened from its storage, with what it recovered
    "prune",  # final tasks were forgotten: they leave the Done column, and why
    "error",  # the call was invalid and raised
    "mismatch",  # the step's expect did not hold
)

#: Kinds that ``n``/``N`` jump between.
NOTABLE_KINDS = frozenset({"expiry", "rejection"})


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened at one step, in words."""

    kind: str  # one of EVENT_KINDS
    text: str
    task_id: int | None = None


#: The log's first line of every frame: the widget words it from the frame.
CALL = Event("call", "")


#: What became of a task whose lease expired, by its status after the step.
_AFTER_EXPIRY = {
    "running": "leased again at once to {worker} under token {token}",
    "pending": "task {id} is pending again",
    "failed": "no attempts left ({attempts} used): task {id} failed",
    "cancelled": "a cancellation was requested: task {id} cancelled",
}

#: What an accepted explicit failure did, by the task's status after it.
_AFTER_FAIL = {
    "retry_wait": "task {id} failed attempt {attempts}: retries once due at t={due_at} (backoff)",
    "failed": "task {id} failed attempt {attempts} with no attempts left: failed",
    "cancelled": "task {id} failed and a cancellation was requested: cancelled",
}


def lease_text(start: int | None, end: int | None, interval: str = "half-open") -> str:
    """A lease as the interval it is: ``[5, 10)``, or ``[5, 10]`` under ``interval=closed`` (live at its end)."""
    return show_span(start, end, interval)


class LiveSide(Protocol):
    """What the narration reads of the side being recorded: its live rows and worker loads."""

    rows: dict[int, Row]
    duplicate: bool  # the last submit returned a task submitted before (by its key)

    def loads(self) -> tuple: ...


class Waiting(Protocol):
    """Who waits: the task a dispatch at ``now`` would pick, and the one due soonest after ``now``."""

    def best_due(self, now: int) -> Row | None: ...

    def soonest(self, now: int) -> Row | None: ...


class Narrator:
    """Words each step of one side as it is recorded, in order.

    ``events(step, result, changes, now)`` is called once per step, after the
    side's rows were refreshed: it reads the rows as they are after the step
    and remembers the leases that ended by expiry, so a later rejection can
    name the lease it came too late for.
    """

    def __init__(self, side: LiveSide, waiting: Waiting, interval: str = "half-open") -> None:
        self._side = side
        self._interval = interval  # the interval variant in force: how a lease's span is worded
        self._waiting = waiting
        # (task id, token) -> (start, end) of every lease that ended by expiry, for rejection texts
        self._expired: dict[tuple[int, int | None], tuple[int | None, int | None]] = {}
        # task id -> every token a dispatch leased it under: a rejection of any other token
        # is of a token this task never had, which is not the lesson of a stale one
        self._issued: dict[int, set[int]] = {}

    def events(self, step: Step, result: StepResult, changes: tuple[Change, ...], now: int) -> list[Event]:
        if result.error is not None:
            return [Event("error", f"{step.op} raised: {result.error}")]
        events = self._expiries(step, result, changes, now)
        args, op = step.args, step.op
        if op == "add_worker":
            events.append(Event("worker", f"worker {args['worker']} joins with capacity {args['capacity']}"))
        elif op == "submit":
            events.append(self._submit_event(step, result, now))
        elif op == "dispatch":
            events.append(self._dispatch_event(step, result, now))
        elif op in ("complete", "fail", "renew"):
            events.append(self._lease_call_event(step, result, changes))
        elif op == "cancel":
            events.append(self._cancel_event(step, result))
        elif op == "advance" and not events:
            events.append(Event("time", f"time advances to t={now}; no lease ends"))
        elif op == "prune":
            events.append(self._prune_event(step, result, changes))
        elif op == RESTART:
            events.append(self._restart_event(changes, now))
        elif op in BATCH_OF:
            events += self._batch_events(step, result, changes, now)
        return events

    @staticmethod
    def _prune_event(step: Step, result: StepResult, changes: tuple[Change, ...]) -> Event:
        """Which final tasks were forgotten (their rows leave Done), and the rule that chose them."""
        before = step.args.get("before")
        gone = sorted(task_id for task_id, previous, after in changes if after is None and previous is not None)
        if not gone:
            return Event("prune", f"prune forgets nothing: no final task ended before t={before}")
        names = ", ".join(map(str, gone))
        return Event("prune", f"prune forgets {len(gone)} final task{'s' if len(gone) != 1 else ''} ({names}): "
                              f"each ended before t={before}, so it leaves Done; task() of it now says it was "
                              f"forgotten, and its id is never given again", gone[0])
    def _batch_events(self, step: Step, result: StepResult, changes: tuple[Change, ...], now: int) -> list[Event]:
        """A batch is one step: one event per part, worded as its single call, numbered from 1.

        ``dispatch_many`` also says why it stopped short of its limit.
        """
        single, args, values = BATCH_OF[step.op], step.args, list(result.value or ())
        parts: list[Event] = []
        if single == "submit":
            for entry, task_id in zip(args.get("tasks", ()), values):
                parts.append(self._submit_event(Step(op="submit", args=dict(entry)), StepResult(value=task_id), now))
        elif single == "dispatch":
            call = Step(op="dispatch", args={k: args[k] for k in ("worker", "now", "duration")})
            parts = [self._dispatch_event(call, StepResult(value=lease), now) for lease in values]
            if len(values) < args.get("limit", 0):
                parts.append(self._dispatch_event(call, StepResult(value=None), now))
        else:
            for (task_id, token), outcome in zip(args.get("reports", ()), values):
                call = Step(op=single, args={"task_id": task_id, "token": token, "now": args.get("now")})
                parts.append(self._lease_call_event(call, StepResult(value=outcome), changes))
        total = len(parts)
        return [Event(e.kind, f"{step.op} [{n}/{total}] {e.text}", e.task_id) for n, e in enumerate(parts, 1)] or [
            Event("time", f"{step.op} of nothing at t={now}")]

    def _restart_event(self, changes: tuple[Change, ...], now: int) -> Event:
        """What the reopened scheduler recovered, by status; and what it shows differently, if anything."""
        rows = self._side.rows
        counts: dict[str, int] = {}
        for row in rows.values():
            counts[row.status] = counts.get(row.status, 0) + 1
        held = ", ".join(f"{n} {status}" for status, n in counts.items())
        text = f"restart: the scheduler was reopened at t={now}; {len(rows)} task{'s' if len(rows) != 1 else ''} recovered"
        if held:
            text += f" ({held})"
        if changes:
            text += f"; {len(changes)} changed on reopening: {', '.join(f'#{task_id}' for task_id, _, _ in changes)}"
        return Event("restart", text)

    def _expiries(self, step: Step, result: StepResult, changes: tuple[Change, ...], now: int) -> list[Event]:
        """Leases that ended at this step other than by their own accepted complete or fail."""
        own: set[tuple[object, object]] = set()  # (task id, token) of the step's own accepted reports
        if step.op in ("complete", "fail") and getattr(result.value, "accepted", False):
            own.add((step.args.get("task_id"), step.args.get("token")))
        elif step.op in ("complete_many", "fail_many") and isinstance(result.value, (list, tuple)):
            own.update(tuple(pair) for pair, outcome in zip(step.args.get("reports", ()), result.value)
                       if getattr(outcome, "accepted", False) and isinstance(pair, (list, tuple)))
        events = []
        for task_id, before, after in changes:
            if before is None or before.status != "running":
                continue
            if same_lease(before, after):
                continue
            if (task_id, before.token) in own:
                continue
            self._expired[(task_id, before.token)] = (before.started_at, before.expires_at)
            noticed = "" if before.expires_at == now else f" (noticed at t={now})"
            ended = after.status
            if ended == "cancelled" and not before.cancel_requested:
                ended = "pending"  # the expiry made it pending; the step's own cancel then ended it
            then = _AFTER_EXPIRY.get(ended, "task {id} is {status}").format(**after._asdict())
            events.append(
                Event(
                    "expiry",
                    f"lease {lease_text(before.started_at, before.expires_at, self._interval)} of task {task_id} "
                    f"on {before.worker} (token {before.token}) expired at t={before.expires_at}{noticed}: {then}",
                    task_id,
                )
            )
        return events

    def _submit_event(self, step: Step, result: StepResult, now: int) -> Event:
        task_id, args = result.value, step.args
        if self._side.duplicate:
            return Event("submit", f"submit with key {args.get('key')!r} returned task {task_id}: already submitted", task_id)
        row = self._side.rows.get(task_id)
        due = row.due_at if row else args.get("due_at", now)
        parts = [f"task {task_id} submitted: priority {args.get('priority', 0)}"]
        if isinstance(args.get("key"), str):
            parts[0] = f"task {task_id} submitted with key {args['key']!r}: priority {args.get('priority', 0)}"
        parts.append(f"due t={due}" + (" (not yet due)" if due > now else ""))
        if args.get("max_attempts") is not None:
            parts.append(f"at most {args['max_attempts']} attempt{'s' if args['max_attempts'] != 1 else ''}")
        if args.get("retry_delay", 1) != 1:
            parts.append(f"retry delay {args['retry_delay']}")
        return Event("submit", ", ".join(parts), task_id)

    def _dispatch_event(self, step: Step, result: StepResult, now: int) -> Event:
        worker = step.args["worker"]
        lease = result.value
        if lease is None:
            load = next((w for w in self._side.loads() if w.name == worker), None)
            if load is not None and load.used >= load.capacity:
                return Event("idle", f"no dispatch: {worker} is full ({load.used}/{load.capacity}); no token used")
            soonest = self._waiting.soonest(now)
            if soonest is not None:
                return Event(
                    "idle",
                    f"no dispatch for {worker}: nothing is due at t={now} "
                    f"(next: task {soonest.id} at t={soonest.due_at}); no token used",
                )
            return Event("idle", f"no dispatch for {worker}: nothing is waiting; no token used")
        self._issued.setdefault(lease.task_id, set()).add(lease.token)
        head = (
            f"task {lease.task_id} → {worker}, token {lease.token}, "
            f"lease {lease_text(lease.started_at, lease.expires_at, self._interval)}"
        )
        chosen = self._side.rows.get(lease.task_id)
        if chosen is None:
            return Event("dispatch", head, lease.task_id)
        rival = self._waiting.best_due(now)  # the chosen task is running now: this is the runner-up
        if rival is None:
            why = "the only task due"
        elif rival.priority != chosen.priority:
            why = f"priority {chosen.priority} beats task {rival.id}'s {rival.priority}"
        elif rival.due_at != chosen.due_at:
            why = f"same priority {chosen.priority}; due t={chosen.due_at} beats task {rival.id}'s t={rival.due_at}"
        else:
            why = f"same priority {chosen.priority} and due t={chosen.due_at}; id {chosen.id} comes before {rival.id}"
        return Event("dispatch", f"{head}: {why}", lease.task_id)

    def _lease_call_event(self, step: Step, result: StepResult, changes: tuple[Change, ...]) -> Event:
        op, task_id, token = step.op, step.args["task_id"], step.args["token"]
        row = self._side.rows.get(task_id)
        if not getattr(result.value, "accepted", False):
            reason = self._reason(result, task_id, token, changes)
            return Event("rejection", f"rejected {op} of task {task_id} with token {token}: {reason}", task_id)
        # From here on the words describe the scheduler's state after the step, never the
        # call's arguments: an implementation that wrongly accepts a stale token is shown as it is.
        if row is None:
            return Event(op, f"{op} of task {task_id} accepted", task_id)
        if op == "complete":
            before = next((b for changed, b, _ in changes if changed == task_id), None)
            held = before.token if before is not None and before.status == "running" else token
            under = f"token {held}" if held == token else f"its lease was under token {held}, not the {token} given"
            return Event("complete", f"task {task_id} {row.status} ({under}); its slot is free at once", task_id)
        if op == "renew":
            lease = lease_text(row.started_at, row.expires_at, self._interval)
            under = f"still token {row.token}" if row.token == token else f"under token {row.token}, not the {token} given"
            return Event("renew", f"lease of task {task_id} renewed: now {lease}, {under}", task_id)
        text = _AFTER_FAIL.get(row.status, "task {id} failed: now {status}").format(**row._asdict())
        return Event("fail", text, task_id)

    def _cancel_event(self, step: Step, result: StepResult) -> Event:
        task_id = step.args["task_id"]
        row = self._side.rows.get(task_id)
        if not getattr(result.value, "accepted", False):
            return Event("rejection", f"rejected cancel of task {task_id}: {self._reason(result, task_id, None)}", task_id)
        if row is not None and row.status == "running":
            return Event(
                "cancel",
                f"cancellation requested for running task {task_id}: cooperative, it keeps its lease "
                f"on {row.worker} until it completes, fails or the lease ends",
                task_id,
            )
        if row is not None and row.attempts:
            tries = f"{row.attempts} attempt{'s' if row.attempts != 1 else ''}"
            return Event("cancel", f"task {task_id} cancelled while waiting, after {tries}; it never starts again", task_id)
        return Event("cancel", f"task {task_id} cancelled before it was claimed; it never starts", task_id)

    def _reason(self, result: StepResult, task_id: int, token: int | None, changes: tuple[Change, ...] = ()) -> str:
        """A rejection's reason in words, from the implementation's reason code and views.

        ``changes`` are the step's; a report refused inside a batch may name a task a later
        report of the same batch ended, so its lease is read from before the step.
        """
        reason = getattr(result.value, "reason", None)
        row = self._side.rows.get(task_id)
        if token is not None and reason == "stale_token" and row is not None and row.status != "running":
            # Refused for a token while the task ran: a later part of the same batch ended it since.
            row = next((b for changed, b, _ in changes if changed == task_id and b is not None), row)
        status = row.status if row else "unknown"
        if token is not None and token not in self._issued.get(task_id, ()):
            # A shrunk counterexample may quote any number: say so, rather than call it stale.
            had = sorted(self._issued.get(task_id, ()))
            if not had:
                where = f"task {task_id} was never leased"
            elif row is not None and row.status == "running":
                where = f"task {task_id} runs under token {row.token}" + _leases_had(had, row.token)
            else:
                where = f"task {task_id} is {status}" + _leases_had(had)
            return f"token {token} is a token this task never had: {where} (the scheduler's reason: {reason or 'none given'})"
        if reason == "stale_token" and row is not None:
            return f"token {token} is stale: task {task_id} now runs under token {row.token}"
        if reason == "lease_expired":
            start, end = self._expired.get((task_id, token), (None, None))
            if end is not None:
                return f"lease {lease_text(start, end, self._interval)} expired at t={end}"
            return f"the lease of token {token} has expired"
        if reason == "not_running":
            return f"task {task_id} is not running (it is {status})"
        if reason == "already_final":
            return f"task {task_id} is already {status}, and final states never change"
        if reason == "cancel_requested":
            return f"a cancellation was requested for task {task_id}, so its lease can't be extended"
        return str(reason) if reason else "refused (no reason given)"


def _leases_had(tokens: list[int], running: int | None = None) -> str:
    """``tokens`` (every token a task was leased under) as a parenthesis, or nothing when it
    would only repeat the one it runs under."""
    if tokens == [running]:
        return ""
    return f" (its leases had token{'s' if len(tokens) > 1 else ''} {', '.join(map(str, tokens))})"


def view_difference(ids: Iterable[int], impl_rows: dict[int, Row], model_rows: dict[int, Row]) -> str | None:
    """The first task whose implementation view differs from the model's, in words."""
    for task_id in ids:
        mine, theirs = impl_rows.get(task_id), model_rows.get(task_id)
        if (mine is None and theirs is None) or (mine is not None and theirs is not None and mine.view == theirs.view):
            continue  # both forgot it (prune), or both show it alike
        if mine is None or theirs is None:
            where = "the model" if mine is None else "the implementation"
            return f"task {task_id} exists in {where} only"
        fields = [name for name, a, b in zip(Row._fields[:9], mine.view, theirs.view) if a != b]
        return f"task {task_id}: " + ", ".join(
            f"{name} {getattr(mine, name)!r} (model: {getattr(theirs, name)!r})" for name in fields
        )
    return None


def result_divergence(impl_said: str, model_said: str) -> str:
    """A step whose answer differs from the model's, in words."""
    return f"returned {impl_said}; the model returned {model_said}"


def mismatch_event(mismatch: str) -> Event:
    """The log line of a step whose ``expect`` did not hold."""
    return Event("mismatch", f"expect failed: {mismatch}")
