"""``fencepost replay``: one line per step, exit 0/1/2, through the real command line."""

from __future__ import annotations

import sys
import types

import pytest

from fencepost.impl.simple import SimpleScheduler
from fencepost.cli import main
from fencepost.spec.checkers.replay import replay
from fencepost.spec.formats.scenario import Scenario, Step

CAPACITY_ONE = '''title = "Capacity one"

[[steps]]
op = "add_worker"
worker = "w1"
capacity = 1

[[steps]]
op = "submit"
expect = { task_id = 1 }

[[steps]]
op = "dispatch"
worker = "w1"
now = 5
duration = 5
expect = { task_id = 1, token = 1, expires_at = 10 }

[[steps]]
op = "dispatch"
worker = "w1"
now = 9
duration = 5
expect = "none"

[[steps]]
op = "complete"
task_id = 1
token = 1
now = 10
expect = { accepted = false, reason = "lease_expired" }

[[steps]]
op = "advance"
now = 3
expect = "error"
'''


def write(tmp_path, text: str, name: str = "walk.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_clean_replay_prints_one_line_per_step_and_exits_0(tmp_path, capsys) -> None:
    path = write(tmp_path, CAPACITY_ONE)
    assert main(["replay", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines() == [
        f"replay {path} against impl:Scheduler: Capacity one (6 steps)",
        "step 1  t=0   add_worker(worker='w1', capacity=1) -> ok",
        "step 2  t=0   submit() -> task 1",
        "step 3  t=5   dispatch(worker='w1', now=5, duration=5) -> lease task 1 to w1, token 1, [5, 10)",
        "step 4  t=9   dispatch(worker='w1', now=9, duration=5) -> none",
        "step 5  t=10  complete(task_id=1, token=1, now=10) -> rejected: lease_expired",
        "step 6  t=10  advance(now=3) -> error: time can't go backwards: now=3 < current time 10",
        "ok: all 5 expectations hold over 6 steps",
    ]


def test_a_mismatch_is_marked_every_step_still_runs_and_exit_is_1(tmp_path, capsys) -> None:
    text = CAPACITY_ONE.replace('expect = "none"', "expect = { task_id = 1 }").replace(
        'reason = "lease_expired"', 'reason = "stale_token"'
    )
    assert main(["replay", str(write(tmp_path, text))]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 6 + 1
    assert lines[4] == ("step 4  t=9   dispatch(worker='w1', now=9, duration=5) -> none"
                        "  MISMATCH: expected a lease with task_id=1, got none")
    assert lines[5].endswith("  MISMATCH: expected rejected: stale_token, got rejected: lease_expired")
    assert "MISMATCH" not in lines[6]
    assert lines[-1] == ("FAILED: 2 of 6 steps do not meet the scenario; "
                         "the first is step 4: expected a lease with task_id=1, got none")


def test_an_expected_error_that_does_not_happen_is_a_mismatch(tmp_path, capsys) -> None:
    assert main(["replay", str(write(tmp_path, CAPACITY_ONE.replace("now = 3", "now = 30")))]) == 1
    assert capsys.readouterr().out.splitlines()[-1].endswith("the first is step 6: expected an error, got ok")


def test_a_step_without_expect_never_fails(tmp_path, capsys) -> None:
    text = 'title = "t"\n\n[[steps]]\nop = "advance"\nnow = -1\n'
    assert main(["replay", str(write(tmp_path, text))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "step 1  t=0  advance(now=-1) -> error: now must be >= 0: -1"
    assert lines[-1] == "ok: 1 step, no expectations to check"


def test_json_scenarios_replay_too(tmp_path, capsys) -> None:
    text = '{"title": "j", "steps": [{"op": "submit", "expect": {"task_id": 1}}]}'
    path = write(tmp_path, text, "walk.json")
    assert main(["replay", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"replay {path} against impl:Scheduler: j (1 step)",
        "step 1  t=0  submit() -> task 1",
        "ok: the 1 expectation holds over 1 step",
    ]


def test_a_builtin_name_replays(capsys) -> None:
    assert main(["replay", "capacity-one", "--impl", "impl.simple:SimpleScheduler"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("replay capacity-one against impl.simple:SimpleScheduler: ")


# ---------------------------------------------------------------- exit 2: one line on stderr, nothing else


def test_a_folder_is_exit_2_saying_it_is_a_folder(tmp_path, capsys) -> None:
    assert main(["replay", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"fencepost replay: error: {tmp_path}: is a folder, not a scenario file (give one .toml file, or a built-in name)\n"


def test_the_command_list_keeps_every_help_on_its_commands_line(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main(["--help"])
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("  COMMAND") + 1
    commands = [line.split()[0] for line in lines[start:] if line.startswith("    ") and not line.startswith("     ")]
    assert "linearize" in commands and "check" in commands
    for line in lines[start:]:
        if line.startswith("    ") and not line.startswith("     "):
            assert len(line.split()) > 1, f"a command's help wrapped to the next line: {line!r}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('title = "t"\n\n[[steps]]\nop = "dispatch"\nworker = "w1"\nnow = "ten"\nduration = 5\n',
         "step 1: field 'now': expected an int, got \"ten\""),
        ('title = "t"\nsteps = [\n', "invalid TOML: "),
    ],
)
def test_a_bad_file_is_one_line_and_exit_2(tmp_path, capsys, text: str, message: str) -> None:
    path = write(tmp_path, text)
    assert main(["replay", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"fencepost replay: error: {path}: {message}")
    assert err.count("\n") == 1


def test_a_missing_file_is_exit_2_and_lists_the_builtins(tmp_path, capsys) -> None:
    assert main(["replay", str(tmp_path / "nope.toml")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "nope.toml: no such scenario file or built-in walkthrough (built-ins: onboarding," in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("impl", "message"),
    [
        ("impl.simple", "--impl must look like MODULE:NAME"),
        ("no_such_module_here:Factory", "cannot import module 'no_such_module_here'"),
        ("impl.simple:Nope", "has no attribute 'Nope'"),
        ("fencepost_replay_fakes:broken_factory", "the factory raised RuntimeError: no scheduler today"),
    ],
)
def test_a_bad_impl_is_a_usage_error(capsys, fake_impls, impl: str, message: str) -> None:
    assert main(["replay", "onboarding", "--impl", impl]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("fencepost replay: error: ") and message in err
    assert err.count("\n") == 1


def test_a_missing_path_is_argparses_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["replay"])
    assert info.value.code == 2


# ---------------------------------------------------------------- implementations that break the protocol


class TypeErrorScheduler(SimpleScheduler):
    """Raises TypeError where the protocol demands ValueError."""

    def advance(self, now):
        if not isinstance(now, int):
            raise TypeError(f"now is a {type(now).__name__}")
        return super().advance(now)


class NoNowScheduler(SimpleScheduler):
    @property
    def now(self):
        raise AttributeError("no clock")


def _broken_factory():
    raise RuntimeError("no scheduler today")


@pytest.fixture
def fake_impls(monkeypatch):
    """A module the command line can import implementations from by MODULE:NAME."""
    module = types.ModuleType("fencepost_replay_fakes")
    module.TypeErrorScheduler = TypeErrorScheduler
    module.NoNowScheduler = NoNowScheduler
    module.broken_factory = _broken_factory
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def test_an_exception_other_than_value_error_is_a_violation(tmp_path, capsys, fake_impls) -> None:
    text = 'title = "t"\n\n[[steps]]\nop = "advance"\nnow = "x"\nexpect = "error"\n\n[[steps]]\nop = "advance"\nnow = 2\n'
    assert main(["replay", str(write(tmp_path, text)), "--impl", "fencepost_replay_fakes:TypeErrorScheduler"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == ("step 1  t=0  advance(now='x') -> error: TypeError: now is a str"
                        "  MISMATCH: raised TypeError, but the protocol allows only ValueError")
    assert lines[2] == "step 2  t=2  advance(now=2) -> ok"


def test_an_unreadable_clock_shows_a_question_mark(capsys, fake_impls) -> None:
    assert main(["replay", "capacity-one", "--impl", "fencepost_replay_fakes:NoNowScheduler"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("step 1  t=?  add_worker(")


# ---------------------------------------------------------------- the library function


def test_replay_reports_time_after_each_step_and_an_invalid_call_keeps_it() -> None:
    scenario = Scenario("t", (
        Step("advance", {"now": 4}),
        Step("advance", {"now": 2}, expect="error"),
        Step("advance", {"now": 7}, expect="error"),
    ))
    replayed = replay(scenario, SimpleScheduler())
    assert [r.now for r in replayed] == [4, 4, 7]
    assert [r.number for r in replayed] == [1, 2, 3]
    assert [r.mismatch for r in replayed] == [None, None, "expected an error, got ok"]

