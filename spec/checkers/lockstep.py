"""The lockstep comparator: the model and one implementation, call by call.

``Lockstep`` applies each call to the model and to a scheduler made by a
factory, compares the results and then every task view and the clock, and
runs the invariants of ``spec.invariants`` over the implementation's views.
``plan``, ``reads_in`` and ``reads_after`` are hooks for a scheduler behind
``--exec``: they announce the calls to come so a program can answer them in
one round trip; an in-process scheduler never sees them.
``run_calls`` replays concrete calls this way (the minimizers' and the
regressions' oracle). A batch (``submit_many`` and the others) is one call:
the scheduler's list of results is judged whole.

Declared variants (``spec.variants``): the model starts from
``model.initial(variants)``; where a variant allows several answers to one
call (``order=any``, ``tokens=opaque``) and the scheduler's differs from the
model's own pick, ``model.follow`` decides whether it is allowed and the run
follows it; a divergence then says why not (``model.why_not``). Under
``views=none`` no ``task()`` is read: results alone are compared and the
invariants run over the model's views. With no variant declared every step
is judged exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable

from fencepost.spec import invariants, model
from fencepost.spec.checkers.capabilities import close_scheduler
from fencepost.spec.checkers.coverage import classify, Coverage
from fencepost.spec.checkers.renaming import Renaming
from fencepost.spec.checkers.deadline import CallTimeout, run_watched, SchedulerFault, Watch, watched_factory
from fencepost.spec.checkers.results import comparable, describe, Divergence, normalize, VIEW_FIELDS, view_tuple
from fencepost.spec.checkers.steps import bad_task_ids, check_bad_task_ids, int_field
from fencepost.spec.formats.trace import format_call, TraceStep
from fencepost.spec.protocol import RESTART, says_forgotten
from fencepost.spec.variants import DEFAULT, Variants



# ---------------------------------------------------------------- lockstep


class Lockstep:
    """The model and one implementation, driven call by call and compared.

    Used by the state machine, by counterexample minimization and by the
    explorer, so every one of them judges a call the same way.
    """

    def __init__(self, factory: Callable[[], object], coverage: Coverage | None = None, watch: Watch | None = None,
                 variants: Variants = DEFAULT) -> None:
        self.trace: list[TraceStep] = []
        self.pending: TraceStep | None = None  # the step whose call is in progress, for a hang report
        if watch is not None:
            watch.context = self  # so the watching thread can report the calls that led to a hang
            factory = watched_factory(factory, watch)
        self.impl = factory()
        self.state = model.initial(variants)
        self.variants = variants
        # whether a scheduler's answer may differ from the model's own pick and still be allowed
        self.chooses = variants.order == "any" or variants.tokens == "opaque"
        self.opaque = variants.tokens == "opaque"
        # under tokens=opaque a step names tokens by the model's numbers (see spec.checkers.renaming)
        self.renaming = Renaming() if self.opaque else None
        self.coverage = coverage
        self.history = invariants.History()
        self.max_attempts: dict[int, int | None] = {}
        self.tokens_by_task: dict[int, list[int | str]] = {}  # task id -> tokens issued for it, in order
        self.worker_of_token: dict[int | str, str] = {}  # token -> the worker its lease went to
        self.observed: invariants.Observation | None = None

    def step(self, op: str, args: dict) -> TraceStep:
        """Apply one call to both sides and compare; raise Divergence on any difference.

        ``op`` may be ``RESTART`` (see ``restart``).
        """
        if op == RESTART:
            return self.restart()
        before = self.state
        self.observed = None
        named = args  # as the trace records the call: tokens by the model's numbers under tokens=opaque
        if self.renaming is not None:
            args = self.renaming.args_to_scheduler(op, args)
        try:
            after, result = model.apply(before, op, dict(args))
            expected: object = normalize(result, self.opaque)
        except ValueError as exc:
            after, result, expected = before, None, ("error", str(exc))
        raised = isinstance(expected, tuple) and expected[0] == "error"
        wrong_kind = None
        self.pending = TraceStep(op, dict(named), expected, None)
        self.plan([(op, args)], before)
        raw: object = None
        try:
            raw = getattr(self.impl, op)(**args)
            got: object = normalize(raw, self.opaque)
        except ValueError as exc:
            got = ("error", str(exc))
        except CallTimeout as exc:  # a program behind --exec that stopped answering: a finding
            got, wrong_kind = ("hang", exc.seconds), str(exc)
        except SchedulerFault as exc:  # a program behind --exec that broke the adapter protocol
            got, wrong_kind = ("fault", str(exc)), str(exc)
        except Exception as exc:  # noqa: BLE001 - any other exception breaks rule 2 of the protocol
            got = ("error", f"{type(exc).__name__} (not a ValueError): {exc}")
            wrong_kind = f"raised {type(exc).__name__}, which is not a ValueError"
        self.pending = None
        record = TraceStep(op, dict(named), self.numbered(expected), self.numbered(got))
        self.trace.append(record)
        if self.coverage is not None:
            outcome, boundaries = classify(op, dict(args), before, after, result, raised)
            self.coverage.record(op, outcome, boundaries)
        if wrong_kind:
            self.diverge(record, wrong_kind)
        if comparable(expected) != comparable(got):
            answered = not (isinstance(got, tuple) and got and got[0] in ("error", "hang", "fault"))
            followed = self.follow(before, op, args, raw) if self.chooses and answered and not raised else None
            if followed is None:
                self.diverge(record, self.differs(before, op, args, record.expected, record.got, raw))
            after, result = followed
            expected = normalize(result, self.opaque)
            record.expected = self.numbered(expected)
        self.state = after
        if not raised:
            self._remember(op, args, result)
        if self.renaming is not None:
            for lease in (result or []) if op == "dispatch_many" else [result] if op == "dispatch" and result is not None else []:
                self.renaming.saw(lease.token)
        self.compare_views(record)
        return record

    def _remember(self, op: str, args: dict, result: object) -> None:
        """What the rules and invariants need to know of a call the model accepted: budgets, tokens, workers."""
        if op == "submit" and result not in self.max_attempts:
            self.max_attempts[result] = args.get("max_attempts")
        elif op == "submit_many":
            for entry, task_id in zip(args["tasks"], result):
                self.max_attempts.setdefault(task_id, entry.get("max_attempts"))
        leases = [result] if op == "dispatch" and result is not None else result if op == "dispatch_many" else []
        for lease in leases:
            self.tokens_by_task.setdefault(lease.task_id, []).append(lease.token)
            self.worker_of_token[lease.token] = lease.worker

    def follow(self, state: model.State, op: str, args: dict, raw: object) -> tuple[model.State, object] | None:
        """``model.follow`` of the scheduler's raw answer: the next state and the model's result, or None."""
        try:
            return model.follow(state, op, dict(args), raw)
        except ValueError:  # the call was invalid for the model: apply said so already
            return None

    def numbered(self, value: object) -> object:
        """A normalized result as the trace records it: under ``tokens=opaque`` a lease's token by its number.

        A token seen before gets its first number (so a reused token shows as
        the lease it repeats); a new one the next number, as the model would
        have issued it. Without renaming, ``value`` itself.
        """
        if self.renaming is None or not (isinstance(value, tuple) and value and value[0] == "lease"):
            return value
        token = value[3]
        # never seen: fresh, numbered next, as the model would have issued it
        number = self.renaming.number_of(token) if self.renaming.known(token) else len(self.renaming.tokens) + 1
        return (*value[:3], number, *value[4:])

    def differs(self, state: model.State, op: str, args: dict, expected: object, got: object, raw: object) -> str:
        """The divergence message: the results, and under a variant that allows choices, why the model allows none of it."""
        interval = state.variants.interval
        text = f"the result differs: expected {describe(expected, op, interval)}, got {describe(got, op, interval)}"
        if self.chooses and not (isinstance(got, tuple) and got and got[0] in ("error", "hang", "fault")) \
                and not (isinstance(expected, tuple) and expected and expected[0] == "error"):
            reason = model.why_not(state, op, dict(args), raw)
            if reason:
                text += f" (not allowed: {reason})"
        return text

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
        if self.renaming is not None:
            calls = [(op, self.renaming.args_to_scheduler(op, args)) for op, args in calls]
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
        if state.variants.views == "none":
            return [("now", {})]
        return _reads(len(state.tasks), [*range(1, len(state.tasks) + 1), *bad_task_ids(len(state.tasks))])

    @staticmethod
    def reads_after(state: model.State) -> list[tuple[str, dict]]:
        """The reads ``compare_views`` makes after one call from ``state``, whether it submits a task or not."""
        tasks = len(state.tasks)
        if state.variants.views == "none":
            return [("now", {})]
        return _reads(tasks, [*range(1, tasks + 2), *bad_task_ids(tasks), *bad_task_ids(tasks + 1)])

    def close(self) -> None:
        """Close the scheduler this run is driving, when it has a ``close()``, once its run is over.

        Its connections and files go now, not when the garbage collector
        finds it: Hypothesis keeps each run's machine in reference cycles, so
        without this a check over a server held one connection a run until
        the next full collection (about 50 in a PostgreSQL conformance check,
        enough for two such checks at once to use up the server's 100).
        """
        close_scheduler(self.impl)

    def restart(self) -> TraceStep:
        """Replace the implementation with its ``reopen()``; the model does not change.

        The reopened scheduler must then agree on the clock and every view.
        The replaced one is closed (``close_scheduler``) unless ``reopen()`` returned it.

        Raises:
            Divergence: ``reopen()`` raised, or the reopened scheduler disagrees.
        """
        self.observed = None
        record = TraceStep(RESTART, {}, None, None)
        self.trace.append(record)
        if self.coverage is not None:
            self.coverage.record(RESTART, "ok", set())
        replaced = self.impl
        try:
            self.impl = replaced.reopen()
        except Exception as exc:  # noqa: BLE001 - a user's reopen() may fail any way: a divergence, reported
            record.got = ("error", f"{type(exc).__name__}: {exc}")
            self.diverge(record, f"reopen() raised {type(exc).__name__}: {exc}")
        if self.impl is not replaced:
            close_scheduler(replaced)  # as a process that restarts leaves its old connections behind
        self.compare_views(record)
        return record

    def compare_views(self, record: TraceStep) -> None:
        """The clock, every task's view, and ``task()`` refusing ids that name no task."""
        prefetch = getattr(self.impl, "_fencepost_prefetch", None)
        if self.variants.views == "none":  # the queue shows no task: its results were compared already
            if prefetch is not None:
                prefetch([("now", {})])
            if int_field(self.impl.now) != self.state.now:
                self.diverge(record, f"now differs afterwards: expected {self.state.now}, got {self.impl.now!r}")
            return
        if prefetch is not None:  # a scheduler in another process (--exec): the reads not yet asked, in one round trip
            prefetch(self.reads_in(self.state))
        if int_field(self.impl.now) != self.state.now:
            self.diverge(record, f"now differs afterwards: expected {self.state.now}, got {self.impl.now!r}")
        for task in self.state.tasks:
            if task.forgotten:
                self.compare_forgotten(record, task.id)
                continue
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
        except Exception as exc:  # noqa: BLE001 - rule 2 of the protocol: only ValueError
            refused = f"task() raised {type(exc).__name__}, which is not a ValueError: {exc}"
        if refused:
            self.diverge(record, refused)

    def compare_forgotten(self, record: TraceStep, task_id: int) -> None:
        """A task ``prune`` forgot: ``task()`` must raise ValueError, and say the task was forgotten."""
        try:
            view = self.impl.task(task_id)
        except ValueError as exc:
            if not says_forgotten(exc):
                self.diverge(record, f"task({task_id}) of a forgotten task must raise saying it was forgotten, "
                                     f"it raised: {exc}")
            return
        self.diverge(record, f"task {task_id} was forgotten by prune, but task({task_id}) still answers {view!r}")

    def diverge(self, record: TraceStep, problem: str) -> None:
        record.problem = problem
        raise Divergence(f"step {len(self.trace)}: {format_call(record.op, record.args)}: {problem}")

    def observation(self) -> invariants.Observation:
        """The implementation's views after the last step, read once per step."""
        if self.observed is None and self.variants.views == "none":  # nothing to read: the model's views, as followed
            self.observed = invariants.Observation(
                now=self.state.now,
                tasks=[model.view(t) for t in self.state.tasks],
                capacities=dict(self.state.workers),
                max_attempts=self.max_attempts,
                variants=self.variants,
            )
        if self.observed is None:
            self.observed = invariants.Observation(
                now=self.impl.now,
                tasks=[None if t.forgotten else self.impl.task(t.id) for t in self.state.tasks],
                capacities=dict(self.state.workers),
                max_attempts=self.max_attempts,
                variants=self.variants,
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
    variants: Variants = DEFAULT,
) -> list[TraceStep] | None:
    """Replay concrete calls in lockstep; the trace up to the first failure, or None if all conform.

    With ``call_timeout``, the calls run on a watched thread (see
    ``spec.checkers.deadline``) and a call that does not return in time ends
    the trace as a hang; without it, they run on this thread with no deadline.
    """
    if call_timeout is None:
        return _run_calls(factory, calls, None, variants)
    watch = Watch(call_timeout)
    try:
        return run_watched(lambda: _run_calls(factory, calls, watch, variants), watch)
    except CallTimeout as exc:
        return hang_trace(watch.context, exc)


def _run_calls(factory: Callable[[], object], calls: list[tuple[str, dict]], watch: Watch | None,
               variants: Variants = DEFAULT) -> list[TraceStep] | None:
    try:
        lockstep = Lockstep(factory, watch=watch, variants=variants)
    except Exception:  # noqa: BLE001 - the factory itself failed: a failure with no steps
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
    except Exception as exc:  # noqa: BLE001 - a crash inside the implementation is a failure too
        lockstep.mark(f"the implementation crashed: {type(exc).__name__}: {exc}")
        return lockstep.trace
    finally:
        lockstep.close()
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
