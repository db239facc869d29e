"""The ``--exec`` client (``spec.adapters.exec``): every way a program can misbehave is a finding or one line.

The programs are under ``tests/adapters/``: ``misbehaving.py MODE`` breaks
the protocol in one chosen way, ``hanging_adapter.py`` hangs on a cancel of
a running task, ``python_adapter.py`` serves fencepost's own scheduler.
Every wait on a program is bounded by the call timeout (a few seconds at
most), so a broken client fails these tests instead of hanging them.
"""

from __future__ import annotations

import inspect
import shlex
import sys
from pathlib import Path

import pytest

from fencepost.spec.adapters.exec import AdapterFault, AdapterStartError, ExecProgram
from fencepost.spec.checkers.check import check_factory
from fencepost.spec.checkers.deadline import CallTimeout
from fencepost.cli import main
from fencepost.spec.formats.scenario import load_scenario

ADAPTERS = Path(__file__).resolve().parents[1] / "adapters"
PYTHON = shlex.quote(sys.executable)
#: A generous deadline for honest answers on a loaded machine; the hang tests use a short one.
TIMEOUT = 10.0


def program(name: str, *args: str, timeout: float = TIMEOUT, **options: object) -> ExecProgram:
    return ExecProgram(" ".join([PYTHON, shlex.quote(str(ADAPTERS / name)), *args]), call_timeout=timeout, **options)


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("malformed", "not JSON"),
        ("wrong_id", "an answer with id 5, but the request's id is 4"),
        ("missing_result", "neither of result and error"),
        ("wrong_type", "submit answers a task id (an int), got '1'"),
        ("not_object", "not a JSON object"),
        ("non_utf8", "not UTF-8"),
        ("huge_line", "longer than 1048576 bytes"),
        ("deep", "nested more than 16 deep"),
        ("huge_int", "an integer too long to read"),
        ("other_error", "raised TypeError, but the protocol allows only ValueError"),
        ("extra_line", "an answer with id 3, but the request's id is 4"),
        ("exit", "exited with status 4 while fencepost waited for its answer to submit; its stderr ended with: 'adapter: Traceback"),
    ],
)
def test_each_protocol_violation_is_a_fault_naming_the_call_and_the_program_restarts(mode, words):
    with program("misbehaving.py", mode) as adapter:
        adapter.start()
        scheduler = adapter()
        scheduler.add_worker("w1", 1)  # answered honestly
        with pytest.raises(AdapterFault, match="submit") as fault:
            scheduler.submit()
        assert words in str(fault.value)
        assert "\n" not in str(fault.value)
        assert not adapter.running  # stopped: what it says next cannot be trusted
        with pytest.raises(AdapterFault, match="no longer running"):
            scheduler.add_worker("w2", 1)
        adapter().add_worker("w1", 1)  # the next reset starts it again
        assert adapter.starts == 2


def test_no_answer_within_the_deadline_kills_the_program_and_is_a_call_timeout():
    with program("misbehaving.py", "hang") as adapter:
        adapter.start()
        scheduler = adapter()  # hello and reset under the generous deadline: a loaded machine may be slow to answer
        adapter.call_timeout = 0.5  # short only for the call that hangs for certain
        with pytest.raises(CallTimeout, match=r"submit\(priority=2\) did not return within 0.5 s"):
            scheduler.submit(priority=2)
        assert not adapter.running


def test_a_refusal_is_a_value_error_with_the_programs_message():
    with program("python_adapter.py") as adapter:
        adapter.start()
        scheduler = adapter()
        with pytest.raises(ValueError, match="time can't go backwards"):
            scheduler.advance(5) or scheduler.advance(3)
        assert scheduler.now == 5  # refused, so nothing changed


def test_an_integral_float_is_refused_without_asking_the_program():
    with program("python_adapter.py") as adapter:
        adapter.start()
        scheduler = adapter()
        with pytest.raises(ValueError, match=r"task_id=1.0: a float, not an int .* without asking the program"):
            scheduler.task(1.0)
        with pytest.raises(ValueError):  # 1.5 has a faithful JSON form: the program refuses it itself
            scheduler.advance(1.5)


def test_a_scheduler_is_stale_after_the_next_reset():
    with program("python_adapter.py") as adapter:
        adapter.start()
        first = adapter()
        first.submit()
        second = adapter()
        with pytest.raises(AdapterFault, match="replaced by a later reset"):
            first.task(1)
        with pytest.raises(ValueError):  # the fresh scheduler has no task 1
            second.task(1)


def test_capabilities_show_as_submit_key_and_reopen_exactly_when_hello_lists_them():
    with program("misbehaving.py", "none") as plain:  # hello lists no capability
        plain.start()
        scheduler = plain()
        assert "key" not in inspect.signature(scheduler.submit).parameters
        assert not hasattr(scheduler, "reopen")
    with program("python_adapter.py", "--restart") as restartable:
        restartable.start()
        assert "restart" in restartable.capabilities
        before = restartable()
        before.submit(priority=3)
        after = before.reopen()  # the program's restart: state recovered, the old object stale
        assert after.task(1).priority == 3
        with pytest.raises(AdapterFault, match="replaced"):
            before.task(1)


def test_a_program_that_never_says_hello_is_an_error_within_its_startup_deadline():
    with program("misbehaving.py", "hello_silent", timeout=0.3, startup_timeout=0.3) as adapter:
        with pytest.raises(AdapterStartError, match="did not start properly: hello did not return within 0.3 s"):
            adapter.start()


@pytest.mark.parametrize(
    ("command", "words"),
    [
        (f"{PYTHON} {ADAPTERS / 'misbehaving.py'} hello_exit", "exited with status 3 while fencepost waited for its answer to hello; its stderr ended with: \"adapter: cannot open"),
        (f"{PYTHON} {ADAPTERS / 'misbehaving.py'} hello_protocol_2", "the program speaks protocol 2; this fencepost speaks 1"),
        ("no_such_program_xyz --flag", "cannot start 'no_such_program_xyz'"),
        ("'unterminated", "No closing quotation"),
        ("   ", "the command is empty"),
    ],
)
def test_a_program_that_cannot_say_hello_is_one_line_and_exit_2(capsys, command, words):
    assert main(["check", "--exec", command]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("subcommand", ["replay onboarding", "explore --tasks 1", "tui onboarding"])
def test_every_subcommand_with_exec_says_why_a_program_did_not_start(capsys, subcommand):
    assert main([*subcommand.split(), "--exec", f"{PYTHON} {ADAPTERS / 'misbehaving.py'} hello_exit"]) == 2
    err = capsys.readouterr().err
    assert "exited with status 3" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_factory_and_exec_together_or_neither_are_refused(capsys):
    assert main(["check"]) == 2  # neither
    assert main(["check", "impl:Scheduler", "--exec", "node x.js"]) == 2
    assert main(["replay", "onboarding", "--impl", "impl:Scheduler", "--exec", "node x.js"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all("exactly one" in line or "not both" in line for line in err)


def test_a_protocol_fault_during_a_check_is_a_short_counterexample():
    with program("misbehaving.py", "wrong_type", "dispatch") as adapter:
        adapter.start()
        result = check_factory(adapter, max_examples=20)
    assert not result.passed
    assert result.trace[-1].op == "dispatch" and len(result.trace) <= 3
    assert "answering dispatch" in result.failure and "dispatch answers null or an object" in result.failure


def test_an_exec_hang_is_a_replayable_counterexample_ending_in_the_hung_call(tmp_path, capsys):
    command = f"{PYTHON} {ADAPTERS / 'hanging_adapter.py'}"
    cx = tmp_path / "hang.json"
    assert main(["check", "--exec", command, "--call-timeout", "0.5", "--trace-out", str(cx)]) == 1
    out = capsys.readouterr().out
    assert "did not return within 0.5 s" in out
    assert [s.op for s in load_scenario(cx).steps] == ["submit", "add_worker", "dispatch", "cancel"]
    assert load_scenario(cx).meta["exec"] == command
    assert main(["replay", str(cx), "--exec", command, "--call-timeout", "0.5"]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("FAILED") and "step 4" in last and "did not return within 0.5 s" in last
