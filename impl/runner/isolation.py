"""How the runner runs an attempt's user work: in the slot's own thread, or in a child process.

The runner picks its isolation once, at construction (``MODES[isolation]``):
``ThreadIsolation`` calls the function in the slot's thread, and
``ProcessIsolation`` runs each attempt in a child process of its own.

Process isolation. The slot's thread starts a child (``spawn``: a fresh interpreter, since
forking a process that runs threads is unsafe), sends it the function, and
serves the child's ``TaskContext`` over a pipe (``now``, ``cancel_requested``,
``heartbeat``, ``submit`` each a round trip to the runner). It waits for one
of three things: a message from the child, the child's exit, or a wake-up
from the runner. When the runner marks the attempt to be killed (a forced
cancel, or its lease expired), the child is terminated (``SIGTERM``): what it
had done to the outside world by then stays done.

The function, its arguments, its result and its exception travel by pickle.
"""

from __future__ import annotations

import multiprocessing
import pickle
from multiprocessing import connection

from fencepost.impl.runner.attempts import Attempt, TaskContext, TaskRecord, ThreadContext, ThreadLink

#: Children are spawned, never forked: the parent runs threads, and a fork copies their locks mid-use.
_CONTEXT = multiprocessing.get_context("spawn")

#: Real seconds to wait for a child to be reaped after it finished or was terminated.
REAP_TIMEOUT = 10.0


class ChildProcessDied(Exception):
    """An attempt's child process ended without sending back a result (crashed, or killed from outside)."""


class ThreadIsolation:
    """User work in the slot's thread: a thread cannot be killed, so cancellation is cooperative."""

    name = "thread"

    def check_fn(self, fn: object) -> None:
        """Any callable runs in a thread."""

    def check_force(self, force: bool) -> None:
        """Refuse ``cancel(force=True)``: there is no way to stop a thread from outside.

        Raises:
            ValueError: ``force`` is true.
        """
        if force:
            raise ValueError(
                "force=True needs isolation='process': a thread cannot be killed, so with threads "
                "cancellation is cooperative (the work reads ctx.cancel_requested)"
            )

    def run(self, runner: object, attempt: Attempt, task: TaskRecord) -> tuple[str, object]:
        """Call ``task.fn(ctx)`` here (no runner lock held): ``("ok", value)`` or ``("error", exc)``."""
        ctx = ThreadContext(runner, attempt)
        try:
            return ("ok", task.fn(ctx))
        except BaseException as exc:  # noqa: BLE001 - user work's failure is data, never the pool's end
            return ("error", exc)

    def lease_lost(self, attempt: Attempt) -> None:
        """The attempt's lease expired: its thread keeps running until the function returns."""


class ProcessIsolation:
    """Each attempt in a child process, terminated when its lease expires or on a forced cancel."""

    name = "process"

    def check_fn(self, fn: object) -> None:
        """Refuse, at submit, a function that could never be sent to a child process.

        Raises:
            ValueError: ``fn`` does not pickle.
        """
        try:
            pickle.dumps(fn)
        except RuntimeError:
            pass  # multiprocessing's own objects (an Event...) pickle only while a child is spawned: let the spawn judge
        except Exception as exc:  # noqa: BLE001 - pickling fails in many types: each is the user's function not pickling
            raise ValueError(
                f"fn must pickle with isolation='process' (each attempt sends it to a child process), "
                f"got {fn!r}: {type(exc).__name__}: {exc}"
            ) from None

    def check_force(self, force: bool) -> None:
        """A child process can be terminated: ``force`` is allowed."""

    def run(self, runner: object, attempt: Attempt, task: TaskRecord) -> tuple[str, object]:
        """``run_in_child``: ``("ok", value)``, ``("error", exc)`` or ``("killed", why)``."""
        return run_in_child(runner, attempt)

    def lease_lost(self, attempt: Attempt) -> None:
        """The attempt's lease expired: terminate its child."""
        attempt.kill = True
        attempt.wake_up()


#: The isolations a runner offers, by the name its ``isolation`` argument gives.
MODES = {"thread": ThreadIsolation(), "process": ProcessIsolation()}


def run_in_child(runner: object, attempt: Attempt) -> tuple[str, object]:
    """Run one attempt in a child process (no runner lock held); the outcome as ``Runner._execute`` gives it.

    ``runner`` is the ``fencepost.impl.runner.Runner`` whose slot runs the attempt."""
    link = ThreadLink(runner, attempt)
    fn = attempt.record.fn
    wake_reader, wake_writer = _CONTEXT.Pipe(duplex=False)
    with runner._lock:
        if attempt.kill:
            return ("killed", "before the child started")
        attempt.wake = lambda: wake_writer.send(None)
    parent, child = _CONTEXT.Pipe()
    process = _CONTEXT.Process(
        target=_child_main, args=(child, fn, attempt.task_id, attempt.number, attempt.token),
        name=f"fencepost-task-{attempt.task_id}-attempt-{attempt.number}", daemon=True,
    )
    try:
        try:
            process.start()
        except Exception as exc:  # noqa: BLE001 - the function would not pickle, or no process could be made
            return ("error", exc)
        finally:
            child.close()
        while True:
            ready = connection.wait([parent, process.sentinel, wake_reader])
            while wake_reader.poll():
                wake_reader.recv()
            if attempt.kill:
                process.terminate()
                process.join(REAP_TIMEOUT)
                return ("killed", "cancelled with force" if attempt.cancel_requested else "its lease expired")
            gone = process.sentinel in ready
            if parent in ready or parent.poll():
                try:
                    message = parent.recv()
                except EOFError:
                    gone = True  # the child closed its end: it is exiting
                else:
                    if message[0] == "done":
                        process.join(REAP_TIMEOUT)
                        return (message[1], message[2])
                    parent.send(_serve(link, message))
                    continue
            if gone:
                process.join(REAP_TIMEOUT)
                return ("error", ChildProcessDied(
                    f"task {attempt.task_id} attempt {attempt.number}: its process exited with code "
                    f"{process.exitcode} before sending a result"))
    finally:
        with runner._lock:
            attempt.wake = None
        for end in (parent, wake_reader, wake_writer):
            end.close()


def _serve(link: ThreadLink, message: tuple) -> tuple[str, object]:
    """Answer one request of a child's context: ``("value", v)`` or ``("raise", exc)``."""
    op, *args = message
    try:
        if op == "now":
            return ("value", link.now())
        if op == "cancel_requested":
            return ("value", link.cancel_requested())
        if op == "heartbeat":
            return ("value", link.heartbeat(*args))
        if op == "submit":
            return ("value", link.submit(*args))
        raise ValueError(f"a child process asked for {op!r}, which its context does not offer")
    except Exception as exc:  # noqa: BLE001 - the child re-raises it where the user's code made the call
        return ("raise", exc)


class _ChildLink:
    """``TaskContext``'s runner side inside the child: each call a round trip over the pipe."""

    def __init__(self, conn: connection.Connection) -> None:
        self._conn = conn

    def _ask(self, *message: object) -> object:
        self._conn.send(message)
        kind, value = self._conn.recv()
        if kind == "raise":
            raise value
        return value

    def now(self) -> int:
        return self._ask("now")

    def cancel_requested(self) -> bool:
        return self._ask("cancel_requested")

    def heartbeat(self, duration: int | None) -> bool:
        return self._ask("heartbeat", duration)

    def submit(self, fn: object, options: dict) -> int:
        return self._ask("submit", fn, options)


def _child_main(conn: connection.Connection, fn: object, task_id: int, attempt: int, token: int) -> None:
    """The child's whole life: run ``fn(ctx)`` and send back what came of it."""
    ctx = TaskContext(_ChildLink(conn), task_id, attempt, token)
    try:
        outcome = ("ok", fn(ctx))
    except BaseException as exc:  # noqa: BLE001 - sent back as the attempt's failure
        outcome = ("error", exc)
    try:
        conn.send(("done", *outcome))
    except Exception as exc:  # noqa: BLE001 - the value or exception would not pickle
        conn.send(("done", "error", RuntimeError(f"the attempt's {outcome[0]} value could not be sent back: {exc!r}")))
