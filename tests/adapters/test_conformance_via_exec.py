"""Schedulers in other languages, checked through ``fencepost check --exec``.

* ``scheduler.js``: the whole protocol in JavaScript (Node, no npm packages);
  skipped, with the reason, where ``node`` is not installed.
* ``python_adapter.py``: fencepost's own scheduler behind the same lines.
* ``broken_closed_interval.js``: the JavaScript one with a closed lease
  interval; the check must reject it with a short counterexample that
  ``fencepost replay --exec`` replays, failing at its diverging step.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

import pytest

from fencepost.cli import main
from fencepost.spec.formats.scenario import load_scenario

HERE = Path(__file__).resolve().parent
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed: the JavaScript adapters need it")
JS = f"{shlex.quote(NODE or 'node')} {shlex.quote(str(HERE / 'scheduler.js'))}"
BROKEN_JS = f"{shlex.quote(NODE or 'node')} {shlex.quote(str(HERE / 'broken_closed_interval.js'))}"
PYTHON = f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'python_adapter.py'))}"


@needs_node
def test_the_javascript_scheduler_conforms(capsys):
    assert main(["check", "--exec", JS]) == 0, capsys.readouterr().out
    assert "conforms to the fencepost spec" in capsys.readouterr().out


def test_the_python_adapter_conforms(capsys):
    assert main(["check", "--exec", PYTHON]) == 0, capsys.readouterr().out
    assert "conforms to the fencepost spec" in capsys.readouterr().out


@needs_node
def test_a_closed_lease_interval_is_caught_and_its_counterexample_replays_through_exec(tmp_path, capsys):
    cx = tmp_path / "closed.toml"
    assert main(["check", "--exec", BROKEN_JS, "--trace-out", str(cx)]) == 1
    out = capsys.readouterr().out
    assert "does NOT conform" in out and "<-- diverges" in out
    scenario = load_scenario(cx)
    diverging = scenario.meta["diverging_step"]
    assert len(scenario.steps) <= 6 and diverging == len(scenario.steps)

    assert main(["replay", str(cx), "--exec", BROKEN_JS]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1].startswith(f"FAILED: 1 of {len(scenario.steps)} steps")
    assert f"the first is step {diverging}:" in lines[-1]

    assert main(["replay", str(cx), "--exec", JS]) == 0  # the correct JavaScript scheduler replays it clean
    assert main(["replay", str(cx)]) == 0  # and so does fencepost's own


@needs_node
def test_the_javascript_scheduler_agrees_with_the_model_in_a_bounded_exploration(capsys):
    assert main(["explore", "--exec", JS, "--tasks", "1", "--max-attempts", "1", "--durations", "1"]) == 0
    assert "agreed with the model on every transition" in capsys.readouterr().out


def test_capabilities_listed_in_hello_are_checked_through_exec():
    from fencepost.spec.adapters.exec import ExecProgram
    from fencepost.spec.checkers.capabilities import detect
    from fencepost.spec.checkers.check import check_factory

    with ExecProgram(f"{PYTHON} --restart") as program:
        program.start()
        found = detect(program)
        assert found.keys and found.restart  # from hello: "key", "restart"
        result = check_factory(program, max_examples=10)
    assert result.passed, result.failure  # keys and restarts through the program agree with the model
    assert result.coverage.outcomes[("restart", "ok")] > 0


def test_prune_listed_in_hello_is_checked_through_exec_and_skipped_without_it(capsys):
    from fencepost.spec.adapters.exec import ExecProgram
    from fencepost.spec.checkers.capabilities import detect
    from fencepost.spec.checkers.check import check_factory

    with ExecProgram(f"{PYTHON} --prune") as program:
        program.start()
        assert detect(program).prune  # from hello: "prune"
        result = check_factory(program, max_examples=10)
    assert result.passed, result.failure
    assert result.coverage.outcomes[("prune", "forgot")] > 0
    assert "checked: idempotency keys, prune, batch" in result.capabilities.summary()
    main(["check", "--exec", PYTHON, "--max-examples", "5"])  # a short run: only its summary line matters here
    assert "checked: idempotency keys, batch; skipped (not offered): restart, prune" in capsys.readouterr().out


def test_the_batch_capability_is_read_from_hello_and_its_calls_travel_as_one_request_each():
    from fencepost.spec.adapters.exec import ExecProgram
    from fencepost.spec.checkers.capabilities import detect

    with ExecProgram(PYTHON) as program:
        program.start()
        assert detect(program).batch  # hello lists "batch"
        s = program()
        s.add_worker(worker="w1", capacity=2)
        assert s.submit_many([{}, {"priority": 2}]) == [1, 2]
        leases = s.dispatch_many("w1", 0, 5, 3)
        assert [lease.task_id for lease in leases] == [2, 1]
        outcomes = s.complete_many([(2, leases[0].token), (1, 99)], 1)  # tuples go as JSON arrays
        assert [o.accepted for o in outcomes] == [True, False]
        with pytest.raises(ValueError, match=r"tasks\[1\]"):
            s.submit_many([{}, {"retry_delay": 0}])
    with ExecProgram(f"{PYTHON} --no-batch") as program:
        program.start()
        assert not detect(program).batch
        assert not hasattr(program(), "submit_many")


def test_check_says_it_skipped_batches_a_program_does_not_offer(capsys):
    assert main(["check", "--exec", f"{PYTHON} --no-batch", "--max-examples", "5", "--steps", "5"]) in (0, 1)
    assert "skipped (not offered): restart, prune, batch" in capsys.readouterr().out


def test_explore_drives_batches_through_exec_and_says_when_a_program_has_none(capsys):
    scope = ["--batches", "--tasks", "2", "--capacity", "2", "--horizon", "0", "--priorities", "0",
             "--max-attempts", "none", "--durations", "1", "--depth", "4"]
    assert main(["explore", "--exec", PYTHON, *scope]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith(", batches") and "skipped" not in out
    assert "agreed with the model on every transition" in out
    batches = {line.split()[0]: int(line.split()[1]) for line in out.splitlines() if line.split()[:1] and line.split()[0].endswith("_many")}
    assert set(batches) == {"submit_many", "dispatch_many", "complete_many", "fail_many"} and all(batches.values())
    assert main(["explore", "--exec", f"{PYTHON} --no-batch", *scope]) == 0
    out = capsys.readouterr().out
    assert "optional capabilities skipped (not offered): batch" in out
    assert not any(line.split()[:1] and line.split()[0].endswith("_many") for line in out.splitlines())
