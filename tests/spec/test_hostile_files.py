"""Every reader against hostile input: a clean load or one ``ScenarioError`` line, never anything else.

Two kinds of input are generated:

* **mutations of real files**: the built-in walkthroughs and the regression
  counterexamples, as TOML and as JSON, with bytes replaced, inserted,
  deleted, duplicated or cut, and attack fragments spliced in anywhere;
* **structured attacks**: nesting just under, at and past ``MAX_NESTING``
  and far past the parsers' recursion, integers around ``MAX_INT_DIGITS`` and
  Python's 4,300-digit limit, forbidden characters and markup in every kind
  of string, strings around ``MAX_STRING_CHARS``, invalid UTF-8, byte-order
  marks, NaN, duplicate keys, values of every wrong type.

Each input is written to a file and read through ``load_scenario``, the
reader every command uses (traces and counterexamples are scenarios). A clean
load is also replayed and turned into the TUI's timeline, since a file that
loads is then run and shown. The issue's five files, and a few more, go
through the command line's ``replay`` and ``tui`` entry points as regression
cases.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fencepost.impl import Scheduler
from fencepost.spec.checkers.replay import replay
from fencepost.cli import main
from fencepost.spec.formats.limits import MAX_FILE_BYTES, MAX_INT_DIGITS, MAX_NESTING, MAX_STEPS, MAX_STRING_CHARS
from fencepost.story.walkthroughs import BUILTIN_DIR
from fencepost.spec.formats.scenario import Scenario, ScenarioError, dumps_scenario, load_scenario
from fencepost.story.timeline import build_timeline
from hostile import assert_one_line_refusal, mutations

REGRESSIONS = Path(__file__).parents[1] / "regressions"

#: Real files, as bytes, in both formats: what the mutations start from.
SEEDS: list[tuple[str, bytes]] = []
for _path in sorted(BUILTIN_DIR.glob("*.toml")) + sorted(REGRESSIONS.glob("*.toml")):
    SEEDS.append(("toml", _path.read_bytes()))
    SEEDS.append(("json", dumps_scenario(load_scenario(_path), "json").encode()))

@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A folder for the generated files, shared by a test's many examples (Hypothesis allows module scope)."""
    return tmp_path_factory.mktemp("hostile")


def read_as_every_command_does(folder: Path, data: bytes, fmt: str) -> None:
    """Write ``data`` as a file in ``folder`` and read it; a clean load is also replayed and built into a timeline.

    Passes when the load succeeds or raises a one-line ``ScenarioError``
    naming the file; any other exception escapes and fails the test.
    """
    path = folder / f"input.{fmt}"
    path.write_bytes(data)
    try:
        scenario = load_scenario(path)
    except ScenarioError as exc:
        assert_one_line_refusal(exc, path)
        event("refused in one line")
        return
    event("loaded cleanly, then replayed and shown")
    assert isinstance(scenario, Scenario) and len(scenario.steps) <= MAX_STEPS
    replay(scenario, Scheduler())  # reports what the scheduler does, never raises
    build_timeline(scenario, Scheduler)  # what `fencepost tui` shows


def mutated_files():
    """A real scenario file with a few random edits (see ``hostile.mutations``), and its format."""
    return st.sampled_from(SEEDS).flatmap(lambda seed: mutations(seed[1]).map(lambda data: (data, seed[0])))


@given(mutated_files())
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_mutated_real_files_load_cleanly_or_fail_in_one_line(scratch: Path, case: tuple[bytes, str]) -> None:
    read_as_every_command_does(scratch, *case)


# ---------------------------------------------------------------- structured attacks

_depths = st.sampled_from([MAX_NESTING - 3, MAX_NESTING - 2, MAX_NESTING - 1, MAX_NESTING, MAX_NESTING + 1, 1_000, 50_000])

#: Where a value can sit in a scenario: a top-level field, meta, a step argument, a note, expect, expect_state.
_PLACES = ["title", "description", "meta", "worker", "note", "expect", "reason", "state", "key", "now", "args",
           "op", "steps", "step", "tasks", "view", "task_key", "restart", "ask", "choices", "answer", "why"]

_forbidden = st.sampled_from(["\x00", "\x01", "\x1b", "\x1b[31m", "\r", "\x7f", "\x85", "\x9b", "\ud800", "\udfff", "\u202e", "\u2066"])
_harmless = st.sampled_from(["", "a", "[red]x[/red]", "[@click=app.quit]q[/]", "<script>", "**b**", "\t", "\n", "é✓𝄞"])
_strings = st.one_of(
    _harmless,
    st.builds(lambda a, b, c: a + b + c, _harmless, _forbidden, _harmless),
    st.sampled_from([MAX_STRING_CHARS - 1, MAX_STRING_CHARS, MAX_STRING_CHARS + 1]).map(lambda n: "x" * n),
    st.text(max_size=20),
)
_ints = st.one_of(
    st.integers(-5, 12),
    st.sampled_from([MAX_INT_DIGITS - 1, MAX_INT_DIGITS, MAX_INT_DIGITS + 1, 4_300, 4_301, 5_000]).flatmap(
        lambda digits: st.sampled_from([10**digits - 1, 1 - 10**digits])
    ),
)


class Deep:
    """``leaf`` inside ``depth`` arrays or tables, written out as text without recursing."""

    def __init__(self, depth: int, kind: str, leaf: int) -> None:
        self.depth, self.kind, self.leaf = depth, kind, leaf

    def text(self, fmt: str) -> str:
        if self.kind == "array":
            return "[" * self.depth + str(self.leaf) + "]" * self.depth
        opener = '{"k": ' if fmt == "json" else "{k = "
        return opener * self.depth + str(self.leaf) + "}" * self.depth


_values = st.deferred(
    lambda: st.one_of(
        _strings, _ints, st.booleans(), st.none(), st.floats(allow_nan=True),
        st.lists(_values, max_size=3), st.dictionaries(_strings, _values, max_size=3),
        st.builds(Deep, _depths, st.sampled_from(["array", "table"]), st.integers(0, 9)),
    )
)


def _place(value: object, place: str, key: str) -> dict:
    """A valid small scenario with ``value`` put at ``place``."""
    step: dict = {"op": "dispatch", "worker": "w1", "now": 0, "duration": 1}
    doc: dict = {"title": "t", "steps": [{"op": "add_worker", "worker": "w1", "capacity": 1}, {"op": "submit"}, step]}
    if place in ("title", "description"):
        doc[place] = value
    elif place == "meta":
        doc["meta"] = {key: value}
    elif place in ("op", "worker", "now", "note", "expect"):
        step[place] = value
    elif place == "reason":
        doc["steps"].append({"op": "complete", "task_id": 1, "token": 1, "now": 0, "expect": {"accepted": False, "reason": value}})
    elif place == "state":
        step["expect_state"] = {"tasks": {key: value}}
    elif place == "key":
        step[key] = value
    elif place == "steps":
        doc["steps"] = value
    elif place == "step":
        doc["steps"].append(value)
    elif place == "tasks":
        step["expect_state"] = {"now": 0, "tasks": value}
    elif place == "task_key":  # an idempotency key, shown in the TUI's columns
        doc["steps"].insert(1, {"op": "submit", "key": value})
    elif place == "restart":
        doc["steps"].append({"op": "restart", key: value})
    elif place in ("ask", "choices", "answer", "why"):  # a step that asks the reader to predict, one part hostile
        step.update({"ask": "Which?", "choices": ["a lease", "none"], "answer": 1, "why": "It is due.", place: value})
    elif place == "view":
        step["expect_state"] = {"tasks": {"1": {key: value}}}
    else:  # an argument of any type on a step that must raise
        step.update(now=value, expect="error")
    return doc


def _as_text(value: object, fmt: str) -> str:
    """``value`` as a JSON or TOML value, even where no writer would go (lone surrogates, 5,000-digit ints)."""
    if isinstance(value, Deep):
        return value.text(fmt)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "NaN" if fmt == "json" else "nan"
        if value in (float("inf"), float("-inf")):
            return ("" if value > 0 else "-") + ("Infinity" if fmt == "json" else "inf")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value) if fmt == "json" else '"' + "".join(_toml_char(ch) for ch in value) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_as_text(v, fmt) for v in value) + "]"
    if isinstance(value, dict):
        items = [f"{_as_text(str(k), fmt)}{':' if fmt == 'json' else ' ='} {_as_text(v, fmt)}" for k, v in value.items()]
        return "{" + ", ".join(items) + "}"
    return "null" if fmt == "json" else '""'  # TOML has no null


def _toml_char(ch: str) -> str:
    if ch in '"\\':
        return "\\" + ch
    if ord(ch) < 0x20 or 0xD800 <= ord(ch) <= 0xDFFF or ord(ch) == 0x7F:
        return f"\\u{ord(ch):04X}"  # a surrogate escape is itself invalid TOML: a parse error, as it should be
    return ch


@st.composite
def structured_attacks(draw) -> tuple[bytes, str]:
    fmt = draw(st.sampled_from(["toml", "json"]))
    place = draw(st.sampled_from(_PLACES))
    key = draw(st.one_of(
        st.sampled_from(["1", "01", "0", "k", "priority", "now", "²", "٣", "1" * 41, "1" * 5000, "ask", "choices", "answer", "why"]),
        _strings,
    ))
    value = draw(_values)
    doc = _place(value, place, key)
    with _big_int_conversions():
        text = _as_text(doc, fmt) if fmt == "json" else "\n".join(f"{_as_text(k, fmt)} = {_as_text(v, fmt)}" for k, v in doc.items())
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        data = draw(st.sampled_from([b"\xef\xbb\xbf", b"", b"\xff", b"\x00"])) + data
    return data, fmt


class _big_int_conversions:
    """Let the test write 5,000-digit integers (Python refuses to print them by default)."""

    def __enter__(self) -> None:
        self.before = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(0)

    def __exit__(self, *exc: object) -> None:
        sys.set_int_max_str_digits(self.before)


@given(structured_attacks())
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_structured_attacks_load_cleanly_or_fail_in_one_line(scratch: Path, case: tuple[bytes, str]) -> None:
    read_as_every_command_does(scratch, *case)


# ---------------------------------------------------------------- the issue's files, through the command line


def _deep_json(depth: int) -> bytes:
    return b'{"title": "t", "steps": [], "meta": {"x": ' + b"[" * depth + b"]" * depth + b"}}"


HOSTILE_FILES = {
    # The five files of the issue.
    "int5000.json": (b'{"title": "t", "steps": [{"op": "advance", "now": ' + b"7" * 5000 + b"}]}",
                     "an integer of 5000 digits is longer than the limit of 40 digits"),
    "int5000.toml": (b'title = "t"\n[[steps]]\nop = "advance"\nnow = ' + b"7" * 5000 + b"\n",
                     "an integer of 5000 digits is longer than the limit of 40 digits"),
    "deep.json": (_deep_json(100_000), f"nested deeper than the limit of {MAX_NESTING} arrays and tables"),
    "deep.toml": (b'title = "t"\nsteps = []\n[meta]\nx = ' + b"[" * 50_000 + b"]" * 50_000 + b"\n",
                  f"nested deeper than the limit of {MAX_NESTING} arrays and tables"),
    # More of the same kind.
    "int41.toml": (b'title = "t"\n[[steps]]\nop = "advance"\nnow = ' + b"7" * 41 + b"\n",
                   "step 1: field 'now': an integer is longer than the limit of 40 digits"),
    "nul.toml": (b'title = "a\\u0000b"\nsteps = []\n', "field 'title': the string holds the character U+0000 at character 2"),
    "escape.json": (b'{"title": "t", "steps": [{"op": "submit", "note": "\\u001b]52;c;x\\u0007"}]}',
                    "step 1: field 'note': the string holds the character U+001B at character 1"),
    "latin1.toml": (b'title = "caf\xe9"\nsteps = []\n', "not UTF-8 text: invalid continuation byte at byte 12 (line 1)"),
    # Found by reading the validator: str.isdigit() takes "²", which int() refuses.
    "superscript-id.json": ('{"title": "t", "steps": [{"op": "submit", "expect_state": {"tasks": {"²": {}}}}]}'.encode(),
                            "step 1: field 'expect_state.tasks.²': expected a task id (a whole number >= 1) as the key"),
    "long-id.toml": (b'title = "t"\n[[steps]]\nop = "submit"\nexpect_state = { tasks = { "' + b"1" * 5000 + b'" = {} } }\n',
                     "expected a task id (a whole number >= 1) as the key"),
    # Found by the structured attacks: the type words had no entry for a table.
    "tasks-not-a-table.toml": (b'title = "t"\n[[steps]]\nop = "submit"\nexpect_state = { tasks = 3 }\n',
                               "step 1: field 'expect_state.tasks': expected a table, got 3"),
    # Found by the thorough run: a table key holding a newline, shown in a message.
    "newline-key.toml": (b'title = { "\\u000A\\u2028" = "" }\nsteps = []\n',
                         "field 'title': expected a string, got a table {\"\\n\\u2028\" = \"\"}"),
    "surrogate.json": (b'{"title": "\\ud800", "steps": []}', "field 'title': the string holds the character U+D800"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
@pytest.mark.parametrize("command", ["replay", "tui"])
def test_the_issues_files_are_one_line_and_exit_2_through_the_command_line(tmp_path, capsys, monkeypatch, name, command):
    from fencepost.tui.app import FencepostApp

    monkeypatch.setattr(FencepostApp, "run", lambda self: pytest.fail("the app must not start on a bad file"))
    data, rule = HOSTILE_FILES[name]
    path = tmp_path / name
    path.write_bytes(data)
    assert main([command, str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"fencepost {command}: error: {path}: ") and rule in err


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path, capsys):
    path = tmp_path / "huge.toml"
    with open(path, "wb") as handle:  # sparse: no disk or memory spent
        handle.truncate(MAX_FILE_BYTES + 1)
    assert main(["replay", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"fencepost replay: error: {path}: {MAX_FILE_BYTES + 1:,} bytes is larger than the limit of {MAX_FILE_BYTES:,} bytes\n"
    )


def test_more_steps_than_the_limit_is_one_line(tmp_path, capsys):
    path = tmp_path / "long.json"
    # The steps are counted before any is read, so each is the cheapest JSON value: 4 million
    # {"op": "submit"} objects cost 1.1 GB and 8 s to parse, 4 million zeros 70 MB and 3 s.
    path.write_bytes(b'{"title": "t", "steps": [' + b"0," * MAX_STEPS + b"0]}")
    assert main(["replay", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"fencepost replay: error: {path}: field 'steps': {MAX_STEPS + 1:,} elements is more than the limit of {MAX_STEPS:,}\n"
    )


def test_the_real_command_exits_2_with_one_line_on_the_deep_json(tmp_path):
    path = tmp_path / "deep.json"
    path.write_bytes(_deep_json(100_000))
    fencepost = Path(sys.executable).with_name("fencepost")
    done = subprocess.run([str(fencepost), "tui", str(path)], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"fencepost tui: error: {path}: nested deeper than the limit of {MAX_NESTING} arrays and tables\n"
