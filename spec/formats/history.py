"""Concurrent histories: the pinned JSON-lines format, its reader and writer, and a recorder.

A history is what several clients saw of one scheduler: one JSON object per
line, in the real-time order the events happened::

    {"process": "c1", "type": "invoke", "op": "dispatch", "args": {"worker": "w1", "now": 5, "duration": 5}}
    {"process": "c2", "type": "invoke", "op": "submit", "args": {}}
    {"process": "c1", "type": "ok", "result": {"task_id": 1, "worker": "w1", "token": 1, "started_at": 5, "expires_at": 10}}
    {"process": "c2", "type": "ok", "error": "ValueError"}
    {"process": "c1", "type": "info"}

An ``invoke`` opens a call of ``process``; the next event of the same process
completes it: ``ok`` with ``result`` (the JSON form of ``spec.formats.values``)
or with ``error`` (the exception's class name; the protocol only raises
``ValueError``), or ``info`` when the client died or timed out and the call may
or may not have taken effect. A process has at most one call open at a time.
Any event may carry ``"time"`` (monotonic nanoseconds, an int >= 0), which
checkers ignore; ``merge_histories`` orders per-process recordings by it.

The first line may be a header naming the declared contract variants the
history is to be judged under (``spec.variants``), so that ``fencepost
linearize FILE`` needs no flags::

    {"type": "header", "variants": {"order": "any", "tokens": "opaque"}}

Under ``tokens=opaque`` a token (in ``args`` and in results) is an int or a
non-empty string; otherwise an int.

Choices the format left open, taken here:

* ``process`` is a non-empty string; no other keys are allowed on an event.
* ``args`` are checked like a scenario step's: names and required arguments
  from ``spec.protocol.SchedulerProtocol``, an int argument a JSON integer
  (never a bool or a float), a str argument a string, ``null`` only where the
  protocol's default is ``None``.
* ``prune`` (the optional retention operation, ``spec.model.prune``) is a
  timed call like the others: ``args`` ``before`` and ``now`` (ints), and its
  ``result`` the number of tasks it forgot (an int).
* A batch (``submit_many``, ``dispatch_many``, ``complete_many``,
  ``fail_many``) is one call: one invoke with its list argument (``tasks``,
  ``reports`` as ``[task_id, token]`` arrays) and one completion whose
  ``result`` is the list of its entries' results.
* A call still open at the end of the file is treated like ``info``.
* A ``Recorder`` writes an argument the contract refuses by its value alone
  and a line cannot hold (a worker name or key with a character
  ``FORBIDDEN_TEXT`` names, or of more than ``MAX_TEXT_BYTES`` bytes; an
  int of more than ``MAX_HISTORY_INT_DIGITS`` digits; a bool or a float
  where an int goes) as a stand-in the contract refuses too
  (``STAND_IN_TEXT``, ``INT_MAX + 1``, ``INT_MIN - 1``; see ``recordable``), so every call a client makes can be recorded and the
  history read back: the call was invalid either way. A result holding such a
  text (a scheduler that accepted one) is recorded as the error
  ``NOT_A_PROTOCOL_VALUE``, which no model answer matches.
* Blank lines are skipped.

The reader treats its input as hostile: every problem -- a malformed line, an
unknown op, bad args, a second invoke while a call is open, a completion
without an invoke, an oversized int, deep nesting, invalid UTF-8, a huge file
or line -- is one ``HistoryError`` line naming the file, the line number and the
rule, found in time and memory linear in the file's size (capped by the limits
below). The limits are named constants here; they are this reader's own, as no
shared limits module existed when it was written. Each event also passes the
shared ``spec.formats.limits.check_tree``, which refuses control characters
and over-long strings the way every reader does.
"""

from __future__ import annotations

import heapq
import json
import threading
import time
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from fencepost.spec.formats.limits import (
    MAX_HISTORY_BYTES,
    MAX_HISTORY_INT_DIGITS,
    MAX_HISTORY_LINE_BYTES,
    MAX_HISTORY_NAME_CHARS,
    MAX_HISTORY_NESTING,
    LimitError,
    check_tree,
    describe_path,
    parse_json,
)
from fencepost.spec.formats.scenario import ALL_SIGNATURES
from fencepost.spec.formats.values import ValueFormError, from_json, to_json
from fencepost.spec.protocol import (
    BATCH_OPERATIONS,
    INT_MAX,
    INT_MIN,
    MAX_TEXT_BYTES,
    OPERATIONS,
    PRUNE_OPERATIONS,
    OutcomeUnknown,
    text_problem,
)
from fencepost.spec.variants import Variants

#: The event types, in the order a call goes through them.
EVENT_TYPES = ("invoke", "ok", "info")
#: The type of the optional first line naming the history's declared variants.
HEADER = "header"

_EVENT_KEYS = {
    "invoke": {"process", "type", "op", "args", "time"},
    "ok": {"process", "type", "result", "error", "time"},
    "info": {"process", "type", "time"},
    HEADER: {"type", "variants", "clock"},
}

#: A header's ``clock`` (a history recorded on a queue's own clock, judged in real time by
#: ``spec.checkers.linearize_realtime``): its fields, and the defaults of the optional ones.
#: ``tick_ns``: how long one logical tick lasted on the queue (durations and retry delays are in
#: ticks); ``resolution_ns``: the unit the queue's server reads its clock in (Redis: 1 ms);
#: ``offset_ns``: how far apart the clients' clocks may be (0: one machine, one clock).
CLOCK_DEFAULTS = {"resolution_ns": 1_000_000, "offset_ns": 0}
CLOCK_FIELDS = ("tick_ns", "resolution_ns", "offset_ns")


class HistoryError(ValueError):
    """A history that cannot be read or written; the message is one line naming file, line and rule."""


# ---------------------------------------------------------------- the data


@dataclass(frozen=True)
class Event:
    """One line of a history; ``result`` is in its JSON form (``spec.formats.values``)."""

    process: str
    type: str  # one of EVENT_TYPES
    op: str | None = None  # invoke only
    args: dict | None = None  # invoke only
    result: object = None  # ok only: the JSON form of the call's result
    error: str | None = None  # ok only: the exception's class name when the call raised
    time: int | None = None  # monotonic nanoseconds, if recorded
    line: int = 0  # 1-based line in the file it was read from (0: not read from a file)


#: How a call ended.
OK, ERROR, INFO = "ok", "error", "info"


@dataclass(frozen=True)
class Call:
    """One call: its invocation and completion events, by position in ``History.events``.

    ``completed`` is None for an ``info`` call (or one still open at the end):
    it may take effect at any point after ``invoked``, or never.
    """

    index: int  # 0-based, in invocation order
    process: str
    op: str
    args: dict
    kind: str  # OK, ERROR or INFO
    result: object  # the protocol value for OK, else None
    error: str | None  # the exception's class name for ERROR
    invoked: int  # position of the invoke event
    completed: int | None  # position of the ok event; None for INFO
    ended: int | None  # position of the ok or info event; None if still open at the end

    def precedes(self, other: Call) -> bool:
        """Real-time order: this call completed before ``other`` was invoked."""
        return self.completed is not None and self.completed < other.invoked


@dataclass(frozen=True)
class History:
    """A whole history: its events in file order and the calls they make up."""

    events: tuple[Event, ...]
    calls: tuple[Call, ...]
    source: str = "<history>"
    variants: dict | None = None  # the header's declared variants as written; None without a header
    clock: dict | None = None  # the header's clock, every field filled in (``CLOCK_FIELDS``); None: logical time

    @property
    def processes(self) -> tuple[str, ...]:
        """Process names in the order they first appear."""
        return tuple(dict.fromkeys(e.process for e in self.events))


# ---------------------------------------------------------------- reading


def load_history(path: str | Path) -> History:
    """Read and validate a history file. O(file size), at most ``MAX_HISTORY_BYTES``.

    Raises:
        HistoryError: the file is missing, too big or not a valid history.
    """
    path = Path(path)
    source = str(path)
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise HistoryError(f"{source}: is a folder, not a history file")
        if size > MAX_HISTORY_BYTES:
            raise HistoryError(f"{source}: {size:,} bytes; a history may have at most {MAX_HISTORY_BYTES:,}")
        with path.open("rb") as handle:
            return read_history(handle, source)
    except FileNotFoundError:
        raise HistoryError(f"{source}: no such file") from None
    except OSError as exc:
        raise HistoryError(f"{source}: cannot read: {exc.strerror or exc}") from None


def loads_history(text: str | bytes, source: str = "<history>") -> History:
    """Parse history ``text`` (str or UTF-8 bytes); ``source`` names it in errors.

    Raises:
        HistoryError: as ``load_history``.
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if len(data) > MAX_HISTORY_BYTES:
        raise HistoryError(f"{source}: {len(data):,} bytes; a history may have at most {MAX_HISTORY_BYTES:,}")
    return read_history(data.splitlines(keepends=True), source)


def read_history(lines: Iterable[bytes], source: str = "<history>") -> History:
    """Validate lines of bytes as a history and pair its events into calls. O(total length).

    Raises:
        HistoryError: the first problem, naming ``source``, the line and the rule.
    """
    events: list[Event] = []
    calls: list[Call | None] = []
    open_calls: dict[str, tuple[int, Event, int]] = {}  # process -> (call index, its invoke event, its position)
    total = 0
    variants: dict | None = None
    clock: dict | None = None
    opaque = False
    first = True
    for number, raw in enumerate(lines, start=1):
        total += len(raw)
        if total > MAX_HISTORY_BYTES:
            raise HistoryError(f"{source}: line {number}: the history passes {MAX_HISTORY_BYTES:,} bytes, the most allowed")
        if not raw.strip():
            continue
        event = parse_event(raw, f"{source}: line {number}: ", number, opaque)
        if event.type == HEADER:
            if not first:
                raise HistoryError(f"{source}: line {number}: a header is allowed only as the first line")
            variants, clock = event.result, event.args
            opaque = Variants.from_declared(variants).tokens == "opaque"
            first = False
            continue
        first = False
        position = len(events)
        if event.type == "invoke":
            if event.process in open_calls:
                first = open_calls[event.process][1].line
                raise HistoryError(
                    f"{source}: line {number}: process {event.process!r} invokes {event.op} while its call "
                    f"from line {first} is still open (a process has at most one call open)"
                )
            open_calls[event.process] = (len(calls), event, position)
            calls.append(None)
        else:
            if event.process not in open_calls:
                raise HistoryError(
                    f"{source}: line {number}: an {event.type} event for process {event.process!r}, "
                    "which has no call open (a completion follows its process's invoke)"
                )
            index, invoke, invoked = open_calls.pop(event.process)
            value = None
            if event.type == "ok" and event.error is None:
                try:
                    value = from_json(invoke.op, event.result, opaque)
                except ValueFormError as exc:
                    raise HistoryError(f"{source}: line {number}: result of {invoke.op} (line {invoke.line}): {exc}") from None
            calls[index] = _call(index, invoke, event, value, invoked, position)
        events.append(event)
    for index, invoke, invoked in open_calls.values():
        calls[index] = _call(index, invoke, None, None, invoked, None)
    return History(tuple(events), tuple(calls), source, variants, clock)


def _call(index: int, invoke: Event, end: Event | None, value: object, invoke_at: int, end_at: int | None) -> Call:
    if end is None or end.type == "info":
        kind, result, error, completed = INFO, None, None, None
    elif end.error is not None:
        kind, result, error, completed = ERROR, None, end.error, end_at
    else:
        kind, result, error, completed = OK, value, None, end_at
    return Call(index, invoke.process, invoke.op, dict(invoke.args), kind, result, error, invoke_at, completed, end_at)


def parse_event(raw: bytes, where: str = "", line: int = 0, opaque: bool = False) -> Event:
    """One history line as an ``Event``, validated but not paired. O(len(raw)).

    ``where`` prefixes every error message (e.g. ``"h.jsonl: line 3: "``).
    With ``opaque`` (``tokens=opaque``) a ``token`` argument may be a non-empty
    str. A header line is an Event of type ``HEADER`` whose ``result`` is its
    variants (validated); ``read_history`` allows it first only.

    Raises:
        HistoryError: the line breaks a limit, is not one JSON object, or is not an event.
    """

    def fail(rule: str) -> HistoryError:
        return HistoryError(f"{where}{rule}")

    if len(raw) > MAX_HISTORY_LINE_BYTES:
        raise fail(f"{len(raw):,} bytes long; a line may have at most {MAX_HISTORY_LINE_BYTES:,}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    if text.count("[") + text.count("{") > MAX_HISTORY_NESTING and _nesting(text) > MAX_HISTORY_NESTING:
        raise fail(f"JSON nested deeper than {MAX_HISTORY_NESTING} levels")
    try:
        obj = json.loads(text, parse_int=_bounded_int, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except HistoryError as exc:
        raise fail(str(exc)) from None
    except (ValueError, RecursionError) as exc:
        raise fail(f"not valid JSON: {_one_line(str(exc))}") from None
    try:  # the limits every reader shares: control characters, string length (spec.formats.limits)
        check_tree(obj, where)
    except LimitError as exc:
        place = describe_path(exc.path)
        raise fail(f"{place}: {exc.rule}" if place else exc.rule) from None
    if not isinstance(obj, dict):
        raise fail(f"expected a JSON object (an event), got {_show(obj)}")
    kind = obj.get("type")
    if kind == HEADER:
        for key in obj:
            if key not in _EVENT_KEYS[HEADER]:
                raise fail(f"field {_show(key)}: unknown in a header (it has {', '.join(sorted(_EVENT_KEYS[HEADER]))})")
        try:
            Variants.from_declared(obj.get("variants", {}), "field 'variants'")
            clock = check_clock(obj["clock"]) if "clock" in obj else None
        except ValueError as exc:
            raise fail(_one_line(str(exc))) from None
        return Event("", HEADER, result=dict(obj.get("variants", {})), args=clock, line=line)
    if kind not in EVENT_TYPES:
        raise fail(f"field 'type' must be one of {', '.join(EVENT_TYPES)}, got {_show(kind)}")
    for key in obj:
        if key not in _EVENT_KEYS[kind]:
            raise fail(f"field {_show(key)}: unknown in an {kind} event (it has {', '.join(sorted(_EVENT_KEYS[kind]))})")
    process = obj.get("process")
    if not isinstance(process, str) or not process or len(process) > MAX_HISTORY_NAME_CHARS:
        raise fail(f"field 'process' must be a non-empty string of at most {MAX_HISTORY_NAME_CHARS} characters, got {_show(process)}")
    stamp = obj.get("time")
    if stamp is not None and not (_is_int(stamp) and stamp >= 0):
        raise fail(f"field 'time' must be an int >= 0 (monotonic nanoseconds), got {_show(stamp)}")
    if kind == "invoke":
        op, args = _invoke_fields(obj, fail, opaque)
        return Event(process, kind, op=op, args=args, time=stamp, line=line)
    if kind == "info":
        return Event(process, kind, time=stamp, line=line)
    if ("result" in obj) == ("error" in obj):
        raise fail("an ok event has exactly one of 'result' and 'error'")
    if "error" in obj:
        error = obj["error"]
        if not isinstance(error, str) or not error.isidentifier() or len(error) > MAX_HISTORY_NAME_CHARS:
            raise fail(f"field 'error' must be an exception class name such as \"ValueError\", got {_show(error)}")
        return Event(process, kind, error=error, time=stamp, line=line)
    return Event(process, kind, result=obj["result"], time=stamp, line=line)


#: What an invoke's ``op`` may be: the protocol's operations and its optional ones, ``prune`` and the
#: batches (one call each).
HISTORY_OPS = (*OPERATIONS, *PRUNE_OPERATIONS, *BATCH_OPERATIONS)


def _invoke_fields(obj: dict, fail: Callable[[str], HistoryError], opaque: bool = False) -> tuple[str, dict]:
    op = obj.get("op")
    if op not in HISTORY_OPS:
        raise fail(f"field 'op' must be one of {', '.join(OPERATIONS)} (or an optional one: "
                   f"{', '.join((*PRUNE_OPERATIONS, *BATCH_OPERATIONS))}), got {_show(op)}")
    args = obj.get("args")
    if not isinstance(args, dict):
        raise fail(f"field 'args' must be an object of {op}'s keyword arguments, got {_show(args)}")
    params = {p.name: p for p in ALL_SIGNATURES[op]}
    for name, value in args.items():
        if name not in params:
            shown = _show(name) if len(name) > _SHOW_LIMIT or name != _one_line(name) else name  # the file's key: bounded, one line
            raise fail(f"args.{shown}: not an argument of {op} (it takes {', '.join(params) or 'none'})")
        param = params[name]
        if value is None and param.default is None:
            continue
        fits = isinstance(value, param.type) if param.type in (str, list) else _is_int(value) or (
            opaque and name == "token" and isinstance(value, str) and value != "")
        if not fits:
            kind = {str: "a string", list: "an array"}.get(param.type) or (
                "an int or a non-empty string" if opaque and name == "token" else "an int")
            raise fail(f"args.{name}: must be {kind}, got {_show(value)}")
    missing = [p.name for p in params.values() if p.required and p.name not in args]
    if missing:
        raise fail(f"args.{missing[0]}: missing ({op} needs {', '.join(p.name for p in params.values() if p.required)})")
    return op, {name: value for name, value in args.items() if not (value is None and params[name].default is None)}


def _nesting(text: str) -> int:
    """The deepest bracket nesting outside strings. O(len(text)); only run on lines with many brackets."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_HISTORY_INT_DIGITS:
        raise HistoryError(f"an integer of {len(digits.lstrip('-')):,} digits; at most {MAX_HISTORY_INT_DIGITS} are allowed")
    return int(digits)


def _no_constant(name: str) -> object:
    raise HistoryError(f"{name} is not JSON")


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    obj: dict = {}
    for key, value in pairs:
        if key in obj:
            raise HistoryError(f"duplicate key {_show(key)}")
        obj[key] = value
    return obj


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: The longest value an error message quotes, in characters.
_SHOW_LIMIT = 60


def _show(obj: object) -> str:
    text = repr(obj)
    return text if len(text) <= _SHOW_LIMIT else text[: _SHOW_LIMIT - 3] + "..."


def _one_line(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------- writing


def event_to_json(event: Event) -> dict:
    """The JSON object of one event, keys in the documented order; ``result`` in its JSON form."""
    obj: dict = {"process": event.process, "type": event.type}
    if event.type == "invoke":
        obj["op"], obj["args"] = event.op, dict(event.args or {})
    elif event.type == "ok":
        if event.error is not None:
            obj["error"] = event.error
        else:
            obj["result"] = event.result
    if event.time is not None:
        obj["time"] = event.time
    return obj


def dumps_event(event: Event) -> str:
    """One event as one line of compact JSON, without the newline."""
    return json.dumps(event_to_json(event), separators=(", ", ": "))


def check_clock(clock: object) -> dict:
    """A header's ``clock`` with every field filled in (``CLOCK_DEFAULTS``). O(1).

    Raises:
        ValueError: not an object of ``CLOCK_FIELDS``, ``tick_ns`` missing, a field not a whole
            number (``tick_ns`` and ``resolution_ns`` >= 1, ``offset_ns`` >= 0), or ``tick_ns``
            not a whole number of ``resolution_ns``.
    """
    if not isinstance(clock, dict):
        raise ValueError(f"field 'clock' must be an object with {', '.join(CLOCK_FIELDS)}, got {_show(clock)}")
    for key in clock:
        if key not in CLOCK_FIELDS:
            raise ValueError(f"field 'clock': {_show(key)} is unknown (it has {', '.join(CLOCK_FIELDS)})")
    if "tick_ns" not in clock:
        raise ValueError("field 'clock': 'tick_ns' is required (how long one tick lasted, in nanoseconds)")
    filled = {**CLOCK_DEFAULTS, **clock}
    for key in CLOCK_FIELDS:
        least = 0 if key == "offset_ns" else 1
        if not _is_int(filled[key]) or filled[key] < least:
            raise ValueError(f"field 'clock': {key!r} must be an int >= {least}, got {_show(filled[key])}")
    if filled["tick_ns"] % filled["resolution_ns"]:
        raise ValueError(f"field 'clock': 'tick_ns' ({filled['tick_ns']}) must be a whole number of "
                         f"'resolution_ns' ({filled['resolution_ns']})")
    return {key: filled[key] for key in CLOCK_FIELDS}


def header_line(variants: dict | None, clock: dict | None = None) -> str:
    """The header line naming a history's declared variants (and its clock, if any), without the newline."""
    header = {"type": HEADER, "variants": dict(variants or {})}
    if clock is not None:
        header["clock"] = dict(clock)
    return json.dumps(header, separators=(", ", ": "))


def write_history(path: str | Path, events: Iterable[Event], variants: dict | None = None,
                  clock: dict | None = None) -> None:
    """Write ``events`` as a history file, one line each, in the order given; with ``variants``
    (declared, as ``Variants.declared()`` gives them) or a ``clock`` (``check_clock``) a
    header line first.

    Raises:
        HistoryError: the file cannot be written.
    """
    try:
        with Path(path).open("w", encoding="utf-8") as handle:
            if variants or clock is not None:
                handle.write(header_line(variants, clock) + "\n")
            for event in events:
                handle.write(dumps_event(event) + "\n")
    except OSError as exc:
        raise HistoryError(f"{path}: cannot write: {exc.strerror or exc}") from None



# ---------------------------------------------------------------- recording


class HistoryLog:
    """A thread-safe, append-only list of events, in the real-time order they were appended.

    Every event is stamped with ``clock()`` (monotonic nanoseconds) taken under
    the log's lock and made strictly increasing, so the log's order and its
    times agree, and recordings from several OS processes on one machine can be
    merged by time (``merge_histories``). Appending is O(1).
    """

    def __init__(self, clock: Callable[[], int] = time.monotonic_ns, variants: dict | None = None,
                 timing: dict | None = None) -> None:
        self._clock = clock
        #: the declared variants the history is judged under, written in its header
        self.variants = dict(variants) if variants else None
        #: the queue's own clock (``check_clock``), for a history recorded on it; written in the header
        self.timing = check_clock(timing) if timing is not None else None
        self.opaque = Variants.from_declared(self.variants).tokens == "opaque"
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._open: set[str] = set()  # processes with a call open
        self._last_time = -1

    def recorder(self, scheduler: object, process: str) -> Recorder:
        """A ``Recorder`` of ``scheduler`` calls made as ``process``, into this log."""
        return Recorder(scheduler, process, self)

    def invoke(self, process: str, op: str, args: dict) -> None:
        """Record that ``process`` calls ``op``; before the call starts.

        Raises:
            RuntimeError: ``process`` already has a call open (one process is one
                client: give each thread its own process name).
        """
        with self._lock:
            if process in self._open:
                raise RuntimeError(f"process {process!r} already has a call open; give each thread its own process name")
            self._open.add(process)
            self._events.append(Event(process, "invoke", op=op, args=dict(args), time=self._stamp()))

    def complete(self, process: str, *, result: object = None, error: str | None = None, unknown: bool = False) -> None:
        """Record the end of ``process``'s open call: its JSON ``result``, an ``error`` class name, or ``unknown`` (info)."""
        with self._lock:
            self._open.discard(process)
            if unknown:
                event = Event(process, "info", time=self._stamp())
            else:
                event = Event(process, "ok", result=result, error=error, time=self._stamp())
            self._events.append(event)

    def _stamp(self) -> int:
        self._last_time = max(self._clock(), self._last_time + 1)
        return self._last_time

    @property
    def events(self) -> tuple[Event, ...]:
        """A snapshot of the events so far."""
        with self._lock:
            return tuple(self._events)

    def write(self, path: str | Path) -> None:
        """Write the events so far as a history file (see ``write_history``)."""
        write_history(path, self.events, self.variants, self.timing)


#: The error a ``Recorder`` records for a result that is not a protocol value; no model answer matches it.
NOT_A_PROTOCOL_VALUE = "NotAProtocolValue"

#: The calls a ``Recorder`` records (the optional ones only when the scheduler offers them);
#: every other attribute passes straight through.
RECORDED_OPS = HISTORY_OPS


class Recorder:
    """A scheduler seen by one client (``process``): each protocol call is recorded as invoke/ok.

    The call itself runs unlocked on the wrapped scheduler, so calls of
    different processes overlap exactly as they would without the recorder;
    only the log is locked. A call that raises is recorded with the
    exception's class name and re-raised; one that raises ``OutcomeUnknown``
    (its answer was lost), or an exception that ends the client
    (``BaseException`` other than ``Exception``), is recorded as ``info``; a
    result that has no JSON form is recorded as the error
    ``NOT_A_PROTOCOL_VALUE`` and returned to the caller unchanged.
    Arguments are recorded by their protocol names. The optional operations
    (``prune``, the batches) are recorded when the scheduler has them; a
    scheduler without them gives ``AttributeError`` as it would unwrapped.
    Not for two threads at once: one process has at most one call open
    (``RuntimeError`` otherwise).
    """

    def __init__(self, scheduler: object, process: str, log: HistoryLog) -> None:
        if not isinstance(process, str) or not process:
            raise ValueError(f"process must be a non-empty str: {process!r}")
        self._scheduler = scheduler
        self._process = process
        self._log = log
        self._params = {op: [p.name for p in ALL_SIGNATURES[op]] for op in RECORDED_OPS}

    @property
    def process(self) -> str:
        return self._process

    def __getattr__(self, name: str) -> object:
        if name in RECORDED_OPS and (name in OPERATIONS or callable(getattr(self._scheduler, name, None))):
            return lambda *args, **kwargs: self._record(name, args, kwargs)
        return getattr(self._scheduler, name)

    def _record(self, op: str, args: tuple, kwargs: dict) -> object:
        named = dict(zip(self._params[op], args, strict=False)) | kwargs
        self._log.invoke(self._process, op, recordable(op, named, self._log.opaque))
        try:
            value = getattr(self._scheduler, op)(**named)
        except OutcomeUnknown:
            self._log.complete(self._process, unknown=True)
            raise
        except Exception as exc:
            self._log.complete(self._process, error=type(exc).__name__)
            raise
        except BaseException:
            self._log.complete(self._process, unknown=True)
            raise
        try:
            encoded = to_json(op, value, self._log.opaque)
            check_tree([encoded], "a result")  # a text no file may hold: only a scheduler that accepted one gives it
        except (ValueFormError, LimitError):
            # Not a protocol value (an accepted of 1, a float token): recorded as an error
            # no model answer matches, so the checker reports the call; the caller gets it as is.
            self._log.complete(self._process, error=NOT_A_PROTOCOL_VALUE)
            return value
        self._log.complete(self._process, result=encoded)
        return value


#: What a ``Recorder`` writes for a worker name or key the contract refuses and a history cannot hold:
#: a text one byte longer than the contract allows, which every reader takes and the contract refuses too.
STAND_IN_TEXT = "x" * (MAX_TEXT_BYTES + 1)


def recordable(op: str, args: dict, opaque: bool = False) -> dict:
    """``op``'s arguments as a history can hold them, each one the contract refuses by its value alone
    replaced by a stand-in it refuses too: a text ``text_problem`` names (or any non-str for a str
    argument) by ``STAND_IN_TEXT``; a non-int for an int argument (a bool, a float) or an int too long
    for a history by one just outside the contract's range (an int subclass, such as an ``IntEnum``,
    is an int: its plain value is kept); a non-list for a list by ``[0]`` (an entry
    of the wrong shape). Inside a batch's list, texts and ints are replaced so too. Valid values, and
    names ``op`` does not take (the reader names those), are kept as given. O(size of args)."""
    params = {param.name: param for param in ALL_SIGNATURES.get(op, ())}
    kept = {}
    for name, value in args.items():
        param = params.get(name)
        if param is None or (value is None and param.default is None):
            kept[name] = value
        elif param.type is str:
            kept[name] = _recordable_value(value) if isinstance(value, str) else STAND_IN_TEXT
        elif param.type is list:
            kept[name] = _recordable_value(value) if isinstance(value, (list, tuple)) else [0]
        elif opaque and name == "token" and isinstance(value, str) and value:
            kept[name] = value
        else:
            kept[name] = _recordable_value(value) if _is_int(value) else INT_MAX + 1
    return kept


def _recordable_value(value: object) -> object:
    if isinstance(value, str):
        return STAND_IN_TEXT if value and text_problem(value) else value
    if _is_int(value):
        if abs(value) >= 10**MAX_HISTORY_INT_DIGITS:
            return INT_MAX + 1 if value > 0 else INT_MIN - 1
        return int(value)  # an int subclass (an IntEnum) is its value, as the contract takes it
    if isinstance(value, dict):
        return {name: _recordable_value(item) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_recordable_value(item) for item in value]
    return value


# ---------------------------------------------------------------- merging


def merge_histories(histories: Iterable[History]) -> list[Event]:
    """Merge recordings made in several OS processes into one real-time order, by ``time``.

    Each input must stamp every event with a strictly increasing ``time`` from
    one machine-wide monotonic clock (``HistoryLog`` does). Equal times in two
    inputs put invocations first: the two calls then count as overlapping,
    which never adds an order that did not happen. O(n log k) for n events in
    k inputs.

    Raises:
        HistoryError: an event has no ``time``, or times do not increase within one input.
    """
    streams = []
    for number, history in enumerate(histories):
        last = -1
        for event in history.events:
            if event.time is None:
                raise HistoryError(f"{history.source}: line {event.line}: no 'time', so it cannot be merged by time")
            if event.time <= last:
                raise HistoryError(f"{history.source}: line {event.line}: time {event.time} is not after the line before ({last})")
            last = event.time
        streams.append([(e.time, e.type != "invoke", number, i, e) for i, e in enumerate(history.events)])
    return [item[-1] for item in _merge_sorted(streams)]


def _merge_sorted(streams: list[list[tuple]]) -> Iterator[tuple]:
    # Within one input, times strictly increase, so (time, ...) keys are sorted per input.
    return heapq.merge(*streams, key=lambda item: item[:4])


def is_history(path: str) -> bool:
    """Whether ``path`` names a concurrent history rather than a scenario: it ends in
    ``.jsonl``, or its first non-blank line is a whole JSON object with ``process`` and ``type``."""
    if path.lower().endswith(".jsonl"):
        return True
    if not os.path.isfile(path):  # a FIFO would block the open below; the scenario reader words the problem
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(MAX_SNIFF_BYTES)
    except OSError:
        return False
    for raw in head.splitlines():
        if raw.strip():
            try:  # hostile input: json.loads alone raises RecursionError on a deep line
                first = parse_json(raw.decode("utf-8", "replace"), path)
            except ValueError:  # not JSON, too deep, or a line longer than the sniff: a scenario
                return False
            return isinstance(first, dict) and "process" in first and "type" in first
    return False


#: How much of a file ``is_history`` reads to recognise a history by its first line.
MAX_SNIFF_BYTES = 4096
