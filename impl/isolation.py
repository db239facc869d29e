"""Process isolation for the runner: each attempt in a child process of its own.

The slot's thread starts a child (``spawn``: a fresh interpreter, since
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
from multiprocessing import connection

from fencepost.impl.runner import Runner, TaskContext, _Attempt, _ThreadLink

#: Children are spawned, never forked: the parent runs threads, and a fork copies their locks mid-use.
_CONTEXT = multiprocessing.get_context("spawn")

#: Real seconds to wait for a child to be reaped after it finished or was terminated.
REAP_TIMEOUT = 10.0


class ChildProcessDied(Exception):
    """An attempt's child process ended without sending back a result (crashed, or killed from outside)."""


def run_in_child(runner: Runner, attempt: _Attempt) -> tuple[str, object]:
    """Run one attempt in a child process (no runner lock held); the outcome as ``Runner._execute`` gives it."""
    link = _ThreadLink(runner, attempt)
    fn = runner._tasks[attempt.task_id].fn
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
        except Exception as exc:  # the function would not pickle, or no process could be made
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


def _serve(link: _ThreadLink, message: tuple) -> tuple[str, object]:
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
    except Exception as exc:  # the child re-raises it where the user's code made the call
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
    except BaseException as exc:  # sent back as the attempt's failure
        outcome = ("error", exc)
    try:
        conn.send(("done", *outcome))
    except Exception as exc:  # the value or exception would not pickle
        conn.send(("done", "error", RuntimeError(f"the attempt's {outcome[0]} value could not be sent back: {exc!r}")))
