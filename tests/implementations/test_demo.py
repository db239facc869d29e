"""``fencepost demo``: the story it promises is in its trace, the trace replays against the model, bad input exits 2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from runner_helpers import replay_mismatches

from fencepost.impl.runner import demo
from fencepost.cli import main
from fencepost.spec.formats.scenario import load_scenario


def test_the_demo_trace_tells_the_whole_story(tmp_path: Path) -> None:
    path = tmp_path / "demo.toml"
    runner = demo.run_demo(workers=3, tasks=8, seed=5, out=path)
    assert replay_mismatches(path) == []
    steps = load_scenario(path).steps
    rejected = [s for s in steps if s.op == "complete" and s.expect == {"accepted": False}]
    assert [s.args["task_id"] for s in rejected] == [1]  # the stalled task's late completion
    statuses = {t: runner.task(t).status for t in range(1, runner.submitted() + 1)}
    assert statuses[1] == "succeeded" and runner.task(1).attempts == 2
    assert statuses[2] == "cancelled"
    assert runner.result(3) == 9  # the child: 8 submitted by the demo, then this one
    assert statuses[4] == "failed"
    assert statuses[5] == "succeeded" and runner.task(5).attempts == 1  # the long job, kept alive by its heartbeat
    renewals = [s for s in steps if s.op == "renew"]
    assert [(s.args["task_id"], s.args["now"], s.expect) for s in renewals] == [(5, demo.LONG_RENEW_AT, {"accepted": True})]
    assert set(statuses.values()) <= {"succeeded", "failed", "cancelled"} and len(statuses) == 9


def test_with_out_and_no_terminal_it_only_writes(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "demo.json"
    assert main(["demo", "--tasks", "5", "--seed", "1", "--out", str(path)]) == 0
    assert f"to {path}" in capsys.readouterr().out
    assert load_scenario(path).title == "Demo: 4 workers, 5 tasks + 1 submitted by a task, seed 1"  # as --tasks said


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--workers", "2"], "--workers must be at least 3"),
        (["--tasks", "4"], "--tasks must be from 5 to 10000, got 4"),
        (["--out", "/no/such/folder/demo.toml"], "the folder it would go in does not exist"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    assert main(["demo", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_on_a_terminal_it_opens_the_trace_in_the_tui(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fencepost.commands import tui as launch

    opened: list = []
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(launch, "run", lambda args: opened.append(args) or 0)
    path = tmp_path / "demo.toml"
    assert main(["demo", "--tasks", "5", "--out", str(path)]) == 0
    assert [(a.scenario, a.new, a.impl, a.exec_command) for a in opened] == [(str(path), False, None, None)]
    assert path.is_file()
