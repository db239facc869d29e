"""Limits for every file and response fencepost reads, and the readers' shared guards.

fencepost's files travel (counterexamples attached to bug reports, shared
walkthroughs, histories from production, an adapter's answers), so every
reader treats its input as hostile: whatever the bytes, reading ends either in
data or in one ``LimitError`` line naming the source, the place and the rule,
within bounded time and memory. Nothing read is ever run (see the README's
Security section).

The limits are generous for real use -- the 10,000-task benchmark scenario
(10,855 steps, 0.7 MB of TOML) and a day's runner trace of 10^6 tasks load -- and
small enough that no input exhausts the machine: the file size bounds
reading, the count of structural marks bounds what a parser can build, and
the rest keep one value from dominating. The README's Security section has
the measured worst cases.

How a reader uses this module (scenario files, histories and adapter
responses all do the same):

* ``read_bounded(path)`` instead of ``Path.read_text``: refuses a
  non-regular file, more than ``MAX_FILE_BYTES``, and text that is not UTF-8,
  before parsing anything;
* ``parse_json(text)`` / ``parse_toml(text)`` instead of ``json.loads`` /
  ``tomllib.loads``: more than ``MAX_MARKS`` structural marks (and, in TOML,
  a dotted key of more than ``MAX_KEY_PARTS`` parts) are refused before
  parsing; integers longer than Python's conversion limit and nesting deep
  enough to exhaust the parser's recursion become ``LimitError`` rather than
  ``ValueError``/``RecursionError``, and parse errors of the format become
  ``FormatError`` (one line, with the position); a reader of another format
  calls ``check_marks`` before its own parser;
* ``check_tree(data)`` on the parsed result: one iterative walk (it cannot
  itself recurse too deep) checking nesting, container sizes, integers and
  every string and key; after it, code may recurse over ``data`` and print
  any string from it;
* a reader of lines (JSON lines, an adapter's responses) calls
  ``check_line`` on each line before parsing it.

Every helper raises ``LimitError`` (a ``ValueError``) whose ``str`` is one
line: ``"{source}: {place}: {rule}"`` (no place for the file as a whole). A
reader with its own error type re-raises it as that type with the same
message; ``place`` and ``rule`` are also kept as attributes, and ``path`` (the
keys and indices down to the value) so a reader can word the place its own
way (the scenario reader says ``step 3: field 'note'``).
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from collections.abc import Iterable
from pathlib import Path

from fencepost.spec.protocol import FORBIDDEN_TEXT, INT_MAX, MAX_TEXT_BYTES

# ---------------------------------------------------------------- the limits

#: Largest file read, in bytes (1 GiB). The text is held in memory while it
#: is parsed; a day's runner trace of 10^6 tasks (``MAX_STEPS``) is about
#: 670 MB of indented JSON and 425 MB of TOML (the demo's trace below: 191 and
#: 121 bytes a step).
MAX_FILE_BYTES = 1024 * 1024 * 1024

#: Most steps in a scenario (or records in a history): a day's runner trace of
#: 10^6 tasks, at the runner's 3.5 calls a task (``fencepost demo --tasks 10000
#: --workers 3``: 34,993 steps), with room to spare. The long-trace
#: benchmark's 1,000,854 steps (92.5 MB of indented JSON, 4.7 million marks)
#: load and replay in 56 s of CPU and 1.5 GB, and make a report in 216 s and
#: 4.7 GB (docs/tui.md; 2026-12-06, 2 busy cores); 4 million steps would take
#: four times that (extrapolated).
MAX_STEPS = 4_000_000

#: Deepest nesting of arrays and tables. A scenario needs 6 (the document,
#: ``steps``, a step, ``expect_state``, ``tasks``, a task); a counterexample's
#: argument of a wrong type adds a few. Deeper input is refused before any
#: of fencepost's code recurses over it (a parser that recurses too deep
#: first ends in the same refusal).
MAX_NESTING = 32

#: Most elements in any one array or table other than the steps: a step or an
#: ``expect_state`` has a dozen; a ``tasks`` table can name every task.
MAX_ITEMS = MAX_STEPS

#: Most decimal digits in an integer. Every time, id, token and count fits in
#: a 64-bit integer (19 digits); 40 leaves room for a 128-bit seed, and keeps
#: arithmetic on file values cheap (Python's own parse limit is 4,300).
MAX_INT_DIGITS = 40

#: Longest string, in characters (narration included). The longest built-in
#: walkthrough's longest note is a few thousand characters.
MAX_STRING_CHARS = 100_000

#: Most structural marks -- commas, equals signs, dots and opening brackets
#: -- in one file, counted before parsing. Every value a parser builds (a
#: table from each dot of a TOML dotted key included) needs one, so this
#: bounds the parser's memory and time whatever the bytes: a file of nothing
#: but ``{},`` or ``k1.a=1`` lines would otherwise cost 20 to 100 times its
#: size. A step of a trace with its results takes 6 to 17; prose adds a few
#: (the demo's runner trace: 8.7 a step as JSON, 12.7 as TOML, so 44 million
#: for ``MAX_STEPS`` runner steps as TOML).
MAX_MARKS = 48_000_000

#: What one dot counts for in ``MAX_MARKS``. In a TOML dotted key each dot
#: builds a table, the costliest value there is (with tomllib's bookkeeping
#: about 400 bytes, against about 100 for a value in a table), so a file of
#: dotted keys costs no more than a trace of the same marks; prose dots are
#: too few to matter.
DOT_WEIGHT = 3

#: Most parts in a TOML dotted key (``expect_state.tasks."1".status`` has 4).
#: tomllib's time and memory grow with the square of a key's parts (one key
#: of 8,000 parts costs 265 MB), so longer keys are refused before parsing.
MAX_KEY_PARTS = 4

# ---------------------------------------------------------------- adapter answers (spec/formats/adapter.py)
#
# An adapter program's answers are read as they come, one JSON line each, and
# hold one value: their limits are their own, not a file's.

#: Longest answer line an adapter program may send (1 MiB, newline included),
#: and ``check_line``'s default. The longest real answer (a task view) is a
#: few hundred bytes; anything near the limit is a program gone wrong.
MAX_ANSWER_LINE_BYTES = 1024 * 1024

#: Deepest nesting of arrays and objects in an answer line. Real answers nest
#: two deep; the bound keeps a hostile line from exhausting the parser's stack.
MAX_ANSWER_NESTING = 16

#: Largest magnitude an int read from an answer or a history may have: the
#: contract's ``INT_MAX`` (its range is ``INT_MIN..INT_MAX``, a signed 64-bit
#: integer, which is what most languages' JSON readers hold exactly).
WIRE_INT_LIMIT = INT_MAX

#: Longest string (a worker name, a reason) read from an answer or a history:
#: room for the longest worker name the contract allows (``MAX_TEXT_BYTES``).
MAX_WIRE_STRING = 10_000
assert MAX_WIRE_STRING >= MAX_TEXT_BYTES, "a worker name the contract allows must fit an answer"

# ---------------------------------------------------------------- histories (spec/formats/history.py)
#
# A history is JSON lines, one event a line, often recorded in production and
# large: its lines are small and shallow, so its per-line limits are tighter
# than an answer's and its file limit larger than a scenario's.

#: The largest history file read, in bytes: 256 MiB, about two million calls.
MAX_HISTORY_BYTES = 256 * 1024 * 1024

#: The longest history line, in bytes; an event is about 150 bytes, so this is slack for long worker names.
MAX_HISTORY_LINE_BYTES = 64 * 1024

#: The deepest JSON nesting a history line may have; the format needs 3 (event, result, nothing deeper).
MAX_HISTORY_NESTING = 8

#: The most digits an integer in a history may have; 20 holds every 64-bit value and a nanosecond clock for centuries.
MAX_HISTORY_INT_DIGITS = 20

#: The longest ``process`` name or ``error`` class name in a history, in characters.
MAX_HISTORY_NAME_CHARS = 200

#: Characters no string may hold: the contract's ``FORBIDDEN_TEXT`` (C0
#: controls other than tab and newline -- NUL, escape, which starts terminal
#: control sequences, carriage return, which overwrites a printed line --, DEL,
#: C1 controls, lone surrogates, which cannot be printed or encoded, and the
#: bidirectional overrides and isolates), one set, so that every worker name
#: and key a scheduler accepts can be written to a file and read back.
FORBIDDEN_CHARACTERS = FORBIDDEN_TEXT

_INT_LIMIT = 10**MAX_INT_DIGITS  # the first integer with too many digits


# ---------------------------------------------------------------- errors


class LimitError(ValueError):
    """Input that breaks a limit or cannot be read. ``str()`` is one line.

    Attributes:
        source: the file or adapter the input came from.
        place: where in it, in words (``""`` for the input as a whole).
        rule: what is wrong, naming the limit.
        path: keys and indices from the top of the parsed data to the
            offending value (empty when unknown or not parsed yet).
    """

    def __init__(self, source: str, place: str, rule: str, path: tuple = ()) -> None:
        self.source, self.place, self.rule, self.path = source, place, rule, tuple(path)
        super().__init__(one_line(f"{source}: {place}: {rule}" if place else f"{source}: {rule}"))


class FormatError(LimitError):
    """Input that does not parse as its format (invalid JSON or TOML): one line, with the position."""


# ---------------------------------------------------------------- reading bytes


def read_bounded(path: str | Path, source: str | None = None, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The text of the regular file ``path``, read only if it is at most ``max_bytes`` bytes of UTF-8.

    The size is checked before reading (``stat``) and again while reading (a
    file that grows is cut off at ``max_bytes + 1`` bytes), so memory stays
    bounded whatever the file is. A byte-order mark is allowed and dropped.

    Raises:
        LimitError: missing, a folder or another non-regular file (a FIFO,
            a device), unreadable, too large, or not UTF-8 (the message names
            the byte offset and line).
    """
    path = Path(path)
    source = str(path) if source is None else source
    try:
        # Non-blocking, so that opening a FIFO returns at once (and is refused
        # below) instead of waiting for a writer; a regular file ignores it.
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(descriptor, "rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise LimitError(source, "", "is a folder, not a file")
            if not stat.S_ISREG(info.st_mode):
                raise LimitError(source, "", "is not a regular file (a pipe or a device); give a file")
            if info.st_size > max_bytes:
                raise LimitError(source, "", f"{info.st_size:,} bytes is larger than the limit of {max_bytes:,} bytes")
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise LimitError(source, "", "no such file") from None
    except IsADirectoryError:
        raise LimitError(source, "", "is a folder, not a file") from None
    except OSError as exc:
        raise LimitError(source, "", f"cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise LimitError(source, "", f"larger than the limit of {max_bytes:,} bytes")
    return decode_utf8(data, source)


def decode_utf8(data: bytes, source: str) -> str:
    """``data`` as UTF-8 text (a leading byte-order mark dropped).

    Raises:
        LimitError: not UTF-8; the message names the byte offset and its line.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise LimitError(source, "", f"not UTF-8 text: {exc.reason} at byte {exc.start} (line {line})") from None


def check_line(line: str | bytes, source: str, number: int, max_bytes: int = MAX_ANSWER_LINE_BYTES) -> None:
    """Refuse one line of a line-based format longer than ``max_bytes`` (in bytes, or characters for str).

    Raises:
        LimitError: naming the line ``number`` (1-based).
    """
    if len(line) > max_bytes:
        raise LimitError(source, f"line {number}", f"longer than the limit of {max_bytes:,} bytes")


# ---------------------------------------------------------------- parsing


def _bounded_int(text: str) -> int:
    digits = len(text) - (text[:1] in "+-")
    if digits > MAX_INT_DIGITS:
        raise _IntTooLong(digits)
    return int(text)


class _IntTooLong(Exception):
    """Raised from inside ``json.loads`` by ``_bounded_int``; never escapes this module."""

    def __init__(self, digits: int) -> None:
        super().__init__(digits)
        self.digits = digits


def _int_rule(digits: int | str | None = None) -> str:
    size = f"of {digits} digits " if digits is not None else ""
    return f"an integer {size}is longer than the limit of {MAX_INT_DIGITS} digits"


def _nesting_rule() -> str:
    return f"nested deeper than the limit of {MAX_NESTING} arrays and tables"


def check_marks(text: str, source: str) -> None:
    """Refuse, before parsing, text with more than ``MAX_MARKS`` commas, equals signs, dots (``DOT_WEIGHT`` each) and opening brackets.

    Cost: five ``str.count`` passes, a few milliseconds per megabyte.

    Raises:
        LimitError: too many marks.
    """
    marks = sum(text.count(mark) for mark in ",=[{") + DOT_WEIGHT * text.count(".")
    if marks > MAX_MARKS:
        raise LimitError(
            source, "", f"{marks:,} marks (commas, equals signs, brackets, and dots x{DOT_WEIGHT}) is more than the limit of "
            f"{MAX_MARKS:,} (each value a parser builds needs one)"
        )


#: A TOML key of more than ``MAX_KEY_PARTS`` dotted parts: a bare, "basic" or
#: 'literal' part, then ``.`` and the next, starting where a key can start.
# The quantifiers are possessive, and a match starts only where a key can (a
# line's start, or after [ { or ,), so the search is linear in the text.
_LONG_DOTTED_KEY = re.compile(
    r"""(?:^|[\[{,])[ \t]*+(?:[A-Za-z0-9_-]++|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""
    r"""(?:[ \t]*+\.[ \t]*+(?:[A-Za-z0-9_-]++|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')){%d,}""" % MAX_KEY_PARTS,
    re.MULTILINE,
)


def parse_json(text: str, source: str, object_pairs_hook=None) -> object:
    """``json.loads(text)``, with integer length and nesting bounded; no ``check_tree`` yet.

    ``object_pairs_hook`` is passed on (a reader refusing duplicate keys
    raises ``LimitError`` from it, or a ``ValueError`` it words itself, which
    becomes a ``FormatError``).

    Raises:
        FormatError: not valid JSON (with line and column).
        LimitError: more than ``MAX_MARKS`` marks, an integer longer than
            ``MAX_INT_DIGITS`` digits, or nesting too deep for the parser.
    """
    check_marks(text, source)
    try:
        return json.loads(text, parse_int=_bounded_int, object_pairs_hook=object_pairs_hook)
    except _IntTooLong as exc:
        raise LimitError(source, "", _int_rule(exc.digits)) from None
    except RecursionError:
        raise LimitError(source, "", _nesting_rule()) from None
    except LimitError:
        raise
    except ValueError as exc:  # json.JSONDecodeError, or the hook's own refusal
        raise FormatError(source, "", f"invalid JSON: {exc}") from None


def parse_toml(text: str, source: str) -> dict:
    """``tomllib.loads(text)``, with integer length and nesting bounded; no ``check_tree`` yet.

    Raises:
        FormatError: not valid TOML (with line and column).
        LimitError: more than ``MAX_MARKS`` marks, a dotted key of more
            than ``MAX_KEY_PARTS`` parts, an integer longer than Python
            converts (4,300 digits; shorter ones past ``MAX_INT_DIGITS`` are
            ``check_tree``'s), or nesting too deep for the parser.
    """
    check_marks(text, source)
    long_key = _LONG_DOTTED_KEY.search(text)
    if long_key:
        line = text.count("\n", 0, long_key.start()) + 1
        raise LimitError(source, f"line {line}", f"a dotted key of more than the limit of {MAX_KEY_PARTS} parts")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FormatError(source, "", f"invalid TOML: {exc}") from None
    except RecursionError:
        raise LimitError(source, "", _nesting_rule()) from None
    except ValueError as exc:  # int(): "Exceeds the limit (4300 digits) for integer string conversion"
        match = re.search(r"value has (\d+) digits", str(exc))
        raise LimitError(source, "", _int_rule(match.group(1) if match else None)) from None


# ---------------------------------------------------------------- the parsed data


def describe_path(path: Iterable) -> str:
    """Keys and indices as a place in words: ``('steps', 2, 'note')`` -> ``steps[2].note``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            shown = str(part) if re.fullmatch(r"[A-Za-z0-9_-]+", str(part)) else json.dumps(_printable(str(part)[:40]))
            text += f".{shown}" if text else shown
    return text


def check_tree(data: object, source: str, max_items: dict[tuple, int] | None = None) -> None:
    """Walk parsed ``data`` iteratively and refuse anything past the limits.

    Checked: nesting (``MAX_NESTING``), elements per array or table
    (``MAX_ITEMS``, or ``max_items[path]`` for a container at ``path``, e.g.
    ``{("steps",): MAX_STEPS}``), integers (``MAX_INT_DIGITS``), floats (any),
    and every string and table key (``check_string``). Values of other types
    (a TOML date) pass: what they mean is the reader's business.

    Cost: O(size of data), no recursion. A quick pass with no bookkeeping
    answers for data within the limits (about a quarter of what parsing it
    cost); only when it finds a problem does a second pass, keeping paths,
    find the first problem in document order to name its place.

    Raises:
        LimitError: the first value past a limit; ``path`` says where.
    """
    max_items = max_items or {}
    if _within_limits(data, min([MAX_ITEMS, *max_items.values()])):
        return
    stack: list[tuple[object, tuple, int]] = [(data, (), 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            check_string(value, source, path)
        elif isinstance(value, bool | float):
            pass
        elif isinstance(value, int):
            if not -_INT_LIMIT < value < _INT_LIMIT:
                raise LimitError(source, describe_path(path), _int_rule(), path)
        elif isinstance(value, dict | list):
            if depth >= MAX_NESTING:
                raise LimitError(source, describe_path(path), _nesting_rule(), path)
            limit = max_items.get(path, MAX_ITEMS)
            if len(value) > limit:
                raise LimitError(source, describe_path(path), f"{len(value):,} elements is more than the limit of {limit:,}", path)
            children = []
            if isinstance(value, dict):
                for key, item in value.items():
                    if isinstance(key, str):
                        check_string(key, source, path + (key,), what="key")
                    children.append((item, path + (key,), depth + 1))
            else:
                children = [(item, path + (index,), depth + 1) for index, item in enumerate(value)]
            stack.extend(reversed(children))  # popped in document order


def _within_limits(data: object, max_items: int) -> bool:
    """True when ``data`` is certainly within the limits (the quick pass of ``check_tree``).

    Containers longer than ``max_items`` (the smallest limit of any) count as
    a problem here; the second pass applies each container's own limit.
    Strings are gathered and searched for forbidden characters all at once.
    """
    if type(data) is not dict and type(data) is not list:
        return False  # a bare value: the careful pass judges it
    strings: list[str] = []
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        container, depth = stack.pop()
        if depth >= MAX_NESTING or len(container) > max_items:
            return False
        if isinstance(container, dict):
            for key in container:
                if isinstance(key, str):
                    strings.append(key)
            values = container.values()
        else:
            values = container
        for value in values:
            kind = type(value)
            if kind is str:
                strings.append(value)
            elif kind is int:
                if not -_INT_LIMIT < value < _INT_LIMIT:
                    return False
            elif kind is dict or kind is list:
                stack.append((value, depth + 1))
            elif kind is not bool and kind is not float and isinstance(value, str | int | dict | list):
                return False  # a subclass (an enum, say): let the careful pass judge it
    return all(len(text) <= MAX_STRING_CHARS for text in strings) and not FORBIDDEN_CHARACTERS.search("".join(strings))


def check_string(text: str, source: str, path: tuple = (), what: str = "string") -> None:
    """Refuse a string longer than ``MAX_STRING_CHARS`` or holding a ``FORBIDDEN_CHARACTERS`` character.

    Raises:
        LimitError: naming the character by its code point (never printing it).
    """
    if len(text) > MAX_STRING_CHARS:
        raise LimitError(source, describe_path(path), f"a {what} of {len(text):,} characters is longer than the limit of {MAX_STRING_CHARS:,}", path)
    bad = FORBIDDEN_CHARACTERS.search(text)
    if bad:
        raise LimitError(
            source, describe_path(path),
            f"the {what} holds the character U+{ord(bad.group()):04X} at character {bad.start() + 1}; "
            "control characters other than tab and newline, lone surrogates and direction overrides are refused",
            path,
        )


def _printable(text: str) -> str:
    return FORBIDDEN_CHARACTERS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def one_line(text: str) -> str:
    """``text`` on one line: runs of whitespace (newlines included) become one space, controls are escaped."""
    return " ".join(_printable(text).split())


__all__ = [
    "FORBIDDEN_CHARACTERS", "MAX_FILE_BYTES", "MAX_INT_DIGITS", "MAX_ITEMS", "MAX_KEY_PARTS", "MAX_MARKS", "DOT_WEIGHT",
    "MAX_NESTING", "MAX_STEPS", "MAX_STRING_CHARS",
    "MAX_ANSWER_LINE_BYTES", "MAX_ANSWER_NESTING", "WIRE_INT_LIMIT", "MAX_WIRE_STRING",
    "MAX_HISTORY_BYTES", "MAX_HISTORY_LINE_BYTES", "MAX_HISTORY_NESTING", "MAX_HISTORY_INT_DIGITS", "MAX_HISTORY_NAME_CHARS", "FormatError", "LimitError", "check_line", "check_marks",
    "check_string", "check_tree", "decode_utf8", "describe_path", "one_line", "parse_json",
    "parse_toml", "read_bounded",
]
