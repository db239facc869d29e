"""fencepost check: both shipped implementations conform; verdicts, exit statuses and trace files."""

from __future__ import annotations

import pytest

from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.checkers.check import check_factory
from fencepost.cli import main
from fencepost.spec.formats.scenario import load_scenario
from fencepost.spec.testing import conformance_test

# The two-line form a user adds to their own suite, applied to ours.
TestSimpleSchedulerConforms = conformance_test(SimpleScheduler)
TestIndexedSchedulerConforms = conformance_test(IndexedScheduler)

BROKEN = "impl.mutants.token_reuse:Scheduler"


def test_a_broken_factory_exits_1_with_numbered_steps_call_expected_got(capsys):
    assert main(["check", BROKEN]) == 1
    out = capsys.readouterr().out
    assert "does NOT conform" in out
    assert "  1. " in out and "expected:" in out and "got:" in out and "<-- diverges" in out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["check", "no_such_module_xyz:Factory"], "cannot import module 'no_such_module_xyz'"),
        (["check", "impl"], "must look like MODULE:NAME"),
        (["check", "impl:NoSuchThing"], "has no attribute 'NoSuchThing'"),
        (["check", "spec.protocol:FINAL_STATUSES"], "is not callable"),
        (["check", "spec.protocol:Outcome"], "failed when called with no arguments"),
        (["check", "builtins:object"], "without the protocol's"),
    ],
)
def test_bad_factories_are_one_line_and_exit_2(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("argv", [["check", "impl:Scheduler", "--max-examples", "0"], ["check", "impl:Scheduler", "--seed", "x"]])
def test_bad_options_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_run_too_small_to_reach_the_boundaries_fails_and_names_them(capsys):
    assert main(["check", "impl:Scheduler", "--max-examples", "2", "--steps", "3"]) == 1
    out = capsys.readouterr().out
    assert "never reached" in out and "completion_at_expiry" in out


def test_the_default_implementation_conforms_and_coverage_prints_every_outcome(capsys):
    assert main(["check", "impl:Scheduler", "--coverage"]) == 0
    out = capsys.readouterr().out
    assert "conforms to the fencepost spec" in out
    for word in ("complete", "stale_token", "lease_expired", "raised", "time_at_expiry", "ids_past_9", "capacity_exactly_full"):
        assert word in out


def test_the_same_seed_finds_the_same_counterexample():
    from fencepost.impl.mutants import token_reuse

    first = check_factory(token_reuse.Scheduler, seed=7)
    second = check_factory(token_reuse.Scheduler, seed=7)
    assert not first.passed
    assert [(s.op, s.args) for s in first.trace] == [(s.op, s.args) for s in second.trace]


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_trace_out_replays_failing_at_the_diverging_step_and_clean_on_a_correct_one(tmp_path, capsys, suffix):
    path = tmp_path / f"cx{suffix}"
    assert main(["check", BROKEN, "--trace-out", str(path)]) == 1
    capsys.readouterr()
    scenario = load_scenario(path)
    diverging = scenario.meta["diverging_step"]
    assert diverging == len(scenario.steps)
    assert scenario.meta["impl"] == BROKEN and "hypothesis_version" in scenario.meta
    assert all(step.expect is not None for step in scenario.steps if step.op not in ("add_worker", "advance"))
    assert main(["replay", str(path), "--impl", BROKEN]) == 1
    assert f"the first is step {diverging}" in capsys.readouterr().out
    assert main(["replay", str(path)]) == 0
    assert main(["replay", str(path), "--impl", "impl.simple:SimpleScheduler"]) == 0


def test_a_view_only_divergence_still_fails_replay_at_its_step(tmp_path, capsys):
    path = tmp_path / "cx.toml"
    mutant = "impl.mutants.expire_before_validation:Scheduler"
    assert main(["check", mutant, "--trace-out", str(path)]) == 1
    scenario = load_scenario(path)
    assert scenario.steps[-1].expect_state is not None
    capsys.readouterr()
    assert main(["replay", str(path), "--impl", mutant]) == 1
    assert f"the first is step {len(scenario.steps)}" in capsys.readouterr().out
    assert main(["replay", str(path)]) == 0


@pytest.mark.parametrize("where", ["missing-folder/cx.toml", "."])
def test_an_unwritable_trace_out_is_refused_before_the_check_runs(tmp_path, capsys, where):
    target = str(tmp_path / where)
    assert main(["check", BROKEN, "--trace-out", target]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing ran
    assert "--trace-out" in captured.err and len(captured.err.strip().splitlines()) == 1



class _Closable(IndexedScheduler):
    """Notes, for the tests below, every scheduler a check makes and whether it was closed."""

    made: list[_Closable] = []

    def __init__(self) -> None:
        super().__init__()
        self.closed = False
        type(self).made.append(self)

    def close(self) -> None:
        self.closed = True


def test_every_run_closes_the_scheduler_it_made_when_the_run_ends():
    # Hypothesis keeps each run's machine in reference cycles: without the close at the end of a run,
    # a scheduler holding a connection kept it until the garbage collector came by (about 50 in a
    # PostgreSQL conformance check), and two checks at once used up the server's 100 connections.
    _Closable.made = []
    result = check_factory(_Closable, max_examples=5)
    assert result.passed
    assert len(_Closable.made) >= 5
    assert [s for s in _Closable.made if not s.closed] == []


def test_a_replay_closes_its_scheduler_whether_it_conforms_or_not():
    from fencepost.spec.checkers.lockstep import run_calls

    _Closable.made = []
    assert run_calls(_Closable, [("add_worker", {"worker": "w1", "capacity": 1})]) is None

    class Wrong(_Closable):
        def submit(self, *args, **kwargs):
            return super().submit(*args, **kwargs) + 1

    assert run_calls(Wrong, [("submit", {})]) is not None
    assert [s.closed for s in _Closable.made] == [True, True]
