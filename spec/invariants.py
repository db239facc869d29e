"""The spec's safety invariants, each named after what it states.

They are checked over what any scheduler shows through the protocol -- its
task views and its clock -- so the same functions judge the reference model,
``SimpleScheduler``, ``IndexedScheduler`` and a third-party implementation.
``History`` carries what an invariant needs from earlier steps (tokens issued,
final states seen, cancellations).

The type invariant (``each_task_has_exactly_one_status``) is kept apart from
the safety invariants, as a TLA+ spec keeps ``TypeOK`` apart.

Every check raises ``InvariantViolation`` (an ``AssertionError``) naming the
invariant and the offending task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from fencepost.spec.protocol import FINAL_STATUSES, Status, TaskView
from fencepost.spec.variants import DEFAULT, Variants

_STATUS_VALUES = frozenset(s.value for s in Status)


class InvariantViolation(AssertionError):
    """An invariant does not hold; ``name`` is the invariant's function name."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"invariant {name} violated: {message}")
        self.name = name


@dataclass(frozen=True)
class Observation:
    """What one scheduler shows after a step."""

    now: int
    tasks: Sequence[TaskView | None]  # index id - 1; None for a task forgotten by prune
    capacities: Mapping[str, int]  # worker -> capacity, as added
    max_attempts: Mapping[int, int | None]  # task id -> its budget, as submitted
    variants: Variants = DEFAULT  # the declared variants the run checks against

    def present(self) -> list[TaskView]:
        """The views of the tasks not forgotten, in id order."""
        return [view for view in self.tasks if view is not None]


@dataclass
class History:
    """What the invariants remember across steps of one run."""

    last_token: int = 0  # the highest token seen on any lease so far (tokens=int)
    issued: set = field(default_factory=set)  # every token seen on any lease so far (tokens=opaque)
    final: dict[int, tuple] = field(default_factory=dict)  # task id -> its view when first seen final
    cancelled_at: dict[int, int] = field(default_factory=dict)  # task id -> time first seen cancelled
    prev_tokens: dict[int, int | None] = field(default_factory=dict)  # task id -> token at last step
    held: dict[int, object] = field(default_factory=dict)  # task id -> the last token seen on it (revive=unclaimed)


def _status(view: TaskView) -> str:
    return getattr(view.status, "value", view.status)


def _fail(name: str, message: str) -> None:
    raise InvariantViolation(name, message)


# ---------------------------------------------------------------- type invariant


def each_task_has_exactly_one_status(obs: Observation, history: History) -> None:
    """Every task's status is exactly one of the six protocol statuses."""
    for view in obs.present():
        if _status(view) not in _STATUS_VALUES:
            _fail("each_task_has_exactly_one_status", f"task {view.id} has status {view.status!r}")


# ---------------------------------------------------------------- safety invariants


def running_task_has_exactly_one_current_lease(obs: Observation, history: History) -> None:
    """A running task has a worker, token and expiry; no other task has any of them."""
    for view in obs.present():
        lease = (view.worker, view.token, view.expires_at)
        if _status(view) == Status.RUNNING:
            if None in lease:
                _fail("running_task_has_exactly_one_current_lease", f"running task {view.id} has lease {lease}")
        elif lease != (None, None, None):
            _fail(
                "running_task_has_exactly_one_current_lease",
                f"task {view.id} is {_status(view)} but still holds worker/token/expiry {lease}",
            )


def no_worker_above_capacity(obs: Observation, history: History) -> None:
    """Each worker runs at most its capacity (unless ``capacity=none``); every running task's worker exists."""
    load: dict[str, int] = {}
    for view in obs.present():
        if _status(view) == Status.RUNNING:
            load[view.worker] = load.get(view.worker, 0) + 1
    for worker, running in load.items():
        if worker not in obs.capacities:
            _fail("no_worker_above_capacity", f"task runs on unknown worker {worker!r}")
        if running > obs.capacities[worker] and obs.variants.capacity == "per-worker":
            _fail("no_worker_above_capacity", f"worker {worker!r} runs {running} > capacity {obs.capacities[worker]}")


def tokens_are_unique_and_increasing(obs: Observation, history: History) -> None:
    """No two running tasks share a token, and every newly seen token is above all earlier ones.

    Under ``tokens=opaque`` a token is any value the scheduler chooses, so
    "above" becomes "never seen before": no newly seen token was on any
    earlier lease.
    """
    seen: dict[int, int] = {}
    fresh: list[int] = []
    for view in obs.present():
        if _status(view) != Status.RUNNING:
            continue
        if view.token in seen:
            _fail("tokens_are_unique_and_increasing", f"tasks {seen[view.token]} and {view.id} share token {view.token}")
        seen[view.token] = view.id
        revived = obs.variants.revive == "unclaimed" and history.held.get(view.id) == view.token
        if history.prev_tokens.get(view.id) != view.token and not revived:  # a revived lease is the same lease
            fresh.append(view.token)
        history.held[view.id] = view.token
    if obs.variants.tokens == "opaque":
        for token in fresh:
            if token in history.issued:
                _fail("tokens_are_unique_and_increasing", f"new lease carries token {token!r}, which an earlier lease had")
            history.issued.add(token)
        history.prev_tokens = {view.id: view.token for view in obs.present()}
        return
    for token in sorted(fresh):
        if token <= history.last_token:
            _fail("tokens_are_unique_and_increasing", f"new token {token} is not above the last issued token {history.last_token}")
        history.last_token = token
    history.prev_tokens = {view.id: view.token for view in obs.present()}


def no_lease_alive_at_or_past_expiry(obs: Observation, history: History) -> None:
    """Every running task's lease ends after now: ``now < expires_at`` (``now <= expires_at`` under ``interval=closed``)."""
    for view in obs.present():
        late = view.expires_at is not None and (
            view.expires_at < obs.now if obs.variants.interval == "closed" else view.expires_at <= obs.now)
        if _status(view) == Status.RUNNING and late:
            _fail("no_lease_alive_at_or_past_expiry", f"task {view.id} is running at t={obs.now} with expires_at={view.expires_at}")


def final_states_never_change(obs: Observation, history: History) -> None:
    """Once succeeded, failed or cancelled, a task's whole view stays as it was."""
    for view in obs.present():
        snapshot = (_status(view), view.priority, view.due_at, view.attempts, view.worker, view.token, view.expires_at, view.cancel_requested)
        if view.id in history.final:
            if history.final[view.id] != snapshot:
                _fail("final_states_never_change", f"task {view.id} changed from {history.final[view.id]} to {snapshot}")
        elif _status(view) in {s.value for s in FINAL_STATUSES}:
            history.final[view.id] = snapshot


def attempts_never_exceed_max_attempts(obs: Observation, history: History) -> None:
    """A task is dispatched at most ``max_attempts`` times."""
    for view in obs.present():
        budget = obs.max_attempts.get(view.id)
        if budget is not None and view.attempts > budget:
            _fail("attempts_never_exceed_max_attempts", f"task {view.id} has {view.attempts} attempts > max_attempts {budget}")


def cancelled_task_never_runs_after_cancellation(obs: Observation, history: History) -> None:
    """A task seen cancelled is never seen running again."""
    for view in obs.present():
        if _status(view) == Status.CANCELLED:
            history.cancelled_at.setdefault(view.id, obs.now)
        elif view.id in history.cancelled_at:
            _fail(
                "cancelled_task_never_runs_after_cancellation",
                f"task {view.id} was cancelled at t={history.cancelled_at[view.id]} and is now {_status(view)}",
            )


#: Checked after every step, in this order: the type invariant first.
INVARIANTS: tuple[Callable[[Observation, History], None], ...] = (
    each_task_has_exactly_one_status,
    running_task_has_exactly_one_current_lease,
    no_worker_above_capacity,
    tokens_are_unique_and_increasing,
    no_lease_alive_at_or_past_expiry,
    final_states_never_change,
    attempts_never_exceed_max_attempts,
    cancelled_task_never_runs_after_cancellation,
)


def check_all(obs: Observation, history: History) -> None:
    """Run every invariant over ``obs``; raise the first ``InvariantViolation``."""
    for invariant in INVARIANTS:
        invariant(obs, history)
