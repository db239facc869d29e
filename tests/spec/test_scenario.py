"""The scenario format: loading errors, exact round trips, and the step describers."""

from __future__ import annotations

import datetime
import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.formats.limits import FORBIDDEN_CHARACTERS
from fencepost.spec.protocol import Lease, Outcome, Status, TaskView
from fencepost.story.walkthroughs import (
    BUILTIN_DIR,
    DEFAULT_WALKTHROUGH,
    builtin_names,
    builtin_summary,
    curriculum,
    resolve,
)
from fencepost.spec.formats.scenario import (
    SIGNATURES,
    Scenario,
    ScenarioError,
    Step,
    StepResult,
    dump_scenario,
    dumps_scenario,
    load_scenario,
    loads_scenario,
)
from fencepost.spec.checkers.steps import (
    apply_step,
    check_expect,
    check_state,
    describe_call,
    describe_expect,
    describe_result,
)

HEADER = 'title = "t"\n'


def toml_error(text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        loads_scenario(text, "toml", "walk.toml")
    return str(info.value)


def step_error(step_toml: str) -> str:
    """The error for a scenario holding one step, written as the body of a [[steps]] table."""
    return toml_error(HEADER + "[[steps]]\n" + step_toml)


# ---------------------------------------------------------------- load errors: one line, file, step, field, value


@pytest.mark.parametrize(
    ("step_toml", "message"),
    [
        ('op = "dispatch"\nworker = "w1"\nnow = "ten"\nduration = 5\n',
         "walk.toml: step 1: field 'now': expected an int, got \"ten\""),
        ('op = "advance"\nnow = true\n', "walk.toml: step 1: field 'now': expected an int, got true"),
        ('op = "advance"\nnow = 1.5\n', "walk.toml: step 1: field 'now': expected an int, got 1.5"),
        ('op = "add_worker"\nworker = 7\ncapacity = 1\n',
         "walk.toml: step 1: field 'worker': expected a string, got 7"),
        ('op = "submit"\npriority = [1]\n', "walk.toml: step 1: field 'priority': expected an int, got [1]"),
        ('op = "launch"\n', "walk.toml: step 1: field 'op': expected one of add_worker, submit, dispatch, "
                            "complete, fail, cancel, renew, advance, prune, submit_many, dispatch_many, complete_many, "
                            "fail_many, restart, got \"launch\""),
        ('op = 3\n', "walk.toml: step 1: field 'op': expected one of add_worker, submit, dispatch, "
                     "complete, fail, cancel, renew, advance, prune, submit_many, dispatch_many, complete_many, "
                     "fail_many, restart, got 3"),
        ('worker = "w1"\n', "walk.toml: step 1: field 'op': missing"),
        ('op = "dispatch"\nworker = "w1"\nnow = 1\n',
         "walk.toml: step 1: field 'duration': missing (dispatch needs worker, now, duration)"),
        ('op = "submit"\ntask = 1\n',
         "walk.toml: step 1: field 'task': not an argument of submit "
         "(it takes priority, due_at, max_attempts, retry_delay, key; a step also has op, note, expect, expect_state, ask, choices, answer, why)"),
        ('op = "advance"\nnow = 1\nnotes = "x"\n',
         "walk.toml: step 1: field 'notes': not an argument of advance (it takes now; a step also has op, note, expect, expect_state, ask, choices, answer, why)"),
        ('op = "advance"\nnow = 1\nnote = 5\n', "walk.toml: step 1: field 'note': expected a string, got 5"),
        ('op = "advance"\nnow = 1\nexpect = "none"\n',
         "walk.toml: step 1: field 'expect': advance can only expect \"error\", got \"none\""),
        ('op = "add_worker"\nworker = "w"\ncapacity = 1\nexpect = { accepted = true }\n',
         "walk.toml: step 1: field 'expect': add_worker can only expect \"error\", got a table {accepted = true}"),
        ('op = "dispatch"\nworker = "w1"\nnow = 1\nduration = 1\nexpect = "nothing"\n',
         "walk.toml: step 1: field 'expect': expected \"error\", \"none\" or a table of Lease fields, got \"nothing\""),
        ('op = "dispatch"\nworker = "w1"\nnow = 1\nduration = 1\nexpect = { tok = 1 }\n',
         "walk.toml: step 1: field 'expect.tok': unknown field (expected task_id, worker, token, started_at, expires_at)"),
        ('op = "dispatch"\nworker = "w1"\nnow = 1\nduration = 1\nexpect = { token = "1" }\n',
         "walk.toml: step 1: field 'expect.token': expected an int, got \"1\""),
        ('op = "complete"\ntask_id = 1\ntoken = 1\nnow = 1\nexpect = "none"\n',
         "walk.toml: step 1: field 'expect': expected \"error\" or a table with accepted (and reason), got \"none\""),
        ('op = "complete"\ntask_id = 1\ntoken = 1\nnow = 1\nexpect = { reason = "stale_token" }\n',
         "walk.toml: step 1: field 'expect.accepted': missing"),
        ('op = "renew"\ntask_id = 1\ntoken = 1\nnow = 1\nduration = 1\nexpect = { accepted = "yes" }\n',
         "walk.toml: step 1: field 'expect.accepted': expected a bool, got \"yes\""),
        ('op = "cancel"\ntask_id = 1\nnow = 1\nexpect = { accepted = true, reason = "x" }\n',
         "walk.toml: step 1: field 'expect.reason': a reason needs accepted = false, got \"x\""),
        ('op = "submit"\nexpect = { id = 1 }\n',
         "walk.toml: step 1: field 'expect.id': unknown field (expected task_id)"),
        ('op = "submit"\nexpect = {}\n', "walk.toml: step 1: field 'expect.task_id': missing"),
        ('op = "submit"\nexpect_state = { tasks = { 1 = { status = "weird" } } }\n',
         "walk.toml: step 1: field 'expect_state.tasks.1.status': expected one of pending, running, retry_wait, "
         "succeeded, failed, cancelled, got \"weird\""),
        ('op = "submit"\nexpect_state = { tasks = { x = { status = "pending" } } }\n',
         "walk.toml: step 1: field 'expect_state.tasks.x': expected a task id (a whole number >= 1) as the key"),
        ('op = "submit"\nexpect_state = { clock = 3 }\n',
         "walk.toml: step 1: field 'expect_state.clock': unknown field (expected now, tasks)"),
    ],
)
def test_a_bad_step_names_file_step_field_and_value_on_one_line(step_toml: str, message: str) -> None:
    assert step_error(step_toml) == message


def test_the_step_number_counts_from_one() -> None:
    text = HEADER + '[[steps]]\nop = "advance"\nnow = 1\n\n[[steps]]\nop = "advance"\nnow = "x"\n'
    assert toml_error(text) == "walk.toml: step 2: field 'now': expected an int, got \"x\""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("steps = []\n", "walk.toml: field 'title': missing"),
        ("title = 1\nsteps = []\n", "walk.toml: field 'title': expected a string, got 1"),
        (HEADER, "walk.toml: field 'steps': missing"),
        (HEADER + "steps = 3\n", "walk.toml: field 'steps': expected an array of tables, got 3"),
        (HEADER + "steps = [1]\n", "walk.toml: step 1: expected a table, got 1"),
        (HEADER + 'description = 2\nsteps = []\n', "walk.toml: field 'description': expected a string, got 2"),
        (HEADER + "steps = []\nauthor = \"me\"\n",
         "walk.toml: field 'author': unknown field (a scenario has title, description, needs, meta, steps)"),
        (HEADER + "steps = []\nmeta = 1\n", "walk.toml: field 'meta': expected a table, got 1"),
        (HEADER + "steps = []\n[meta]\nseed = 1.5\n",
         "walk.toml: field 'meta.seed': expected a string, an int or a bool, got 1.5"),
    ],
)
def test_a_bad_top_level_names_the_field(text: str, message: str) -> None:
    assert toml_error(text) == message


def test_invalid_toml_is_one_line_naming_the_file() -> None:
    message = toml_error('title = "t"\nsteps = [\n  {op = }\n]\n')
    assert message.startswith("walk.toml: invalid TOML: ")
    assert "line 3" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "walk.json: expected a JSON object at the top level, got [1, 2]"),
        ('{"title": "a", "title": "b", "steps": []}', 'walk.json: invalid JSON: duplicate key "title"'),
        ('{"title": "t", "steps": [{"op": "submit", "priority": null}]}',
         "walk.json: step 1: field 'priority': expected an int, got null"),
        ('{"title": "t", "steps": [{"op": "advance", "now": 5.0}]}',
         "walk.json: step 1: field 'now': expected an int, got 5.0"),
    ],
)
def test_json_errors(text: str, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        loads_scenario(text, "json", "walk.json")
    assert str(info.value) == message


def test_invalid_json_is_one_line() -> None:
    with pytest.raises(ScenarioError) as info:
        loads_scenario('{"title": ', "json", "walk.json")
    assert str(info.value).startswith("walk.json: invalid JSON: Expecting value")
    assert "\n" not in str(info.value)


def test_file_errors_name_the_file(tmp_path) -> None:
    missing = tmp_path / "gone.toml"
    with pytest.raises(ScenarioError, match=r"gone\.toml: no such file$"):
        load_scenario(missing)
    with pytest.raises(ScenarioError, match="is a folder"):
        load_scenario(tmp_path)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"title = \"\xff\"\nsteps = []\n")
    with pytest.raises(ScenarioError, match=r"bin\.toml: not UTF-8 text"):
        load_scenario(binary)


def test_scenario_error_is_a_value_error() -> None:
    assert issubclass(ScenarioError, ValueError)


def test_unknown_format() -> None:
    with pytest.raises(ScenarioError, match="unknown scenario format 'yaml'"):
        loads_scenario("", "yaml", "x")  # type: ignore[arg-type]


# ---------------------------------------------------------------- what loads


def test_a_step_expecting_an_error_may_carry_any_value() -> None:
    text = HEADER + ('[[steps]]\nop = "dispatch"\nworker = 3\nnow = "ten"\nduration = 1.5\nexpect = "error"\n')
    (step,) = loads_scenario(text, "toml", "walk.toml").steps
    assert step == Step("dispatch", {"worker": 3, "now": "ten", "duration": 1.5}, expect="error")


def test_argument_names_are_checked_even_when_an_error_is_expected() -> None:
    assert step_error('op = "advance"\nexpect = "error"\n') == "walk.toml: step 1: field 'now': missing (advance needs now)"


def test_value_ranges_are_the_schedulers_business() -> None:
    (step,) = loads_scenario(HEADER + '[[steps]]\nop = "advance"\nnow = -4\n', "toml", "w").steps
    assert step.args == {"now": -4}


def test_json_null_for_a_none_default_means_the_default() -> None:
    text = '{"title": "t", "steps": [{"op": "submit", "due_at": null, "max_attempts": null, "priority": 2}]}'
    (step,) = loads_scenario(text, "json", "w.json").steps
    assert step.args == {"priority": 2}
    assert Step("submit", {"due_at": None}) == Step("submit", {})


def test_the_argument_vocabulary_is_the_protocols() -> None:
    names = {op: [(p.name, p.required) for p in params] for op, params in SIGNATURES.items()}
    assert names["dispatch"] == [("worker", True), ("now", True), ("duration", True)]
    assert names["submit"] == [("priority", False), ("due_at", False), ("max_attempts", False), ("retry_delay", False), ("key", False)]
    assert names["restart"] == []
    assert names["renew"] == [("task_id", True), ("token", True), ("now", True), ("duration", True)]


def test_a_full_scenario_loads() -> None:
    text = '''title = "Walk"
description = """
# Hello
"""

[meta]
seed = 42
impl = "impl:Scheduler"
shrunk = true

[[steps]]
op = "add_worker"
worker = "w1"
capacity = 1
note = "A worker."

[[steps]]
op = "submit"
priority = 2
due_at = 3
expect = { task_id = 1 }

[[steps]]
op = "dispatch"
worker = "w1"
now = 3
duration = 5
expect = { task_id = 1, expires_at = 8 }

[[steps]]
op = "complete"
task_id = 1
token = 9
now = 4
expect = { accepted = false, reason = "stale_token" }
'''
    assert loads_scenario(text, "toml", "w") == Scenario(
        title="Walk",
        description="# Hello\n",
        meta={"seed": 42, "impl": "impl:Scheduler", "shrunk": True},
        steps=(
            Step("add_worker", {"worker": "w1", "capacity": 1}, note="A worker."),
            Step("submit", {"priority": 2, "due_at": 3}, expect={"task_id": 1}),
            Step("dispatch", {"worker": "w1", "now": 3, "duration": 5}, expect={"task_id": 1, "expires_at": 8}),
            Step("complete", {"task_id": 1, "token": 9, "now": 4}, expect={"accepted": False, "reason": "stale_token"}),
        ),
    )


# ---------------------------------------------------------------- round trips

AWKWARD = 'quotes " "" """ """" end"\nback\\slash \\n not a newline\n\ttab é ✓ 𝄞 [b]not markup[/b]\n'

RICH = Scenario(
    title='A "title" with \\ and é',
    description="# Heading\n\nSome *Markdown*.\n",
    meta={"hypothesis_version": "6.170.15", "seed": 123, "generated_by": "fencepost check", "shrunk": False,
          "odd key.name": "x", "diverging_step": 4},
    steps=(
        Step("add_worker", {"worker": "w1", "capacity": 1}, note=AWKWARD),
        Step("submit", {"priority": -3, "due_at": 0, "max_attempts": 2, "retry_delay": 4}, expect={"task_id": 1},
             note='"'),
        Step("dispatch", {"worker": "w1", "now": 5, "duration": 5}, expect={"task_id": 1, "worker": "w1"}),
        Step("dispatch", {"worker": "w1", "now": 9, "duration": 5}, expect="none", note="\n\nleading newlines"),
        Step("complete", {"task_id": 1, "token": 1, "now": 10}, expect={"accepted": False, "reason": "lease_expired"}),
        Step("renew", {"task_id": 1, "token": 1, "now": 10, "duration": 1}, expect={"accepted": True}),
        Step("advance", {"now": [1.5, float("inf"), {"nested key": True, "k": "v"}, []]}, expect="error"),
        Step("cancel", {"task_id": 1, "now": 11}, note="ends with a quote\""),
    ),
)


@pytest.mark.parametrize("fmt", ["toml", "json"])
def test_text_round_trip_is_exact(fmt: str) -> None:
    assert loads_scenario(dumps_scenario(RICH, fmt), fmt, "x") == RICH


@pytest.mark.parametrize("name", ["walk.toml", "walk.json", "walk.TOML.json", "walk"])
def test_file_round_trip_picks_the_format_from_the_name(tmp_path, name: str) -> None:
    path = tmp_path / name
    dump_scenario(RICH, path)
    assert load_scenario(path) == RICH
    is_json = name.endswith(".json")
    assert path.read_text(encoding="utf-8").startswith("{") is is_json


def test_json_output_is_the_pinned_structure() -> None:
    data = json.loads(dumps_scenario(RICH, "json"))
    assert list(data) == ["title", "description", "meta", "steps"]
    assert data["steps"][2] == {"op": "dispatch", "worker": "w1", "now": 5, "duration": 5,
                                "expect": {"task_id": 1, "worker": "w1"}}


def test_toml_output_reads_like_a_hand_written_file() -> None:
    text = dumps_scenario(Scenario("T", (Step("submit", {"due_at": 3, "priority": 1}, note="Line 1\nLine 2\n",
                                                  expect={"task_id": 1}),)))
    assert text == (
        'title = "T"\n'
        "\n"
        "[[steps]]\n"
        'op = "submit"\n'
        "priority = 1\n"
        "due_at = 3\n"
        'note = """\n'
        "Line 1\n"
        "Line 2\n"
        '"""\n'
        "\n"
        "[steps.expect]\n"
        "task_id = 1\n"
    )


def test_short_steps_are_still_one_table_each() -> None:
    """tomli-w alone would write short, flat steps as one inline array; the writer keeps ``[[steps]]`` tables."""
    scenario = Scenario("T", (Step("restart", {}), Step("submit", {}, expect={"task_id": 1}),
                              Step("advance", {"now": []}, expect="error")))
    text = dumps_scenario(scenario)
    assert text == (
        'title = "T"\n'
        "\n"
        "[[steps]]\n"
        'op = "restart"\n'
        "\n"
        "[[steps]]\n"
        'op = "submit"\n'
        "\n"
        "[steps.expect]\n"
        "task_id = 1\n"
        "\n"
        "[[steps]]\n"
        'op = "advance"\n'
        "now = []\n"
        'expect = "error"\n'
    )
    assert loads_scenario(text, "toml", "x") == scenario


def test_a_time_with_an_offset_is_not_written_as_toml() -> None:
    aware = datetime.time(3, 4, tzinfo=datetime.timezone.utc)
    scenario = Scenario("t", (Step("advance", {"now": aware}, expect="error"),))
    with pytest.raises(ScenarioError, match=r"step 1: field 'now': TOML cannot hold 03:04:00\+00:00"):
        dumps_scenario(scenario, "toml")


def test_an_empty_scenario_round_trips() -> None:
    empty = Scenario("Nothing yet", (), meta={"generated_by": "tui"})
    for fmt in ("toml", "json"):
        assert loads_scenario(dumps_scenario(empty, fmt), fmt, "x") == empty


def test_toml_cannot_write_null_and_says_to_use_json() -> None:
    scenario = Scenario("t", (Step("advance", {"now": None}, expect="error"),))
    with pytest.raises(ScenarioError, match=r"step 1: field 'now': TOML cannot hold null; write it as \.json"):
        dumps_scenario(scenario, "toml")
    assert loads_scenario(dumps_scenario(scenario, "json"), "json", "x") == scenario


def test_json_cannot_write_a_date() -> None:
    scenario = Scenario("t", (Step("advance", {"now": datetime.date(2024, 1, 2)}, expect="error"),))
    with pytest.raises(ScenarioError, match="JSON cannot hold 2024-01-02"):
        dumps_scenario(scenario, "json")
    assert loads_scenario(dumps_scenario(scenario, "toml"), "toml", "x") == scenario


@pytest.mark.parametrize(
    ("scenario", "problem"),
    [
        (Scenario("t", (Step("launch", {}),)), "step 1: field 'op': expected one of"),
        (Scenario("t", (Step("advance", {"now": "x"}),)), "step 1: field 'now': expected an int"),
        (Scenario("t", (Step("advance", {"now": 1, "note": "x"}),)), "step 1: field 'note': not an argument"),
        (Scenario("t", (), meta={"ratio": 0.5}), "field 'meta.ratio'"),
        (Scenario("t", (), meta={1: 2}), "field 'meta': TOML keys are strings, got 1"),
    ],
)
def test_a_scenario_that_would_not_load_back_is_never_written(tmp_path, scenario: Scenario, problem: str) -> None:
    out = tmp_path / "out.toml"
    with pytest.raises(ScenarioError) as info:
        dump_scenario(scenario, out)
    assert str(info.value).startswith(f"{out}: {problem}")
    assert not out.exists()


# Any text, any valid step: what is written is what is read back.
_ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# Plain text rarely holds what a TOML writer must escape (""" and a newline together); these chunks do.
# Control characters other than tab and newline are refused (spec.formats.limits), so never generated here.
_allowed = st.characters(exclude_categories=("Cs", "Cc")).filter(lambda ch: not FORBIDDEN_CHARACTERS.match(ch))
_texts = st.text(_allowed) | st.lists(
    st.sampled_from(['"', '""', '"""', "\\", "\n", "\t", "a", "\u00e9", "\U0001d11e"])
).map("".join)


def _valid_args(op: str):
    params = SIGNATURES[op]
    value = {int: _ints, str: _texts}
    return st.fixed_dictionaries(
        {p.name: value[p.type] for p in params if p.required},
        optional={p.name: value[p.type] for p in params if not p.required},
    )


_steps = st.sampled_from(sorted(SIGNATURES)).flatmap(
    lambda op: st.builds(Step, st.just(op), _valid_args(op), note=st.none() | _texts)
)
_scenarios = st.builds(
    Scenario,
    title=_texts,
    steps=st.lists(_steps, max_size=5).map(tuple),
    description=st.none() | _texts,
    meta=st.dictionaries(_texts, _texts | _ints | st.booleans(), max_size=3),
)


@given(_scenarios, st.sampled_from(["toml", "json"]))
def test_any_scenario_round_trips(scenario: Scenario, fmt: str) -> None:
    text = dumps_scenario(scenario, fmt)
    assert loads_scenario(text, fmt, "x") == scenario
    if fmt == "toml":
        assert text.count("\n[[steps]]\n") == len(scenario.steps)  # one table a step, whatever its length


# ---------------------------------------------------------------- running and describing steps


class Recorder:
    """A stand-in scheduler: returns or raises whatever it is told to."""

    now = 0

    def __init__(self, outcome: object) -> None:
        self.outcome = outcome
        self.calls: list[tuple[str, dict]] = []

    def __getattr__(self, op: str):
        def call(**kwargs):
            self.calls.append((op, kwargs))
            if isinstance(self.outcome, Exception):
                raise self.outcome
            return self.outcome

        return call


def test_apply_step_calls_the_operation_with_keyword_arguments() -> None:
    recorder = Recorder(Outcome(True))
    result = apply_step(recorder, Step("complete", {"task_id": 1, "token": 2, "now": 3}))
    assert recorder.calls == [("complete", {"task_id": 1, "token": 2, "now": 3})]
    assert result == StepResult(value=Outcome(True))


def test_apply_step_keeps_a_value_error_as_one_line() -> None:
    result = apply_step(Recorder(ValueError("time can't go\n backwards: 3 < 5")), Step("advance", {"now": 3}))
    assert result == StepResult(error="time can't go backwards: 3 < 5")


def test_apply_step_lets_other_exceptions_through() -> None:
    with pytest.raises(TypeError):
        apply_step(Recorder(TypeError("boom")), Step("advance", {"now": 3}))


def test_describe_call_uses_protocol_order_and_python_reprs() -> None:
    step = Step("dispatch", {"duration": 5, "now": 5, "worker": "w1"})
    assert describe_call(step) == "dispatch(worker='w1', now=5, duration=5)"
    assert describe_call(Step("submit", {})) == "submit()"


LEASE = Lease(task_id=1, worker="w1", token=1, started_at=5, expires_at=10)
LEASE_WITH_BOOL_TOKEN = Lease(task_id=1, worker="w1", token=True, started_at=5, expires_at=10)
DISPATCH = Step("dispatch", {"worker": "w1", "now": 5, "duration": 5})
COMPLETE = Step("complete", {"task_id": 1, "token": 1, "now": 10})


@pytest.mark.parametrize(
    ("step", "result", "text"),
    [
        (DISPATCH, StepResult(LEASE), "lease task 1 to w1, token 1, [5, 10)"),
        (DISPATCH, StepResult(None), "none"),
        (COMPLETE, StepResult(Outcome(True)), "accepted"),
        (COMPLETE, StepResult(Outcome(False, "stale_token")), "rejected: stale_token"),
        (COMPLETE, StepResult(Outcome(False)), "rejected"),
        (Step("submit", {}), StepResult(3), "task 3"),
        (Step("advance", {"now": 1}), StepResult(None), "ok"),
        (Step("advance", {"now": 1}), StepResult(error="time can't go backwards: 1 < 5"),
         "error: time can't go backwards: 1 < 5"),
    ],
)
def test_describe_result(step: Step, result: StepResult, text: str) -> None:
    assert describe_result(step, result) == text


@pytest.mark.parametrize(
    ("step", "result", "mismatch"),
    [
        (Step("dispatch", DISPATCH.args, expect={"token": 1, "expires_at": 10}), StepResult(LEASE), None),
        (Step("dispatch", DISPATCH.args, expect={}), StepResult(LEASE), None),
        (Step("dispatch", DISPATCH.args, expect={"token": 2}), StepResult(LEASE),
         "expected a lease with token=2, got lease task 1 to w1, token 1, [5, 10)"),
        (Step("dispatch", DISPATCH.args, expect={"token": 1}), StepResult(None), "expected a lease with token=1, got none"),
        (Step("dispatch", DISPATCH.args, expect="none"), StepResult(None), None),
        (Step("dispatch", DISPATCH.args, expect="none"), StepResult(LEASE),
         "expected none, got lease task 1 to w1, token 1, [5, 10)"),
        (Step("complete", COMPLETE.args, expect={"accepted": True}), StepResult(Outcome(True)), None),
        (Step("complete", COMPLETE.args, expect={"accepted": False}), StepResult(Outcome(False, "x")), None),
        (Step("complete", COMPLETE.args, expect={"accepted": False, "reason": "lease_expired"}),
         StepResult(Outcome(False, "stale_token")), "expected rejected: lease_expired, got rejected: stale_token"),
        (Step("complete", COMPLETE.args, expect={"accepted": False}), StepResult(Outcome(True)),
         "expected rejected, got accepted"),
        (Step("complete", COMPLETE.args, expect={"accepted": True}), StepResult(Outcome(1)),
         "expected accepted, got an outcome with accepted=1, not a bool"),
        (Step("dispatch", DISPATCH.args, expect={"token": 1}), StepResult(LEASE_WITH_BOOL_TOKEN),
         "expected a lease with token=1, got lease task 1 to w1, token True, [5, 10)"),
        (Step("submit", {}, expect={"task_id": 2}), StepResult(2.0), "expected task 2, got 2.0"),
        (Step("submit", {}, expect={"task_id": 2}), StepResult(2), None),
        (Step("submit", {}, expect={"task_id": 2}), StepResult(3), "expected task 2, got task 3"),
        (Step("advance", {"now": 1}, expect="error"), StepResult(error="bad"), None),
        (Step("advance", {"now": 1}, expect="error"), StepResult(None), "expected an error, got ok"),
        (Step("complete", COMPLETE.args, expect={"accepted": True}), StepResult(error="task_id 1 is unknown"),
         "expected accepted, got error: task_id 1 is unknown"),
        (Step("advance", {"now": 1}), StepResult(error="bad"), None),
    ],
)
def test_check_expect(step: Step, result: StepResult, mismatch: str | None) -> None:
    assert check_expect(step, result) == mismatch


class OneTaskShown:
    """A scheduler reduced to what ``check_state`` reads: the clock and one task's view."""

    now = 0

    def __init__(self, **fields: object) -> None:
        shown = TaskView(id=1, status=Status.PENDING, priority=0, due_at=0, attempts=0, worker=None,
                         token=None, expires_at=None, cancel_requested=False)
        self.view = replace(shown, **fields)

    def task(self, task_id: int) -> TaskView:
        return self.view


@pytest.mark.parametrize(
    ("fields", "mismatch"),
    [
        ({}, None),
        ({"attempts": 1}, "expected task 1 attempts=0 afterwards, got 1"),
        ({"cancel_requested": 0}, "expected task 1 cancel_requested=False afterwards, got 0"),
        ({"attempts": False}, "expected task 1 attempts=0 afterwards, got False"),
        ({"due_at": 0.0}, "expected task 1 due_at=0 afterwards, got 0.0"),
    ],
)
def test_check_state_tells_bools_floats_and_ints_apart(fields: dict, mismatch: str | None) -> None:
    step = Step("advance", {"now": 0}, expect_state={"now": 0, "tasks": {"1": {
        "status": "pending", "due_at": 0, "attempts": 0, "cancel_requested": False}}})
    assert check_state(step, OneTaskShown(**fields)) == mismatch


def test_check_state_with_the_submitted_count_asks_task_to_refuse_ids_that_name_no_task() -> None:
    step = Step("advance", {"now": 0}, expect_state={"now": 0, "tasks": {"1": {"status": "pending"}}})
    shown = OneTaskShown()  # answers task() for any id at all
    assert check_state(step, shown) is None
    assert check_state(step, shown, submitted=1).startswith("task(0) returned TaskView(id=1")
    assert check_state(step, SimpleSchedulerWithOneTask(), submitted=1) is None


def SimpleSchedulerWithOneTask() -> SimpleScheduler:
    scheduler = SimpleScheduler()
    scheduler.submit()
    return scheduler


def test_describe_expect_is_empty_without_an_expectation() -> None:
    assert describe_expect(Step("advance", {"now": 1})) == ""


# ---------------------------------------------------------------- built-in walkthroughs: lookup


def test_builtin_names_follow_the_curriculum_the_default_first() -> None:
    names = builtin_names()
    assert names[0] == DEFAULT_WALKTHROUGH == "onboarding"
    assert names == [name for name in curriculum() if name in names]
    assert set(names) == {path.stem for path in BUILTIN_DIR.glob("*.toml")}


def test_a_builtin_the_curriculum_does_not_list_comes_after_it_alphabetically(tmp_path, monkeypatch) -> None:
    from fencepost.story import walkthroughs as module

    for name in ("zeta", "alpha", "first"):
        (tmp_path / f"{name}.toml").write_text('title = "x"\nsteps = []\n')
    (tmp_path / "curriculum.txt").write_text("# the order\nfirst  # a comment\n\nmissing\n")
    monkeypatch.setattr(module, "BUILTIN_DIR", tmp_path)
    monkeypatch.setattr(module, "CURRICULUM_FILE", tmp_path / "curriculum.txt")
    assert module.curriculum() == ["first", "missing"]
    assert module.builtin_names() == ["first", "alpha", "zeta"]


def test_builtin_summary_is_one_line() -> None:
    for name in builtin_names():
        summary = builtin_summary(name)
        assert summary and "\n" not in summary


def test_resolve_a_name_a_path_and_nothing(tmp_path, monkeypatch) -> None:
    assert resolve("capacity-one") == BUILTIN_DIR / "capacity-one.toml"
    mine = tmp_path / "mine.json"
    mine.write_text("{}")
    assert resolve(mine) == mine
    assert resolve(str(mine)) == mine
    with pytest.raises(ScenarioError) as info:
        resolve("capacity-two")
    message = str(info.value)
    assert message.startswith("capacity-two: no such scenario file or built-in walkthrough (built-ins: onboarding, ")
    assert "\n" not in message
    with pytest.raises(ScenarioError, match="built-ins:"):
        builtin_summary("capacity-two")


def test_the_writer_refuses_what_the_reader_would_so_a_written_file_always_loads(tmp_path) -> None:
    out = tmp_path / "session.toml"
    scenario = Scenario("t", (Step("submit", {}), Step("advance", {"now": 1}, note="clear\x1b[2J")))
    with pytest.raises(ScenarioError) as info:
        dump_scenario(scenario, out)
    assert str(info.value) == (
        f"{out}: step 2: field 'note': the string holds the character U+001B at character 6; "
        "control characters other than tab and newline, lone surrogates and direction overrides are refused"
    )
    assert not out.exists()
