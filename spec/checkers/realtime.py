"""Checking on the real clock: the harness that waits for ticks, and the judge that allows what timing allows.

``fencepost check FACTORY --clock real`` drives a queue whose clock nobody can
set (a Redis server's, a RabbitMQ broker's). ``spec.realclock.RealClock``
maps logical ticks onto the wall clock; ``TimedScheduler`` waits until each
timed call's tick has started, then calls, measuring the call's real start
and end (``TimedCall``). ``TimedLockstep`` is the lockstep comparator judged
in real time:

* A lease set (a dispatch, an accepted renew) by call ``d`` for ``D`` ticks
  ends on the server at ``r_d + D * tick``, where ``r_d`` is some instant
  inside ``d``'s measured interval (widened by ``offset_ns``, the server's
  clock resolution). At a later call ``c`` it has *surely ended* if ``c``
  started after the latest such end, is *surely live* if ``c`` returned
  before the earliest, and *either* otherwise (``lease_may_be``).
* The judge keeps the set of model states that some timing allows
  (``starts``: every lease that may be either is tried both ways), follows
  every one whose answer is the queue's answer, and reports a divergence only
  when none is: it never reports a finding that some timing within the
  measured uncertainty explains. The tick's own reading (a lease live exactly
  while ``now < expires_at``) is always among the states tried, so a
  scheduler on logical time is judged exactly as ``check`` judges it.
* The set is an over-approximation (one lease's real start is not
  correlated across the calls that test it), so it errs only towards
  accepting. Past ``MAX_STATES`` states the run is *inconclusive*
  (``Inconclusive``): set aside, counted, and another run drawn in its place.

``Timing`` collects what a check reports: the tick, the lateness of every
timed call (median, p99, max), the calls judged within the uncertainty, and
the inconclusive runs. ``run_timed_calls`` replays concrete calls on the real
clock (the minimizer's oracle under ``--clock real``).

How a run is made (``real_clock_machine``): the conformance machine draws
its calls against the model itself (``ModelScheduler``), on logical time, so
Hypothesis sees the same draws for the same choices whatever the timing
(a machine whose preconditions read a state the wall clock shaped would
draw differently on a replay, which Hypothesis rightly refuses as flaky);
at the end of each run its calls are replayed on the queue on the real
clock and judged there. A call the machine aimed at a boundary by the ticks
lands on the server within the measured lateness of it.

Queues on a real clock declare ``views=none``: their task views change
between calls on their own (a lease lapses while nobody calls), which no
view read at one instant can be judged by.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from hypothesis.errors import UnsatisfiedAssumption

from fencepost.spec import model, realclock
from fencepost.spec.checkers.coverage import Coverage
from fencepost.spec.checkers.deadline import CallTimeout, run_watched, SchedulerFault, Watch
from fencepost.spec.checkers.lockstep import hang_trace, Lockstep
from fencepost.spec.checkers.results import comparable, Divergence, normalize
from fencepost.spec.formats.trace import TraceStep
from fencepost.spec.protocol import DISPATCHABLE_STATUSES, RESTART, Status
from fencepost.spec.variants import DEFAULT, Variants

#: Runs a ``--clock real`` check makes when ``--max-examples`` is not given: each costs real time
#: (its ticks, less the idle stretches skipped), so far fewer than a logical check's.
REAL_EXAMPLES = 25
#: Steps per run when ``--steps`` is not given under ``--clock real``.
REAL_STEPS = 30
#: Seconds the minimizer may spend replaying a counterexample on the real clock (each replay waits
#: for its ticks); past it the shortest counterexample found so far is the one reported.
MINIMIZE_SECONDS = 60.0
#: Most model states the judge keeps for one run; past it the run is inconclusive. Each state is
#: one way the leases that may have ended either way did; a run rarely keeps more than four.
MAX_STATES = 64
#: The protocol's calls the harness times (and waits for when they carry ``now``); reads are not timed.
CALLS = ("add_worker", "submit", "dispatch", "complete", "fail", "cancel", "renew", "advance", "prune",
         "submit_many", "dispatch_many", "complete_many", "fail_many")
#: How far apart two clocks reading one instant may be, by default, in nanoseconds: Redis keeps
#: a lease's idle time in whole milliseconds, so an instant it reads may be up to 1 ms off ours.
DEFAULT_OFFSET_NS = 1_000_000


class Inconclusive(UnsatisfiedAssumption):
    """A run the judge cannot decide within ``MAX_STATES``: set aside, never a finding."""


@dataclass
class TimedCall:
    """One call as the harness made it: its tick (None for an untimed call) and its real start and end (ns)."""

    op: str
    args: dict
    tick: int | None
    start: int
    end: int
    lateness: int | None  # ns after its tick's start that it began; None for an untimed call
    raw: object = None  # what it returned
    raised: BaseException | None = None


@dataclass
class Timing:
    """What a real-clock check measured, over all its runs."""

    tick_ms: int
    offset_ns: int = DEFAULT_OFFSET_NS
    lateness: list[int] = field(default_factory=list)  # ns, one per timed call
    either: int = 0  # timed calls at which some lease may have ended either way
    explained: int = 0  # of those, calls whose answer only a timing other than the ticks' own explains
    inconclusive: int = 0  # runs set aside
    failing: list[TraceStep] | None = None  # the first run that diverged whatever the timing

    def record_lateness(self, ns: int) -> None:
        self.lateness.append(ns)

    def percentiles(self) -> tuple[float, float, float]:
        """Median, 99th percentile and maximum lateness, in milliseconds (zeros with no timed call)."""
        if not self.lateness:
            return 0.0, 0.0, 0.0
        ordered = sorted(self.lateness)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        return statistics.median(ordered) / 1e6, p99 / 1e6, ordered[-1] / 1e6

    def summary(self) -> str:
        """One line for a check's output: the tick, the lateness seen, the judged and the inconclusive runs."""
        median, p99, top = self.percentiles()
        return (f"real clock: tick {self.tick_ms} ms; {len(self.lateness):,} timed calls, lateness median {median:.2f} ms, "
                f"p99 {p99:.2f} ms, max {top:.2f} ms; {self.either:,} calls within the measured uncertainty of a lease's "
                f"end (either outcome allowed), {self.explained:,} answered as only the timing explains; "
                f"{self.inconclusive} run{'s' if self.inconclusive != 1 else ''} inconclusive (set aside, not findings)")


def ticked(factory: Callable[[], object], tick_ms: int) -> Callable[[], object]:
    """``factory`` made with ``tick_ms`` in force (``spec.realclock.tick_ms``), keeping its declarations."""

    def made() -> object:
        with realclock.ticking(tick_ms):
            return factory()

    for name in ("fencepost_variants", "fencepost_clock", "keeps_deadlines", "opaque_tokens"):
        if hasattr(factory, name):
            setattr(made, name, getattr(factory, name))
    made.machine_name = getattr(factory, "machine_name", None) or getattr(factory, "__name__", "factory")
    made.__name__ = getattr(factory, "__name__", "factory")
    return made


class ModelScheduler:
    """The model itself behind the protocol: what the machine draws its calls against under ``--clock real``.

    Every call is ``model.apply`` on its own state; ``reopen`` is itself (the
    model loses nothing). Answers are the model's own picks, so a run's draws
    depend on nothing but Hypothesis's choices.
    """

    def __init__(self, variants: Variants = DEFAULT) -> None:
        self.state = model.initial(variants)

    def __getattr__(self, name: str) -> object:
        if name.startswith("_") or name not in model.TRANSITIONS:
            raise AttributeError(name)

        def call(**args: object) -> object:
            self.state, result = model.apply(self.state, name, args)
            return result

        return call

    @property
    def now(self) -> int:
        return self.state.now

    def task(self, task_id: object) -> object:
        return model.task(self.state, task_id)

    def reopen(self) -> ModelScheduler:
        return self


def real_clock_machine(factory: Callable[[], object], *, coverage: Coverage | None, capabilities: object,
                       variants: Variants, timing: Timing, call_timeout: float | None) -> type:
    """The conformance machine for ``--clock real``: it draws against ``ModelScheduler``, then replays each run on the queue.

    ``capabilities`` are the queue's (the model offers every optional part,
    so the machine must be told which to draw). At the end of each run
    (``teardown``) its calls are replayed on a fresh scheduler from
    ``factory`` on the real clock (``run_timed_calls``), counted into
    ``coverage`` and ``timing``. A run the judge cannot decide is set aside
    (Hypothesis draws another); one that diverges whatever the timing raises
    ``Divergence``, its trace kept in ``timing.failing``.
    """
    from fencepost.spec.checkers.machine import conformance_machine

    stable = getattr(factory, "machine_name", None) or getattr(factory, "__name__", "factory")
    base = conformance_machine(lambda: ModelScheduler(variants), capabilities=capabilities, variants=variants,
                               name=f"Conformance_{stable}")
    replay = run_timed_calls(timing, budget=math.inf, measured=True, coverage=coverage)

    class RealClockMachine(base):
        def teardown(self) -> None:
            super().teardown()
            calls = [(step.op, dict(step.args)) for step in self.run.trace]
            failing = replay(factory, calls, call_timeout, variants) if calls else None
            if failing is not None:
                if timing.failing is None:
                    timing.failing = failing
                problems = [step.problem for step in failing if step.problem]
                raise Divergence(problems[-1] if problems else "the queue diverged on the real clock")

    RealClockMachine.__name__ = RealClockMachine.__qualname__ = base.__name__
    return RealClockMachine


class TimedScheduler:
    """A scheduler driven on a ``RealClock``: each call with ``now`` waits for its tick, every call is timed.

    Everything else (``now``, ``task``, the ``--exec`` hooks) passes through
    untouched. ``pending`` answers the latest tick at which something the
    queue keeps time for ends, so idle stretches past it are skipped.
    ``watch``, the deadline's, is paused while a call waits for its tick:
    ``--call-timeout`` counts from the end of the wait, which is the harness's.
    """

    def __init__(self, impl: object, clock: realclock.RealClock, timing: Timing | None,
                 pending: Callable[[], int | None] = lambda: None, watch: Watch | None = None) -> None:
        self._impl = impl
        self._clock = clock
        self._timing = timing
        self._pending = pending
        self._watch = watch
        self.last: TimedCall | None = None

    def __getattr__(self, name: str) -> object:
        attribute = getattr(self._impl, name)
        if name not in CALLS or not callable(attribute):
            return attribute

        def timed(**args: object) -> object:
            tick = args.get("now")
            timed_call = type(tick) is int and tick >= 0
            # a call for a tick already past (time going backwards, an invalid call) is not late: it is early
            on_time = timed_call and tick >= self._clock.last_tick
            if timed_call:
                with self._watch.paused() if self._watch is not None else contextlib.nullcontext():
                    self._clock.skip_idle(tick, self._pending())
                    self._clock.wait_for(tick)
            start = self._clock.clock()
            call = TimedCall(name, dict(args), tick if timed_call else None, start, start,
                             start - self._clock.instant(tick) if timed_call and self._clock.epoch is not None else None)
            self.last = call
            try:
                with realclock.ticking(self._clock.tick_ms):
                    call.raw = attribute(**args)
            except BaseException as exc:
                call.raised = exc
                raise
            finally:
                call.end = self._clock.clock()
                if on_time and self._timing is not None:
                    self._timing.record_lateness(call.lateness)
            return call.raw

        return timed

    @property
    def now(self) -> object:
        return self._impl.now

    def reopen(self) -> TimedScheduler:
        """The queue reopened from its storage, on the same clock (its leases' real starts stay known)."""
        reopened = TimedScheduler(self._impl.reopen(), self._clock, self._timing, self._pending, self._watch)
        self._on_reopen(reopened)
        return reopened

    def _on_reopen(self, reopened: TimedScheduler) -> None:
        """Told by the lockstep, which times the reopened scheduler's calls from then on."""


def lease_may_be(started: tuple[int, int], duration_ns: int, call: tuple[int, int], closed: bool) -> tuple[bool, ...]:
    """Whether a lease set during ``started`` for ``duration_ns`` may still be live at a call during ``call``.

    Both intervals are (earliest, latest) real instants in ns, already
    widened by the clocks' offset. The lease ends at ``r_d + duration_ns``
    for some ``r_d`` in ``started``; the call acts at some ``r_c`` in
    ``call``; half-open, it is live while ``r_c < end`` (closed: ``r_c <= end``).

    Returns:
        ``(True,)`` surely live, ``(False,)`` surely ended, ``(True, False)`` either.
    """
    earliest_end, latest_end = started[0] + duration_ns, started[1] + duration_ns
    if closed:
        surely_live, surely_ended = call[1] <= earliest_end, call[0] > latest_end
    else:
        surely_live, surely_ended = call[1] < earliest_end, call[0] >= latest_end
    if surely_live:
        return (True,)
    if surely_ended:
        return (False,)
    return (True, False)


@dataclass(frozen=True)
class Setter:
    """The call that set a lease's end: its real interval (ns) and the lease's length in ticks."""

    start: int
    end: int
    duration: int


def starts(state: model.State, now: int, call: tuple[int, int], setters: dict[tuple[int, object], Setter],
           tick_ns: int, offset_ns: int) -> Iterator[tuple[model.State, bool]]:
    """The model states a timed call at tick ``now`` during ``call`` may start from, and whether each is the ticks' own.

    The first is ``state`` itself (every lease live exactly while the ticks
    say, ``model.lease_live``); then one for every other way the leases that
    ``lease_may_be`` either could have ended, each such lease's ``expires_at``
    moved to just past ``now`` (live) or to ``now`` (ended; under
    ``interval=closed`` to ``now - 1``). A lease with no known setter keeps
    the ticks' reading. O(2^k) states for k leases that may be either.
    """
    closed = state.variants.interval == "closed"
    running = [t for t in state.tasks if t.status is Status.RUNNING]
    choices: list[tuple[bool, ...]] = []
    for t in running:
        by_ticks = model.lease_live(state.variants, t.expires_at, now)
        setter = setters.get((t.id, t.token))
        if setter is None:
            choices.append((by_ticks,))
            continue
        timed = lease_may_be((setter.start - offset_ns, setter.end + offset_ns), setter.duration * tick_ns,
                             (call[0] - offset_ns, call[1] + offset_ns), closed)
        # the ticks' reading first, so a scheduler on logical time always has its exact state
        choices.append((by_ticks, *(live for live in timed if live != by_ticks)))
    for combo in itertools.product(*choices):
        moved = state
        own = True
        for t, live, options in zip(running, combo, choices):
            if live == options[0]:
                continue
            own = False
            end = now + 1 if live else (now - 1 if closed else now)
            moved = model._put(moved, _with_end(t, end))
        yield moved, own


def _with_end(task: model.Task, expires_at: int) -> model.Task:
    from dataclasses import replace

    return replace(task, expires_at=expires_at)


def undecided(state: model.State, now: int, call: tuple[int, int], setters: dict[tuple[int, object], Setter],
              tick_ns: int, offset_ns: int) -> bool:
    """Whether some lease in ``state`` may have ended either way at this call (``lease_may_be`` says either)."""
    closed = state.variants.interval == "closed"
    for t in state.tasks:
        setter = setters.get((t.id, t.token)) if t.status is Status.RUNNING else None
        if setter is not None and len(lease_may_be(
                (setter.start - offset_ns, setter.end + offset_ns), setter.duration * tick_ns,
                (call[0] - offset_ns, call[1] + offset_ns), closed)) > 1:
            return True
    return False


class TimedLockstep(Lockstep):
    """The lockstep comparator on the real clock: the set of model states some timing allows, call by call.

    ``self.state`` is one of ``self.states`` (the ticks' own reading when it
    is still allowed), so the machine's rules choose their arguments from it
    as they do on logical time.

    Raises (from ``step``):
        Divergence: no state of the set, under any timing the measurements
            allow, gives the queue's answer (a finding).
        Inconclusive: the set outgrew ``MAX_STATES``.
    """

    def __init__(self, factory: Callable[[], object], coverage: Coverage | None = None, watch: Watch | None = None,
                 variants: Variants = DEFAULT, *, timing: Timing, clock: realclock.RealClock | None = None) -> None:
        self.timing = timing
        self.clock = clock or realclock.RealClock(timing.tick_ms)
        self.timed: TimedScheduler | None = None
        self.setters: dict[tuple[int, object], Setter] = {}
        self.states: list[model.State] = []
        self._before: list[model.State] = []
        self._next: list[model.State] | None = None

        def timed_factory() -> object:
            with realclock.ticking(timing.tick_ms):
                impl = factory()
            self.timed = TimedScheduler(impl, self.clock, timing, self.latest_end, watch)
            self.timed._on_reopen = self._reopened
            return self.timed

        super().__init__(timed_factory, coverage, watch, variants)
        self.states = [self.state]
        self.allows_choices = self.chooses
        self.chooses = True  # every mismatch goes to ``follow``, which tries every timing

    def _reopened(self, reopened: TimedScheduler) -> None:
        reopened._on_reopen = self._reopened
        self.timed = reopened

    # ------------------------------------------------------------ what the harness asks

    def latest_end(self) -> int | None:
        """The latest tick at which a lease in any state ends or a waiting task falls due (None: nothing)."""
        ends = [t.expires_at for s in self.states for t in s.tasks if t.status is Status.RUNNING]
        ends += [t.due_at for s in self.states for t in s.tasks
                 if t.status in DISPATCHABLE_STATUSES and t.due_at > s.now]
        return max(ends, default=None)

    # ------------------------------------------------------------ one step

    def step(self, op: str, args: dict) -> TraceStep:
        if op == RESTART:
            return super().step(op, args)
        self._before = list(self.states)
        self._next = None
        if self.timed is not None:
            self.timed.last = None
        try:
            return super().step(op, args)
        except Divergence:
            if self.timing.failing is None:
                self.timing.failing = list(self.trace)
            raise

    def holds(self, check: Callable) -> None:
        """An invariant over the queue's views; under ``views=none`` nothing (see below).

        Under ``views=none`` the invariants would run over the model's own
        views, which keep them by construction (a lease the queue answers
        with is followed only when the model allows it); with a set of states
        the one shown may change from step to step, which no invariant over one
        sequence of views can be judged by.
        """
        if self.variants.views != "none":
            super().holds(check)

    def mark(self, problem: str) -> None:
        """An invariant broke after the last step: a finding like a divergence (kept as the run that failed)."""
        super().mark(problem)
        if self.timing.failing is None:
            self.timing.failing = list(self.trace)

    def follow(self, state: model.State, op: str, args: dict, raw: object) -> tuple[model.State, object] | None:
        """Every state some timing allows whose answer is ``raw``; the first of them, or None if none is."""
        self._next = self._allowed(op, args, raw, raised=False)
        if not self._next:
            return None
        after = self._next[0]
        if self.timed is not None and self.timed.last is not None and self.timed.last.tick is not None:
            self.timing.explained += 1
        return after, self._result_in(after, state, op, args, raw)

    def _result_in(self, after: model.State, before: model.State, op: str, args: dict, raw: object) -> object:
        """The model's result for the followed state: the queue's own answer, as the model would give it."""
        return raw

    def differs(self, state: model.State, op: str, args: dict, expected: object, got: object, raw: object) -> str:
        chooses, self.chooses = self.chooses, self.allows_choices
        try:
            text = super().differs(state, op, args, expected, got, raw)
        finally:
            self.chooses = chooses
        return text + "; no timing within the measured uncertainty explains it"

    def _allowed(self, op: str, args: dict, raw: object, raised: bool) -> list[model.State]:
        """The next states: from every state of the set, under every timing allowed, those that answer ``raw``."""
        call = self.timed.last if self.timed is not None else None
        interval = (call.start, call.end) if call is not None else None
        tick = call.tick if call is not None else None
        seen: dict[model.State, None] = {}
        near = False
        for state in self._before:
            if raised:
                seen.setdefault(state, None)
                continue
            if tick is None or interval is None:
                options: Iterator[tuple[model.State, bool]] = iter(((state, True),))
            else:
                near = near or undecided(state, tick, interval, self.setters, self.clock.tick_ns, self.timing.offset_ns)
                options = starts(state, tick, interval, self.setters, self.clock.tick_ns, self.timing.offset_ns)
            for start, _own in options:
                after = self._answers(start, op, args, raw)
                if after is not None:
                    seen.setdefault(after, None)
                    if len(seen) > MAX_STATES:
                        self.timing.inconclusive += 1
                        raise Inconclusive(f"more than {MAX_STATES} model states fit the timing measured")
        if near:
            self.timing.either += 1
        return list(seen)

    def _answers(self, state: model.State, op: str, args: dict, raw: object) -> model.State | None:
        """The state after ``op`` from ``state`` if the model's answer there is ``raw`` (or may be, by ``follow``)."""
        try:
            after, result = model.apply(state, op, dict(args))
        except ValueError:
            return None
        if comparable(normalize(result, self.opaque)) == comparable(normalize(raw, self.opaque)):
            return after
        if self.allows_choices:
            try:
                followed = model.follow(state, op, dict(args), raw)
            except ValueError:
                return None
            if followed is not None:
                return followed[0]
        return None

    # ------------------------------------------------------------ after the call

    def compare_views(self, record: TraceStep) -> None:
        """Settle the set of states this call leaves, then compare the views (the clock under ``views=none``)."""
        call = self.timed.last if self.timed is not None else None
        if self._next is None:  # the ticks' own reading answered as the queue did: the others that also do
            raised = isinstance(record.got, tuple) and record.got[:1] == ("error",)
            if call is None or call.raised is not None:
                self._next = [self.state] if not raised else list(self._before)
            else:
                allowed = self._allowed(call.op, call.args, call.raw, raised=False)
                self._next = [self.state, *(s for s in allowed if s != self.state)]
        if call is not None and call.raised is None:
            self._remember_setters(call)
        candidates = self._next
        if self.variants.views == "none" or len(candidates) == 1:
            self.state = candidates[0]
            super().compare_views(record)
            self.states = candidates
            return
        survivors, first_error = [], None
        for candidate in candidates:
            self.state = candidate
            try:
                super().compare_views(record)
            except Divergence as exc:
                first_error = first_error or (candidate, exc, record.problem)
                record.problem = None
                continue
            survivors.append(candidate)
        if not survivors:
            self.state, exc, record.problem = first_error
            raise exc
        self.state, self.states = survivors[0], survivors

    def _remember_setters(self, call: TimedCall) -> None:
        """Which call set each lease's end: a dispatch's leases, an accepted renew."""
        leases = []
        if call.op == "dispatch" and call.raw is not None:
            leases = [call.raw]
        elif call.op == "dispatch_many" and isinstance(call.raw, (list, tuple)):
            leases = list(call.raw)
        for lease in leases:
            token, task_id = getattr(lease, "token", None), getattr(lease, "task_id", None)
            if task_id is not None:
                self.setters[(task_id, token)] = Setter(call.start, call.end, call.args.get("duration", 0))
        if call.op == "renew" and getattr(call.raw, "accepted", False) is True:
            self.setters[(call.args.get("task_id"), call.args.get("token"))] = Setter(
                call.start, call.end, call.args.get("duration", 0))


def timed_lockstep(timing: Timing) -> Callable[..., TimedLockstep]:
    """A ``Lockstep`` constructor for ``conformance_machine``: every run on a fresh real clock, measured into ``timing``."""

    def make(factory: Callable[[], object], coverage: Coverage | None = None, watch: Watch | None = None,
             variants: Variants = DEFAULT) -> TimedLockstep:
        return TimedLockstep(factory, coverage, watch, variants, timing=timing)

    return make


def run_timed_calls(timing: Timing, budget: float = MINIMIZE_SECONDS, clock: Callable[[], float] = time.monotonic,
                    measured: bool = False, coverage: Coverage | None = None) -> Callable[..., list[TraceStep] | None]:
    """``spec.checkers.lockstep.run_calls`` on the real clock: the trace up to a divergence no timing explains, or None.

    A replay the judge cannot decide (``Inconclusive``) counts as not
    failing, so the minimizer keeps only calls that fail whatever the timing;
    with ``measured`` it is counted in ``timing`` and re-raised instead (a
    check's run, set aside), and every call's lateness goes into ``timing``
    and every outcome into ``coverage``. Every replay costs real time, so
    after ``budget`` seconds (from the first replay) every further one
    answers None at once: the minimizer stops with the shortest
    counterexample found so far.
    """
    started: list[float] = []

    def replay(factory: Callable[[], object], calls: list[tuple[str, dict]], call_timeout: float | None = None,
               variants: Variants = DEFAULT) -> list[TraceStep] | None:
        if not started:
            started.append(clock())
        elif clock() - started[0] > budget:
            return None
        if call_timeout is None or getattr(factory, "keeps_deadlines", False):
            return _replay(factory, calls, None, variants, timing, measured, coverage)
        watch = Watch(call_timeout)
        try:
            return run_watched(lambda: _replay(factory, calls, watch, variants, timing, measured, coverage), watch)
        except CallTimeout as exc:
            return hang_trace(watch.context, exc)

    return replay


def _replay(factory: Callable[[], object], calls: list[tuple[str, dict]], watch: Watch | None,
            variants: Variants, timing: Timing, measured: bool = False,
            coverage: Coverage | None = None) -> list[TraceStep] | None:
    into = timing if measured else Timing(timing.tick_ms, timing.offset_ns)  # the minimizer's are not the check's
    try:
        lockstep = TimedLockstep(factory, coverage, watch=watch, variants=variants, timing=into)
    except Exception:  # noqa: BLE001 - a factory that fails while minimizing: a trace with no steps
        return []
    try:
        lockstep.check_all()
        lockstep.plan(calls)
        for op, args in calls:
            lockstep.step(op, args)
            lockstep.check_all()
    except Inconclusive:
        if measured:
            raise
        return None
    except AssertionError:
        return lockstep.trace
    except SchedulerFault as exc:
        lockstep.mark(str(exc))
        return lockstep.trace
    except Exception as exc:  # noqa: BLE001 - an implementation's crash is a finding, reported in its trace
        lockstep.mark(f"the implementation crashed: {type(exc).__name__}: {exc}")
        return lockstep.trace
    finally:
        close = getattr(getattr(lockstep, "timed", None) and lockstep.timed._impl, "close", None)
        if close is not None:
            try:
                close()
            except Exception:  # noqa: BLE001 - a sample's trouble closing is not the check's verdict
                pass
    return None
