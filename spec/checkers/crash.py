"""Crash-test a durable scheduler: SIGKILL it mid-run, reopen its storage, compare with the model.

``fencepost crash MODULE:OPENER [--kills N] [--seed S] [--ops N] [--trace-out FILE] [--no-restarts]``.
``OPENER(path)`` returns a scheduler over the storage at ``path`` (for the
shipped one, ``impl.durable:DurableScheduler``). For each kill:

1. A child process (forked) runs the spec's own conformance machine
   (``spec.checkers.machine``: its rules, its argument choices, its invalid
   calls, and the model in lockstep) over schedulers made by ``OPENER`` on
   fresh paths. A thin wrapper reports every protocol call to the parent
   through a pipe when it starts and again when it returns, with its result.
2. The parent picks, from the seed, the call during which to kill and how
   long after that call starts (up to ``KILL_DELAY_FACTOR`` times a typical
   call, as measured so far), and sends SIGKILL then -- inside the call, or
   just after it returned. A delay past a typical call is a kill *after the
   return*: the child, told which call that is, holds still once it has
   returned, so the kill lands between that call and the next for certain
   (a lost acknowledged call is caught on any machine, at any load); a
   shorter one lands wherever the call is by then.
3. It reopens the storage the child was using with ``OPENER(path)`` and
   checks that what it finds is the model's state after exactly the calls
   that returned, or after those plus the one in flight: the clock and every
   task view, and then the state the views cannot show (which workers exist
   and their capacities, the last token issued, the next task id), by a
   short probe of calls run on the recovered scheduler and on each candidate
   model state alike.

Exit 0 when every recovery holds; 1 with the first failure printed as a
replayable scenario (the calls that returned, then ``restart``; written with
``--trace-out``); 2 on bad arguments. Every wait on the child is bounded, and so is its hold
before a kill (``HOLD_LIMIT_S``: a child whose parent died first ends by itself).
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import hypothesis
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from fencepost.spec import model, profiles
from fencepost.spec.checkers.capabilities import Capabilities, detect
from fencepost.spec.checkers.results import (
    Divergence,
    comparable,
    describe,
    format_trace,
    normalize,
    view_tuple,
)
from fencepost.spec.checkers.lockstep import Lockstep
from fencepost.spec.formats.trace import TraceStep, format_call
from fencepost.spec.checkers.machine import conformance_machine
from fencepost.spec.checkers.minimize import minimize
from fencepost.spec.protocol import OPERATIONS, OPTIONAL_OPERATIONS, says_forgotten

#: Kills a run makes when ``--kills`` is not given.
DEFAULT_KILLS = 50
#: ``--ops``: the kill lands during or just after the K-th call of a child that changes
#: its state (K uniform in 1..N; calls that change nothing are not counted).
DEFAULT_OPS = 50
#: The longest the parent waits for the child's next message before calling it hung.
CHILD_SILENCE_S = 30.0
#: The longest the parent waits for a killed child to be reaped.
JOIN_TIMEOUT_S = 10.0
#: The longest a child holds still to be killed after a call's return. The parent kills it as soon as
#: it reads that return, and would have called it hung after ``CHILD_SILENCE_S``: a child still held
#: past both has lost its parent (killed itself, so its ``finally`` never ran) and ends as the kill
#: would have ended it, with no call after that one.
HOLD_LIMIT_S = CHILD_SILENCE_S + JOIN_TIMEOUT_S
#: The exit status of a child that ended its own hold (no parent reads it: a lost parent is the cause).
HELD_TOO_LONG = 3
#: A kill lands up to this many typical call durations after its call starts, so it
#: falls before, inside and after the call's commit alike.
KILL_DELAY_FACTOR = 1.5
#: The typical call duration assumed before any call was timed.
FIRST_CALL_S = 0.001
#: Examples the child's machine may run: more than any kill needs, so it is always killed first.
CHILD_EXAMPLES = 100_000


# ---------------------------------------------------------------- the child


#: Every call the child's machine may make that can change the state: each is reported to the parent.
#: A call left out here would change the storage behind the parent's back (``prune`` once was).
REPORTED_OPERATIONS = (*OPERATIONS, *OPTIONAL_OPERATIONS)


class _Hold:
    """The child's count of state-changing calls, and after which one it holds still to be killed (None: none)."""

    def __init__(self, after: int | None) -> None:
        self.after = after
        self.started = 0  # counted as the parent counts them (``Run.take``), over every storage path
        self.run: Run | None = None

    def open(self, path: str) -> None:
        self.run = Run(path)

    def take(self, message: tuple) -> None:
        """Count ``message`` as the parent does; after the return of the call to hold after, hold still."""
        if message[0] == "call":
            self.started += self.run.take(message)
        else:
            changed = self.run.calls[-1] if self.run.calls else None
            self.run.take(message)
            if changed is not None and self.started == self.after and self.run.flight_state is None:
                self.after = None
                _hold_still()


def _hold_still() -> None:
    """Hold this thread until the parent kills the process; end the process past ``HOLD_LIMIT_S``."""
    threading.Event().wait(HOLD_LIMIT_S)
    os._exit(HELD_TOO_LONG)  # not an exception: the machine would take it for a divergence and go on


class _Reporting:
    """A scheduler that tells the parent about every protocol call as it starts and as it returns."""

    def __init__(self, inner: object, pipe: object, hold: _Hold | None = None) -> None:
        self._inner = inner
        self._pipe = pipe
        self._hold = hold

    def _send(self, message: tuple) -> None:
        self._pipe.send(message)
        if self._hold is not None:
            self._hold.take(message)

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._inner, name)
        if name in REPORTED_OPERATIONS:  # a batch is one call: all of it returned, or none
            return self._reported(name, attr)
        if name == "reopen":
            def reopen() -> _Reporting:
                self._send(("call", "restart", {}))
                reopened = _Reporting(attr(), self._pipe, self._hold)
                self._send(("ack", None))
                return reopened
            return reopen
        return attr

    def _reported(self, op: str, method: Callable) -> Callable:
        @functools.wraps(method)  # keeps the signature, so capabilities can be read from it
        def call(**args: object) -> object:
            self._send(("call", op, args))
            try:
                result = method(**args)
            except ValueError as exc:
                self._send(("ack", ("error", str(exc))))
                raise
            self._send(("ack", normalize(result)))
            return result
        return call


def _child(opener: Callable[[str], object], folder: str, seed: int, steps: int, pipe: object,
           capabilities: Capabilities, hold_after: int | None = None) -> None:
    """Run the conformance machine over schedulers at fresh paths until killed (keys and restarts as offered).

    ``hold_after``: the state-changing call (counted as the parent counts) after whose return the
    child holds still until it is killed; None: it never holds.
    """
    sys.stdout = sys.stderr = open(os.devnull, "w")  # Hypothesis's own reports are not ours to show
    runs = iter(range(1, CHILD_EXAMPLES + 2))
    hold = _Hold(hold_after)

    def factory() -> object:
        number = next(runs)
        path = os.path.join(folder, f"run-{number}")
        pipe.send(("open", path))
        hold.open(path)
        return _Reporting(opener(path), pipe, hold)

    machine = conformance_machine(factory, name="CrashChild", capabilities=capabilities)
    run_settings = settings(
        settings.get_profile("ci"), max_examples=CHILD_EXAMPLES, stateful_step_count=steps,
        derandomize=False, database=None, print_blob=False, phases=(Phase.generate,),
    )
    try:
        run_state_machine_as_test(hypothesis.seed(seed)(machine), settings=run_settings)
        pipe.send(("done",))
    except BaseException as exc:  # noqa: BLE001 - a divergence in the child: the scheduler fails without any crash
        problem = next((s.problem for s in reversed(machine.last_trace) if s.problem), f"{type(exc).__name__}: {exc}")
        pipe.send(("diverged", problem, format_trace(machine.last_trace)))
    finally:
        os._exit(0)


# ---------------------------------------------------------------- what the parent saw


@dataclass
class Call:
    """One call the child started on the storage being checked; ``acked`` once it returned."""

    op: str
    args: dict
    acked: bool = False
    result: object = None  # the child's normalized result


@dataclass
class Run:
    """The calls the child made on one storage path, in order, and the model's state after them."""

    path: str
    calls: list[Call] = field(default_factory=list)
    acked_state: model.State = field(default_factory=model.initial)  # after the calls that returned
    flight_state: model.State | None = None  # after those and the call in flight, if there is one

    def take(self, message: tuple) -> bool:
        """Record one message; True when it starts a call that changes the model's state."""
        if message[0] == "call":
            self.calls.append(Call(message[1], message[2]))
            self.flight_state = _apply(self.acked_state, message[1], message[2])
            return self.flight_state != self.acked_state
        if message[0] == "ack" and self.calls:
            self.calls[-1].acked, self.calls[-1].result = True, message[1]
            self.acked_state, self.flight_state = self.flight_state, None
        return False

    @property
    def acknowledged(self) -> list[Call]:
        return [c for c in self.calls if c.acked]

    @property
    def in_flight(self) -> Call | None:
        return self.calls[-1] if self.calls and not self.calls[-1].acked else None


def _apply(state: model.State, op: str, args: dict) -> model.State:
    """The model's state after one call (a restart changes nothing; an invalid call neither)."""
    if op == "restart":
        return state
    try:
        return model.apply(state, op, dict(args))[0]
    except ValueError:
        return state


# ---------------------------------------------------------------- checking a recovery


def views_problem(scheduler: object, state: model.State) -> str | None:
    """How the recovered scheduler's clock and task views differ from ``state``, or None."""
    lockstep = Lockstep(lambda: scheduler)
    lockstep.state = state
    try:
        lockstep.compare_views(TraceStep("restart", {}, None, None))
    except Divergence as exc:
        return str(exc).split(": ", 2)[-1]
    except Exception as exc:  # noqa: BLE001 - the protocol allows only ValueError
        return f"reading the recovered state raised {type(exc).__name__}: {exc}"
    return None


#: The probe's tasks outrank every task the check makes, so its dispatches take them.
_PROBE_PRIORITY_MARGIN = 1


def probe_calls(states: list[model.State]) -> list[tuple[str, dict]]:
    """Calls whose answers show the state views cannot: workers, capacities, last token, next id, keys.

    Every worker any candidate knows is added again (refused if it exists);
    then enough tasks of the highest priority for every worker to fill up,
    and dispatches until each is full, at the current time: the tokens show
    the last one issued, the ``None`` shows the capacity. Last, every
    idempotency key is submitted again with its first arguments: the answer
    is its task's id, or, if the key was lost, a new task.
    """
    capacities: dict[str, int] = {}
    for state in states:
        for name, capacity in state.workers:
            capacities[name] = max(capacity, capacities.get(name, 0))
    now = states[0].now
    priority = max((t.priority for s in states for t in s.tasks), default=0) + _PROBE_PRIORITY_MARGIN
    calls: list[tuple[str, dict]] = [("add_worker", {"worker": name, "capacity": 1}) for name in capacities]
    calls += [("submit", {"priority": priority})] * (sum(capacities.values()) + len(capacities))
    for name, capacity in capacities.items():
        calls += [("dispatch", {"worker": name, "now": now, "duration": 1})] * (capacity + 1)
    for record in {record.key: record for s in states for record in getattr(s, "keys", ())}.values():
        # Every idempotency key, resubmitted as it was first given: it must still name its task.
        arguments = dict(zip(model.KEYED_ARGUMENTS, record.arguments))
        calls.append(("submit", {**{k: v for k, v in arguments.items() if v is not None}, "key": record.key}))
    return calls


#: What the probe records for a task ``prune`` forgot: ``task()`` refuses it, saying so, and ids go on after it.
_FORGOTTEN_VIEW = ("forgotten",)


def _observe(scheduler: object, op: str, args: dict, most_tasks: int) -> tuple:
    """One probe call on the scheduler: its comparable result, then the clock and every view.

    The views run from id 1 to the first id ``task()`` refuses as unknown; an
    id it refuses as forgotten is recorded as ``_FORGOTTEN_VIEW`` (the ids after it
    still name tasks).
    """
    try:
        result = comparable(normalize(getattr(scheduler, op)(**args)))
    except ValueError:
        result = ("error",)
    views = []
    for task_id in range(1, most_tasks + 2):
        try:
            views.append(view_tuple(scheduler.task(task_id)))
        except ValueError as exc:
            if not says_forgotten(exc):
                break
            views.append(_FORGOTTEN_VIEW)
    return result, scheduler.now, views


def _expected(state: model.State, op: str, args: dict) -> tuple[model.State, tuple]:
    try:
        state, result = model.apply(state, op, dict(args))
        got = comparable(normalize(result))
    except ValueError:
        got = ("error",)
    views = [_FORGOTTEN_VIEW if t.forgotten else view_tuple(model.view(t)) for t in state.tasks]
    return state, (got, state.now, views)


def _say(value: object, op: str) -> str:
    """A comparable result in words (an error's message is not kept)."""
    return "an error" if value == ("error",) else describe(value, op)


def recovered_as(scheduler: object, candidates: list[model.State]) -> tuple[int | None, str | None]:
    """Which candidate state the recovered scheduler is in: ``(index, None)``, or ``(None, why not)``.

    The views pick the candidates; the probe (run once on the scheduler, then
    on each remaining candidate) decides between them and checks the rest.
    """
    index, why, _ = _recovered_as(scheduler, candidates)
    return index, why


def _recovered_as(scheduler: object, candidates: list[model.State]) -> tuple[int | None, str | None, list[tuple[str, dict]]]:
    """``recovered_as``, and the probe calls that showed the first candidate wrong (up to the one that did).

    Those calls, made after a ``restart``, show a replay what the views could
    not (a lost ``add_worker``, say); empty when the views already show it.
    """
    problems = {i: views_problem(scheduler, state) for i, state in enumerate(candidates)}
    alive = [i for i, problem in problems.items() if problem is None]
    if not alive:
        return None, problems[0], []
    states = [candidates[i] for i in alive]
    calls = probe_calls(states)
    most = max(len(s.tasks) for s in states) + len(calls)
    try:
        seen = [_observe(scheduler, op, args, most) for op, args in calls]
    except Exception as exc:  # noqa: BLE001 - a recovered scheduler may fail any way: reported as the kill's verdict
        return None, f"the probe after the restart raised {type(exc).__name__}: {exc}", []
    why = ""
    shown_by: list[tuple[str, dict]] = []
    for i in alive:
        state = candidates[i]
        for n, ((op, args), got) in enumerate(zip(calls, seen)):
            state, want = _expected(state, op, args)
            if want != got:
                why = why or (f"probing the recovered state, {format_call(op, args)} gave "
                              f"{_say(got[0], op)} where the model gives {_say(want[0], op)}"
                              + ("" if want[0] != got[0] else " (the task views or the clock differ afterwards)"))
                if i == 0:
                    shown_by = calls[:n + 1]
                break
        else:
            return i, None, []
    return None, why, shown_by


# ---------------------------------------------------------------- one kill


@dataclass
class KillResult:
    """What one kill found."""

    run: Run | None  # the storage being checked, None if the child was killed before opening any
    acknowledged: int  # calls that returned on that storage before the kill
    exact: bool  # recovered the acknowledged calls (also when the call in flight changes nothing)
    in_flight_applied: bool  # recovered them plus the call in flight
    problem: str | None = None  # why the recovery does not hold
    call_seconds: list[float] = field(default_factory=list)  # observed durations of calls that returned
    # the probe calls after the restart that showed the acknowledged state lost, up to the one that
    # did (empty when the views show it): a replay of the failure makes them, so it diverges too
    shown_by: list[tuple[str, dict]] = field(default_factory=list)


class ChildFailure(Exception):
    """The child hung, died on its own, or diverged from the model without any crash."""


def kill_once(opener: Callable[[str], object], seed: int, kill_at: int, delay_s: float, steps: int,
              directory: str | None = None, restarts: bool = True, after: bool = False) -> KillResult:
    """Run a child, SIGKILL it ``delay_s`` after call number ``kill_at`` starts, and check the recovery.

    ``after``: kill it once that call has returned, before the next starts, for certain
    (the child holds still there); ``delay_s`` is then not used.

    Calls are counted only when they change the model's state: Hypothesis
    begins with its simplest runs (one call, or the same call changing
    nothing, over and over), and a kill there would test nothing.
    """
    folder = tempfile.mkdtemp(prefix="fencepost-crash-", dir=directory)
    try:
        return _kill_in(folder, opener, seed, kill_at, delay_s, steps, restarts, after)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _kill_in(folder: str, opener: Callable[[str], object], seed: int, kill_at: int, delay_s: float, steps: int,
             restarts: bool, after: bool) -> KillResult:
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    offered = detect(lambda: opener(os.path.join(folder, "capabilities")))
    capabilities = replace(offered, restart=offered.restart and restarts)
    child = context.Process(target=_child, args=(opener, folder, seed, steps, sender, capabilities, kill_at if after else None),
                            daemon=True)
    child.start()
    sender.close()
    run: Run | None = None
    started = 0
    durations: list[float] = []
    began = 0.0
    holding = False  # an ``after`` kill's call has started: the kill comes at its return
    try:
        while True:
            if not receiver.poll(CHILD_SILENCE_S):
                raise ChildFailure(f"the child made no progress for {CHILD_SILENCE_S:.0f} s (a call hung?)")
            message = _receive(receiver)
            if message is None:
                raise ChildFailure("the child died on its own before it was killed")
            if message[0] == "diverged":
                raise ChildFailure(f"the scheduler diverged from the model without any crash: {message[1]}\n{message[2]}")
            if message[0] == "done":
                raise ChildFailure("the child finished every run before the kill (raise nothing: this is a bug)")
            if message[0] == "open":
                run = Run(message[1])
                continue
            if run is None:
                raise ChildFailure(f"the child sent {message[0]!r} before opening any storage")
            changes = run.take(message)
            if message[0] == "ack":
                durations.append(time.perf_counter() - began)
                if holding:
                    break  # the child holds still after this return: the kill lands before its next call
            elif message[0] == "call":
                began = time.perf_counter()
                started += changes
                if started == kill_at and changes:
                    if after:
                        holding = True
                        continue
                    # The kill instant: delay_s after the call began, or at once when it returns first.
                    receiver.poll(delay_s)
                    break
    finally:
        child.kill()
        child.join(JOIN_TIMEOUT_S)
    if child.is_alive():
        raise ChildFailure(f"the killed child was not reaped within {JOIN_TIMEOUT_S:.0f} s")
    while (message := _receive(receiver, wait=False)) is not None:  # what the child sent before it died
        if message[0] == "open":
            run = Run(message[1])
        elif run is not None:
            run.take(message)
    receiver.close()
    return check_recovery(opener, run, durations)


def _receive(receiver: object, wait: bool = True) -> tuple | None:
    """The next message, or None at the end of the pipe (or, with ``wait=False``, when none is ready)."""
    try:
        if not wait and not receiver.poll(0):
            return None
        return receiver.recv()
    except (EOFError, OSError):
        return None


def check_recovery(opener: Callable[[str], object], run: Run | None, durations: list[float]) -> KillResult:
    """Reopen ``run``'s storage and compare it with the model after the acknowledged calls (or those plus the one in flight)."""
    if run is None:
        return KillResult(None, 0, True, False, call_seconds=durations)
    candidates = [run.acked_state]
    if run.flight_state is not None and run.flight_state != run.acked_state:
        candidates.append(run.flight_state)
    count = sum(1 for c in run.acknowledged if c.op != "restart")
    try:
        scheduler = opener(run.path)
    except Exception as exc:  # noqa: BLE001 - a user's opener may fail any way on reopening: reported as the kill's verdict
        return KillResult(run, count, False, False, f"reopening the storage raised {type(exc).__name__}: {exc}", durations)
    try:
        index, problem, shown_by = _recovered_as(scheduler, candidates)
    finally:
        close = getattr(scheduler, "close", None)
        if callable(close):
            close()
    return KillResult(run, count, index == 0, index == 1, problem, durations, shown_by)


# ---------------------------------------------------------------- many kills


@dataclass
class CrashReport:
    """The verdict of a crash run."""

    kills: int = 0
    acknowledged: int = 0
    exact: int = 0
    in_flight_applied: int = 0
    failure: KillResult | None = None
    seed: int = 0
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.failure is None


def crash_test(opener: Callable[[str], object], *, kills: int = DEFAULT_KILLS, seed: int | None = None,
               ops: int = DEFAULT_OPS, steps: int | None = None, directory: str | None = None,
               restarts: bool = True) -> CrashReport:
    """Kill a child ``kills`` times at seeded random moments; stop at the first recovery that does not hold.

    Args:
        opener: ``opener(path)`` returns a scheduler over the storage at ``path``.
        kills: how many children to kill.
        seed: chooses the children's calls and the kill points; None picks one (reported).
        ops: the kill lands during or just after the K-th state-changing call of a child, K in 1..``ops``.
        steps: steps per run of the child's machine (default the ``ci`` profile's).
        directory: where the storage paths go (default the system's temporary folder).
        restarts: let the child's machine take ``restart`` steps (when the scheduler offers
            ``reopen()``); off, only the kill can reveal what a restart would.

    Raises:
        ChildFailure: a child hung, died on its own, or diverged from the model.
    """
    seed = random.randrange(2**32) if seed is None else seed
    rng = random.Random(seed)
    report = CrashReport(seed=seed)
    observed: list[float] = []
    started = time.perf_counter()
    for _ in range(kills):
        child_seed, kill_at, fraction = rng.randrange(2**32), rng.randint(1, ops), rng.random()
        typical = statistics.median(observed[-200:]) if observed else FIRST_CALL_S
        delay = fraction * KILL_DELAY_FACTOR * typical
        after = fraction * KILL_DELAY_FACTOR >= 1  # past a typical call: after its return, for certain
        result = kill_once(opener, child_seed, kill_at, delay, steps or profiles.CI_STEPS, directory, restarts, after)
        observed += result.call_seconds
        report.kills += 1
        report.acknowledged += result.acknowledged
        report.exact += result.exact
        report.in_flight_applied += result.in_flight_applied
        if result.problem:
            report.failure = result
            break
    report.seconds = time.perf_counter() - started
    return report


def failure_trace(result: KillResult) -> list[TraceStep]:
    """The failing kill as a trace: the calls that returned, then ``restart``, marked with the problem.

    When only the probe showed the loss (the views after the restart are the
    model's), the probe calls that showed it follow the restart, the last one
    marked, so that a replay diverges where the kill's check did.
    """
    trace = []
    state = model.initial()
    for call in result.run.acknowledged:
        if call.op == "restart":
            trace.append(TraceStep("restart", {}, None, None))
            continue
        state, expected = _model_step(state, call.op, call.args)
        trace.append(TraceStep(call.op, dict(call.args), expected, call.result))
    problem = f"after the restart: {result.problem}"
    trace.append(TraceStep("restart", {}, None, None, problem=None if result.shown_by else problem))
    for n, (op, args) in enumerate(result.shown_by, 1):
        state, expected = _model_step(state, op, args)
        trace.append(TraceStep(op, dict(args), expected, None, problem=problem if n == len(result.shown_by) else None))
    return trace


def _model_step(state: model.State, op: str, args: dict) -> tuple[model.State, object]:
    """The model's state after one call and its normalized answer (``("error", message)`` for a refusal)."""
    try:
        state, value = model.apply(state, op, dict(args))
        return state, normalize(value)
    except ValueError as exc:
        return state, ("error", str(exc))


def shrink(opener: Callable[[str], object], trace: list[TraceStep]) -> list[TraceStep]:
    """The failure trace minimized, when it fails without a kill (a ``restart`` alone shows it); else as it is.

    The machine's own ``minimize`` replays candidates in lockstep, each on
    storage at a fresh path, so it needs the failure to be reproducible in one
    process; a failure only a real kill reveals is returned unchanged.
    """
    folder = tempfile.mkdtemp(prefix="fencepost-crash-shrink-")
    paths = (os.path.join(folder, f"shrink-{n}") for n in range(1, 1 << 62))
    try:
        shrunk = minimize(lambda: opener(next(paths)), trace)
    except Exception:  # noqa: BLE001 - a scheduler that cannot be replayed this way: keep the failure as found
        return trace
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return shrunk


def failure_scenario_text(result: KillResult, opener_spec: str, trace: list[TraceStep]) -> str:
    """The failing kill's ``trace`` as TOML text, ready to replay on a scheduler with ``reopen()``."""
    from fencepost.spec.formats.scenario import dumps_scenario
    from fencepost.spec.formats.trace import trace_to_scenario

    flight = result.run.in_flight
    description = (
        f"A crash-recovery failure found by `fencepost crash {opener_spec}`: the process was killed with "
        f"SIGKILL after {result.acknowledged} calls returned"
        + (f", during `{format_call(flight.op, flight.args)}` (left out: it may or may not have taken effect)" if flight else "")
        + f"; after reopening, {result.problem}"
        + (f" Shrunk from {len(failure_trace(result))} steps to {len(trace)}: it fails without a kill too, "
           "at a restart." if len(trace) < len(failure_trace(result)) else "")
    )
    scenario = trace_to_scenario(
        trace, title=f"Crash recovery: {opener_spec}", description=description,
        meta={"generated_by": "fencepost crash", "impl": opener_spec},
    )
    return dumps_scenario(scenario)
