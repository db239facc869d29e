"""The conformance state machine: the model and an implementation in lockstep.

``conformance_machine(factory)`` returns a Hypothesis ``RuleBasedStateMachine``
class whose rules are the protocol's verbs. Each rule resolves its abstract
choices (which task, which token, which instant) against the model's state,
applies the call to the model and to a scheduler made by ``factory``, and
compares: both raise ``ValueError`` or neither does, the results match (Lease
fields, ``Outcome.accepted``, task ids; reason wording is not compared), and
afterwards every task view and the clock match. The invariants in
``spec.invariants`` run after every step, over the implementation's views,
and an implementation's own ``check_invariants()`` runs too when it has one.

Time choices land on the boundaries on purpose: exactly a running lease's
``expires_at``, one before it, a waiting task's due time, equal due times for
many tasks, and enough submits to pass id 9.

Optional capabilities (``spec.checkers.capabilities``) add rules: with
idempotency keys, most submits carry a key from a small pool, so keys repeat
often, with the same arguments and with different ones; with ``reopen()``, a
``restart`` rule replaces the implementation with its reopened self (the
model does not change) and everything must still agree. A scheduler that
offers neither is driven exactly as before.

Only the public protocol is used, so any object with the protocol's methods
can be checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from fencepost.spec import invariants, model
from fencepost.spec.checkers.capabilities import Capabilities, detect
from fencepost.spec.checkers.coverage import Coverage, classify
from fencepost.spec.checkers.deadline import CallTimeout, SchedulerFault, Watch, run_watched, watched_factory
from fencepost.spec.protocol import RESTART, Status
from fencepost.spec.checkers.steps import bad_task_ids, bool_field, check_bad_task_ids, int_field

#: Most tasks one run submits: enough to pass id 9 with room for reassignments,
#: few enough that the model's O(T) copies stay cheap.
MAX_TASKS = 16
#: Workers a run may add (names are drawn from ``WORKER_NAMES``).
WORKER_NAMES = ("w1", "w2", "w3")

TIME_KINDS = ("now", "now", "at_expiry", "before_expiry", "at_due", "later", "far")
# A call carrying a token lands inside its lease more often than not, so that
# acceptance is exercised as much as every way of being refused.
LEASE_TIME_KINDS = ("now", "now", "before_expiry", "at_expiry", "at_expiry", "later", "at_due", "far")
# Repeated entries weight the draw: most lease calls target running work with
# its current token, which is where acceptance (and its boundary) lives.
TASK_KINDS = ("running", "running", "running", "cancel_requested", "cancel_requested", "any", "newest")
TOKEN_KINDS = ("current", "current", "current", "previous", "same_worker", "other", "never_issued")
#: The faults ``invalid_call`` makes. One step puts its fault into every
#: operation and argument where it can occur, one call each, so a lapse in a
#: single place (``cancel`` alone coercing a float time) is met within one
#: check's budget; refused calls change nothing, so the extra calls cost no
#: exploration.
INVALID_CALLS = (
    "wrong_type",  # every int argument of every operation, a valid value in a non-int disguise
    "bad_time",  # every timed operation: a negative or backwards time
    "bad_task_id",  # every operation that names a task: zero, negative or never issued
    "below_minimum",  # duration, capacity, due_at, max_attempts, retry_delay below their minimum
    "bad_worker",  # not a str, empty, already added, or (on dispatch) never added
    "several_faults",  # two or more bad arguments at once: any may be reported, nothing changes
)
#: Every int argument of every operation, in the order a ``wrong_type`` step tries them.
INT_ARGUMENTS = (
    ("dispatch", "now"), ("dispatch", "duration"),
    ("complete", "task_id"), ("complete", "token"), ("complete", "now"),
    ("fail", "task_id"), ("fail", "token"), ("fail", "now"),
    ("cancel", "task_id"), ("cancel", "now"),
    ("renew", "task_id"), ("renew", "token"), ("renew", "now"), ("renew", "duration"),
    ("advance", "now"),
    ("submit", "priority"), ("submit", "due_at"), ("submit", "max_attempts"), ("submit", "retry_delay"),
    ("add_worker", "capacity"),
)
#: The forms a wrong-typed int argument takes, each made from a valid value
#: (``"7"``, ``7.0``, ``[7]``) or next to one (``7.5``, ``True``), so an
#: implementation that coerces with ``int()`` or lets ``isinstance(True,
#: int)`` through answers where it must refuse. Only forms both TOML and JSON
#: can write, so any counterexample saves.
NON_INT_FORMS = ("str", "float", "fraction", "bool", "list")
#: Values a worker name must refuse; a list is unhashable, so no dict lookup may see it.
NON_STRS = (1, ["w1"], 1.5, True)
TIMED_OPS = ("dispatch", "complete", "fail", "cancel", "renew", "advance")
#: The idempotency keys a run draws from: few, so that keys repeat often.
KEY_POOL = ("a", "b", "c")
#: How a submit chooses its key when the scheduler offers keys. Repeated
#: entries weight the draw: ``pool`` reuses a pooled key with freshly drawn
#: arguments (new, a conflict, or by chance a duplicate), ``repeat`` repeats a
#: known key with exactly its first arguments (a duplicate).
KEY_KINDS = ("none", "none", "pool", "pool", "repeat")
#: Keys ``invalid_key`` offers: wrong types and the empty string.
BAD_KEYS = ("", 1, ["a"], True)


def disguise(value: int, form: str) -> object:
    """``value`` in one of the ``NON_INT_FORMS``; ``bool`` gives True (equal to 1, never an int here)."""
    return {"str": str(value), "float": float(value), "fraction": value + 0.5, "bool": True, "list": [value]}[form]


picks = st.integers(min_value=0, max_value=7)
offsets = st.integers(min_value=0, max_value=3)
durations = st.integers(min_value=1, max_value=10)


class Divergence(AssertionError):
    """The implementation answered differently from the model."""


@dataclass
class TraceStep:
    """One call as both sides saw it; ``expected`` is the model's answer."""

    op: str
    args: dict
    expected: object  # the model's normalized result, or ("error", message)
    got: object  # the implementation's normalized result, ("error", message), ("fault", message) or ("hang", seconds)
    problem: str | None = None  # why this step diverged, if it did


# ---------------------------------------------------------------- normalizing results


def normalize(result: object) -> object:
    """A comparable form of any protocol result, read through attribute names only.

    Types are compared where ``==`` would blur them: ``True == 1`` and
    ``1.0 == 1``, so a bool or a float where the protocol has an int (or an
    int where it has a bool) becomes a marker that equals nothing the model
    returns.
    """
    if result is None:
        return result
    if isinstance(result, int):
        return int_field(result)
    if hasattr(result, "accepted"):
        return ("outcome", bool_field(result.accepted), getattr(result, "reason", None))
    if hasattr(result, "token") and hasattr(result, "expires_at"):
        return ("lease", int_field(result.task_id), result.worker, int_field(result.token),
                int_field(result.started_at), int_field(result.expires_at))
    return ("other", repr(result))


def comparable(value: object) -> object:
    """``normalize`` without the parts the spec does not compare (reason wording)."""
    if isinstance(value, tuple) and value and value[0] == "outcome":
        return value[:2]
    if isinstance(value, tuple) and value and value[0] == "error":
        return ("error",)
    return value


def describe(value: object, op: str = "dispatch") -> str:
    """A normalized result of ``op`` in words, for counterexample listings."""
    if value is None:
        return "none" if op == "dispatch" else "ok"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"task {value}"
    if isinstance(value, tuple) and value:
        kind = value[0]
        if kind == "outcome":
            if type(value[1]) is not bool:
                return f"an outcome with accepted={value[1][1]!r}, not a bool"
            return "accepted" if value[1] else f"rejected ({value[2]})"
        if kind == "lease":
            _, task_id, worker, token, start, end = value
            return f"lease task {task_id} to {worker}, token {token}, [{start}, {end})"
        if kind == "error":
            return f"error: {value[1]}"
        if kind == "hang":
            return f"no answer within {value[1]:g} s"
        if kind == "fault":
            return "a protocol fault (below)"
        if kind == "other":
            return value[1]
    return repr(value)


def view_tuple(view: object) -> tuple:
    """A task view as a tuple, status by its string value."""
    status = getattr(view.status, "value", view.status)
    return (
        int_field(view.id), status, int_field(view.priority), int_field(view.due_at), int_field(view.attempts),
        view.worker, int_field(view.token), int_field(view.expires_at), bool_field(view.cancel_requested),
    )


VIEW_FIELDS = ("id", "status", "priority", "due_at", "attempts", "worker", "token", "expires_at", "cancel_requested")


def format_call(op: str, args: dict) -> str:
    return f"{op}({', '.join(f'{k}={v!r}' for k, v in args.items())})"


def format_trace(trace: list[TraceStep]) -> str:
    """Numbered steps: call, expected, got; the diverging step is marked."""
    lines = []
    width = max((len(format_call(s.op, s.args)) for s in trace), default=0)
    for number, step in enumerate(trace, 1):
        mark = "   <-- diverges" if step.problem else ""
        lines.append(
            f"{number:>3}. {format_call(step.op, step.args):<{width}}  "
            f"expected: {describe(step.expected, step.op)}; got: {describe(step.got, step.op)}{mark}"
        )
        if step.problem:
            lines.append(f"     {step.problem}")
    return "\n".join(lines)


# ---------------------------------------------------------------- lockstep


class Lockstep:
    """The model and one implementation, driven call by call and compared.

    Used by the state machine, by counterexample minimization and by the
    explorer, so every one of them judges a call the same way.
    """

    def __init__(self, factory: Callable[[], object], coverage: Coverage | None = None, watch: Watch | None = None) -> None:
        self.trace: list[TraceStep] = []
        self.pending: TraceStep | None = None  # the step whose call is in progress, for a hang report
        if watch is not None:
            watch.context = self  # so the watching thread can report the calls that led to a hang
            factory = watched_factory(factory, watch)
        self.impl = factory()
        self.state = model.initial()
        self.coverage = coverage
        self.history = invariants.History()
        self.max_attempts: dict[int, int | None] = {}
        self.tokens_by_task: dict[int, list[int]] = {}  # task id -> tokens issued for it, in order
        self.worker_of_token: dict[int, str] = {}  # token -> the worker its lease went to
        self.observed: invariants.Observation | None = None

    def step(self, op: str, args: dict) -> TraceStep:
        """Apply one call to both sides and compare; raise Divergence on any difference.

        ``op`` may be ``RESTART`` (see ``restart``).
        """
        if op == RESTART:
            return self.restart()
        before = self.state
        self.observed = None
        try:
            after, result = model.apply(before, op, dict(args))
            expected: object = normalize(result)
        except ValueError as exc:
            after, result, expected = before, None, ("error", str(exc))
        raised = isinstance(expected, tuple) and expected[0] == "error"
        wrong_kind = None
        self.pending = TraceStep(op, dict(args), expected, None)
        self.plan([(op, args)], before)
        try:
            got: object = normalize(getattr(self.impl, op)(**args))
        except ValueError as exc:
            got = ("error", str(exc))
        except CallTimeout as exc:  # a program behind --exec that stopped answering: a finding
            got, wrong_kind = ("hang", exc.seconds), str(exc)
        except SchedulerFault as exc:  # a program behind --exec that broke the adapter protocol
            got, wrong_kind = ("fault", str(exc)), str(exc)
        except Exception as exc:  # any other exception breaks rule 2 of the protocol
            got = ("error", f"{type(exc).__name__} (not a ValueError): {exc}")
            wrong_kind = f"raised {type(exc).__name__}, which is not a ValueError"
        self.pending = None
        record = TraceStep(op, dict(args), expected, got)
        self.trace.append(record)
        if self.coverage is not None:
            outcome, boundaries = classify(op, dict(args), before, after, result, raised)
            self.coverage.record(op, outcome, boundaries)
        if wrong_kind:
            self.diverge(record, wrong_kind)
        if comparable(expected) != comparable(got):
            self.diverge(record, f"the result differs: expected {describe(expected)}, got {describe(got)}")
        self.state = after
        if op == "submit" and not raised and result not in self.max_attempts:
            self.max_attempts[result] = args.get("max_attempts")
        if op == "dispatch" and result is not None:
            self.tokens_by_task.setdefault(result.task_id, []).append(result.token)
            self.worker_of_token[result.token] = result.worker
        self.compare_views(record)
        return record

    def plan(self, calls: list[tuple[str, dict]], state: model.State | None = None) -> None:
        """Tell a scheduler in another process (``--exec``) the calls coming next, from ``state`` (default: now).

        Each call is announced with the reads ``compare_views`` makes after it,
        worked out on the model, so the program can be sent a call, its
        views, and the calls after it in one write (see
        ``spec.adapters.exec.ExecProgram.plan``). Schedulers in this process
        are not told anything.
        """
        announce = getattr(self.impl, "_fencepost_plan", None)
        if announce is None:
            return
        state = self.state if state is None else state
        planned = []
        for op, args in calls:
            planned.append((op, args, self.reads_after(state)))
            if op == RESTART:
                continue  # the model does not change
            try:
                state, _ = model.apply(state, op, dict(args))
            except ValueError:
                pass  # refused: nothing changes
        announce(planned)

    @staticmethod
    def reads_in(state: model.State) -> list[tuple[str, dict]]:
        """The reads ``compare_views`` makes in ``state``: the clock, every task, the ids that must be refused."""
        return _reads(len(state.tasks), [*range(1, len(state.tasks) + 1), *bad_task_ids(len(state.tasks))])

    @staticmethod
    def reads_after(state: model.State) -> list[tuple[str, dict]]:
        """The reads ``compare_views`` makes after one call from ``state``, whether it submits a task or not."""
        tasks = len(state.tasks)
        return _reads(tasks, [*range(1, tasks + 2), *bad_task_ids(tasks), *bad_task_ids(tasks + 1)])

    def restart(self) -> TraceStep:
        """Replace the implementation with its ``reopen()``; the model does not change.

        The reopened scheduler must then agree on the clock and every view.

        Raises:
            Divergence: ``reopen()`` raised, or the reopened scheduler disagrees.
        """
        self.observed = None
        record = TraceStep(RESTART, {}, None, None)
        self.trace.append(record)
        if self.coverage is not None:
            self.coverage.record(RESTART, "ok", set())
        try:
            self.impl = self.impl.reopen()
        except Exception as exc:
            record.got = ("error", f"{type(exc).__name__}: {exc}")
            self.diverge(record, f"reopen() raised {type(exc).__name__}: {exc}")
        self.compare_views(record)
        return record

    def compare_views(self, record: TraceStep) -> None:
        """The clock, every task's view, and ``task()`` refusing ids that name no task."""
        prefetch = getattr(self.impl, "_fencepost_prefetch", None)
        if prefetch is not None:  # a scheduler in another process (--exec): the reads not yet asked, in one round trip
            prefetch(self.reads_in(self.state))
        if int_field(self.impl.now) != self.state.now:
            self.diverge(record, f"now differs afterwards: expected {self.state.now}, got {self.impl.now!r}")
        for task in self.state.tasks:
            want = view_tuple(model.view(task))
            try:
                have = view_tuple(self.impl.task(task.id))
            except ValueError as exc:
                self.diverge(record, f"task({task.id}) raised: {exc}")
            if want != have:
                diffs = ", ".join(
                    f"{f}: expected {w!r}, got {h!r}" for f, w, h in zip(VIEW_FIELDS, want, have) if w != h
                )
                self.diverge(record, f"task {task.id} differs afterwards: {diffs}")
        try:
            refused = check_bad_task_ids(self.impl, len(self.state.tasks))
        except SchedulerFault:
            raise
        except Exception as exc:  # rule 2 of the protocol: only ValueError
            refused = f"task() raised {type(exc).__name__}, which is not a ValueError: {exc}"
        if refused:
            self.diverge(record, refused)

    def diverge(self, record: TraceStep, problem: str) -> None:
        record.problem = problem
        raise Divergence(f"step {len(self.trace)}: {format_call(record.op, record.args)}: {problem}")

    def observation(self) -> invariants.Observation:
        """The implementation's views after the last step, read once per step."""
        if self.observed is None:
            self.observed = invariants.Observation(
                now=self.impl.now,
                tasks=[self.impl.task(t.id) for t in self.state.tasks],
                capacities=dict(self.state.workers),
                max_attempts=self.max_attempts,
            )
        return self.observed

    def holds(self, check: Callable[[invariants.Observation, invariants.History], None]) -> None:
        """Run one invariant over the implementation's views; mark the last step if it fails."""
        try:
            check(self.observation(), self.history)
        except invariants.InvariantViolation as exc:
            self.mark(str(exc))
            raise

    def implementation_invariants(self) -> None:
        """The implementation's own ``check_invariants()``, when it has one."""
        check = getattr(self.impl, "check_invariants", None)
        if check is not None:
            try:
                check()
            except AssertionError as exc:
                self.mark(f"check_invariants() failed: {exc}")
                raise

    def check_all(self) -> None:
        for check in invariants.INVARIANTS:
            self.holds(check)
        self.implementation_invariants()

    def mark(self, problem: str) -> None:
        if self.trace and not self.trace[-1].problem:
            self.trace[-1].problem = problem


def _reads(tasks: int, ids: list[object]) -> list[tuple[str, dict]]:
    """``now`` and ``task`` of each id, each once: by repr, since 1, 1.0 and "1" are three reads though 1 == 1.0."""
    unique = {repr(i): i for i in ids}
    return [("now", {})] + [("task", {"task_id": i}) for i in unique.values()]


def run_calls(
    factory: Callable[[], object], calls: list[tuple[str, dict]], call_timeout: float | None = None,
) -> list[TraceStep] | None:
    """Replay concrete calls in lockstep; the trace up to the first failure, or None if all conform.

    With ``call_timeout``, the calls run on a watched thread (see
    ``spec.checkers.deadline``) and a call that does not return in time ends
    the trace as a hang; without it, they run on this thread with no deadline.
    """
    if call_timeout is None:
        return _run_calls(factory, calls, None)
    watch = Watch(call_timeout)
    try:
        return run_watched(lambda: _run_calls(factory, calls, watch), watch)
    except CallTimeout as exc:
        return hang_trace(watch.context, exc)


def _run_calls(factory: Callable[[], object], calls: list[tuple[str, dict]], watch: Watch | None) -> list[TraceStep] | None:
    try:
        lockstep = Lockstep(factory, watch=watch)
    except Exception:  # the factory itself failed: a failure with no steps
        return []
    try:
        lockstep.check_all()
        lockstep.plan(calls)
        for op, args in calls:
            lockstep.step(op, args)
            lockstep.check_all()
    except AssertionError:
        return lockstep.trace
    except SchedulerFault as exc:  # met outside the step's own call (a view, the clock)
        lockstep.mark(str(exc))
        return lockstep.trace
    except Exception as exc:  # a crash inside the implementation is a failure too
        lockstep.mark(f"the implementation crashed: {type(exc).__name__}: {exc}")
        return lockstep.trace
    return None


def hang_trace(lockstep: Lockstep | None, timeout: CallTimeout) -> list[TraceStep]:
    """The calls a watched ``Lockstep`` made up to a hang, the hung one last and marked.

    A hang in the step's own call ends the trace with that call (got: no
    answer); a hang in reading the views afterwards marks the step before it.
    """
    if lockstep is None:
        return []
    trace = list(lockstep.trace)
    pending = lockstep.pending
    if pending is not None:
        trace.append(TraceStep(pending.op, pending.args, pending.expected, ("hang", timeout.seconds), str(timeout)))
    elif trace:
        last = trace[-1]
        trace[-1] = TraceStep(last.op, last.args, last.expected, last.got, f"after this step, {timeout}")
    return trace


def _without(calls: list[tuple[str, dict, object]], start: int, count: int) -> list[tuple[str, dict, object]]:
    """``calls`` less ``count`` calls from ``start``, with later task ids and tokens renumbered.

    Deleting a submit shifts every later task id down by one, and deleting a
    successful dispatch shifts every later token, so later calls keep naming
    the same tasks and leases. A call naming a deleted task or token is
    deleted with it.
    """
    gone_ids: list[int] = []
    gone_tokens: list[int] = []
    issued = max((e for op, _, e in calls[:start] if op == "submit" and _is_int(e)), default=0)
    for op, _, expected in calls[start : start + count]:
        if op == "submit" and _is_int(expected) and expected > issued:  # a duplicate by key issues no id
            issued = expected
            gone_ids.append(expected)
        elif op == "dispatch" and isinstance(expected, tuple) and expected[0] == "lease":
            gone_tokens.append(expected[3])
    kept = calls[:start]
    for op, args, expected in calls[start + count :]:
        args = dict(args)
        if _is_int(args.get("task_id")):
            if args["task_id"] in gone_ids:
                continue
            args["task_id"] -= sum(1 for g in gone_ids if g < args["task_id"])
        if _is_int(args.get("token")):
            if args["token"] in gone_tokens:
                continue
            args["token"] -= sum(1 for g in gone_tokens if g < args["token"])
        kept.append((op, args, expected))
    return kept


#: Longest trace ``minimize`` tries deleting two separate calls from: O(n^2)
#: replays of n steps each, about 0.2 s at 20 steps; longer traces are first
#: cut down by deleting runs of calls.
PAIR_DELETION_LIMIT = 20


def _delete_pairs(best: list[TraceStep], attempt: Callable, calls_of: Callable) -> list[TraceStep]:
    """Delete two calls that are not neighbours, when neither can go alone.

    A submit and the dispatch that leased it are often such a pair: without
    the submit the dispatch leases the next task and the failure moves, and
    without the dispatch every later token is off. The later call is deleted
    first, so the renumbering of the earlier deletion applies to what is left.
    """
    improved = True
    while improved and len(best) <= PAIR_DELETION_LIMIT:
        improved = False
        for later in range(len(best) - 1, 1, -1):
            for earlier in range(later):  # neighbours too: runs of two were tried only where aligned
                failing = attempt(_without(_without(calls_of(best), later, 1), earlier, 1))
                if failing is not None and len(failing) < len(best):
                    best, improved = failing, True
                    break
            if improved:
                break
    return best


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: Small values ``minimize`` tries in place of larger ones, per argument.
_SIMPLER_VALUES = {"priority": (0, 1), "duration": (1,), "capacity": (1,), "retry_delay": (1,)}
#: Optional ``submit`` arguments ``minimize`` tries to drop.
_OPTIONAL_ARGS = ("priority", "due_at", "max_attempts", "retry_delay", "key")


def _simpler(op: str, args: dict) -> list[dict]:
    """Simpler versions of one call's arguments: optional ones dropped, small values tried."""
    options = []
    if op == "submit":
        options += [{k: v for k, v in args.items() if k != name} for name in _OPTIONAL_ARGS if name in args]
    for name, values in _SIMPLER_VALUES.items():
        if name in args:
            options += [{**args, name: v} for v in values if v != args[name]]
    return options


def _earlier(calls: list[tuple[str, dict, object]]) -> list[tuple[str, dict, object]] | None:
    """The same calls with every instant moved earlier by the first one, or None if it is 0."""
    times = [args["now"] for _, args, _ in calls if _is_int(args.get("now")) and args["now"] >= 0]
    shift = min(times, default=0)
    if shift <= 0:
        return None
    moved = []
    for op, args, expected in calls:
        args = dict(args)
        for name in ("now", "due_at"):
            if _is_int(args.get(name)) and args[name] >= 0:
                args[name] = max(0, args[name] - shift)
        moved.append((op, args, expected))
    return moved


def minimize(factory: Callable[[], object], trace: list[TraceStep], call_timeout: float | None = None) -> list[TraceStep]:
    """Shrink a failing trace to a short one that still fails.

    Hypothesis's own shrinker replays the whole machine hundreds of times; this
    works on the concrete calls instead: delete runs of calls, then pairs of
    separate calls (renumbering later task ids and tokens, see ``_without``),
    then simplify arguments. Each candidate is replayed from scratch in
    lockstep, so the result is a real counterexample. Cost: O(n^2) replays of
    at most n steps for the runs; the pairs, O(n^3) replays in the worst
    case, are tried only on traces of ``PAIR_DELETION_LIMIT`` calls or fewer.
    With ``call_timeout``, every replay runs under that deadline (see
    ``run_calls``), so a hang shrinks like any other failure; each replay
    that still hangs costs the deadline.
    """
    best = run_calls(factory, [(s.op, s.args) for s in trace], call_timeout)
    if best is None:
        return trace  # not reproducible from the calls alone (e.g. a flaky implementation)
    while True:  # until a whole pass changes nothing: a simpler argument can unlock a deletion
        shorter = _minimize_pass(factory, best, call_timeout)
        if [(s.op, s.args) for s in shorter] == [(s.op, s.args) for s in best]:
            return best
        best = shorter


def _minimize_pass(factory: Callable[[], object], best: list[TraceStep], call_timeout: float | None) -> list[TraceStep]:
    """One round of ``minimize``: deletions, then an earlier clock, then simpler arguments."""

    def attempt(candidate: list[tuple[str, dict, object]]) -> list[TraceStep] | None:
        return run_calls(factory, [(op, args) for op, args, _ in candidate], call_timeout) if candidate else None

    def calls_of(steps: list[TraceStep]) -> list[tuple[str, dict, object]]:
        return [(s.op, dict(s.args), s.expected) for s in steps]

    chunk = max(1, len(best) // 2)
    while chunk >= 1:
        start = 0
        while start < len(best):
            failing = attempt(_without(calls_of(best), start, chunk))
            if failing is not None and len(failing) < len(best):
                best = failing
            else:
                start += chunk
        chunk //= 2
    best = _delete_pairs(best, attempt, calls_of)
    shifted = _earlier(calls_of(best))
    if shifted is not None:
        best = attempt(shifted) or best
    index = 0
    while index < len(best):  # best may shrink as we go
        for simpler in _simpler(best[index].op, best[index].args):
            calls = calls_of(best)
            calls[index] = (calls[index][0], simpler, calls[index][2])
            failing = attempt(calls)
            if failing is not None and len(failing) <= len(best):
                best = failing
                break
        index += 1
    return best


# ---------------------------------------------------------------- the machine


def conformance_machine(
    factory: Callable[[], object], *, coverage: Coverage | None = None, name: str | None = None,
    watch: Watch | None = None,
    capabilities: Capabilities | None = None,
) -> type[RuleBasedStateMachine]:
    """Build the conformance machine for schedulers made by ``factory``.

    Args:
        factory: a zero-argument callable (a class works) returning a fresh
            scheduler that offers the protocol in ``spec.protocol``.
        coverage: when given, every step's outcome and boundaries are counted
            into it (see ``spec.checkers.coverage``).
        name: the class name Hypothesis prints; defaults to the factory's.
        watch: when given, every call into a scheduler is noted there, for a
            caller running the machine under ``spec.checkers.deadline.run_watched``.
        capabilities: the optional parts of the protocol to drive (keys,
            restart); default: what ``spec.checkers.capabilities.detect``
            finds on one instance from ``factory``.

    Returns:
        A ``RuleBasedStateMachine`` subclass. Its ``last_trace`` class
        attribute holds the steps of the most recent run, which after a
        failed ``run_state_machine_as_test`` is the shrunk counterexample.
    """
    offered = detect(factory) if capabilities is None else capabilities

    class ConformanceMachine(RuleBasedStateMachine):
        last_trace: list[TraceStep] = []
        capabilities = offered

        def __init__(self) -> None:
            super().__init__()
            self.run = Lockstep(factory, coverage, watch)
            type(self).last_trace = self.run.trace

        @property
        def state(self) -> model.State:
            return self.run.state

        @property
        def tokens_by_task(self) -> dict[int, list[int]]:
            return self.run.tokens_by_task

        def step(self, op: str, **args: object) -> None:
            record = self.run.step(op, args)
            note(f"{len(self.run.trace)}. {format_call(op, args)} -> {describe(record.got)}")

        # ------------------------------------------------------------ choosing arguments

        def time(self, kind: str, pick: int, offset: int) -> int:
            """An instant at or after now, chosen to land on boundaries."""
            now = self.state.now
            running = sorted((t.expires_at, t.id) for t in self.state.tasks if t.status is Status.RUNNING)
            waiting = sorted({t.due_at for t in self.state.tasks if t.due_at > now and t.status not in (Status.RUNNING,)})
            if kind == "at_expiry" and running:
                return running[pick % len(running)][0]
            if kind == "before_expiry" and running:
                return max(now, running[pick % len(running)][0] - 1)
            if kind == "at_due" and waiting:
                return waiting[pick % len(waiting)]
            if kind == "later":
                return now + 1 + offset
            if kind == "far":
                return now + 5 + 4 * offset
            return now

        def task_id(self, kind: str, pick: int) -> int:
            tasks = self.state.tasks
            running = [t.id for t in tasks if t.status is Status.RUNNING]
            asked = [t.id for t in tasks if t.cancel_requested]
            if kind == "cancel_requested" and asked:
                return asked[pick % len(asked)]
            if kind in ("running", "cancel_requested") and running:
                return running[pick % len(running)]
            if kind in ("running", "cancel_requested") and self.tokens_by_task:
                return list(self.tokens_by_task)[-1]  # the task leased most recently
            if kind == "newest":
                return len(tasks)
            return tasks[pick % len(tasks)].id

        def token(self, task_id: int, kind: str, pick: int) -> int:
            task = self.state.tasks[task_id - 1]
            issued = self.tokens_by_task.get(task_id, [])
            others = [t.token for t in self.state.tasks if t.token is not None and t.id != task_id]
            if kind == "previous" and issued:
                older = [t for t in issued if t != task.token] or issued
                return older[-1 - pick % len(older)]
            if kind == "same_worker" and task.worker is not None:
                # An older lease of the same worker: only the token tells it apart.
                mine = [t for t, w in self.run.worker_of_token.items() if w == task.worker and t != task.token]
                if mine:
                    return mine[-1 - pick % len(mine)]
            if kind == "other" and others:
                return others[pick % len(others)]
            if kind == "never_issued":
                return self.state.last_token + 1 + pick
            if task.token is not None:
                return task.token
            return issued[-1] if issued else 1 + pick

        def worker(self, pick: int) -> str:
            names = [name for name, _ in self.state.workers]
            return names[pick % len(names)]

        # ------------------------------------------------------------ rules: the protocol's verbs

        @initialize(capacity=st.integers(min_value=1, max_value=2))
        def add_first_worker(self, capacity: int) -> None:
            self.step("add_worker", worker="w1", capacity=capacity)

        @precondition(lambda self: len(self.state.workers) < len(WORKER_NAMES))
        @rule(capacity=st.integers(min_value=1, max_value=3))
        def add_worker(self, capacity: int) -> None:
            """The next unused name; duplicates are ``invalid_call``'s business."""
            name = WORKER_NAMES[len(self.state.workers)]
            self.step("add_worker", worker=name, capacity=capacity)

        @precondition(lambda self: len(self.state.tasks) < MAX_TASKS)
        @rule(
            priority=st.integers(min_value=0, max_value=2),
            due=st.sampled_from(("default", "now", "later", "same_as_other", "past")),
            offset=offsets,
            max_attempts=st.none() | st.integers(min_value=1, max_value=3),
            retry_delay=st.integers(min_value=1, max_value=3),
            keyed=st.sampled_from(KEY_KINDS if offered.keys else ("none",)),
        )
        def submit(self, priority: int, due: str, offset: int, max_attempts: int | None, retry_delay: int,
                   keyed: str) -> None:
            known = self.state.keys
            if keyed == "repeat" and known:
                # A duplicate: a known key with exactly the arguments it was first submitted with.
                record = known[offset % len(known)]
                first = dict(zip(model.KEYED_ARGUMENTS, record.arguments))
                args = {name: value for name, value in first.items() if value is not None}
                self.step("submit", **args, key=record.key)
                return
            args: dict[str, object] = {"priority": priority}
            now = self.state.now
            dues = [t.due_at for t in self.state.tasks]
            if due == "now":
                args["due_at"] = now
            elif due == "later":
                args["due_at"] = now + 1 + offset
            elif due == "same_as_other" and dues:
                args["due_at"] = dues[offset % len(dues)]
            elif due == "past" and now > 0:
                args["due_at"] = max(0, now - 1 - offset)
            if max_attempts is not None:
                args["max_attempts"] = max_attempts
            if retry_delay != 1:
                args["retry_delay"] = retry_delay
            if keyed != "none":
                args["key"] = KEY_POOL[offset % len(KEY_POOL)]
            self.step("submit", **args)

        @precondition(lambda self: offered.keys)
        @rule(pick=picks, fault=st.sampled_from(("bad_key", "bad_argument_known_key")))
        def invalid_key(self, pick: int, fault: str) -> None:
            """A key that is no key, or a known key with an invalid argument: both raise, nothing changes."""
            if fault == "bad_key" or not self.state.keys:
                self.step("submit", key=BAD_KEYS[pick % len(BAD_KEYS)])
            else:
                record = self.state.keys[pick % len(self.state.keys)]
                self.step("submit", priority=str(record.arguments[0]), key=record.key)

        @precondition(lambda self: offered.restart)
        @rule()
        def restart(self) -> None:
            """The scheduler is reopened from its storage; the contract's state must survive it."""
            self.step(RESTART)

        @precondition(lambda self: len(self.state.tasks) + 2 <= MAX_TASKS)
        @rule(
            count=st.integers(min_value=2, max_value=MAX_TASKS),
            priority=st.integers(min_value=0, max_value=1),
            max_attempts=st.none() | st.integers(min_value=1, max_value=2),
        )
        def submit_many(self, count: int, priority: int, max_attempts: int | None) -> None:
            """Several equal tasks at once: equal due times, and ids past 9 within few steps."""
            extra = {} if max_attempts is None else {"max_attempts": max_attempts}
            submits = [("submit", {"priority": priority, **extra})] * min(count, MAX_TASKS - len(self.state.tasks))
            self.run.plan(submits)
            for op, args in submits:
                self.step(op, **args)

        @rule(worker=picks, when=st.sampled_from(TIME_KINDS), pick=picks, offset=offsets, duration=durations)
        def dispatch(self, worker: int, when: str, pick: int, offset: int, duration: int) -> None:
            self.step("dispatch", worker=self.worker(worker), now=self.time(when, pick, offset), duration=duration)

        @precondition(lambda self: self.state.tasks)
        @rule(which=st.sampled_from(TASK_KINDS), pick=picks, token=st.sampled_from(TOKEN_KINDS), when=st.sampled_from(LEASE_TIME_KINDS), offset=offsets)
        def complete(self, which: str, pick: int, token: str, when: str, offset: int) -> None:
            task_id = self.task_id(which, pick)
            self.step("complete", task_id=task_id, token=self.token(task_id, token, pick), now=self.time(when, pick, offset))

        @precondition(lambda self: self.state.tasks)
        @rule(which=st.sampled_from(TASK_KINDS), pick=picks, token=st.sampled_from(TOKEN_KINDS), when=st.sampled_from(LEASE_TIME_KINDS), offset=offsets)
        def fail(self, which: str, pick: int, token: str, when: str, offset: int) -> None:
            task_id = self.task_id(which, pick)
            self.step("fail", task_id=task_id, token=self.token(task_id, token, pick), now=self.time(when, pick, offset))

        @precondition(lambda self: self.state.tasks)
        @rule(which=st.sampled_from(TASK_KINDS), pick=picks, when=st.sampled_from(LEASE_TIME_KINDS), offset=offsets)
        def cancel(self, which: str, pick: int, when: str, offset: int) -> None:
            self.step("cancel", task_id=self.task_id(which, pick), now=self.time(when, pick, offset))

        @precondition(lambda self: self.state.tasks)
        @rule(which=st.sampled_from(TASK_KINDS), pick=picks, token=st.sampled_from(TOKEN_KINDS), when=st.sampled_from(LEASE_TIME_KINDS), offset=offsets, duration=durations)
        def renew(self, which: str, pick: int, token: str, when: str, offset: int, duration: int) -> None:
            task_id = self.task_id(which, pick)
            self.step(
                "renew", task_id=task_id, token=self.token(task_id, token, pick),
                now=self.time(when, pick, offset), duration=duration,
            )

        @precondition(lambda self: any(t.status is Status.RUNNING for t in self.state.tasks))
        @rule(
            op=st.sampled_from(("complete", "fail", "renew")),
            pick=picks,
            when=st.sampled_from(("now", "before_expiry", "at_expiry")),
            duration=durations,
        )
        def report_on_running_work(self, op: str, pick: int, when: str, duration: int) -> None:
            """A worker reports on the work it holds, with its current token.

            Uniform choices rarely line up task, token and time, so most reports
            would be refusals; this rule makes acceptance (and the slot it
            frees) as common as refusal.
            """
            running = [t for t in self.state.tasks if t.status is Status.RUNNING]
            task = running[pick % len(running)]
            args: dict[str, object] = {"task_id": task.id, "token": task.token, "now": self.time(when, pick, 0)}
            if op == "renew":
                args["duration"] = duration
            self.step(op, **args)

        @precondition(lambda self: any(t.cancel_requested for t in self.state.tasks))
        @rule(
            op=st.sampled_from(("renew", "fail", "complete")),
            pick=picks,
            when=st.sampled_from(("now", "now", "before_expiry", "at_expiry")),
            duration=durations,
        )
        def report_after_cancel_request(self, op: str, pick: int, when: str, duration: int) -> None:
            """A worker whose task was asked to stop reports with its current token.

            Cancellation is cooperative, so this is where its rules bite: renew
            is refused, fail ends ``cancelled``, complete still succeeds. The
            state is rare under uniform choices, so it gets a rule of its own.
            """
            asked = [t for t in self.state.tasks if t.cancel_requested]
            task = asked[pick % len(asked)]
            args: dict[str, object] = {"task_id": task.id, "token": task.token, "now": self.time(when, pick, 0)}
            if op == "renew":
                args["duration"] = duration
            self.step(op, **args)

        @rule(when=st.sampled_from(TIME_KINDS), pick=picks, offset=offsets)
        def advance(self, when: str, pick: int, offset: int) -> None:
            self.step("advance", now=self.time(when, pick, offset))

        @rule(
            kind=st.sampled_from(INVALID_CALLS), pick=picks, form=st.sampled_from(NON_INT_FORMS),
            when=st.sampled_from(TIME_KINDS), offset=offsets,
        )
        def invalid_call(self, kind: str, pick: int, form: str, when: str, offset: int) -> None:
            """Calls the protocol refuses: both sides must raise ValueError and change nothing.

            Each step makes one fault everywhere it can occur (see
            ``INVALID_CALLS``); ``offset`` also chooses among its bad
            values. Their time lands on boundaries like any other call's, so
            an implementation that expires leases before validating is seen.
            """
            calls = invalid_calls(self.state, kind, pick, self.time(when, pick, offset), offset, form)
            self.run.plan(calls)
            for op, args in calls:
                self.step(op, **args)

        # ------------------------------------------------------------ invariants

        def holds(self, check: Callable[[invariants.Observation, invariants.History], None]) -> None:
            self.run.holds(check)

        @invariant()
        def each_task_has_exactly_one_status(self) -> None:
            self.holds(invariants.each_task_has_exactly_one_status)

        @invariant()
        def running_task_has_exactly_one_current_lease(self) -> None:
            self.holds(invariants.running_task_has_exactly_one_current_lease)

        @invariant()
        def no_worker_above_capacity(self) -> None:
            self.holds(invariants.no_worker_above_capacity)

        @invariant()
        def tokens_are_unique_and_increasing(self) -> None:
            self.holds(invariants.tokens_are_unique_and_increasing)

        @invariant()
        def no_lease_alive_at_or_past_expiry(self) -> None:
            self.holds(invariants.no_lease_alive_at_or_past_expiry)

        @invariant()
        def final_states_never_change(self) -> None:
            self.holds(invariants.final_states_never_change)

        @invariant()
        def attempts_never_exceed_max_attempts(self) -> None:
            self.holds(invariants.attempts_never_exceed_max_attempts)

        @invariant()
        def cancelled_task_never_runs_after_cancellation(self) -> None:
            self.holds(invariants.cancelled_task_never_runs_after_cancellation)

        @invariant()
        def implementation_invariants_hold(self) -> None:
            """The implementation's own ``check_invariants()``, when it has one."""
            self.run.implementation_invariants()

    # Hypothesis seeds a derandomized run from this name: a factory may offer a stable one
    stable = getattr(factory, "machine_name", None) or getattr(factory, "__name__", "factory")
    ConformanceMachine.__name__ = ConformanceMachine.__qualname__ = name or f"Conformance_{stable}"
    return ConformanceMachine


def invalid_calls(
    state: model.State, kind: str, pick: int, now: int | None = None, shape: int = 0, form: str = "str",
) -> list[tuple[str, dict]]:
    """The calls of one kind of fault (see ``INVALID_CALLS``) against ``state``, as ``(op, args)``.

    ``now`` (default: the current time) is the instant used where the fault
    is not the time itself. ``pick`` chooses the task and worker named and
    the size of a bad value, ``shape`` which bad value, and ``form`` (one of
    ``NON_INT_FORMS``) how a wrong type disguises a valid value. Every other
    argument is valid, so each call is refused for the fault its kind names
    (``several_faults`` aside; with no task submitted yet, a named task is
    unknown too).

    Raises:
        ValueError: ``kind`` is not one of ``INVALID_CALLS``.
    """
    now = state.now if now is None else now
    tasks = len(state.tasks)
    task_id = 1 + pick % tasks if tasks else 1
    token = (state.tasks[task_id - 1].token if tasks else None) or 1  # the task's current token, if it has one
    worker = state.workers[pick % len(state.workers)][0] if state.workers else "w1"

    def call(op: str, **fault: object) -> tuple[str, dict]:
        return op, {**valid_call(op, task_id, token, worker, now), **fault}

    if kind == "wrong_type":
        valid = {
            "now": now, "duration": 1 + pick % 3, "task_id": task_id, "token": token, "priority": pick,
            "due_at": now, "max_attempts": 1 + pick % 3, "retry_delay": 1 + pick % 3, "capacity": 1 + pick % 2,
        }
        return [call(op, **{name: disguise(valid[name], form)}) for op, name in INT_ARGUMENTS]
    if kind == "bad_time":
        negative, backwards = -1 - pick, state.now - 1 - pick % max(state.now, 1)
        wrong = backwards if shape % 2 and state.now > 0 else negative
        return [call(op, now=wrong) for op in (TIMED_OPS if tasks else ("dispatch", "advance"))]
    if kind == "bad_task_id":
        wrong = (0, -1 - pick, tasks + 1 + pick)[shape % 3]
        return [call(op, task_id=wrong) for op in ("complete", "fail", "cancel", "renew")]
    if kind == "below_minimum":
        low = -1 - pick % 3 if shape % 2 else 0
        return [
            call("dispatch", duration=low), call("renew", duration=low), call("add_worker", capacity=low),
            call("submit", due_at=-1 - pick), call("submit", max_attempts=low), call("submit", retry_delay=low),
        ]
    if kind == "bad_worker":
        non_str = NON_STRS[pick % len(NON_STRS)]
        again = [call("add_worker", worker=worker)] if state.workers else []  # a worker added already
        return [
            call("add_worker", worker=non_str), call("add_worker", worker=""), *again,
            call("dispatch", worker=non_str), call("dispatch", worker="nobody"),
        ]
    if kind == "several_faults":
        return [
            ("dispatch", {"worker": "nobody", "now": -1, "duration": 0}),
            ("complete", {"task_id": 0, "token": "1", "now": now}),
            ("renew", {"task_id": tasks + 1, "token": [1], "now": 1.5, "duration": 0}),
            ("submit", {"priority": "1", "due_at": -1}),
            ("add_worker", {"worker": "", "capacity": 0}),
            ("cancel", {"task_id": "x", "now": -1}),
            ("fail", {"task_id": task_id, "token": 1.5, "now": -1}),
            ("add_worker", {"worker": worker, "capacity": True}),
        ]
    raise ValueError(f"kind must be one of {', '.join(INVALID_CALLS)}: {kind!r}")


def valid_call(op: str, task_id: int, token: int, worker: str, now: int) -> dict:
    """Arguments for ``op`` with every type and range right, for a kind to put one fault into.

    (The task may still not exist and the token may be stale: those are refusals, not faults.)
    """
    return {
        "submit": {},
        "add_worker": {"worker": "w9", "capacity": 1},
        "dispatch": {"worker": worker, "now": now, "duration": 1},
        "complete": {"task_id": task_id, "token": token, "now": now},
        "fail": {"task_id": task_id, "token": token, "now": now},
        "cancel": {"task_id": task_id, "now": now},
        "renew": {"task_id": task_id, "token": token, "now": now, "duration": 1},
        "advance": {"now": now},
    }[op]
