"""The model's reasons: why it answers a call as it does, in the contract's words.

``explain(state, op, args)`` says, with the call's own values, which leases this
call's expiry ended and how, which task a dispatch picks and why no other,
which token it hands out, why a report is accepted or refused and what that
does. It reads the same guards the transitions use (``expire``,
``lease_live``, ``eligible``, ``_rejection``, ``_budget_spent`` in
``spec.model``), so it cannot tell a different story from theirs; a test
checks it against ``apply`` on every call of a small exploration. The
checkers build a counterexample's ``why:`` line from these.

Split from ``spec.model`` so the model stays the transitions alone; it
imports the model (never the other way) and its private guards by name, on
purpose: a reason worded from a copy of a guard could drift from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from fencepost.spec.model import (
    FINAL_STATUSES, Reason, State, Status, Task, Variants, _MODEL_PICKS, _budget_spent, _dispatch, _rejection,
    _revives, apply, capacity_of, eligible, expire, is_due, key_record, lease_live, load, show_token,
)
from fencepost.spec.variants import show_span


#: Where docs/contract.md states each rule ``explain`` names (a numbered rule, a row of its table, a section).
CONTRACT = "docs/contract.md"


@dataclass(frozen=True, slots=True)
class Because:
    """One reason for what a call does.

    ``rule`` names the rule (stable: two counterexamples breaking the same rule
    name it alike), ``text`` says it with this call's values (task, lease,
    token, time), ``section`` is where docs/contract.md states it. ``task_id``
    and ``worker`` say what it is about (None: nothing in particular), ``entry``
    which entry of a batch (0 for a single call), and ``decides`` what it
    decides: ``"result"`` (the call's answer), ``"token"`` (a lease's token),
    ``"view"`` (the task's view afterwards) or ``"room"`` (a worker's free slots).
    """

    rule: str
    text: str
    section: str
    task_id: int | None = None
    worker: str | None = None
    entry: int = 0
    decides: frozenset[str] = frozenset({"result"})


_VIEW = frozenset({"view"})
_VIEW_AND_ROOM = frozenset({"view", "room"})
_RESULT_AND_VIEW = frozenset({"result", "view"})


def _span(variants: Variants, started_at: int | None, expires_at: int | None) -> str:
    return show_span(started_at, expires_at, variants.interval)


def _live_rule(variants: Variants) -> str:
    if variants.interval == "closed":
        return "a lease is live on [started_at, expires_at] (interval=closed)"
    return "a lease is live on [started_at, expires_at)"


def explain(state: State, op: str, args: dict[str, object]) -> list[Because]:
    """Why the model answers ``op(**args)`` in ``state`` as ``apply`` does, reason by reason, in the order they act.

    A call ``apply`` refuses has one reason, its ``ValueError`` (rule 2). A
    batch's reasons are its single calls' in turn, each with its ``entry``.
    Never raises. O(T) per single call.
    """
    try:
        apply(state, op, dict(args))
    except ValueError as exc:
        return [Because("invalid-argument", f"every invalid argument raises ValueError and changes nothing: {exc}",
                        "rule 2")]
    if op in _BATCH_SINGLES:
        return _explain_batch(state, op, args)
    explainer = _EXPLAINERS.get(op)
    return explainer(state, **args) if explainer is not None else []


def _explain_expiry(state: State, now: int) -> tuple[State, list[Because]]:
    """The leases a timed call at ``now`` ends before anything else, each with how its task ends."""
    variants = state.variants
    reasons = []
    for t in state.tasks:
        if t.status is Status.RUNNING and not lease_live(variants, t.expires_at, now):
            span = _span(variants, t.started_at, t.expires_at)
            ended = f"{_live_rule(variants)}: at t={now} task {t.id}'s lease {span} (token {show_token(t.token)}, {t.worker}) has ended"
            if t.cancel_requested:
                reasons.append(Because("expiry-cancelled", f"{ended} with a cancel requested, so task {t.id} is cancelled",
                                       "rule 3", t.id, t.worker, decides=_VIEW_AND_ROOM))
            elif _budget_spent(t) and variants.exhaust == "at-expiry":
                reasons.append(Because(
                    "expiry-budget-spent",
                    f"{ended} with its attempt budget spent ({t.attempts} of max_attempts {t.max_attempts}), so task {t.id} is failed",
                    "rule 3", t.id, t.worker, decides=_VIEW_AND_ROOM))
            else:
                reasons.append(Because("expiry-pending", f"{ended}, so task {t.id} is pending again and {t.worker}'s slot is free",
                                       "rule 3", t.id, t.worker, decides=_VIEW_AND_ROOM))
    return expire(state, now), reasons


def _not_eligible(state: State, t: Task, now: int) -> Because | None:
    """Why task ``t`` may not be dispatched at ``now`` (after expiry), or None if it may."""
    variants = state.variants
    if t.forgotten:
        return Because("final-never-runs", f"task {t.id} is final and was pruned", "rule 4", t.id)
    if t.status is Status.CANCELLED:
        return Because("cancelled-never-starts", f"task {t.id} is cancelled, and a cancelled task never starts", "rule 4", t.id)
    if t.status in FINAL_STATUSES:
        return Because("final-never-runs", f"task {t.id} is final ({t.status.value}), and a final task never runs again",
                       "rule 4", t.id)
    if t.status is Status.RUNNING:
        return Because("one-live-lease", f"task {t.id} is running under {t.worker}'s lease {_span(variants, t.started_at, t.expires_at)} "
                       f"(token {show_token(t.token)}), live at t={now}: a task has at most one live lease", "dispatch", t.id)
    if not is_due(variants, t.due_at, now):
        waiting = "waits in retry_wait" if t.status is Status.RETRY_WAIT else "is not due"
        return Because("not-due", f"task {t.id} {waiting} until t={t.due_at}, after t={now}: nothing is dispatched before its due time",
                       "dispatch", t.id)
    return None


def _explain_dispatch(state: State, worker: str, now: int, duration: int) -> list[Because]:
    state, reasons = _explain_expiry(state, now)
    variants = state.variants
    capacity, running = capacity_of(state, worker), load(state, worker)
    if variants.capacity == "per-worker" and running >= capacity:
        return reasons + [Because("worker-full", f"{worker} is full ({running} of capacity {capacity}), so dispatch hands out nothing",
                                  "dispatch", None, worker, decides=frozenset({"result", "room"}))]
    if variants.exhaust == "at-dispatch":
        state, result = _dispatch(state, worker, now, duration, _MODEL_PICKS)
        if result is None:
            return reasons + [Because("nothing-eligible", f"no task is eligible at t={now}, so dispatch hands out nothing", "dispatch")]
    ready = eligible(state)
    if not ready:
        blocked = [why for t in state.tasks if (why := _not_eligible(state, t, now)) is not None]
        names = "; ".join(why.text for why in blocked) or "no task was submitted"
        return reasons + blocked + [Because("nothing-eligible", f"no task is eligible at t={now} ({names}), so dispatch hands out nothing",
                                            "dispatch")]
    chosen = ready[0]
    room = f"{worker} has room ({running} of capacity {capacity})" if variants.capacity == "per-worker" else f"{worker} takes any number"
    order = {"priority": "highest priority, then earliest due_at, then lowest id", "fifo": "earliest due_at, then lowest id",
             "priority-id": "highest priority, then lowest id", "any": "any eligible task may go; the model takes the contract's first"}
    reasons.append(Because("worker-room", f"{room} and task {chosen.id} is eligible, so dispatch must lease it",
                           "dispatch", chosen.id, worker, decides=frozenset({"result", "room"})))
    if len(ready) > 1:
        reasons.append(Because("dispatch-order", f"task {chosen.id} comes first of the eligible {', '.join(str(t.id) for t in ready)} "
                               f"({order[variants.order]})", "dispatch", chosen.id, worker))
    if variants.tokens == "opaque":
        token_text = "each lease carries a token never handed out before"
    else:
        token_text = (f"tokens are handed out 1, 2, 3... across the scheduler, one per lease: {state.last_token} issued so far, "
                      f"so this lease's is {state.last_token + 1}")
    reasons.append(Because("fresh-token", token_text, "dispatch", chosen.id, worker, decides=frozenset({"token"})))
    reasons.append(Because("lease-span", f"the lease of task {chosen.id} is {_span(variants, now, now + duration)}: "
                           f"[now, now + duration), attempt {chosen.attempts + 1}", "dispatch", chosen.id, worker, decides=_RESULT_AND_VIEW))
    return reasons


def _refusal(state: State, t: Task, token: object, now: int, op: str) -> Because | None:
    """Why ``token`` may not act on task ``t`` (after expiry), as ``_rejection`` decides it; None if it may."""
    variants = state.variants
    late = op in ("complete", "fail")
    refused = _rejection(t, token, variants, late=late)
    if refused is None:
        return None
    shown = show_token(token)
    reason = refused.reason
    if reason == Reason.STALE_TOKEN:
        text = (f"task {t.id} runs under token {show_token(t.token)} ({t.worker}'s lease {_span(variants, t.started_at, t.expires_at)}), "
                f"so token {shown} is stale: only the current lease's token acts on it")
    elif reason == Reason.LEASE_EXPIRED:
        text = f"token {shown} was task {t.id}'s last lease and it has expired: a lease that ended stays ended"
    elif reason == Reason.ALREADY_FINAL:
        text = f"task {t.id} is final ({t.status.value}): no token acts on a final task"
    else:
        text = f"task {t.id} is {t.status.value}, not running: no token acts on it"
    return Because(str(getattr(reason, "value", reason)).replace("_", "-"), f"{op} is rejected ({getattr(reason, 'value', reason)}): {text}",
                   "rejection reasons", t.id, t.worker)


def _explain_report(op: str, state: State, task_id: int, token: object, now: int) -> list[Because]:
    state, reasons = _explain_expiry(state, now)
    variants = state.variants
    t = state.tasks[task_id - 1]
    if op == "complete" and variants.repeat == "accept" and t.status is Status.SUCCEEDED and token in t.tokens:
        return reasons + [Because("repeat-accept", f"task {t.id} succeeded with token {show_token(token)} before, and under repeat=accept "
                                  "a repeated complete is accepted and changes nothing", "declared variants", t.id)]
    refused = _refusal(state, t, token, now, op)
    if refused is not None:
        return reasons + [refused]
    if t.status is Status.RUNNING:
        current = (f"token {show_token(token)} is task {t.id}'s current lease {_span(variants, t.started_at, t.expires_at)} "
                   f"to {t.worker}, live at t={now}, so {op} is accepted")
    else:
        current = f"token {show_token(token)} was task {t.id}'s lease, nobody took the task since, and late=accept-unclaimed accepts it"
    reasons.append(Because("current-lease", current, "rejection reasons", t.id, t.worker))
    worker = t.worker
    if op == "complete":
        reasons.append(Because("complete-succeeds", f"an accepted complete ends task {t.id} succeeded at t={now}"
                               + (f" and frees {worker}'s slot at once" if worker else ""), "complete", t.id, worker, decides=_VIEW_AND_ROOM))
    elif t.cancel_requested:
        reasons.append(Because("fail-cancelled", f"a cancel was requested, so the accepted fail ends task {t.id} cancelled",
                               "fail", t.id, worker, decides=_VIEW_AND_ROOM))
    elif _budget_spent(t):
        reasons.append(Because("fail-budget-spent", f"attempt {t.attempts} of max_attempts {t.max_attempts} is spent, so the accepted "
                               f"fail ends task {t.id} failed", "fail", t.id, worker, decides=_VIEW_AND_ROOM))
    else:
        backoff = t.retry_delay * 2 ** (t.attempts - 1)
        reasons.append(Because("fail-retry", f"the accepted fail of attempt {t.attempts} puts task {t.id} in retry_wait until "
                               f"now + retry_delay * 2**(attempts - 1) = {now} + {t.retry_delay} * 2**{t.attempts - 1} = {now + backoff}",
                               "fail", t.id, worker, decides=_VIEW_AND_ROOM))
    return reasons


def _explain_complete(state: State, task_id: int, token: object, now: int) -> list[Because]:
    return _explain_report("complete", state, task_id, token, now)


def _explain_fail(state: State, task_id: int, token: object, now: int) -> list[Because]:
    return _explain_report("fail", state, task_id, token, now)


def _explain_renew(state: State, task_id: int, token: object, now: int, duration: int) -> list[Because]:
    state, reasons = _explain_expiry(state, now)
    t = state.tasks[task_id - 1]
    if _revives(state, t, token):
        return reasons + [Because("revive-unclaimed", f"under revive=unclaimed token {show_token(token)} revives task {t.id}'s lapsed lease "
                                  f"as [{now}, {now + duration})", "declared variants", t.id, t.expired_worker, decides=_RESULT_AND_VIEW)]
    refused = _refusal(state, t, token, now, "renew")
    if refused is not None:
        return reasons + [refused]
    if t.cancel_requested:
        return reasons + [Because("cancel-requested", f"a cancel was requested for task {t.id}, so renew is rejected (cancel_requested): "
                                  "a task asked to stop cannot be kept alive", "renew", t.id, t.worker)]
    return reasons + [Because("renew-extends", f"token {show_token(token)} is task {t.id}'s current lease, so renew sets its end to "
                              f"now + duration = {now + duration}, keeping the token", "renew", t.id, t.worker, decides=_RESULT_AND_VIEW)]


def _explain_cancel(state: State, task_id: int, now: int) -> list[Because]:
    state, reasons = _explain_expiry(state, now)
    t = state.tasks[task_id - 1]
    if t.status in FINAL_STATUSES:
        return reasons + [Because("already-final", f"task {t.id} is final ({t.status.value}), so cancel is rejected (already_final)",
                                  "cancel", t.id)]
    if t.status is Status.RUNNING:
        return reasons + [Because("cancel-running", f"task {t.id} is running, so cancel only sets cancel_requested: it keeps its lease "
                                  f"{_span(state.variants, t.started_at, t.expires_at)} until complete, fail or expiry ends it",
                                  "cancel", t.id, t.worker, decides=_RESULT_AND_VIEW)]
    return reasons + [Because("cancel-waiting", f"task {t.id} has not started ({t.status.value}), so cancel ends it cancelled at once; "
                              "a cancelled task never starts", "cancel", t.id, decides=_RESULT_AND_VIEW)]


def _explain_submit(state: State, priority: int = 0, due_at: int | None = None, max_attempts: int | None = None,
                    retry_delay: int = 1, key: str | None = None) -> list[Because]:
    known = key_record(state, key)
    if known is not None:
        return [Because("key-duplicate", f"key {key!r} was submitted as task {known.task_id} with the same arguments, so this submit "
                        f"returns {known.task_id} and changes nothing", "idempotency keys", known.task_id)]
    task_id = len(state.tasks) + 1
    due = state.now if due_at is None else due_at
    return [Because("submit-id", f"ids are 1, 2, 3... in submit order, so this is task {task_id}, pending and due at t={due}",
                    "submit", task_id, decides=_RESULT_AND_VIEW)]


def _explain_add_worker(state: State, worker: str, capacity: int) -> list[Because]:
    return [Because("add-worker", f"{worker} joins with room for {capacity} lease{'s' if capacity != 1 else ''}", "add_worker",
                    None, worker, decides=frozenset({"result", "room"}))]


def _explain_advance(state: State, now: int) -> list[Because]:
    after, reasons = _explain_expiry(state, now)
    if reasons:
        return reasons
    return [Because("time-only", f"advance only moves time to t={now}; no lease ends by then", "advance", decides=_RESULT_AND_VIEW)]


def _explain_prune(state: State, before: int, now: int) -> list[Because]:
    state, reasons = _explain_expiry(state, now)
    gone = [t.id for t in state.tasks if not t.forgotten and t.status in FINAL_STATUSES and t.ended_at < before]
    kept = [f"task {t.id} ended at t={t.ended_at}" for t in state.tasks
            if not t.forgotten and t.status in FINAL_STATUSES and t.ended_at >= before]
    told = f"tasks {', '.join(map(str, gone))}" if gone else "no task"
    text = f"prune(before={before}) forgets every final task that ended before t={before}: {told}, {len(gone)} in all"
    if kept:
        text += f" ({'; '.join(kept)}, not before {before})"
    return reasons + [Because("prune-forgets", text, "prune", gone[0] if len(gone) == 1 else None, decides=_RESULT_AND_VIEW)]


_EXPLAINERS: dict[str, Callable[..., list[Because]]] = {
    "add_worker": _explain_add_worker,
    "submit": _explain_submit,
    "dispatch": _explain_dispatch,
    "complete": _explain_complete,
    "fail": _explain_fail,
    "cancel": _explain_cancel,
    "renew": _explain_renew,
    "advance": _explain_advance,
    "prune": _explain_prune,
}

#: Each batch by the single call it folds.
_BATCH_SINGLES = {"submit_many": "submit", "dispatch_many": "dispatch", "complete_many": "complete", "fail_many": "fail"}


def _explain_batch(state: State, op: str, args: dict[str, object]) -> list[Because]:
    """A batch's reasons: each single call's in turn, as the batch folds them (``entry`` numbered from 1)."""
    single = _BATCH_SINGLES[op]
    if op == "submit_many":
        calls = [dict(entry) for entry in args["tasks"]]
    elif op == "dispatch_many":
        calls = [{k: v for k, v in args.items() if k != "limit"}] * args["limit"]
    else:
        calls = [{"task_id": pair[0], "token": pair[1], "now": args["now"]} for pair in args["reports"]]
    if not calls:  # an empty report batch still expires what is due
        return explain(state, "advance", {"now": args["now"]})
    reasons = []
    for number, call in enumerate(calls, 1):
        reasons += [replace(because, entry=number) for because in explain(state, single, call)]
        state, result = apply(state, single, call)
        if single == "dispatch" and result is None:
            break
    return reasons
