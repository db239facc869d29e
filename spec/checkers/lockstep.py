"""The lockstep comparator: the model and one implementation, call by call.

``Lockstep`` applies each call to the model and to a scheduler made by a
factory, compares the results and then every task view and the clock, and
runs the invariants of ``spec.invariants`` over the implementation's views.
``plan``, ``reads_in`` and ``reads_after`` are hooks for a scheduler behind
``--exec``: they announce the calls to come so a program can answer them in
one round trip; an in-process scheduler never sees them.
``run_calls`` replays concrete calls this way (the minimizers' and the
regressions' oracle).
"""

from __future__ import annotations

from collections.abc import Callable

from fencepost.spec import invariants, model
from fencepost.spec.checkers.coverage import classify, Coverage
from fencepost.spec.checkers.deadline import CallTimeout, run_watched, SchedulerFault, Watch, watched_factory
from fencepost.spec.checkers.results import comparable, describe, Divergence, normalize, VIEW_FIELDS, view_tuple
from fencepost.spec.checkers.steps import bad_task_ids, check_bad_task_ids, int_field
from fencepost.spec.formats.trace import format_call, TraceStep
from fencepost.spec.protocol import RESTART


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
