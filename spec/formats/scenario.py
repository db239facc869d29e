"""Scenario files: a titled, narrated sequence of protocol calls with expectations.

The format is pinned (other tools and tests write it). A scenario is a TOML
file, or the same structure in JSON when the name ends in ``.json``::

    title = "The capacity-one worker"        # required string
    description = "Markdown shown first"     # optional string
    needs = ["restart"]                       # optional: capabilities (NEEDS) it needs
    steps = [...]                             # required array of step tables

    [meta]                                    # optional: free-form str/int/bool
    generated_by = "fencepost check"
    variants = { order = "any" }              # optional: the declared contract variants

    [[steps]]
    op = "dispatch"                           # a protocol operation
    worker = "w1"                             # that operation's keyword arguments,
    now = 5                                   # by their protocol names
    duration = 5
    expect = { task_id = 1, token = 1 }       # optional
    note = \"\"\"Markdown narration for this step.\"\"\"

``expect`` is, per operation: for ``dispatch`` the string ``"none"`` or a
table of any subset of the Lease fields; for ``complete``, ``fail``,
``cancel`` and ``renew`` a table with ``accepted`` and optionally ``reason``
(only with ``accepted = false``); for ``submit`` a table with ``task_id``;
for ``prune`` a table with ``forgotten`` (how many tasks it forgot); for
any operation the string ``"error"``: the call must raise ``ValueError``.
``op = "prune"`` (with ``before`` and ``now``) is the optional retention
operation; a scheduler without it cannot run such a step.

A batch (``submit_many``, ``dispatch_many``, ``complete_many``,
``fail_many``, offered by schedulers with the ``batch`` capability) is one
step: ``tasks = [{ priority = 1 }, {}]`` or ``reports = [[1, 1], [2, 2]]``,
and its ``expect`` is ``"error"`` or an array with one of the single call's
expects per entry (``[{ task_id = 1 }, { task_id = 2 }]``; ``dispatch_many``
lists only the leases it hands out, so ``[]`` when none).

``submit`` takes an optional ``key`` (an idempotency key, a non-empty
string). ``op = "restart"`` is a step with no arguments and no ``expect``:
the scheduler is replaced by its ``reopen()`` and every later step, and the
step's own ``expect_state``, is checked against the reopened one.

``needs`` names the optional capabilities a scheduler must offer to run
every step (``NEEDS`` lists them). A ``restart`` step needs ``"restart"``
whether or not it is declared (``needs_of``); the command line and the TUI
open a scenario on a shipped scheduler that offers what it needs.

A step may also ask the reader to predict its result before it is shown
(the TUI hides the result until an answer is picked)::

    ask = "What does this dispatch return?"   # the question; then all three of:
    choices = ["task 1", "task 2", "none"]    # 2 to 9 distinct non-empty strings
    answer = 2                                # the right choice, counted from 1
    why = "Priority 5 beats 0."               # shown with the verdict, right or wrong

Loading validates everything before anything runs. Every problem is a
``ScenarioError`` whose message is one line naming the file, the step
(1-based), the field and the offending value. Argument names and required
arguments always come from ``spec.protocol.SchedulerProtocol``; argument types
are checked too, except on a step that expects ``"error"``, which may carry a
value of any type (that is how a counterexample with a wrong-typed argument is
kept). Value ranges -- negative times, time going backwards -- are the
scheduler's business, not the loader's: such a step says ``expect = "error"``.

``meta.variants`` is the one table in ``meta``: the declared contract
variants (``spec.variants``) the steps' expectations hold under, so
``fencepost replay`` judges the file by them without a flag. Under
``tokens=opaque`` a step's ``token = N`` means the N-th distinct token the
scheduler handed out, and a dispatch's ``expect = { token = N }`` a lease
whose token is that one (a fresh one when N is new): tokens compare up to
renaming (``spec.checkers.renaming``).

An argument given as JSON ``null`` whose protocol default is ``None``
(``due_at``, ``max_attempts``) means that default, so it is dropped: the call
is the same, and TOML, which has no null, can write the step back exactly.
"""

from __future__ import annotations

import datetime
import inspect
import json
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

import tomli_w

from fencepost.spec.formats.limits import (
    MAX_FILE_BYTES,
    MAX_INT_DIGITS,
    MAX_STEPS,
    LimitError,
    check_tree,
    describe_path,
    parse_json,
    parse_toml,
    read_bounded,
)
from fencepost.spec.protocol import (
    BATCH_OPERATIONS, OPERATIONS, PRUNE_OPERATIONS, RESTART, Lease, PruneProtocol, SchedulerProtocol, Status,
)
from fencepost.spec.variants import VALUES as VARIANT_VALUES
from fencepost.spec.variants import Variants

#: The ``meta`` key holding the declared variants, the one table ``meta`` may hold.
VARIANTS_KEY = "variants"


def scenario_variants(scenario: Scenario) -> dict | None:
    """The variants a scenario declares (``meta.variants``) as written, or None when it declares none."""
    declared = scenario.meta.get(VARIANTS_KEY)
    return dict(declared) if isinstance(declared, dict) else None


class ScenarioError(ValueError):
    """A scenario that cannot be read or written. The message is one line."""


# ---------------------------------------------------------------- the vocabulary, from the protocol


class Param(NamedTuple):
    """One keyword argument of a protocol operation."""

    name: str
    type: type  # int or str; bool never counts as an int
    required: bool  # no default in the protocol
    default: object  # the protocol's default (inspect.Parameter.empty when required)


def _signature(op: str) -> tuple[Param, ...]:
    method = getattr(SchedulerProtocol if op in OPERATIONS else PruneProtocol, op)
    hints = typing.get_type_hints(method)
    params = []
    for p in list(inspect.signature(method).parameters.values())[1:]:  # skip self
        hint = hints[p.name]
        assert hint in (int, str, int | None, str | None), f"scenario format has no type for {op}({p.name}: {hint})"
        kind = str if hint in (str, str | None) else int
        params.append(Param(p.name, kind, p.default is inspect.Parameter.empty, p.default))
    return tuple(params)


#: Every operation's keyword arguments, in protocol order.
SIGNATURES: dict[str, tuple[Param, ...]] = {op: _signature(op) for op in (*OPERATIONS, *PRUNE_OPERATIONS)}
SIGNATURES[RESTART] = ()  # a restart step takes no arguments
#: The batches (optional operations, ``spec.protocol.BATCH_OPERATIONS``): their list arguments
#: hold what the single calls take (``tasks``: tables of submit's arguments; ``reports``:
#: ``[task_id, token]`` pairs); the scheduler judges the entries, as it judges value ranges.
_REQUIRED = inspect.Parameter.empty
BATCH_SIGNATURES: dict[str, tuple[Param, ...]] = {
    "submit_many": (Param("tasks", list, True, _REQUIRED),),
    "dispatch_many": (*SIGNATURES["dispatch"], Param("limit", int, True, _REQUIRED)),
    "complete_many": (Param("reports", list, True, _REQUIRED), Param("now", int, True, _REQUIRED)),
    "fail_many": (Param("reports", list, True, _REQUIRED), Param("now", int, True, _REQUIRED)),
}
#: Every step op's keyword arguments: ``SIGNATURES`` (int and str arguments only) and the batches'.
ALL_SIGNATURES: dict[str, tuple[Param, ...]] = {**SIGNATURES, **BATCH_SIGNATURES}
#: Each batch and the single call its entries are: its ``expect`` is a list of that call's expects.
BATCH_OF = dict(zip(BATCH_OPERATIONS, ("submit", "dispatch", "complete", "fail")))

#: What a step's ``op`` may be: the protocol's operations, ``prune`` (the optional
#: retention operation: its ``expect`` is how many tasks it forgot), the batches and ``restart``.
STEP_OPS = (*OPERATIONS, *PRUNE_OPERATIONS, *BATCH_OPERATIONS, RESTART)

#: Lease fields a dispatch ``expect`` table may name, with their types.
LEASE_FIELDS: dict[str, type] = {
    name: hint for name, hint in typing.get_type_hints(Lease).items() if not name.startswith("_")
}

#: Operations answering with an ``Outcome``.
OUTCOME_OPS = frozenset({"complete", "fail", "cancel", "renew"})

_STEP_KEYS = ("op", "note", "expect", "expect_state", "ask", "choices", "answer", "why")
_TOP_KEYS = ("title", "description", "needs", "meta", "steps")

#: The capabilities a scenario may declare in ``needs``, each with what a
#: scheduler must offer for it. A need may also be a declared variant,
#: ``NAME=VALUE`` from ``spec.variants.VALUES`` (``"order=fifo"``): a
#: scheduler that follows that choice. New optional parts of the contract are
#: added here by name.
NEEDS: dict[str, str] = {
    RESTART: "reopen(): a scheduler over the same storage, as a new process would see it",
    "prune": "prune(before, now): forgets final tasks that ended before `before`",
    "batch": ", ".join(BATCH_OPERATIONS) + ": many single calls as one atomic call",
}


def is_variant_need(name: str) -> bool:
    """True when ``name`` is ``NAME=VALUE`` for a declared variant other than the contract's own value."""
    variant, sep, value = name.partition("=")
    return bool(sep) and variant in VARIANT_VALUES and value in VARIANT_VALUES[variant][1:]


# ---------------------------------------------------------------- the data


@dataclass(frozen=True)
class Question:
    """A prediction asked of the reader before a step's result is shown.

    ``answer`` counts from 1 (the key that picks it); ``why`` is shown with the
    verdict, whichever choice was picked.
    """

    ask: str
    choices: tuple[str, ...]
    answer: int
    why: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "choices", tuple(self.choices))


@dataclass(frozen=True)
class Step:
    """One protocol call: ``op`` with keyword ``args``, an optional note and expectation.

    ``expect`` is None, ``"error"``, ``"none"`` (dispatch only) or a dict (see
    the module docstring). ``args`` is copied; a ``None`` for an argument whose
    protocol default is ``None`` is dropped (it means that default).
    """

    op: str
    args: dict
    note: str | None = None
    expect: object = None
    expect_state: dict | None = None  # {"now": int, "tasks": {"<id>": {view field: value}}}
    question: Question | None = None  # predict, then reveal: asked before the result is shown

    def __post_init__(self) -> None:
        defaults_none = {p.name for p in ALL_SIGNATURES.get(self.op, ()) if not p.required and p.default is None}
        args = {k: v for k, v in self.args.items() if not (v is None and k in defaults_none)}
        object.__setattr__(self, "args", args)
        if isinstance(self.expect, dict):
            object.__setattr__(self, "expect", dict(self.expect))


@dataclass(frozen=True)
class Scenario:
    """A titled sequence of steps; ``meta`` holds free-form str/int/bool facts.

    ``needs`` is what the scenario declares it needs (names from ``NEEDS``);
    ``needs_of`` adds what its steps imply.
    """

    title: str
    steps: tuple[Step, ...]
    description: str | None = None
    meta: dict = field(default_factory=dict)
    needs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "meta", dict(self.meta))
        object.__setattr__(self, "needs", tuple(self.needs))


def needs_of(scenario: Scenario) -> tuple[str, ...]:
    """Every capability ``scenario`` needs, in ``NEEDS`` order then its variants as
    declared: the declared ones and those its steps imply (a ``restart`` step
    needs ``restart``). O(steps)."""
    needed = set(scenario.needs)
    if any(step.op == RESTART for step in scenario.steps):
        needed.add(RESTART)
    variants = [name for name in scenario.needs if is_variant_need(name)]
    return tuple(name for name in NEEDS if name in needed) + tuple(variants)


# ---------------------------------------------------------------- reading


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file (JSON if the name ends ``.json``, else TOML).

    The file is hostile input: whatever it holds, loading ends in a Scenario
    or one ``ScenarioError`` line, within the limits of ``spec.formats.limits``
    (file size checked before reading, then nesting, integers, strings and
    the number of steps).

    Raises:
        ScenarioError: the file is missing, not a regular file, unreadable,
            too large or not UTF-8, does not parse, breaks a limit, or does
            not follow the format; the message is one line.
    """
    path = Path(path)
    source = str(path)
    try:
        text = read_bounded(path, source)
    except LimitError as exc:
        raise ScenarioError(str(exc)) from None
    return loads_scenario(text, _format_of(path), source)


def loads_scenario(text: str, fmt: Literal["toml", "json"] = "toml", source: str = "<scenario>") -> Scenario:
    """Parse and validate scenario ``text``; ``source`` names it in error messages.

    Cost: linear in the text, which is at most ``MAX_FILE_BYTES`` characters.

    Raises:
        ScenarioError: as ``load_scenario``.
    """
    if fmt not in ("toml", "json"):
        raise ScenarioError(f"{source}: unknown scenario format {fmt!r}: expected 'toml' or 'json'")
    if len(text) > MAX_FILE_BYTES:
        raise ScenarioError(f"{source}: {len(text):,} characters is larger than the limit of {MAX_FILE_BYTES:,} bytes")
    try:
        if fmt == "toml":
            data = parse_toml(text, source)
        else:
            data = parse_json(text, source, object_pairs_hook=_no_duplicate_keys)
            if not isinstance(data, dict):
                check_tree(data, source)  # before _show prints any of it
                raise ScenarioError(f"{source}: expected a JSON object at the top level, got {_show(data)}")
        check_tree(data, source, _STEPS_LIMIT)
    except LimitError as exc:
        raise ScenarioError(_limit_message(exc)) from None
    return _from_data(data, source)


#: ``check_tree``'s bound on the steps array; every other array or table has ``MAX_ITEMS``.
_STEPS_LIMIT = {("steps",): MAX_STEPS}


def _limit_message(exc: LimitError) -> str:
    """A limit broken inside the data, placed as the format's own errors place things: ``step 3: field 'note'``."""
    path = exc.path
    if not path:
        return str(exc)
    if path[0] == "steps" and len(path) > 1 and isinstance(path[1], int):
        where = f"step {path[1] + 1}: " + (f"field {_name(describe_path(path[2:]))}: " if len(path) > 2 else "")
    else:
        where = f"field {_name(describe_path(path))}: "
    return f"{exc.source}: {where}{exc.rule}"


def _format_of(path: Path) -> Literal["toml", "json"]:
    return "json" if path.suffix.lower() == ".json" else "toml"


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    data: dict = {}
    for key, value in pairs:
        if key in data:  # TOML refuses these; so does JSON here, rather than keep the last silently
            raise ScenarioError(f"duplicate key {_show(key)}")
        data[key] = value
    return data


def _from_data(data: dict, source: str) -> Scenario:
    """Validate parsed data and build the Scenario; every problem is one line."""

    def fail(where: str, problem: str) -> ScenarioError:
        return ScenarioError(f"{source}: {where}{problem}")

    for key in data:
        if key not in _TOP_KEYS:
            raise fail(f"field {_name(key)}: ", f"unknown field (a scenario has {', '.join(_TOP_KEYS)})")
    if "title" not in data:
        raise fail("field 'title': ", "missing")
    title = _expect_type(data["title"], str, lambda p: fail("field 'title': ", p))
    description = None
    if "description" in data:
        description = _expect_type(data["description"], str, lambda p: fail("field 'description': ", p))
    needs = _needs_from_data(data.get("needs", []), lambda p: fail("field 'needs': ", p))
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise fail("field 'meta': ", f"expected a table, got {_show(meta)}")
    for key, value in meta.items():
        if key == VARIANTS_KEY:
            try:
                Variants.from_declared(value, "meta.variants")
            except ValueError as exc:
                raise fail(f"field {_name(f'meta.{key}')}: ", str(exc).removeprefix("meta.variants: ")) from None
            continue
        if not isinstance(value, str | int):  # bool is an int
            raise fail(f"field {_name(f'meta.{key}')}: ", f"expected a string, an int or a bool, got {_show(value)}")
    if "steps" not in data:
        raise fail("field 'steps': ", "missing")
    raw_steps = data["steps"]
    if not isinstance(raw_steps, list):
        raise fail("field 'steps': ", f"expected an array of tables, got {_show(raw_steps)}")
    steps = []
    for number, raw in enumerate(raw_steps, start=1):
        where = f"step {number}: "
        if not isinstance(raw, dict):
            raise fail(where, f"expected a table, got {_show(raw)}")
        steps.append(_step_from_data(raw, lambda name, problem, w=where: fail(f"{w}field {_name(name)}: ", problem)))
    return Scenario(title=title, steps=tuple(steps), description=description, meta=dict(meta), needs=needs)


def _needs_from_data(value: object, fail) -> tuple[str, ...]:
    """``needs``: an array of distinct names from ``NEEDS`` or variants ``NAME=VALUE``."""
    if not isinstance(value, list):
        raise fail(f"expected an array of capability names ({', '.join(NEEDS)}), got {_show(value)}")
    for index, name in enumerate(value):
        if not isinstance(name, str) or not (name in NEEDS or is_variant_need(name)):
            raise fail(f"unknown capability {_show(name)} (known: {', '.join(NEEDS)}, or a variant NAME=VALUE)")
        if name in value[:index]:
            raise fail(f"named twice: {_show(name)}")
    return tuple(value)


def _step_from_data(raw: dict, fail) -> Step:
    if "op" not in raw:
        raise fail("op", "missing")
    op = raw["op"]
    if op not in STEP_OPS:
        raise fail("op", f"expected one of {', '.join(STEP_OPS)}, got {_show(op)}")
    params = ALL_SIGNATURES[op]
    takes = ", ".join(p.name for p in params) or "no arguments"
    for key in raw:
        if key not in _STEP_KEYS and key not in {p.name for p in params}:
            raise fail(key, f"not an argument of {op} (it takes {takes}; a step also has {', '.join(_STEP_KEYS)})")
    for p in params:
        if p.required and p.name not in raw:
            raise fail(p.name, f"missing ({op} needs {', '.join(q.name for q in params if q.required)})")
    note = None
    if "note" in raw:
        note = _expect_type(raw["note"], str, lambda problem: fail("note", problem))
    expect = _expect_from_data(op, raw["expect"], fail) if "expect" in raw else None
    expect_state = _expect_state_from_data(raw["expect_state"], fail) if "expect_state" in raw else None
    args = {p.name: raw[p.name] for p in params if p.name in raw}
    if expect != "error":  # a step that must be rejected may carry any value
        for p in params:
            if p.name in args and not (args[p.name] is None and p.default is None):
                _expect_type(args[p.name], p.type, lambda problem, n=p.name: fail(n, problem))
    question = _question_from_data(raw, fail)
    return Step(op=op, args=args, note=note, expect=expect, expect_state=expect_state, question=question)


#: A question offers at least this many choices, and at most as many as there are keys 1-9.
MIN_CHOICES, MAX_CHOICES = 2, 9

_QUESTION_KEYS = ("ask", "choices", "answer", "why")


def _question_from_data(raw: dict, fail) -> Question | None:
    """``ask``, ``choices``, ``answer`` and ``why``: all four, or none of them."""
    given = [key for key in _QUESTION_KEYS if key in raw]
    if not given:
        return None
    for key in _QUESTION_KEYS:
        if key not in raw:
            raise fail(key, f"missing (a question has all of {', '.join(_QUESTION_KEYS)}; {given[0]} is given)")
    ask = _non_empty_text(raw["ask"], lambda problem: fail("ask", problem))
    why = _non_empty_text(raw["why"], lambda problem: fail("why", problem))
    choices = raw["choices"]
    if not isinstance(choices, list) or not MIN_CHOICES <= len(choices) <= MAX_CHOICES:
        raise fail("choices", f"expected an array of {MIN_CHOICES} to {MAX_CHOICES} strings, got {_show(choices)}")
    for number, choice in enumerate(choices, start=1):
        _non_empty_text(choice, lambda problem, n=number: fail(f"choices.{n}", problem))
        if choice in choices[: number - 1]:
            raise fail(f"choices.{number}", f"the same as an earlier choice: {_show(choice)}")
    answer = _expect_type(raw["answer"], int, lambda problem: fail("answer", problem))
    if not 1 <= answer <= len(choices):
        raise fail("answer", f"expected the number of a choice, 1 to {len(choices)}, got {answer}")
    return Question(ask, tuple(choices), answer, why)


def _non_empty_text(value: object, fail) -> str:
    _expect_type(value, str, fail)
    if not value.strip():
        raise fail(f"expected text, got {_show(value)}")
    return value


#: The statuses ``expect_state`` may name, by their protocol strings.
STATUS_VALUES = tuple(status.value for status in Status)

#: Task view fields ``expect_state`` may name, with their types. A field that
#: is None in the view (no lease) is left out; ``status`` says as much.
STATE_FIELDS: dict[str, type] = {
    "status": str, "priority": int, "due_at": int, "attempts": int,
    "worker": str, "token": int, "expires_at": int, "cancel_requested": bool,
}


#: A task id as an ``expect_state.tasks`` key: a whole number >= 1, in ASCII digits, within ``MAX_INT_DIGITS``.
_TASK_ID_KEY = re.compile(rf"0*[1-9][0-9]{{0,{MAX_INT_DIGITS - 1}}}", re.ASCII)


def _expect_state_from_data(value: object, fail) -> dict:
    """``expect_state``: the scheduler's state after the step, as far as it is given."""
    table = _expect_table(value, {"now": int, "tasks": dict}, (), "a table with now and/or tasks", fail, "expect_state")
    for key, fields in table.get("tasks", {}).items():
        where = f"expect_state.tasks.{key}"
        # ASCII digits only ("²".isdigit() is true, and int() refuses it), and no more than
        # an int may have: a task id is an int like any other.
        if not (isinstance(key, str) and _TASK_ID_KEY.fullmatch(key)):
            raise fail(where, "expected a task id (a whole number >= 1) as the key")
        _expect_table(fields, STATE_FIELDS, (), "a table of task view fields", fail, where)
        if "status" in fields and fields["status"] not in STATUS_VALUES:
            raise fail(f"{where}.status", f"expected one of {', '.join(STATUS_VALUES)}, got {_show(fields['status'])}")
    return table


def _expect_from_data(op: str, expect: object, fail) -> object:
    if expect == "error" and op != RESTART:
        return "error"
    if op in BATCH_OF:
        single = BATCH_OF[op]
        if not isinstance(expect, list):
            raise fail("expect", f'expected "error" or an array of what {single} expects, one per entry, got {_show(expect)}')
        items = []
        for number, item in enumerate(expect):
            if item == "error" or (single == "dispatch" and item == "none"):
                raise fail(f"expect[{number}]", f"an entry of a {op} expect cannot be {_show(item)}")
            items.append(_expect_from_data(single, item, lambda name, problem, n=number: fail(
                name.replace("expect", f"expect[{n}]", 1), problem)))
        return items
    if op == "dispatch":
        if expect == "none":
            return "none"
        wanted = '"error", "none" or a table of Lease fields'
        return _expect_table(expect, LEASE_FIELDS, (), wanted, fail)
    if op in OUTCOME_OPS:
        table = _expect_table(expect, {"accepted": bool, "reason": str}, ("accepted",),
                              '"error" or a table with accepted (and reason)', fail)
        if "reason" in table and table["accepted"]:
            raise fail("expect.reason", f"a reason needs accepted = false, got {_show(table['reason'])}")
        return table
    if op == "submit":
        return _expect_table(expect, {"task_id": int}, ("task_id",), '"error" or a table with task_id', fail)
    if op == "prune":
        return _expect_table(expect, {"forgotten": int}, ("forgotten",), '"error" or a table with forgotten', fail)
    if op == RESTART:
        raise fail("expect", f"a restart step has no expect (use expect_state), got {_show(expect)}")
    raise fail("expect", f'{op} can only expect "error", got {_show(expect)}')


def _expect_table(
    expect: object, fields: dict[str, type], required: tuple[str, ...], wanted: str, fail, name: str = "expect"
) -> dict:
    """Check a table of expected fields; problems are reported under ``name``."""
    if not isinstance(expect, dict):
        raise fail(name, f"expected {wanted}, got {_show(expect)}")
    for key, value in expect.items():
        if key not in fields:
            raise fail(f"{name}.{key}", f"unknown field (expected {', '.join(fields)})")
        _expect_type(value, fields[key], lambda problem, k=key: fail(f"{name}.{k}", problem))
    for key in required:
        if key not in expect:
            raise fail(f"{name}.{key}", "missing")
    return dict(expect)


_TYPE_WORDS = {int: "an int", str: "a string", bool: "a bool", dict: "a table", list: "an array"}


def _expect_type(value: object, kind: type, fail) -> object:
    ok = isinstance(value, bool) if kind is bool else isinstance(value, kind) and not isinstance(value, bool)
    if not ok:
        raise fail(f"expected {_TYPE_WORDS[kind]}, got {_show(value)}")
    return value


def _name(key: str) -> str:
    return "'" + _one_line(str(key))[:60] + "'"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _show(value: object, limit: int = 60) -> str:
    """A value as the file spells it (TOML/JSON literal), on one short line."""
    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    elif isinstance(value, int | float):
        text = repr(value)
    elif isinstance(value, dict):
        text = "a table {" + ", ".join(f"{_show_key(k)} = {_show(v, limit)}" for k, v in value.items()) + "}"
    elif isinstance(value, list):
        text = "[" + ", ".join(_show(v, limit) for v in value) + "]"
    else:
        text = str(value)
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    # Whatever a file holds, a message stays one line: json.dumps leaves U+2028 and the like as they are.
    return "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in text)


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _show_key(key: object) -> str:
    """A table key as TOML spells it: bare when it can be, else quoted."""
    return key if isinstance(key, str) and _BARE_KEY.fullmatch(key) else _show(key)


# ---------------------------------------------------------------- writing


def dump_scenario(scenario: Scenario, path: str | Path) -> None:
    """Write ``scenario`` to ``path``: JSON if the name ends ``.json``, else TOML.

    Raises:
        ScenarioError: the scenario would not load back exactly (see ``dumps_scenario``).
    """
    path = Path(path)
    text = dumps_scenario(scenario, _format_of(path), source=str(path))
    path.write_text(text, encoding="utf-8", newline="\n")


def dumps_scenario(scenario: Scenario, fmt: Literal["toml", "json"] = "toml", source: str = "<scenario>") -> str:
    """The scenario as TOML or JSON text; ``loads_scenario`` of it gives ``scenario`` back.

    Raises:
        ScenarioError: the scenario does not follow the format (the same
            one-line message loading would give), or holds a value the format
            cannot write (TOML has no null; JSON has no dates).
    """
    data = _to_data(scenario, source)
    try:
        check_tree(data, source, _STEPS_LIMIT)
    except LimitError as exc:
        raise ScenarioError(_limit_message(exc)) from None
    _from_data(data, source)  # a file that would not load back is never written
    if fmt == "json":
        _check_writable(data, source, "JSON")
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if fmt == "toml":
        _check_writable(data, source, "TOML")
        return _toml_document(data)
    raise ScenarioError(f"{source}: unknown scenario format {fmt!r}: expected 'toml' or 'json'")


def _to_data(scenario: Scenario, source: str) -> dict:
    data: dict = {"title": scenario.title}
    if scenario.description is not None:
        data["description"] = scenario.description
    if scenario.needs:
        data["needs"] = list(scenario.needs)
    if scenario.meta:
        data["meta"] = dict(scenario.meta)
    steps = []
    for number, step in enumerate(scenario.steps, start=1):
        clash = [key for key in step.args if key in _STEP_KEYS]
        if clash:
            raise ScenarioError(f"{source}: step {number}: field {_name(clash[0])}: not an argument of {step.op}")
        raw: dict = {"op": step.op, **_in_protocol_order(step)}
        if step.expect is not None:
            raw["expect"] = step.expect
        if step.expect_state is not None:
            raw["expect_state"] = step.expect_state
        if step.question is not None:
            question = step.question
            raw.update(ask=question.ask, choices=list(question.choices), answer=question.answer, why=question.why)
        if step.note is not None:
            raw["note"] = step.note
        steps.append(raw)
    data["steps"] = steps
    return data


def _in_protocol_order(step: Step) -> dict:
    order = [p.name for p in ALL_SIGNATURES.get(step.op, ())]
    return dict(sorted(step.args.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))


_TOML_TYPES = (str, int, float, bool, list, dict, datetime.datetime, datetime.date, datetime.time)
_JSON_TYPES = (str, int, float, bool, list, dict, type(None))


def _check_writable(data: dict, source: str, fmt: str) -> None:
    allowed = _TOML_TYPES if fmt == "TOML" else _JSON_TYPES

    def visit(value: object, where: str) -> None:
        # TOML's times are local: a time with an offset has no TOML spelling (a datetime with one has).
        if not isinstance(value, allowed) or isinstance(value, datetime.time) and value.tzinfo is not None:
            hint = "; write it as .json" if value is None else ""
            raise ScenarioError(f"{source}: {where}{fmt} cannot hold {_show(value)}{hint}")
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    raise ScenarioError(f"{source}: {where}{fmt} keys are strings, got {_show(k)}")
                visit(v, where)
        elif isinstance(value, list):
            for v in value:
                visit(v, where)

    for key in ("title", "description", "needs", "meta"):
        if key in data:
            visit(data[key], f"field {_name(key)}: ")
    for number, raw in enumerate(data["steps"], start=1):
        for key, value in raw.items():
            visit(value, f"step {number}: field {_name(key)}: ")


# TOML is written by tomli-w, the writer that pairs with tomllib (the same
# author's tomli), not by hand: escaping and number/date spelling are its
# job. What is ours is the layout, built from its one call, ``dumps``:
#
# * prose (``description``, ``note``, ``why``) as multi-line strings, so a
#   person reads and edits narration as text. ``multiline_strings`` loses
#   nothing here: it would turn CRLF into LF, but no scenario string holds a
#   carriage return (``check_tree`` refuses control characters but tab and
#   newline before anything is written).
# * every step a ``[[steps]]`` table, whatever its length. tomli-w writes an
#   array of tables only when some element needs more than one short line
#   inline (its rule since 1.0); otherwise ``steps = [{ ... }, ...]``, which
#   would make a file's layout flip with its steps' lengths. So each step is
#   written on its own (``_step_toml``).
# * a step's table-valued fields (``expect``, ``expect_state``) are sub-tables
#   (``[steps.expect]``) after the step's other fields: tomli-w writes inline
#   tables only inside arrays.


def _toml_document(data: dict) -> str:
    header = {key: data[key] for key in ("title", "description", "needs", "meta") if key in data}
    if not data["steps"]:
        header["steps"] = []
    return "\n".join([_dumps(header), *(_step_toml(raw) for raw in data["steps"])])


def _step_toml(raw: dict) -> str:
    """One step as a ``[[steps]]`` table, written by tomli-w."""
    if _needs_lines(raw):
        # Spans lines inline, so tomli-w writes the one-step array as an array of tables.
        return _dumps({"steps": [raw]})
    # One line inline, with no non-empty array anywhere, so no field can become an array of tables
    # of its own: its plain fields, then its table fields as sub-tables of this step.
    fields = {key: value for key, value in raw.items() if not isinstance(value, dict)}
    tables = {key: value for key, value in raw.items() if isinstance(value, dict)}
    text = "[[steps]]\n" + _dumps(fields)
    return text + "\n" + _dumps({"steps": tables}) if tables else text


def _needs_lines(value: object) -> bool:
    """Whether tomli-w writes ``value`` inline on more than one line: it holds a non-empty array or a prose string."""
    if isinstance(value, list):
        return bool(value)
    if isinstance(value, dict):
        return any(_needs_lines(v) for v in value.values())
    return isinstance(value, str) and "\n" in value


def _dumps(data: dict) -> str:
    return tomli_w.dumps(data, multiline_strings=True)


# ---------------------------------------------------------------- what a step did, as a file records it


@dataclass(frozen=True)
class StepResult:
    """What one step did: the call's return value, or the ``ValueError`` message."""

    value: object = None
    error: str | None = None


def expect_from(step: Step, result: StepResult) -> object:
    """The ``expect`` that records ``result`` in a scenario file (None when the format has none)."""
    value = result.value
    if result.error is not None:
        return "error"
    if step.op in BATCH_OF:
        single = Step(op=BATCH_OF[step.op], args={})
        return [expect_from(single, StepResult(value=item)) for item in value]
    if step.op == "dispatch":
        if value is None:
            return "none"
        return {name: getattr(value, name) for name in ("task_id", "worker", "token", "started_at", "expires_at")}
    if step.op in OUTCOME_OPS:
        return {"accepted": bool(value.accepted)}
    if step.op == "submit":
        return {"task_id": value}
    if step.op == "prune":
        return {"forgotten": value}
    return None


# ---------------------------------------------------------------- restarts


def first_restart(scenario: Scenario) -> int | None:
    """The 1-based number of the scenario's first ``restart`` step, or None."""
    return next((n for n, step in enumerate(scenario.steps, 1) if step.op == RESTART), None)
