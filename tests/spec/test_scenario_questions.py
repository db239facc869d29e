"""Predict-then-reveal questions in the scenario format: ask, choices, answer, why."""

from __future__ import annotations

import json

import pytest

from fencepost.cli import main
from fencepost.spec.formats.scenario import (
    MAX_CHOICES,
    Question,
    ScenarioError,
    dumps_scenario,
    load_scenario,
    loads_scenario,
)

HEAD = 'title = "t"\n\n[[steps]]\nop = "add_worker"\nworker = "w1"\ncapacity = 1\n\n[[steps]]\n'
DISPATCH = 'op = "dispatch"\nworker = "w1"\nnow = 0\nduration = 5\nexpect = "none"\n'
CHOICES = '[\n    "a lease",\n    "none",\n]'  # one item a line, as tomli-w writes an array
QUESTION = f'ask = "What does it return?"\nchoices = {CHOICES}\nanswer = 2\nwhy = "Nothing was submitted."\n'


def test_a_question_loads_with_its_step_and_writes_back_the_same() -> None:
    text = HEAD + DISPATCH + QUESTION
    scenario = loads_scenario(text, source="q.toml")
    assert scenario.steps[0].question is None
    assert scenario.steps[1].question == Question("What does it return?", ("a lease", "none"), 2, "Nothing was submitted.")
    assert dumps_scenario(scenario) == text
    as_json = dumps_scenario(scenario, "json")
    assert json.loads(as_json)["steps"][1]["choices"] == ["a lease", "none"]
    assert loads_scenario(as_json, "json") == scenario


def test_a_why_over_several_lines_is_written_as_prose() -> None:
    scenario = loads_scenario(HEAD + DISPATCH + QUESTION.replace('"Nothing was submitted."', '"""\nNo task.\nNone."""'))
    assert scenario.steps[1].question.why == "No task.\nNone."
    assert 'why = """\nNo task.\nNone."""' in dumps_scenario(scenario)


def test_a_file_without_questions_loads_as_before() -> None:
    scenario = loads_scenario(HEAD + DISPATCH)
    assert all(step.question is None for step in scenario.steps)
    assert "ask" not in dumps_scenario(scenario)


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ('ask = "Which?"\n',
         "field 'choices': missing (a question has all of ask, choices, answer, why; ask is given)"),
        ('choices = ["a", "b"]\nanswer = 1\nwhy = "w"\n',
         "field 'ask': missing (a question has all of ask, choices, answer, why; choices is given)"),
        ('ask = "  "\nchoices = ["a", "b"]\nanswer = 1\nwhy = "w"\n', "field 'ask': expected text, got \"  \""),
        ('ask = 3\nchoices = ["a", "b"]\nanswer = 1\nwhy = "w"\n', "field 'ask': expected a string, got 3"),
        ('ask = "Which?"\nchoices = ["a"]\nanswer = 1\nwhy = "w"\n',
         "field 'choices': expected an array of 2 to 9 strings, got [\"a\"]"),
        ('ask = "Which?"\nchoices = "a, b"\nanswer = 1\nwhy = "w"\n',
         "field 'choices': expected an array of 2 to 9 strings, got \"a, b\""),
        ('ask = "Which?"\nchoices = ["a", 2]\nanswer = 1\nwhy = "w"\n', "field 'choices.2': expected a string, got 2"),
        ('ask = "Which?"\nchoices = ["a", ""]\nanswer = 1\nwhy = "w"\n', "field 'choices.2': expected text, got \"\""),
        ('ask = "Which?"\nchoices = ["a", "b", "a"]\nanswer = 1\nwhy = "w"\n',
         "field 'choices.3': the same as an earlier choice: \"a\""),
        ('ask = "Which?"\nchoices = ["a", "b"]\nanswer = 3\nwhy = "w"\n',
         "field 'answer': expected the number of a choice, 1 to 2, got 3"),
        ('ask = "Which?"\nchoices = ["a", "b"]\nanswer = 0\nwhy = "w"\n',
         "field 'answer': expected the number of a choice, 1 to 2, got 0"),
        ('ask = "Which?"\nchoices = ["a", "b"]\nanswer = true\nwhy = "w"\n', "field 'answer': expected an int, got true"),
        ('ask = "Which?"\nchoices = ["a", "b"]\nanswer = "1"\nwhy = "w"\n', "field 'answer': expected an int, got \"1\""),
        ('ask = "Which?"\nchoices = ["a", "b"]\nanswer = 1\nwhy = ""\n', "field 'why': expected text, got \"\""),
    ],
)
def test_a_bad_question_is_one_line_naming_file_step_field_and_value(question: str, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        loads_scenario(HEAD + DISPATCH + question, source="q.toml")
    assert str(info.value) == f"q.toml: step 2: {message}"


def test_at_most_nine_choices_one_per_key() -> None:
    choices = ", ".join(f'"{n}"' for n in range(1, MAX_CHOICES + 2))
    with pytest.raises(ScenarioError, match="expected an array of 2 to 9 strings"):
        loads_scenario(HEAD + DISPATCH + QUESTION.replace(CHOICES, f"[{choices}]"))


@pytest.mark.parametrize("command", ["replay", "tui"])
def test_a_bad_question_on_the_command_line_is_one_line_and_exit_2(tmp_path, capsys, command: str) -> None:
    path = tmp_path / "q.toml"
    path.write_text(HEAD + DISPATCH + QUESTION.replace("answer = 2", "answer = 5"))
    assert main([command, str(path)]) == 2
    out, err = capsys.readouterr()
    assert err == f"fencepost {command}: error: {path}: step 2: field 'answer': expected the number of a choice, 1 to 2, got 5\n"
    assert out == ""


def test_load_scenario_reads_questions_from_a_json_file(tmp_path) -> None:
    path = tmp_path / "q.json"
    path.write_text(dumps_scenario(loads_scenario(HEAD + DISPATCH + QUESTION), "json"))
    assert load_scenario(path).steps[1].question.answer == 2
