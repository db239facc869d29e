"""Whose tasks a runner runs: its own only (``AloneMode``), or any of a shared scheduler's (``SharedMode``).

The runner picks its mode once, at construction (``mode_for``): without a
payload store it is alone on its scheduler, with functions in memory; with
``payloads`` (a ``PostgresPayloads``) and ``functions`` it shares the
scheduler with runners in other processes. A shared runner stores each task
as a registered function's name and JSON arguments before it submits it,
runs any task of the scheduler, looks every ``poll`` seconds for what other
processes did, and reads the shared scheduler's view where an alone runner
trusts its own bookkeeping. Everything here is called by the runner under its
lock unless a method says otherwise.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Callable, Mapping

from fencepost.impl.runner.attempts import FINAL, TaskRecord
from fencepost.spec.protocol import Status, TaskView

#: Real seconds between a shared runner's looks at the queue for what other processes did (new
#: tasks, time moved): the longest an idle shared runner takes to notice work it did not submit.
SHARED_POLL_SECONDS = 0.05

#: Idempotency keys a shared runner generates for its payloads start with this (then a random UUID).
PAYLOAD_KEY_PREFIX = "fencepost-runner:"

#: What a shared runner's payload store must offer (``fencepost.impl.postgres.payloads.PostgresPayloads``).
PAYLOAD_METHODS = ("put", "forget", "for_task", "stamp")


def _nothing() -> None:
    """Undo a submit that stored nothing."""


def mode_for(functions: object, payloads: object, poll: object) -> AloneMode | SharedMode:
    """The runner's mode for its ``functions``, ``payloads`` and ``poll`` arguments.

    Raises:
        ValueError: ``functions`` or ``poll`` without ``payloads``, a payload store
            lacking a method, or a bad registry or ``poll``; named with its value.
    """
    if payloads is None:
        if functions is not None or poll is not None:
            raise ValueError(
                f"functions and poll need payloads (a payload store such as PostgresPayloads): "
                f"got functions={functions!r}, poll={poll!r}, payloads=None"
            )
        return AloneMode()
    missing = [m for m in PAYLOAD_METHODS if not callable(getattr(payloads, m, None))]
    if missing:
        raise ValueError(f"payloads must offer {', '.join(PAYLOAD_METHODS)}; {payloads!r} lacks {', '.join(missing)}")
    if not isinstance(functions, Mapping) or not functions:
        raise ValueError(f"functions must be a non-empty mapping of names to functions with payloads, got {functions!r}")
    for name, fn in functions.items():
        if not isinstance(name, str) or not name or not callable(fn):
            raise ValueError(f"functions must map non-empty str names to callables, got {name!r}: {fn!r}")
    if poll is not None and (isinstance(poll, bool) or not isinstance(poll, int | float) or not poll > 0):
        raise ValueError(f"poll must be None or a number of real seconds > 0, got {poll!r}")
    return SharedMode(payloads, dict(functions), SHARED_POLL_SECONDS if poll is None else poll)


class AloneMode:
    """A runner alone on its scheduler: it runs the tasks it submitted, with their functions in memory."""

    def bind(self, clock: object, scheduler: object) -> None:
        """Nothing to check: the runner's clock is the only one moving its scheduler."""

    def store(self, runner: object, fn: Callable[..., object], key: str | None) -> tuple[str | None, Callable[[], None]]:
        """Before a submit (no lock held): nothing to store. Returns the key and how to undo the store."""
        return key, _nothing

    def claiming(self, task_ids: list[int]) -> None:
        """Before the ``claim`` of each task a batched dispatch leased: nothing to read."""

    def claim(self, task_id: int, task: TaskRecord, new: bool) -> None:
        """At a dispatch: a task this runner never submitted cannot run here; its attempt fails saying so."""
        if new:
            task.problem = (f"task {task_id} was not submitted by this runner: a runner without "
                            f"payloads runs only its own tasks (see Runner's payloads argument)")

    def unknown(self, runner: object, task_id: int) -> TaskRecord | None:
        """An id this runner never submitted is not its to answer for."""
        return None

    def before_result(self, runner: object, task_id: int, task: TaskRecord) -> None:
        """The runner's bookkeeping is the truth about its own tasks."""

    def check_result_here(self, task_id: int, task: TaskRecord) -> None:
        """Every accepted completion of a task was this runner's."""

    def wait(self, runner: object, task_id: int, task: TaskRecord, timeout: float) -> TaskView:
        """Wait for the task to be final: every change to it is notified here."""
        if not runner._changed.wait_for(lambda: task.status in FINAL or runner._broken is not None, timeout):
            raise TimeoutError(f"wait: task {task_id} is still {task.status} after {timeout} s")
        runner._check_broken()
        return runner._scheduler.task(task_id)

    def others_may_have_worked(self, runner: object) -> None:
        """No other process works on this scheduler."""

    def look_around(self, runner: object) -> None:
        """No other process to look for."""

    def bound_wait(self, wait: float | None) -> float | None:
        """The expiry thread's wait, as the leases alone set it."""
        return wait


class SharedMode:
    """A runner sharing its scheduler with runners in other processes, through a payload store."""

    def __init__(self, payloads: object, functions: dict[str, Callable[..., object]], poll: float) -> None:
        self.payloads = payloads
        self.functions = functions  # name -> function
        self.poll = poll
        self._stamp: object = None  # the payload store's stamp at the last look
        self._next_look = 0.0  # time.monotonic() at which the stamp is read next
        self._real_time = False
        # The payloads a batched dispatch's leases need, read in one statement just before their
        # ``claim``s (``claiming``), by task id; each ``claim`` takes its own out.
        self._read_ahead: dict[int, object] = {}

    def bind(self, clock: object, scheduler: object) -> None:
        """Check the runner's clock against the shared scheduler's, and note whether it moves by itself.

        Raises:
            ValueError: the clock is behind the scheduler's.
        """
        shared_now = getattr(scheduler, "now", None)
        if isinstance(shared_now, int) and clock.now < shared_now:
            raise ValueError(
                f"clock is behind the scheduler's: clock.now={clock.now} < scheduler.now={shared_now}; "
                f"runners sharing a scheduler need one time (SchedulerClock or DatabaseClock), "
                f"else every timed call is refused (time can't go backwards)"
            )
        # On a clock that moves by itself (DatabaseClock), tasks others submitted or failed
        # fall due at times this runner never learns, so every poll is a fresh look.
        self._real_time = clock.seconds_until(0) is not None

    def store(self, runner: object, fn: Callable[..., object], key: str | None) -> tuple[str | None, Callable[[], None]]:
        """Before a submit (no lock held): store ``fn``'s payload under ``key`` (a fresh one when None).

        Committed before the submit, so whoever dispatches the task finds it.
        Returns the key to submit with, and how to delete the payload again if
        the submit is refused (nothing to delete when the key's payload was there already).

        Raises:
            ValueError: ``fn`` cannot be shared (``describe``); nothing is stored.
            RuntimeError: the runner is stopped.
        """
        function, args, kwargs = self.describe(fn)  # refused before anything is written
        if runner._stopping:
            runner._check_broken()
            raise RuntimeError("cannot submit: the runner is stopped")
        if key is None:
            key = f"{PAYLOAD_KEY_PREFIX}{uuid.uuid4().hex}"
        if self.payloads.put(key, function, args, kwargs):
            return key, functools.partial(self.payloads.forget, key)
        return key, _nothing

    def describe(self, fn: Callable[..., object]) -> tuple[str, list, dict]:
        """``fn`` as (registered name, args, kwargs), or ValueError saying why it cannot be shared."""
        base, args, kwargs = (fn.func, list(fn.args), dict(fn.keywords)) if isinstance(fn, functools.partial) else (fn, [], {})
        name = next((n for n, f in self.functions.items() if f is base or f == base), None)
        if name is None:
            raise ValueError(
                f"fn must be one of the runner's functions ({', '.join(sorted(self.functions))}) or a "
                f"functools.partial of one: a shared queue stores a function's name, not its code; got {fn!r}"
            )
        try:
            same = json.loads(json.dumps([args, kwargs], allow_nan=False)) == [args, kwargs]
        except (TypeError, ValueError):
            same = False
        if not same:
            raise ValueError(
                f"fn's arguments must come back unchanged from JSON (str, int, float, bool, None, lists, "
                f"dicts with str keys; no tuples, no NaN) to be stored for other processes; got args={args!r} kwargs={kwargs!r}"
            )
        return name, args, kwargs

    def claiming(self, task_ids: list[int]) -> None:
        """Before the ``claim`` of each task one dispatch leased: read their payloads in one statement.

        Only when there are several and the store offers ``for_tasks`` (as
        ``PostgresPayloads`` does); otherwise each ``claim`` reads its own.
        """
        for_tasks = getattr(self.payloads, "for_tasks", None)
        self._read_ahead = for_tasks(task_ids) if len(task_ids) > 1 and callable(for_tasks) else {}

    def claim(self, task_id: int, task: TaskRecord, new: bool) -> None:
        """At a dispatch: the attempt's number, and the function if not known here.

        One read of the payload store (unless ``claiming`` read it ahead): the
        scheduler's attempt count (every process's dispatches) and, for a task
        another process submitted, its function from the registry. A task
        without a payload, or naming a function this runner lacks, gets a
        ``problem``: its attempt fails with ``LookupError`` saying so.
        """
        if task_id in self._read_ahead:
            payload = self._read_ahead.pop(task_id)
        else:
            payload = self.payloads.for_task(task_id)
        if payload is None:
            if task.fn is None:
                task.problem = f"task {task_id} has no payload: it was not submitted by a shared runner"
            return
        task.attempts = max(task.attempts, payload.attempts)
        if task.fn is None:
            function = self.functions.get(payload.function)
            if function is None:
                task.problem = (f"task {task_id} runs function {payload.function!r}, which this runner's "
                                f"functions ({', '.join(sorted(self.functions))}) lack")
            else:
                task.fn = functools.partial(function, *payload.args, **payload.kwargs)

    def unknown(self, runner: object, task_id: int) -> TaskRecord | None:
        """Any task of the shared scheduler is known here once looked at; unknown ids raise ``ValueError``."""
        view = runner._scheduler.task(task_id)
        task = runner._tasks[task_id] = TaskRecord(None, status=getattr(view.status, "value", view.status))
        return task

    def before_result(self, runner: object, task_id: int, task: TaskRecord) -> None:
        """Another process may have finished the task: read its status from the scheduler."""
        if task.status != Status.SUCCEEDED.value:
            runner._refresh(task_id)

    def check_result_here(self, task_id: int, task: TaskRecord) -> None:
        """Raise ``ValueError`` if the accepted completion was another process's: its value is there only."""
        if not task.completed_here:
            raise ValueError(
                f"task {task_id} succeeded in another runner process: its value stays there "
                f"(a shared queue stores each task's view, not its result)"
            )

    def wait(self, runner: object, task_id: int, task: TaskRecord, timeout: float) -> TaskView:
        """Read the scheduler's view every ``poll`` seconds (any process may run the task) until it is final."""
        deadline = time.monotonic() + timeout
        while True:
            runner._check_broken()
            view = runner._refresh(task_id)
            remaining = deadline - time.monotonic()
            if task.status in FINAL:
                return view
            if remaining <= 0:
                raise TimeoutError(f"wait: task {task_id} is still {task.status} after {timeout} s")
            runner._changed.wait(min(self.poll, remaining))

    def others_may_have_worked(self, runner: object) -> None:
        """Drop the idle proof: another process may have made work, or time moved for its tasks."""
        runner._idle_proof.version += 1
        runner._wake_pool()

    def look_around(self, runner: object) -> None:
        """If another process made a task or moved time, look for work.

        One read of the payload store's stamp, at most once per ``poll`` (the
        expiry thread is woken by every state change); the idle proof is dropped when
        the stamp changed, and on a real-time clock every time: a task another
        process submitted for later, or failed with a retry delay, falls due
        when time passes, which no stamp shows.
        """
        if time.monotonic() < self._next_look:
            return
        self._next_look = time.monotonic() + self.poll
        stamp = self.payloads.stamp()
        if stamp != self._stamp or self._real_time:
            self._stamp = stamp
            self.others_may_have_worked(runner)

    def bound_wait(self, wait: float | None) -> float | None:
        """The expiry thread's wait, cut to the next look around."""
        until_look = max(0.0, self._next_look - time.monotonic())
        return until_look if wait is None else min(wait, until_look)
