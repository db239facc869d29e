"""Deadlines on every call fencepost makes into a scheduler, and the faults that are findings.

A scheduler under test may hang: a deadlock, an infinite loop, a program
behind ``--exec`` that stops answering. fencepost must then report the hang,
not hang with it. Python cannot kill a thread, so the calls run on a worker
thread and the caller's thread watches the clock:

* ``run_watched(fn, watch)`` runs ``fn`` (a whole check run, a replay, a
  minimizer candidate) on a fresh daemon thread and waits for it. The
  scheduler that ``fn`` drives is wrapped in ``Watched``, which notes in
  ``watch`` which call is in progress and since when. If one call has been
  in progress for longer than ``watch.seconds``, ``run_watched`` raises
  ``CallTimeout`` in the waiting thread and abandons the worker: it is a
  daemon thread, so it never keeps the process alive, and if the hung call
  ever returns, the worker stops at its next call into the scheduler.

The whole run goes to one worker, not each call, because a hand-off between
threads costs tens of microseconds and a conformance step makes dozens of
calls (every task view, every refused id); the watch itself costs one
attribute write before and after each call.

A program behind ``--exec`` needs none of this: the adapter reads its answer
with a deadline and kills the program when it passes (see
``spec.adapters.exec``).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

#: Seconds a single call into a scheduler may take before it is reported as a
#: hang (``--call-timeout``). Generous: a conforming scheduler answers in
#: microseconds, a program behind ``--exec`` in well under a millisecond, and
#: a loaded CI machine must not turn a slow answer into a finding.
DEFAULT_CALL_TIMEOUT = 5.0
#: Longest the watching thread sleeps between looks at the clock: a hang is
#: reported at most this long after its deadline.
_POLL_SECONDS = 0.05


class SchedulerFault(Exception):
    """A scheduler misbehaved in a way that is a finding by itself, not an answer to compare.

    A hang, or a program behind ``--exec`` that broke the adapter protocol
    (a malformed line, a wrong id, an exit). Never a ``ValueError``: that is
    a scheduler's refusal of a call, which the spec compares.
    """


class CallTimeout(SchedulerFault):
    """A call into a scheduler did not return within its deadline."""

    def __init__(self, call: str, seconds: float) -> None:
        super().__init__(f"{call} did not return within {seconds:g} s (--call-timeout)")
        self.call = call
        self.seconds = seconds


class Abandoned(BaseException):
    """Raised in a worker whose hung call returned after its run was given up.

    A ``BaseException``, so no ``except Exception`` in the code the worker
    runs (Hypothesis, the lockstep driver) keeps it going.
    """


class Watch:
    """Which call a worker thread is making into a scheduler, and since when.

    ``current`` is ``(description, started)`` while a call is in progress,
    where ``description`` is a tuple ``format_watched_call`` turns into words
    only when it is needed, so that watching costs no formatting.
    ``context`` is whatever the worker wants the watcher to find after a hang
    (the lockstep driver puts itself there, so the calls leading to the hang
    can be reported).
    """

    def __init__(self, seconds: float = DEFAULT_CALL_TIMEOUT) -> None:
        if not seconds > 0:
            raise ValueError(f"seconds must be a number > 0: got {seconds!r}")
        self.seconds = seconds
        self.current: tuple[tuple, float] | None = None
        self.context: object = None
        self.abandoned = False

    def call(self, description: tuple, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        """``fn(*args, **kwargs)``, noted as in progress while it runs."""
        if self.abandoned:
            raise Abandoned()
        self.current = (description, time.monotonic())
        try:
            return fn(*args, **kwargs)
        finally:
            self.current = None
            if self.abandoned:
                raise Abandoned()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Inside the block the call in progress is not timed; its deadline counts again from the block's end.

        For a wait that is not the scheduler's: the real-clock harness waits
        for a call's tick inside the call it watches
        (``spec.checkers.realtime.TimedScheduler``), and at a tick of a second
        a wait of a few ticks passes any deadline.
        """
        current = self.current
        self.current = None
        try:
            yield
        finally:
            if current is not None:
                self.current = (current[0], time.monotonic())

    def overdue(self) -> tuple | None:
        """The description of a call in progress for longer than ``seconds``, or None."""
        current = self.current
        if current is not None and time.monotonic() - current[1] > self.seconds:
            return current[0]
        return None


def format_watched_call(description: tuple) -> str:
    """``("dispatch", (), {"now": 3})`` -> ``dispatch(now=3)``; ``("now",)`` -> ``now``."""
    if len(description) == 1:
        return description[0]
    name, args, kwargs = description
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


class Watched:
    """A scheduler whose every method call and attribute read goes through a ``Watch``.

    Methods keep their signatures (``inspect.signature`` follows
    ``__wrapped__``), so capability detection sees the scheduler's own
    ``submit``; the result of ``reopen()`` is watched too. A method's wrapper
    is made once, at its first use, and kept: making one per call would cost
    more than the call.
    """

    __slots__ = ("_target", "_watch", "_methods")

    def __init__(self, target: object, watch: Watch) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_watch", watch)
        object.__setattr__(self, "_methods", {})

    def __getattr__(self, name: str) -> object:
        method = self._methods.get(name)
        if method is not None:
            return method
        watch = self._watch
        value = watch.call((name,), getattr, self._target, name)  # a property such as `now` may hang too
        if not callable(value):
            return value

        @functools.wraps(value)
        def call(*args: object, **kwargs: object) -> object:
            result = watch.call((name, args, kwargs), value, *args, **kwargs)
            return Watched(result, watch) if name == "reopen" else result

        self._methods[name] = call
        return call

    def __repr__(self) -> str:
        return repr(self._target)


def watched_factory(factory: Callable[[], object], watch: Watch) -> Callable[[], object]:
    """A factory whose call and whose schedulers are watched by ``watch``."""

    def make() -> object:
        return Watched(watch.call(("factory()",), factory), watch)

    make.__name__ = getattr(factory, "__name__", "factory")
    make.__wrapped__ = factory  # inspect.unwrap gives the factory itself
    return make


def run_watched(fn: Callable[[], T], watch: Watch) -> T:
    """Run ``fn()`` on a daemon thread; return its result or raise its exception.

    Raises:
        CallTimeout: a call noted in ``watch`` was in progress for longer than
            ``watch.seconds``. The worker is abandoned (see the module docstring).
    """
    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            outcome["value"] = fn()
        except Abandoned:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, which re-raises it
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="fencepost-scheduler-calls", daemon=True)
    worker.start()
    while True:
        worker.join(min(_POLL_SECONDS, watch.seconds))
        if not worker.is_alive():
            break
        hung = watch.overdue()
        if hung is not None:
            watch.abandoned = True
            raise CallTimeout(format_watched_call(hung), watch.seconds)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
