"""The ``--exec`` adapter protocol: JSON lines between fencepost and a scheduler in any language.

fencepost starts the program once and writes one request per line to its
standard input; the program writes exactly one answer line per request to
its standard output, in order::

    -> {"id": 1, "op": "hello", "args": {}}
    <- {"id": 1, "result": {"protocol": 1, "capabilities": ["key"]}}
    -> {"id": 2, "op": "reset", "args": {}}
    <- {"id": 2, "result": null}
    -> {"id": 3, "op": "submit", "args": {"priority": 5}}
    <- {"id": 3, "result": 1}
    -> {"id": 4, "op": "advance", "args": {"now": -1}}
    <- {"id": 4, "error": "ValueError", "message": "now must be an int >= 0: got -1"}

``hello`` comes first and only once per start; ``reset`` starts a fresh
scheduler inside the program (one per check run); ``now`` answers the
clock; ``restart`` (only with the ``"restart"`` capability) replaces the
scheduler by one recovered from its storage. Every other op is a protocol
method with its arguments by name; an argument left out takes the
protocol's default. Results are the JSON forms of ``spec.formats.values``.

This module is the codec: it turns a call into a request line and an answer
line back into a value, a ``ValueError`` (the program refused the call) or a
``ProtocolError`` (the program broke the protocol). Answers are hostile
input: ``parse_answer`` bounds the line's length, its nesting and its ints,
and never raises anything else. It knows nothing of processes; see
``spec.adapters.exec``.
"""

from __future__ import annotations

import json
import math
import re

from fencepost.spec.formats.limits import MAX_ANSWER_LINE_BYTES, MAX_ANSWER_NESTING
from fencepost.spec.formats.limits import MAX_WIRE_STRING
from fencepost.spec.formats.values import ValueFormError, from_json
from fencepost.spec.variants import Variants

#: The protocol version this fencepost speaks; ``hello`` must answer it.
PROTOCOL_VERSION = 1
#: Optional capabilities a program may list in its ``hello``: ``key`` (its
#: ``submit`` accepts an idempotency ``key``), ``restart`` (it answers the
#: ``restart`` op) and ``prune`` (it answers ``prune`` with ``before`` and
#: ``now``, with how many tasks it forgot).
CAPABILITIES = ("key", "restart", "prune")
#: The ops every program answers besides the protocol's methods.
CONTROL_OPS = ("hello", "reset", "now", "restart")

_TOP_LEVEL = frozenset({"id", "result", "error", "message"})
_STRINGS_AND_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


class ProtocolError(Exception):
    """An answer line that breaks the adapter protocol. The message is one line, without the request."""


def request_line(request_id: int, op: str, args: dict) -> bytes:
    """The request as one JSON line, UTF-8, newline-terminated.

    Raises:
        ValueError: an argument has no faithful JSON form in every language:
            a float with an integral value (``7.0``, which most JSON readers
            cannot tell from ``7``), a non-finite float, or a value that is
            not JSON (only str, int, float, bool, None, lists and str-keyed
            dicts of them are). The program is not asked; the message names
            the argument, the value and the rule.
    """
    for name, value in args.items():
        problem = _unsendable(value)
        if problem:
            raise ValueError(f"{name}={value!r}: {problem}; refused by the --exec adapter without asking the program")
    return (json.dumps({"id": request_id, "op": op, "args": args}, ensure_ascii=False, allow_nan=False) + "\n").encode()


def _unsendable(value: object, depth: int = 0) -> str | None:
    if depth > MAX_ANSWER_NESTING:
        return "nested too deeply to send"
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return "not a finite number, and JSON has no form for it"
        if value.is_integer():
            return "a float, not an int (JSON cannot tell 7.0 from 7 in most languages, so it is never sent)"
        return None
    if isinstance(value, (list, tuple)):
        return next((p for p in (_unsendable(v, depth + 1) for v in value) if p), None)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return next((p for p in (_unsendable(v, depth + 1) for v in value.values()) if p), None)
    return f"a {type(value).__name__}, which has no JSON form"


def parse_answer(line: bytes, request_id: int, op: str, opaque: bool = False) -> object:
    """The value an answer line carries for request ``request_id`` of ``op``.

    Returns the decoded result (see ``spec.formats.values.from_json``; for
    ``hello`` the set of capabilities).

    Raises:
        ValueError: the program answered ``{"error": "ValueError", "message": ...}``.
        ProtocolError: anything else that is not a well-formed answer to this
            request: not UTF-8, not JSON, too long or too deeply nested, not an
            object, another id, both or neither of ``result`` and ``error``,
            an error other than ``ValueError``, a result not in its op's form.
    """
    if len(line) > MAX_ANSWER_LINE_BYTES:
        raise ProtocolError(f"an answer line longer than {MAX_ANSWER_LINE_BYTES} bytes")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"an answer line that is not UTF-8 (byte {exc.start}: {line[exc.start:exc.start + 1]!r})") from None
    if _nesting(text) > MAX_ANSWER_NESTING:
        raise ProtocolError(f"an answer nested more than {MAX_ANSWER_NESTING} deep")
    try:
        answer = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, an int past Python's digit limit
        why = "an integer too long to read" if "integer string conversion" in str(exc) else _first_line(str(exc))
        raise ProtocolError(f"an answer line that is not JSON ({why}): {_cut(text)}") from None
    if not isinstance(answer, dict):
        raise ProtocolError(f"an answer that is not a JSON object: {_cut(text)}")
    extra = sorted(set(answer) - _TOP_LEVEL)
    if extra:
        raise ProtocolError(f"an answer with a field the protocol does not know ({extra[0]!r}): {_cut(text)}")
    if "id" not in answer:
        raise ProtocolError(f"an answer without an id: {_cut(text)}")
    if type(answer["id"]) is not int or answer["id"] != request_id:
        raise ProtocolError(f"an answer with id {_cut(json.dumps(answer['id']), 40)}, but the request's id is {request_id}")
    if ("result" in answer) == ("error" in answer):
        raise ProtocolError(f"an answer with {'both' if 'result' in answer else 'neither'} of result and error: {_cut(text)}")
    if "error" in answer:
        return _raise_error(answer, text)
    if "message" in answer:
        raise ProtocolError(f"an answer with a message but no error: {_cut(text)}")
    if op == "hello":
        return parse_hello(answer["result"])
    try:
        return from_json(op, answer["result"], opaque)
    except ValueFormError as exc:
        raise ProtocolError(str(exc)) from None


def _raise_error(answer: dict, text: str) -> object:
    name, message = answer["error"], answer.get("message")
    if not isinstance(name, str) or not isinstance(message, str):
        raise ProtocolError(f"an error answer needs error and message strings: {_cut(text)}")
    if name != "ValueError":
        raise ProtocolError(f"the program raised {_cut(name, 40)!s}, but the protocol allows only ValueError: {_cut(message)}")
    raise ValueError(_first_line(message)[:MAX_WIRE_STRING] or "ValueError")


class Hello(frozenset):
    """The capabilities a ``hello`` lists (a frozenset of them), and the ``variants`` it declares (None: none)."""

    variants: dict | None = None


def parse_hello(result: object) -> Hello:
    """The capabilities a ``hello`` result lists, with its optional ``variants`` declaration.

    ``{"protocol": 1, "capabilities": [...], "variants": {"order": "any"}}``:
    ``variants`` is optional, a table of the declared contract variants
    (``spec.variants``), kept on the result as ``.variants``.

    Raises:
        ProtocolError: not ``{"protocol": 1, "capabilities": [...]}`` with
            capabilities among ``CAPABILITIES``, or variants that are not valid.
    """
    if not isinstance(result, dict) or not {"protocol", "capabilities"} <= set(result) <= {"protocol", "capabilities", "variants"}:
        raise ProtocolError(f'hello must answer {{"protocol": {PROTOCOL_VERSION}, "capabilities": [...]}}, got {_cut(json.dumps(result))}')
    if type(result["protocol"]) is not int or result["protocol"] != PROTOCOL_VERSION:
        raise ProtocolError(f"the program speaks protocol {_cut(json.dumps(result['protocol']), 40)}; this fencepost speaks {PROTOCOL_VERSION}")
    capabilities = result["capabilities"]
    if not isinstance(capabilities, list) or not all(isinstance(c, str) for c in capabilities):
        raise ProtocolError(f"hello's capabilities must be a list of strings, got {_cut(json.dumps(capabilities))}")
    unknown = [c for c in capabilities if c not in CAPABILITIES]
    if unknown:
        raise ProtocolError(f"hello lists a capability fencepost does not know: {_cut(unknown[0], 40)!r} (known: {', '.join(CAPABILITIES)})")
    hello = Hello(capabilities)
    if "variants" in result:
        try:
            Variants.from_declared(result["variants"], "hello's variants")
        except ValueError as exc:
            raise ProtocolError(_cut(str(exc), 200)) from None
        hello.variants = dict(result["variants"])
    return hello


def _nesting(text: str) -> int:
    """The deepest nesting of brackets outside strings; O(len(text)), only where brackets are."""
    if text.count("[") + text.count("{") <= MAX_ANSWER_NESTING:
        return 0  # cannot nest deeper than it has brackets
    depth = deepest = 0
    for match in _STRINGS_AND_BRACKETS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _first_line(text: str) -> str:
    return " ".join(text.split())


def _cut(text: str, limit: int = 120) -> str:
    text = _first_line(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."
