"""A scheduler in any language, behind ``--exec COMMAND``: the client side of the adapter protocol.

``ExecProgram(command)`` starts ``COMMAND`` (split like a shell would, run
without one), says ``hello``, and is then a zero-argument factory, as every
checker wants: each call sends ``reset`` and returns an ``ExecScheduler``,
an object with the protocol's methods whose every call is one request line
and one answer line (see ``spec.formats.adapter`` for the protocol).

The program is hostile input. Whatever it does is either an answer, a
``ValueError`` it chose to raise, or an ``AdapterFault`` (a
``SchedulerFault``, so the checkers report it as a finding on the step that
met it): a malformed or oversized line, another request's id, an exit (with
the end of its stderr), or no answer within the call timeout, after which the
program is killed. The next ``reset`` (the next check run, the next
minimizer candidate) starts it again. Nothing it writes can make fencepost
hang or show a traceback.

Capabilities: the schedulers' ``submit`` takes ``key`` exactly when the
program's ``hello`` lists ``"key"``, and they have ``reopen()`` (which sends
``restart``) exactly when it lists ``"restart"``, ``prune`` exactly when
it lists ``"prune"``, and the batch operations exactly when it lists
``"batch"``, so capability detection that inspects a scheduler sees what
the program offers.
"""

from __future__ import annotations

import collections
import os
import select
import shlex
import subprocess
import threading
import time
import weakref

from fencepost.spec.checkers.deadline import DEFAULT_CALL_TIMEOUT, CallTimeout, SchedulerFault, format_watched_call
from fencepost.spec.formats.limits import MAX_ANSWER_LINE_BYTES
from fencepost.spec.formats.adapter import ProtocolError, parse_answer, request_line
from fencepost.spec.realclock import TICK_ENV

#: Seconds a program has to start and answer ``hello``, at least: starting an
#: interpreter (Node, the JVM, Python with imports) on a loaded machine takes
#: far longer than any call should, so the call timeout alone would be unfair.
STARTUP_TIMEOUT = 15.0
#: Bytes of the program's stderr kept, from its end, to quote when it exits.
STDERR_TAIL_BYTES = 4096
#: Characters of that tail quoted in a one-line message.
STDERR_QUOTE_CHARS = 300
#: Seconds to wait for a killed or exited program to be reaped.
_REAP_SECONDS = 5.0
#: Bytes read from the program's stdout at a time.
_CHUNK = 1 << 16

#: Most requests written at once before their answers are read (see
#: ``ExecProgram.plan``): the answers, a few hundred bytes each, must fit the
#: pipe's buffer (64 KiB on Linux) while the program writes them, or it
#: would stop reading, and a plan of n requests costs one round trip, not n.
PLAN_LIMIT = 128
#: Ops that only read: their answers stay valid until the next other call.
READ_OPS = frozenset({"now", "task"})

_UNSET = object()  # an optional argument the caller did not give: not sent, so the program's default applies


class AdapterFault(SchedulerFault):
    """The program behind ``--exec`` broke the adapter protocol, exited, or is no longer usable."""


class AdapterStartError(Exception):
    """The program could not be started or did not say ``hello`` properly. One line."""


class ExecProgram:
    """One program speaking the adapter protocol, and the factory of its schedulers.

    Not thread-safe: one caller at a time, as the checkers drive it.

    Args:
        command: the command line; split with ``shlex.split`` and run without a shell.
        call_timeout: seconds each request may take before the program is
            killed and the call reported as a hang.
        cwd: the folder to run it in (default: the current one).
        startup_timeout: seconds the program has to answer ``hello``, at
            least (see ``STARTUP_TIMEOUT``).
        tick_ms: under ``--clock real``, the tick in milliseconds: the
            program gets it as ``FENCEPOST_TICK_MS`` in its environment and
            as ``hello``'s ``tick_ms`` argument (``spec.realclock``).

    Raises:
        ValueError: ``command`` is empty or not valid shell quoting, or
            ``call_timeout`` is not > 0. (``start()`` raises
            ``AdapterStartError`` when the program cannot start.)
    """

    #: The checkers need not run calls on a watched thread: this client keeps its own deadlines.
    keeps_deadlines = True

    def __init__(
        self, command: str, call_timeout: float = DEFAULT_CALL_TIMEOUT, cwd: str | None = None,
        startup_timeout: float = STARTUP_TIMEOUT, tick_ms: int | None = None,
    ) -> None:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ValueError(f"--exec {command!r}: {exc}") from None
        if not argv:
            raise ValueError(f"--exec {command!r}: the command is empty")
        if not call_timeout > 0:
            raise ValueError(f"call_timeout must be a number of seconds > 0, got {call_timeout!r}")
        self.command = command
        self.argv = argv
        self.call_timeout = call_timeout
        self.cwd = cwd
        self.startup_timeout = startup_timeout
        self.tick_ms = tick_ms
        self.capabilities: frozenset[str] = frozenset()
        #: the contract variants the program's hello declares (None: none), read like a factory's
        self.fencepost_variants: dict | None = None
        #: whether tokens may be strs in answers (tokens=opaque): set from the hello or by the checker
        self.opaque_tokens = False
        self.starts = 0  # how many times the program was started
        self.generation = 0  # bumped by every reset and restart; older schedulers are stale
        self._process: subprocess.Popen | None = None
        self._stopped_because: str | None = None  # why the last run of the program was stopped
        self._next_id = 1
        self._buffer = bytearray()
        self._stderr: collections.deque[bytes] = collections.deque()
        self._finalizer: weakref.finalize | None = None
        # Answers to reads since the last other call, by (op, args as JSON): see ``prefetch``.
        self._reads: dict[tuple[str, str], object] = {}
        # Requests written whose answers are not read yet, in order: (id, op, args, key, refusal).
        self._inflight: collections.deque[tuple] = collections.deque()
        # Calls announced by ``plan`` and not sent yet: (op, args, reads, key).
        self._plan: collections.deque[tuple] = collections.deque()
        self.__name__ = f"--exec {command!r}"
        # What the conformance machine is named after: the command without its folders. Hypothesis
        # derives a derandomized run's seed from that name, so the full path made the same program
        # run different examples from each checkout (and a fresh clone's CI see another counterexample).
        self.machine_name = "exec " + " ".join(os.path.basename(word) for word in shlex.split(command))

    # ------------------------------------------------------------ lifecycle

    @property
    def running(self) -> bool:
        return self._process is not None

    def start(self) -> None:
        """Start the program and say ``hello``; a no-op if it is running.

        Raises:
            AdapterStartError: it cannot be started, exits, or does not answer
                ``hello`` properly within ``max(call_timeout, startup_timeout)``.
        """
        if self._process is not None:
            return
        try:
            process = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=self.cwd, bufsize=0, start_new_session=True,
                env=None if self.tick_ms is None else {**os.environ, TICK_ENV: str(self.tick_ms)},
            )
        except OSError as exc:
            raise AdapterStartError(f"--exec {self.command!r}: cannot start {self.argv[0]!r}: {exc.strerror or exc}") from None
        os.set_blocking(process.stdin.fileno(), False)
        self._process, self._buffer, self._stopped_because = process, bytearray(), None
        self._inflight.clear()
        self._plan.clear()
        self._stderr = tail = collections.deque()
        threading.Thread(target=_drain, args=(process.stderr, tail), name="fencepost-exec-stderr", daemon=True).start()
        self._finalizer = weakref.finalize(self, _kill, process)
        self.starts += 1
        try:
            hello = {} if self.tick_ms is None else {"tick_ms": self.tick_ms}
            self.capabilities = self._request("hello", hello, max(self.call_timeout, self.startup_timeout))
            self.fencepost_variants = getattr(self.capabilities, "variants", None)
            if self.fencepost_variants and self.fencepost_variants.get("tokens") == "opaque":
                self.opaque_tokens = True
        except (SchedulerFault, ValueError) as exc:
            raise AdapterStartError(f"--exec {self.command!r} did not start properly: {_one_line(str(exc))}") from None

    def close(self) -> None:
        """Stop the program (closing its stdin first, so it may exit by itself); idempotent."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            process.stdin.close()
            process.wait(timeout=min(1.0, self.call_timeout))
        except (OSError, subprocess.TimeoutExpired):
            pass
        _kill(process)
        self._finalizer.detach()

    def __enter__(self) -> ExecProgram:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __call__(self) -> ExecScheduler:
        """A fresh scheduler: ``reset`` in the program (started again first if it was stopped).

        Raises:
            AdapterFault: the program cannot be (re)started or does not answer ``reset``.
        """
        if self._inflight and self._process is not None:
            try:
                self._drain()  # answers to calls a run announced but never made (it stopped at a failure)
            except SchedulerFault:
                pass  # stopped; started again below
        if self._process is None:
            try:
                self.start()
            except AdapterStartError as exc:
                raise AdapterFault(str(exc)) from None
        self.generation += 1
        self._reads.clear()
        self._request("reset", {})
        return _client_class(self.capabilities)(self, self.generation)

    # ------------------------------------------------------------ requests

    def call(self, generation: int, op: str, args: dict) -> object:
        """One protocol call from the scheduler of ``generation``.

        A read (``now``, ``task``) answered since the last other call is
        answered again from memory (reads change nothing). A call that heads
        the plan (see ``plan``) is sent together with what follows it.

        Raises:
            ValueError: the program refused the call, or an argument cannot be sent.
            AdapterFault: the scheduler is stale, the program is stopped, or it
                broke the protocol now (it is then stopped).
            CallTimeout: no answer within ``call_timeout`` (the program is killed).
        """
        if generation != self.generation:
            raise AdapterFault(f"{op}: this scheduler was replaced by a later reset or restart of the program")
        if self._process is None:
            raise AdapterFault(f"{op}: the program is no longer running ({self._stopped_because or 'it was closed'})")
        key = (op, _key(args))
        if op in READ_OPS:
            if key not in self._reads:
                self._plan.clear()
                self._drain()  # answers already in flight would come first, from a later state
                self._send([(op, args)])
                self._answer_next()
            return _answered(self._reads[key])
        self._reads.clear()
        if not (self._inflight and self._inflight[0][3] == key):
            self._drain()
            self._send(self._take_plan(op, args, key))
        return self._answer_next()

    def plan(self, generation: int, calls: list[tuple[str, dict, list[tuple[str, dict]]]]) -> None:
        """Announce the next calls, each ``(op, args, reads)``: the reads made right after it.

        When the first of them is called, it goes out in one write with the
        reads after it and the calls (and reads) after those, up to
        ``PLAN_LIMIT`` requests; the answers are then read in order as the
        calls are made. The protocol is unchanged (one answer line per
        request, in order): the program only sees requests arrive together,
        so a step and the views read after it cost one round trip, and a run
        of refused calls one in all. A plan whose first call is already
        planned or sent is ignored; a call that departs from the plan drops it
        (answers already sent are read and discarded first).
        """
        if generation != self.generation or not calls:
            return
        first = (calls[0][0], _key(calls[0][1]))
        if (self._inflight and self._inflight[0][3] == first) or (self._plan and self._plan[0][3] == first):
            return
        self._plan = collections.deque((op, args, list(reads), (op, _key(args))) for op, args, reads in calls)

    def prefetch(self, generation: int, reads: list[tuple[str, dict]]) -> None:
        """Ask for the reads not answered yet, in one round trip; their answers serve the next calls.

        Raises:
            AdapterFault, CallTimeout: as ``call``, for any of the reads.
        """
        if generation != self.generation or self._process is None:
            return  # the calls themselves will say why not
        missing = [(op, args) for op, args in _unique(reads) if (op, _key(args)) not in self._reads]
        if missing:
            self._plan.clear()
            self._drain()
            self._send(missing)
            while self._inflight:
                self._receive()

    def restart(self, generation: int) -> int:
        """Send ``restart``; return the generation of the scheduler that replaces the one of ``generation``."""
        self.call(generation, "restart", {})
        self.generation += 1
        return self.generation

    def _take_plan(self, op: str, args: dict, key: tuple) -> list[tuple[str, dict]]:
        """The requests to send for a call: the plan's next ones if it heads the plan, else the call alone."""
        plan = self._plan
        if not plan or plan[0][3] != key:
            plan.clear()
            return [(op, args)]
        requests: list[tuple[str, dict]] = []
        while plan and (not requests or len(requests) + 1 + len(plan[0][2]) <= PLAN_LIMIT):
            call_op, call_args, reads, _ = plan.popleft()
            requests.append((call_op, call_args))
            requests += _unique(reads)
        return requests

    def _send(self, requests: list[tuple[str, dict]], timeout: float | None = None) -> None:
        """Write the requests in one write; each joins ``_inflight`` (an unsendable one with its refusal)."""
        lines = []
        for op, args in requests:
            try:
                line = request_line(self._next_id, op, args)
            except ValueError as exc:  # refused here, without asking the program
                self._inflight.append((None, op, args, (op, _key(args)), exc))
                continue
            self._inflight.append((self._next_id, op, args, (op, _key(args)), None))
            self._next_id += 1
            lines.append(line)
        if lines:
            self._write(b"".join(lines), time.monotonic() + (timeout or self.call_timeout), requests[0])

    def _answer_next(self, timeout: float | None = None) -> object:
        """The answer to the request at the head of ``_inflight``; the reads behind it go to the cache."""
        result = self._receive(timeout)
        while self._inflight and self._inflight[0][1] in READ_OPS:
            self._receive()
        return _answered(result)

    def _receive(self, timeout: float | None = None) -> object:
        """Read the answer to the head of ``_inflight``: its value, or the ``ValueError`` it carries."""
        request_id, op, args, key, refused = self._inflight.popleft()
        if refused is not None:
            answer: object = refused
        else:
            call = (op, args)
            line = self._read_line(time.monotonic() + (timeout or self.call_timeout), call)
            try:
                answer = self._parse(line, request_id, op, call)
            except ValueError as exc:
                answer = exc
        if op in READ_OPS:
            self._reads[key] = answer
        return answer

    def _drain(self) -> None:
        """Read and drop the answers still in flight: requests sent ahead of calls that never came.

        The program has made those calls, so what was read before may be stale: forgotten too.
        """
        if self._inflight:
            while self._inflight:
                self._receive()
            self._reads.clear()

    def _request(self, op: str, args: dict, timeout: float | None = None) -> object:
        """One request on its own and its answer (``hello``, ``reset``)."""
        self._send([(op, args)], timeout)
        return _answered(self._receive(timeout))

    def _parse(self, answer: bytes, request_id: int, op: str, call: tuple[str, dict]) -> object:
        try:
            return parse_answer(answer, request_id, op, self.opaque_tokens)
        except ProtocolError as exc:
            self._stop(f"it broke the protocol answering {_words(call)}")
            raise AdapterFault(f"the program broke the adapter protocol answering {_words(call)} (request id {request_id}): {exc}") from None

    def _write(self, data: bytes, deadline: float, call: tuple[str, dict]) -> None:
        fd = self._process.stdin.fileno()
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([], [fd], [], remaining)[1]:
                self._hang(call)
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError):
                self._exited(call)

    def _read_line(self, deadline: float, call: tuple[str, dict]) -> bytes:
        fd = self._process.stdout.fileno()
        searched = 0
        while True:
            end = self._buffer.find(b"\n", searched)
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                return line
            searched = len(self._buffer)
            if searched > MAX_ANSWER_LINE_BYTES:
                self._stop(f"it wrote an over-long line answering {_words(call)}")
                raise AdapterFault(f"the program broke the adapter protocol answering {_words(call)}: an answer line longer than {MAX_ANSWER_LINE_BYTES} bytes")
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                self._hang(call)
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                self._exited(call)
            self._buffer += chunk

    def _hang(self, call: tuple[str, dict]) -> None:
        self._stop(f"killed after {_words(call)} did not return within {self.call_timeout:g} s")
        raise CallTimeout(_words(call), self.call_timeout)

    def _exited(self, call: tuple[str, dict]) -> None:
        process = self._process
        try:
            status = process.wait(timeout=_REAP_SECONDS)
            how = f"exited with status {status}" if status >= 0 else f"was killed by signal {-status}"
        except subprocess.TimeoutExpired:
            how = "closed its standard output"
        self._stop(f"it {how} during {_words(call)}")
        raise AdapterFault(f"the program {how} while fencepost waited for its answer to {_words(call)}{self.stderr_tail()}")

    def _stop(self, why: str) -> None:
        process, self._process = self._process, None
        self._stopped_because = why
        self._inflight.clear()
        self._plan.clear()
        self._reads.clear()
        if process is not None:
            _kill(process)
            self._finalizer.detach()

    def stderr_tail(self) -> str:
        """``; its stderr ended with: '...'`` (one line), or "" when it wrote nothing to stderr."""
        text = b"".join(self._stderr).decode("utf-8", errors="replace")
        text = _one_line(text)
        if not text:
            return ""
        if len(text) > STDERR_QUOTE_CHARS:
            text = "..." + text[-STDERR_QUOTE_CHARS:]
        return f"; its stderr ended with: {text!r}"


def _key(args: dict) -> str:
    """``args`` as text that tells apart what ``==`` blurs (``1``, ``1.0``, ``True``): a cache key."""
    return repr(args)


def _answered(answer: object) -> object:
    """A received answer as the call's outcome: a ``ValueError`` raised (a fresh one each time), else the value."""
    if isinstance(answer, ValueError):
        raise ValueError(str(answer))
    return answer


def _unique(reads: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    seen, unique = set(), []
    for op, args in reads:
        key = (op, _key(args))
        if key not in seen:
            seen.add(key)
            unique.append((op, args))
    return unique


def _words(call: tuple[str, dict]) -> str:
    """``("dispatch", {"now": 3})`` -> ``dispatch(now=3)``: formatted only for a message."""
    op, args = call
    return format_watched_call((op, (), args)) if args else op


def _drain(stream: object, tail: collections.deque) -> None:
    """Read a program's stderr until it closes, keeping the last ``STDERR_TAIL_BYTES`` (a pipe never fills)."""
    size = 0
    try:
        while chunk := stream.read1(_CHUNK) if hasattr(stream, "read1") else stream.read(_CHUNK):
            tail.append(chunk)
            size += len(chunk)
            while size - len(tail[0]) >= STDERR_TAIL_BYTES:
                size -= len(tail.popleft())
    except (OSError, ValueError):
        pass


def _kill(process: subprocess.Popen) -> None:
    """Kill the program (and what it started, in its session) and reap it, bounded."""
    try:
        os.killpg(process.pid, 9)
    except OSError:
        try:
            process.kill()
        except OSError:
            pass
    try:
        process.wait(timeout=_REAP_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    for stream in (process.stdin, process.stdout):
        try:
            stream.close()
        except OSError:
            pass


def _one_line(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------- the schedulers


class ExecScheduler:
    """A scheduler inside the program: each method is one request. Stale after the next reset or restart."""

    def __init__(self, program: ExecProgram, generation: int) -> None:
        self._program = program
        self._generation = generation

    def _call(self, op: str, **args: object) -> object:
        return self._program.call(self._generation, op, {k: v for k, v in args.items() if v is not _UNSET})

    def _fencepost_prefetch(self, reads: list[tuple[str, dict]]) -> None:
        """Ask the program for these reads in one round trip (see ``ExecProgram.prefetch``)."""
        self._program.prefetch(self._generation, reads)

    def _fencepost_plan(self, calls: list[tuple[str, dict, list[tuple[str, dict]]]]) -> None:
        """Announce the next calls and the reads after each (see ``ExecProgram.plan``)."""
        self._program.plan(self._generation, calls)

    @property
    def now(self) -> int:
        return self._call("now")

    def add_worker(self, worker: str, capacity: int) -> None:
        return self._call("add_worker", worker=worker, capacity=capacity)

    def submit(self, priority: int = _UNSET, due_at: int | None = _UNSET, max_attempts: int | None = _UNSET, retry_delay: int = _UNSET) -> int:
        return self._call("submit", priority=priority, due_at=due_at, max_attempts=max_attempts, retry_delay=retry_delay)

    def dispatch(self, worker: str, now: int, duration: int) -> object:
        return self._call("dispatch", worker=worker, now=now, duration=duration)

    def complete(self, task_id: int, token: int, now: int) -> object:
        return self._call("complete", task_id=task_id, token=token, now=now)

    def fail(self, task_id: int, token: int, now: int) -> object:
        return self._call("fail", task_id=task_id, token=token, now=now)

    def cancel(self, task_id: int, now: int) -> object:
        return self._call("cancel", task_id=task_id, now=now)

    def renew(self, task_id: int, token: int, now: int, duration: int) -> object:
        return self._call("renew", task_id=task_id, token=token, now=now, duration=duration)

    def advance(self, now: int) -> None:
        return self._call("advance", now=now)

    def task(self, task_id: int) -> object:
        return self._call("task", task_id=task_id)

    def __repr__(self) -> str:
        return f"<scheduler {self._generation} of --exec {self._program.command!r}>"


class _WithKeys(ExecScheduler):
    def submit(
        self, priority: int = _UNSET, due_at: int | None = _UNSET, max_attempts: int | None = _UNSET,
        retry_delay: int = _UNSET, key: str | None = _UNSET,
    ) -> int:
        return self._call("submit", priority=priority, due_at=due_at, max_attempts=max_attempts, retry_delay=retry_delay, key=key)


class _WithRestart(ExecScheduler):
    def reopen(self) -> ExecScheduler:
        """Send ``restart``: the program recovers its scheduler from storage; this one goes stale."""
        return type(self)(self._program, self._program.restart(self._generation))


class _WithPrune(ExecScheduler):
    def prune(self, before: int, now: int) -> int:
        return self._call("prune", before=before, now=now)


class _WithBatches(ExecScheduler):
    """The batch operations, each one request; lists travel as JSON arrays (a report pair as ``[id, token]``)."""

    def submit_many(self, tasks: list) -> list:
        return self._call("submit_many", tasks=tasks)

    def dispatch_many(self, worker: str, now: int, duration: int, limit: int) -> list:
        return self._call("dispatch_many", worker=worker, now=now, duration=duration, limit=limit)

    def complete_many(self, reports: list, now: int) -> list:
        return self._call("complete_many", reports=_pairs(reports), now=now)

    def fail_many(self, reports: list, now: int) -> list:
        return self._call("fail_many", reports=_pairs(reports), now=now)


def _pairs(reports: object) -> object:
    """Report pairs as JSON arrays (a tuple is not JSON); anything else goes as it is, for the program to refuse."""
    if isinstance(reports, (list, tuple)):
        return [list(pair) if isinstance(pair, tuple) else pair for pair in reports]
    return reports


#: Capability -> the class whose methods it adds to a program's schedulers.
_MIXINS = {"key": _WithKeys, "restart": _WithRestart, "prune": _WithPrune, "batch": _WithBatches}
_CLASSES: dict[frozenset[str], type[ExecScheduler]] = {}


def _client_class(capabilities: frozenset[str]) -> type[ExecScheduler]:
    offered = frozenset(c for c in _MIXINS if c in capabilities)
    if offered not in _CLASSES:
        bases = tuple(mixin for c, mixin in _MIXINS.items() if c in offered)
        _CLASSES[offered] = type("ExecScheduler", bases, {}) if bases else ExecScheduler
    return _CLASSES[offered]
