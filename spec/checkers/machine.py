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
model does not change) and everything must still agree; with ``prune``, a
``prune`` rule forgets final tasks, its ``before`` landing exactly on a final
task's ``ended_at`` (kept) or one past it (forgotten), and afterwards every
call naming a forgotten id must raise ``ValueError`` and its ``task()`` say
it was forgotten, while submits reuse the forgotten tasks' keys; with
batches, ``submit_many``, ``dispatch_many`` (of 1, of the worker's room, of
more than its room), ``complete_many`` and ``fail_many`` (mixed reports, a
worker's whole load, stale and repeated reports after accepted ones) and
invalid batches, each one call judged whole. A scheduler that offers none of
these is driven exactly as before.

Declared variants (``spec.variants``) change what the machine calls, never
what it judges by hand: it draws only what the queue offers
(``Variants.offers``: no priority under ``order=fifo``, no ``due_at``,
``max_attempts`` or keys, no ``renew``, ``cancel`` or ``fail`` when the queue
is ``without`` them), one lease length under ``duration=N``, tokens from the
ones it saw under ``tokens=opaque`` (named by number: a never-issued one is
a number past every lease's, sent as a fresh token),
and it lands on the variant's boundaries too (``due_at + 1`` under
``due=after``, ``expires_at + 1`` under ``interval=closed``). The model and the
lockstep judge the rest.

Only the public protocol is used, so any object with the protocol's methods
can be checked.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import note, strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule, RuleBasedStateMachine

from fencepost.spec import invariants, model
from fencepost.spec.checkers.capabilities import BATCH, Capabilities, detect, uncalled
from fencepost.spec.checkers.coverage import Coverage
from fencepost.spec.checkers.deadline import Watch
from fencepost.spec.checkers.invalid_calls import INVALID_BATCHES, INVALID_CALLS, invalid_batches, invalid_calls, NON_INT_FORMS
from fencepost.spec.checkers.lockstep import Lockstep
from fencepost.spec.checkers.results import describe
from fencepost.spec.formats.trace import format_call, TraceStep
from fencepost.spec.protocol import RESTART, Status
from fencepost.spec.variants import DEFAULT, Variants


#: Most tasks one run submits: enough to pass id 9 with room for reassignments,
#: few enough that the model's O(T) copies stay cheap.
MAX_TASKS = 16
#: Workers a run may add (names are drawn from ``WORKER_NAMES``).
WORKER_NAMES = ("w1", "w2", "w3")

TIME_KINDS = ("now", "now", "at_expiry", "before_expiry", "at_due", "later", "far")
#: How a submit chooses its due time.
DUE_KINDS = ("default", "now", "later", "same_as_other", "past")
# A call carrying a token lands inside its lease more often than not, so that
# acceptance is exercised as much as every way of being refused.
LEASE_TIME_KINDS = ("now", "now", "before_expiry", "at_expiry", "at_expiry", "later", "at_due", "far")
# Repeated entries weight the draw: most lease calls target running work with
# its current token, which is where acceptance (and its boundary) lives.
TASK_KINDS = ("running", "running", "running", "cancel_requested", "cancel_requested", "any", "newest")
TOKEN_KINDS = ("current", "current", "current", "previous", "same_worker", "other", "never_issued")
#: The idempotency keys a run draws from: few, so that keys repeat often.
KEY_POOL = ("a", "b", "c")
#: How a submit chooses its key when the scheduler offers keys. Repeated
#: entries weight the draw: ``pool`` reuses a pooled key with freshly drawn
#: arguments (new, a conflict, or by chance a duplicate), ``repeat`` repeats a
#: known key with exactly its first arguments (a duplicate).
KEY_KINDS = ("none", "none", "pool", "pool", "repeat")
#: Keys ``invalid_key`` offers: wrong types and the empty string.
BAD_KEYS = ("", 1, ["a"], True)
#: Where a prune's ``before`` lands: exactly a final task's ``ended_at`` (it is
#: kept), one past it (forgotten), the call's ``now`` (every earlier end), 0
#: (nothing), or an invalid value (past ``now``, negative, not an int).
PRUNE_KINDS = ("at_end", "at_end", "past_end", "past_end", "now", "zero", "after_now", "negative", "not_int")
#: Most entries a batch the machine makes has: more than any worker's capacity, few enough to read.
BATCH_MAX = 4
#: How ``dispatch_many`` chooses its limit: 1, exactly the worker's room, more than its room, several.
BATCH_SIZES = ("one", "room", "more", "more", "several")


class _Fresh:
    """Under ``tokens=opaque``: the ``pick``-th token past every lease's, before ``step`` numbers it."""

    __slots__ = ("pick",)

    def __init__(self, pick: int) -> None:
        self.pick = pick


picks = st.integers(min_value=0, max_value=7)
offsets = st.integers(min_value=0, max_value=3)
durations = st.integers(min_value=1, max_value=10)


# ---------------------------------------------------------------- the machine


def conformance_machine(
    factory: Callable[[], object], *, coverage: Coverage | None = None, name: str | None = None,
    watch: Watch | None = None,
    capabilities: Capabilities | None = None,
    variants: Variants = DEFAULT,
    lockstep: Callable[..., Lockstep] = Lockstep,
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
        variants: the declared contract variants the run checks against;
            the default is the contract.
        lockstep: makes each run's comparator, called as ``Lockstep`` is;
            ``--clock real`` passes ``spec.checkers.realtime.timed_lockstep``.

    Returns:
        A ``RuleBasedStateMachine`` subclass. Its ``last_trace`` class
        attribute holds the steps of the most recent run, which after a
        failed ``run_state_machine_as_test`` is the shrunk counterexample.
    """
    offered = detect(factory) if capabilities is None else capabilities
    offers = variants.offers
    keyed_kinds = KEY_KINDS if offered.keys and offers("keys") else ("none",)
    running_reports = tuple(op for op in ("complete", "fail", "renew") if op == "complete" or offers(op))
    cancel_reports = tuple(op for op in ("renew", "fail", "complete") if op == "complete" or offers(op))
    length = variants.lease_length()
    lease_lengths = durations if length is None else st.just(length)
    opaque = variants.tokens == "opaque"
    # under a variant that moves a boundary, the machine lands on both sides of it
    closed = variants.interval == "closed"
    due_after = variants.due == "after"
    # Under a declared variant a dispatch also lands just before a waiting task's due time: with
    # priorities gone (order=fifo) a not-yet-due task is handed out early only when nothing due is
    # waiting, which uniform times rarely meet. (The contract's draws stay exactly as they were.)
    dispatch_times = TIME_KINDS if variants == DEFAULT else (*TIME_KINDS, "before_due", "before_due")

    #: The report batches the machine makes: fail_many only where fail is offered.
    report_batches = ("complete_many", "complete_many", "fail_many") if offers("fail") else ("complete_many",)

    class BatchRules(RuleBasedStateMachine):
        """The batch rules: part of the machine only when the scheduler offers batches, so a
        machine for one that does not has exactly the rules (and so the draws) it had before."""

        @precondition(lambda self: len(self.state.tasks) < MAX_TASKS)
        @rule(entries=st.lists(
            st.tuples(st.integers(min_value=0, max_value=2), st.none() | st.integers(min_value=1, max_value=3),
                      st.sampled_from(keyed_kinds), offsets),
            max_size=BATCH_MAX))
        def submit_many_batch(self, entries: list[tuple[int, int | None, str, int]]) -> None:
            """Several submits as one call (none, one or several), keys repeating inside the batch too."""
            tasks = []
            for priority, max_attempts, keyed, offset in entries[: MAX_TASKS - len(self.state.tasks)]:
                entry: dict[str, object] = {"priority": priority} if offers("priority") else {}
                if max_attempts is not None and offers("max_attempts"):
                    entry["max_attempts"] = max_attempts
                if keyed != "none":
                    entry["key"] = KEY_POOL[offset % len(KEY_POOL)]
                tasks.append(entry)
            self.step("submit_many", tasks=tasks)

        @rule(worker=picks, when=st.sampled_from(TIME_KINDS), pick=picks, offset=offsets, duration=lease_lengths,
              size=st.sampled_from(BATCH_SIZES))
        def dispatch_many_batch(self, worker: int, when: str, pick: int, offset: int, duration: int, size: str) -> None:
            """A batch of dispatches: of 1, of exactly the worker's room, of more than its room, of several."""
            name, now = self.worker(worker), self.time(when, pick, offset)
            seen = model.expire(self.state, now)
            room = dict(seen.workers)[name] - model.load(seen, name)
            limit = {"one": 1, "room": max(1, room), "more": max(1, room) + 1 + offset, "several": 2 + offset}[size]
            self.step("dispatch_many", worker=name, now=now, duration=duration, limit=limit)

        @precondition(lambda self: self.state.tasks)
        @rule(op=st.sampled_from(report_batches),
              reports=st.lists(st.tuples(st.sampled_from(TASK_KINDS), picks, st.sampled_from(TOKEN_KINDS)),
                               max_size=BATCH_MAX),
              when=st.sampled_from(LEASE_TIME_KINDS), pick=picks, offset=offsets)
        def report_many_batch(self, op: str, reports: list[tuple[str, int, str]], when: str, pick: int, offset: int) -> None:
            """A batch of reports on any tasks with any tokens: each judged as its single call, in order."""
            pairs = []
            for which, task_pick, token in reports:
                task_id = self.task_id(which, task_pick)
                pairs.append([task_id, self.token(task_id, token, task_pick)])
            self.step(op, reports=pairs, now=self.time(when, pick, offset))

        @rule(worker=picks, op=st.sampled_from(report_batches),
              extra=st.sampled_from(("none", "stale", "stale", "again")), when=st.sampled_from(("now", "now", "later")),
              pick=picks, duration=lease_lengths)
        def batched_worker_cycle(self, worker: int, op: str, extra: str, when: str, pick: int, duration: int) -> None:
            """A batched worker loop's turn: claim as much as the worker has room for, then report on all it holds.

            Two calls: ``dispatch_many`` with the worker's room as its limit, then
            one report batch with the current token of every task the worker
            holds. ``extra`` puts, right after the first report, one with a stale
            token of another running task (refused, whatever was accepted before
            it; that task's own report comes later), or adds the first report
            again at the end (refused: it was just accepted).
            """
            name, now = self.worker(worker), self.time(when, pick, 0)
            seen = model.expire(self.state, now)
            room = dict(seen.workers)[name] - model.load(seen, name)
            self.step("dispatch_many", worker=name, now=now, duration=duration, limit=max(1, room))
            running = [t for t in self.state.tasks if t.status is Status.RUNNING]
            pairs = [[t.id, t.token] for t in running if t.worker == name]
            if not pairs:
                return
            others = [t for t in running if t.id != pairs[0][0]]
            if extra == "stale" and others:
                stale = others[pick % len(others)]
                older = [token for token in self.tokens_by_task.get(stale.id, []) if token != stale.token]
                wrong = older[-1] if older else self.state.last_token + 1 + pick
                pairs = [pairs[0], [stale.id, wrong], *(pair for pair in pairs[1:] if pair[0] != stale.id)]
            elif extra == "again":
                pairs.append(list(pairs[0]))
            self.step(op, reports=pairs, now=now)

        @rule(kind=st.sampled_from(INVALID_BATCHES), pick=picks, form=st.sampled_from(NON_INT_FORMS),
              when=st.sampled_from(TIME_KINDS), offset=offsets)
        def invalid_batch(self, kind: str, pick: int, form: str, when: str, offset: int) -> None:
            """Batches the protocol refuses whole: both sides raise ValueError and nothing in them is done."""
            calls = invalid_batches(self.state, kind, pick, self.time(when, pick, offset), form)
            self.run.plan(calls)
            for op, args in calls:
                self.step(op, **args)


    # Batches are driven under the contract only (capabilities.uncalled): under a declared variant the
    # batch rules would need the variants' choices inside each batch too (not done yet), so they stay out.
    driven_batches = offered.batch and BATCH not in uncalled(offered, variants)
    class ConformanceMachine(*((BatchRules,) if driven_batches else ()), RuleBasedStateMachine):
        last_trace: list[TraceStep] = []
        capabilities = offered

        def __init__(self) -> None:
            super().__init__()
            self.run = lockstep(factory, coverage, watch, variants)
            type(self).last_trace = self.run.trace

        def teardown(self) -> None:
            """Each run's scheduler is closed as the run ends (``Lockstep.close``)."""
            self.run.close()

        @property
        def state(self) -> model.State:
            return self.run.state

        @property
        def tokens_by_task(self) -> dict[int, list[int]]:
            return self.run.tokens_by_task

        def step(self, op: str, **args: object) -> None:
            if self.run.renaming is not None:  # the machine chose seen tokens: the run names them by number
                args = self.run.renaming.args_to_numbers(args)
                if isinstance(args.get("token"), _Fresh):
                    args["token"] = len(self.run.renaming.tokens) + 1 + args["token"].pick
            record = self.run.step(op, args)
            note(f"{len(self.run.trace)}. {format_call(op, args)} -> {describe(record.got)}")

        # ------------------------------------------------------------ choosing arguments

        def time(self, kind: str, pick: int, offset: int) -> int:
            """An instant at or after now, chosen to land on boundaries."""
            now = self.state.now
            running = sorted((t.expires_at, t.id) for t in self.state.tasks if t.status is Status.RUNNING)
            waiting = sorted({t.due_at for t in self.state.tasks if t.due_at > now and t.status not in (Status.RUNNING,)})
            if kind == "at_expiry" and running:
                if closed and pick % 2:
                    return running[pick % len(running)][0] + 1  # the first instant a closed lease is over
                return running[pick % len(running)][0]
            if kind == "before_expiry" and running:
                return max(now, running[pick % len(running)][0] - 1)
            if kind == "before_due" and waiting:
                # the last instant a waiting task is not yet eligible
                return max(now, waiting[pick % len(waiting)] - (0 if due_after else 1))
            if kind == "at_due" and due_after and pick % 2:
                dues = sorted({t.due_at for t in self.state.tasks if t.due_at >= now and t.status is not Status.RUNNING})
                if dues:
                    return dues[pick % len(dues)] + 1  # the first instant due=after makes it eligible
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

        def never_issued(self, pick: int) -> int | _Fresh:
            """A token no lease carried: past the last one; under ``tokens=opaque`` a number past
            every lease's (``step`` writes it so; the run sends the scheduler a fresh token for it)."""
            if not opaque:
                return self.state.last_token + 1 + pick
            return _Fresh(pick)

        def token(self, task_id: int, kind: str, pick: int) -> int | str:
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
                return self.never_issued(pick)
            if task.token is not None:
                return task.token
            if opaque and not issued and self.state.issued:
                return self.never_issued(pick)
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
            due=st.sampled_from(DUE_KINDS),
            offset=offsets,
            max_attempts=st.none() | st.integers(min_value=1, max_value=3),
            retry_delay=st.integers(min_value=1, max_value=3),
            keyed=st.sampled_from(keyed_kinds),
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
            args: dict[str, object] = {"priority": priority} if offers("priority") else {}
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
            if not offers("due_at"):
                args.pop("due_at", None)
            if max_attempts is not None and offers("max_attempts"):
                args["max_attempts"] = max_attempts
            if retry_delay != 1:
                args["retry_delay"] = retry_delay
            if keyed != "none":
                args["key"] = KEY_POOL[offset % len(KEY_POOL)]
            self.step("submit", **args)

        @precondition(lambda self: offered.keys and offers("keys"))
        @rule(pick=picks, fault=st.sampled_from(("bad_key", "bad_argument_known_key")))
        def invalid_key(self, pick: int, fault: str) -> None:
            """A key that is no key, or a known key with an invalid argument: both raise, nothing changes."""
            if fault == "bad_key" or not self.state.keys:
                self.step("submit", key=BAD_KEYS[pick % len(BAD_KEYS)])
            else:
                record = self.state.keys[pick % len(self.state.keys)]
                if offers("priority"):
                    self.step("submit", priority=str(record.arguments[0]), key=record.key)
                else:
                    self.step("submit", retry_delay=str(record.arguments[3]), key=record.key)

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
            """Several equal tasks, one submit each: equal due times, and ids past 9 within few steps.

            (A rule name from before the batch operations; the batch ``submit_many`` is
            ``submit_many_batch``. Renaming it would change every run's draws.)"""
            extra = {} if max_attempts is None or not offers("max_attempts") else {"max_attempts": max_attempts}
            if offers("priority"):
                extra = {"priority": priority, **extra}
            submits = [("submit", extra)] * min(count, MAX_TASKS - len(self.state.tasks))
            self.run.plan(submits)
            for op, args in submits:
                self.step(op, **args)

        # ------------------------------------------------------------ rules: single calls

        @rule(worker=picks, when=st.sampled_from(dispatch_times), pick=picks, offset=offsets, duration=lease_lengths)
        def dispatch(self, worker: int, when: str, pick: int, offset: int, duration: int) -> None:
            self.step("dispatch", worker=self.worker(worker), now=self.time(when, pick, offset), duration=duration)

        @precondition(lambda self: self.state.tasks)
        @rule(which=st.sampled_from(TASK_KINDS), pick=picks, token=st.sampled_from(TOKEN_KINDS), when=st.sampled_from(LEASE_TIME_KINDS), offset=offsets)
        def complete(self, which: str, pick: int, token: str, when: str, offset: int) -> None:
            task_id = self.task_id(which, pick)
            self.step("complete", task_id=task_id, token=self.token(task_id, token, pick), now=self.time(when, pick, offset))

        @precondition(lambda self: self.state.tasks and offers("fail"))
        @rule(which=st.sampled_from(TASK_KINDS), pick=picks, token=st.sampled_from(TOKEN_KINDS), when=st.sampled_from(LEASE_TIME_KINDS), offset=offsets)
        def fail(self, which: str, pick: int, token: str, when: str, offset: int) -> None:
            task_id = self.task_id(which, pick)
            self.step("fail", task_id=task_id, token=self.token(task_id, token, pick), now=self.time(when, pick, offset))

        @precondition(lambda self: self.state.tasks and offers("cancel"))
        @rule(which=st.sampled_from(TASK_KINDS), pick=picks, when=st.sampled_from(LEASE_TIME_KINDS), offset=offsets)
        def cancel(self, which: str, pick: int, when: str, offset: int) -> None:
            self.step("cancel", task_id=self.task_id(which, pick), now=self.time(when, pick, offset))

        @precondition(lambda self: self.state.tasks and offers("renew"))
        @rule(which=st.sampled_from(TASK_KINDS), pick=picks, token=st.sampled_from(TOKEN_KINDS), when=st.sampled_from(LEASE_TIME_KINDS), offset=offsets, duration=lease_lengths)
        def renew(self, which: str, pick: int, token: str, when: str, offset: int, duration: int) -> None:
            task_id = self.task_id(which, pick)
            self.step(
                "renew", task_id=task_id, token=self.token(task_id, token, pick),
                now=self.time(when, pick, offset), duration=duration,
            )

        @precondition(lambda self: any(t.status is Status.RUNNING for t in self.state.tasks))
        @rule(
            op=st.sampled_from(running_reports),
            pick=picks,
            when=st.sampled_from(("now", "before_expiry", "at_expiry")),
            duration=lease_lengths,
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

        @precondition(lambda self: any(t.cancel_requested and t.status is Status.RUNNING for t in self.state.tasks))
        @rule(
            op=st.sampled_from(cancel_reports),
            pick=picks,
            when=st.sampled_from(("now", "now", "before_expiry", "at_expiry")),
            duration=lease_lengths,
        )
        def report_after_cancel_request(self, op: str, pick: int, when: str, duration: int) -> None:
            """A worker whose task was asked to stop reports with its current token.

            Cancellation is cooperative, so this is where its rules bite: renew
            is refused, fail ends ``cancelled``, complete still succeeds. The
            state is rare under uniform choices, so it gets a rule of its own.
            """
            # Only a running task still has a lease to report on: one that ended since (an expiry
            # after the request cancels it) would make every report a refusal the other rules draw.
            asked = [t for t in self.state.tasks if t.cancel_requested and t.status is Status.RUNNING]
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
            calls = invalid_calls(self.state, kind, pick, self.time(when, pick, offset), offset, form, variants)
            self.run.plan(calls)
            for op, args in calls:
                self.step(op, **args)

        # ------------------------------------------------------------ invariants

        def holds(self, check: Callable[[invariants.Observation, invariants.History], None]) -> None:
            self.run.holds(check)

        @invariant()
        def implementation_invariants_hold(self) -> None:
            """The implementation's own ``check_invariants()``, when it has one."""
            self.run.implementation_invariants()

    if offered.prune:
        # Added only when offered: a new rule changes every derandomized draw, and a scheduler
        # without prune must be driven exactly as before.
        ConformanceMachine.prune = _prune_rule()
    if variants != DEFAULT:  # added only here, so the contract's draws stay exactly as they were
        ConformanceMachine.dispatch_before_a_due_time = _dispatch_before_a_due_time_rule(lease_lengths, offers("due_at"))
    for check in invariants.INVARIANTS:
        setattr(ConformanceMachine, check.__name__, _invariant_rule(check))
    # Hypothesis seeds a derandomized run from this name: a factory may offer a stable one
    stable = getattr(factory, "machine_name", None) or getattr(factory, "__name__", "factory")
    ConformanceMachine.__name__ = ConformanceMachine.__qualname__ = name or f"Conformance_{stable}"
    return ConformanceMachine


def _prune_rule() -> Callable[..., None]:
    """The machine's ``prune`` rule: ``before`` on a final task's end time, one past it, or invalid."""

    @rule(kind=st.sampled_from(PRUNE_KINDS), when=st.sampled_from(TIME_KINDS), pick=picks, offset=offsets)
    def prune(self: RuleBasedStateMachine, kind: str, when: str, pick: int, offset: int) -> None:
        """Forget final tasks that ended before ``before``, the bound landing on an end time or past it."""
        now = self.time(when, pick, offset)
        ends = sorted({t.ended_at for t in model.expire(self.state, now).tasks if t.ended_at is not None and not t.forgotten})
        end = ends[pick % len(ends)] if ends else now
        before = {"at_end": end, "past_end": min(end + 1, now), "now": now, "zero": 0,
                  "after_now": now + 1, "negative": -1, "not_int": str(now)}[kind]
        self.step("prune", before=before, now=now)

    return prune
def _dispatch_before_a_due_time_rule(lease_lengths: st.SearchStrategy, due_at_offered: bool) -> Callable:
    """The machine's rule (under a declared variant) for "nothing is dispatched before its due time".

    A task waits for a later due time (submitted so, when the queue takes
    ``due_at``), and a dispatch comes at the last instant before it is
    eligible. Uniform choices rarely meet this: with priorities gone
    (``order=fifo``) a not-yet-due task could be handed out early only while
    nothing due is waiting, so this rule makes it a step of its own.
    """

    @precondition(lambda self: len(self.state.tasks) < MAX_TASKS)
    @rule(worker=picks, pick=picks, offset=offsets, duration=lease_lengths)
    def dispatch_before_a_due_time(self, worker: int, pick: int, offset: int, duration: int) -> None:
        now = self.state.now
        waiting = sorted({t.due_at for t in self.state.tasks if t.due_at > now and t.status in (Status.PENDING, Status.RETRY_WAIT)})
        if not waiting and due_at_offered:
            self.step("submit", due_at=now + 2 + offset)
            waiting = [now + 2 + offset]
        if waiting:
            due = waiting[pick % len(waiting)]
            last = due if self.state.variants.due == "after" else due - 1  # the last instant it is not eligible
            self.step("dispatch", worker=self.worker(worker), now=max(now, last), duration=duration)

    return dispatch_before_a_due_time


def _invariant_rule(check: Callable[[invariants.Observation, invariants.History], None]) -> Callable[[object], None]:
    """The machine's ``@invariant`` for one of ``spec.invariants.INVARIANTS``, named after it.

    The machine's invariants are made from that one list, so a new invariant
    is checked as soon as it is listed, under its own name in Hypothesis'
    output.
    """

    def holds(self: RuleBasedStateMachine) -> None:
        self.holds(check)

    holds.__name__ = check.__name__
    holds.__qualname__ = f"ConformanceMachine.{check.__name__}"
    holds.__doc__ = check.__doc__
    return invariant()(holds)
