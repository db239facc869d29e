"""What the spec must reach: every operation outcome and every boundary.

A check that never exercised, say, a completion at exactly ``expires_at``
proves nothing about it. ``classify`` names the outcome and the boundaries of
one model transition; ``Coverage`` counts them over a run; ``REQUIRED_OUTCOMES``
and ``REQUIRED_BOUNDARIES`` are the spec's declaration of what a run must
reach, and ``Coverage.missing()`` names whatever it did not, so a spec that
silently stopped exploring something cannot pass.

Outcomes are the model's (the reference vocabulary), so a third-party
implementation's own rejection wording does not matter here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from fencepost.spec import model
from fencepost.spec.checkers.capabilities import BATCH, NONE, Capabilities, uncalled
from fencepost.spec.protocol import BATCH_OPERATIONS, RESTART, Lease, Outcome, Reason, Status
from fencepost.spec.variants import DEFAULT, Variants

#: Outcome keys per operation that every run of ``fencepost check`` and every
#: default-scope ``fencepost explore`` must reach.
REQUIRED_OUTCOMES: dict[str, tuple[str, ...]] = {
    "add_worker": ("ok", "raised"),
    "submit": ("ok", "raised"),
    "dispatch": ("lease", "none:worker_full", "none:nothing_eligible", "raised"),
    "complete": ("accepted", Reason.STALE_TOKEN, Reason.LEASE_EXPIRED, Reason.ALREADY_FINAL, Reason.NOT_RUNNING, "raised"),
    "fail": ("accepted:retry_wait", "accepted:failed", "accepted:cancelled", Reason.STALE_TOKEN, "raised"),
    "cancel": ("accepted:cancelled", "accepted:cancel_requested", Reason.ALREADY_FINAL, "raised"),
    "renew": ("accepted", Reason.CANCEL_REQUESTED, Reason.STALE_TOKEN, Reason.LEASE_EXPIRED, "raised"),
    "advance": ("ok", "raised"),
}

#: Outcomes a run must also reach when the scheduler offers idempotency keys,
#: with what each means.
KEY_OUTCOMES: dict[str, str] = {
    "duplicate": "duplicate submit by key returned the first id",
    "key_reused": "key reused with different arguments raised",
}
#: Outcomes a run must also reach when the scheduler offers ``reopen()``.
RESTART_OUTCOMES: dict[str, str] = {"ok": "the scheduler was reopened and agreed on everything"}
#: Outcomes a run must also reach when the scheduler offers ``prune``.
PRUNE_OUTCOMES: dict[str, str] = {
    "forgot": "prune forgot at least one final task",
    "kept_at_before": "prune kept a final task that ended exactly at before (the bound is strict)",
    "raised": "an invalid prune raised and changed nothing",
}
#: Outcomes a run must also reach when the scheduler offers batches, per batch operation, with what each means.
BATCH_OUTCOMES: dict[str, dict[str, str]] = {
    "submit_many": {"ok": "several tasks submitted in one call", "raised": "an invalid entry refused the whole batch"},
    "dispatch_many": {
        "leases": "several leases in one call",
        "stopped:worker_full": "the batch asked for more than the worker's room and stopped when it was full",
        "stopped:nothing_eligible": "the batch stopped when nothing more was eligible",
        "raised": "an invalid batch refused",
    },
    "complete_many": {
        "accepted:all": "every report of the batch accepted",
        "accepted:some": "some reports accepted, others refused, in one batch",
        "raised": "an invalid report refused the whole batch",
    },
    "fail_many": {"accepted:some": "a batch of failures with at least one accepted", "raised": "an invalid report refused the whole batch"},
}


def required_outcomes(capabilities: Capabilities = NONE, variants: Variants = DEFAULT) -> dict[str, tuple[str, ...]]:
    """``REQUIRED_OUTCOMES`` plus those of the optional capabilities offered, less what ``variants`` make unreachable.

    An operation the queue is ``without`` has no outcomes to reach; so do
    the outcomes that need a part it does not offer (``fail -> accepted:failed``
    needs ``max_attempts``, ``renew -> cancel_requested`` needs ``cancel``),
    ``none:worker_full`` under ``capacity=none``, and a late ``complete``'s
    ``lease_expired`` under ``late=accept-unclaimed`` unless a budget or a
    cancellation can end the task at its expiry.
    """
    required = dict(REQUIRED_OUTCOMES)
    if variants != DEFAULT:
        required = {op: tuple(k for k in keys if _reachable(op, k, variants)) for op, keys in required.items()
                    if op not in ("fail", "cancel", "renew") or variants.offers(op)}
    if capabilities.keys and variants.offers("keys"):
        required["submit"] = (*required["submit"], *KEY_OUTCOMES)
    if capabilities.restart:
        required[RESTART] = tuple(RESTART_OUTCOMES)
    if capabilities.prune:
        required["prune"] = tuple(PRUNE_OUTCOMES)
    if capabilities.batch and BATCH not in uncalled(capabilities, variants):
        required.update({op: tuple(outcomes) for op, outcomes in BATCH_OUTCOMES.items()})
    return required


def _reachable(op: str, outcome: str, variants: Variants) -> bool:
    """Whether a run under ``variants`` can reach ``outcome`` of ``op`` (see ``required_outcomes``)."""
    if op == "dispatch" and outcome == "none:worker_full":
        return variants.capacity == "per-worker"
    if op == "fail" and outcome == "accepted:failed":
        return variants.offers("max_attempts")
    if outcome in ("accepted:cancelled", Reason.CANCEL_REQUESTED) and op in ("fail", "renew"):
        return variants.offers("cancel")
    if op == "complete" and outcome == Reason.LEASE_EXPIRED and variants.late == "accept-unclaimed":
        return variants.offers("cancel") or (variants.offers("max_attempts") and variants.exhaust == "at-expiry")
    return True


def required_boundaries(variants: Variants = DEFAULT) -> dict[str, str]:
    """``REQUIRED_BOUNDARIES`` less those ``variants`` make unreachable.

    Under ``interval=closed`` the refused completion is at ``expires_at + 1``;
    an expiry to ``failed`` needs ``max_attempts`` (and ``exhaust=at-expiry``),
    one to ``cancelled`` needs ``cancel``; a full worker needs ``capacity=per-worker``;
    a task past id 9 handed out before a lower one needs due times under ``order=fifo`` (a retry wait
    reaches it too, but too rarely to require).
    """
    if variants == DEFAULT:
        return REQUIRED_BOUNDARIES
    gone = set()
    if not (variants.offers("max_attempts") and variants.exhaust == "at-expiry"):
        gone.add("expiry_to_failed")
    if not variants.offers("cancel"):
        gone.add("expiry_to_cancelled")
    if variants.capacity == "none":
        gone.add("capacity_exactly_full")
    if variants.order == "fifo" and not variants.offers("due_at"):
        # First in, first out with no due time: a lower id eligible always goes first, so only a lower id
        # held back in a retry wait while ten tasks exist reaches this, which a check of default size
        # rarely draws (a FIFO queue that conforms must pass at default settings: issue 29). Still counted.
        gone.add("ids_past_9")
    if variants.late == "accept-unclaimed" and "completion_at_expiry" not in gone \
            and not _reachable("complete", Reason.LEASE_EXPIRED, variants):
        gone.add("completion_at_expiry")
    worded = CLOSED_MEANINGS if variants.interval == "closed" else {}
    return {name: worded.get(name, meaning) for name, meaning in REQUIRED_BOUNDARIES.items() if name not in gone}


#: Boundaries every run must hit, with what each means.
REQUIRED_BOUNDARIES: dict[str, str] = {
    "time_at_expiry": "a timed call at exactly a running lease's expires_at",
    "time_one_before_expiry": "a timed call at expires_at - 1 of a running lease",
    "completion_at_expiry": "complete with the current token at exactly expires_at (refused)",
    "expiry_to_pending": "a lease expired and its task went back to pending",
    "expiry_to_failed": "a lease expired with the attempt budget spent",
    "expiry_to_cancelled": "a lease expired with a cancellation requested",
    "equal_due_times": "a dispatch chose between tasks with equal priority and due time",
    "ids_past_9": "a dispatch leased a task with id >= 10 while a lower id was waiting",
    "capacity_exactly_full": "a dispatch refused because the worker's load equals its capacity",
    "reassigned_fresh_token": "a task leased again after an earlier lease of it ended, under a new token",
}


#: The boundaries whose meaning ``interval=closed`` changes, worded as it has them: a closed lease is live
#: at exactly ``expires_at``, so the refused completion (what ``classify`` counts) is one tick later.
CLOSED_MEANINGS: dict[str, str] = {
    "completion_at_expiry": "complete with the current token at expires_at + 1, the first instant past a closed lease "
                            "(refused; at exactly expires_at it is accepted)",
    "time_one_before_expiry": "a timed call at expires_at - 1 of a running lease (live through expires_at)",
}


_EXPIRY_BOUNDARY = {
    Status.PENDING: "expiry_to_pending",
    Status.FAILED: "expiry_to_failed",
    Status.CANCELLED: "expiry_to_cancelled",
}


def _running(state: model.State) -> list[model.Task]:
    return [t for t in state.tasks if t.status is Status.RUNNING]


def classify(
    op: str, args: dict, before: model.State, after: model.State, result: object, raised: bool
) -> tuple[str, set[str]]:
    """Return ``(outcome key, boundaries hit)`` for one model transition."""
    boundaries: set[str] = set()
    now = args.get("now")
    running = _running(before)
    variants = before.variants
    # the last instant a lease is live: expires_at - 1, or expires_at itself under interval=closed
    last_live = 0 if variants.interval == "closed" else 1
    if not raised and isinstance(now, int):
        if any(t.expires_at == now for t in running):
            boundaries.add("time_at_expiry")
        if any(t.expires_at == now + 1 for t in running):
            boundaries.add("time_one_before_expiry")
        expired = model.expire(before, now)
        for t in running:
            if not model.lease_live(variants, t.expires_at, now):
                boundaries.add(_EXPIRY_BOUNDARY[expired.tasks[t.id - 1].status])
    if op == "submit" and isinstance(args.get("key"), str) and model.key_record(before, args["key"]):
        if not raised:
            return "duplicate", boundaries
        if _valid_without_key(before, args):
            return "key_reused", boundaries
    if raised:
        return "raised", boundaries
    if op in BATCH_OPERATIONS:
        return _classify_batch(op, args, after, result), boundaries
    if op in ("add_worker", "submit", "advance", RESTART):
        return "ok", boundaries
    if op == "dispatch":
        return _classify_dispatch(args, before, after, result, boundaries), boundaries
    if op == "prune":
        return _classify_prune(args, after, result), boundaries
    assert isinstance(result, Outcome), result
    if op == "complete" and not result.accepted and result.reason == Reason.LEASE_EXPIRED:
        task = before.tasks[args["task_id"] - 1]
        if task.status is Status.RUNNING and task.token == args["token"] and task.expires_at - last_live + 1 == now:
            boundaries.add("completion_at_expiry")
    if not result.accepted:
        return result.reason or "rejected", boundaries
    if op in ("fail", "cancel"):
        status = after.tasks[args["task_id"] - 1]
        if op == "cancel" and status.status is Status.RUNNING:
            return "accepted:cancel_requested", boundaries
        return f"accepted:{status.status.value}", boundaries
    return "accepted", boundaries


def _classify_batch(op: str, args: dict, after: model.State, result: list) -> str:
    """A batch's outcome key: how much of it went through, and for dispatch_many why it stopped."""
    if op == "submit_many":
        return "ok"
    if op == "dispatch_many":
        if len(result) == args["limit"]:
            return "leases" if len(result) > 1 else "lease"
        capacity = dict(after.workers)[args["worker"]]
        if model.load(after, args["worker"]) >= capacity:
            return "stopped:worker_full"
        return "stopped:nothing_eligible"
    accepted = sum(1 for outcome in result if outcome.accepted)
    if not result:
        return "empty"
    if accepted == len(result):
        return "accepted:all" if op == "complete_many" else "accepted:some"
    return "accepted:some" if accepted else "refused:all"


def _valid_without_key(state: model.State, args: dict) -> bool:
    """True when a submit that raised would have been valid without its key: the key was the fault."""
    try:
        model.submit(state, **{name: value for name, value in args.items() if name != "key"})
    except (ValueError, TypeError):
        return False
    return True


def _classify_prune(args: dict, after: model.State, result: object) -> str:
    """``kept_at_before`` when a final task that ended exactly at ``before`` stayed; else whether it forgot any."""
    if any(not t.forgotten and t.ended_at == args["before"] for t in after.tasks):
        return "kept_at_before"
    return "forgot" if result else "none"


def _classify_dispatch(args: dict, before: model.State, after: model.State, result: object, boundaries: set[str]) -> str:
    worker = args["worker"]
    if result is None:
        capacity = dict(after.workers)[worker]
        if model.load(after, worker) >= capacity and after.variants.capacity == "per-worker":
            boundaries.add("capacity_exactly_full")
            return "none:worker_full"
        return "none:nothing_eligible"
    assert isinstance(result, Lease)
    # Who else could have been picked: the candidates as the dispatch saw them.
    seen = model.expire(before, args["now"])
    chosen = seen.tasks[result.task_id - 1]
    others = [t for t in model.eligible(seen) if t.id != chosen.id]
    if any(t.priority == chosen.priority and t.due_at == chosen.due_at for t in others):
        boundaries.add("equal_due_times")
    if chosen.id >= 10 and any(t.id < 10 for t in others):
        boundaries.add("ids_past_9")
    if chosen.attempts > 0:
        boundaries.add("reassigned_fresh_token")
    return "lease"


@dataclass
class Coverage:
    """Counts of outcomes and boundaries over one or more runs."""

    outcomes: Counter = field(default_factory=Counter)  # (op, outcome) -> count
    boundaries: Counter = field(default_factory=Counter)  # boundary -> count
    capabilities: Capabilities = NONE  # optional capabilities whose outcomes are required too
    variants: Variants = DEFAULT  # the declared variants: what they make unreachable is not required

    def record(self, op: str, outcome: str, boundaries: set[str]) -> None:
        self.outcomes[(op, outcome)] += 1
        for b in boundaries:
            self.boundaries[b] += 1

    def merge(self, other: Coverage) -> None:
        self.outcomes.update(other.outcomes)
        self.boundaries.update(other.boundaries)

    def missing(self) -> list[str]:
        """Every declared outcome or boundary this coverage never reached."""
        gaps = [f"{op} -> {key}" for op, keys in required_outcomes(self.capabilities, self.variants).items()
                for key in keys if not self.outcomes[(op, key)]]
        gaps += [f"boundary {name} ({meaning})" for name, meaning in required_boundaries(self.variants).items()
                 if not self.boundaries[name]]
        return gaps

    def report(self) -> str:
        """A table: per operation, each outcome's count; then each boundary's count."""
        lines = ["outcomes:"]
        for op, keys in required_outcomes(self.capabilities, self.variants).items():
            extra = sorted(k for (o, k) in self.outcomes if o == op and k not in keys)
            cells = ", ".join(f"{k}={self.outcomes[(op, k)]}" for k in (*keys, *extra))
            lines.append(f"  {op:<10} {cells}")
        lines.append("boundaries:")
        for name, meaning in required_boundaries(self.variants).items():
            lines.append(f"  {name:<24} {self.boundaries[name]:>7}  {meaning}")
        return "\n".join(lines)
