"""``fencepost crash``: SIGKILL a durable scheduler mid-run, reopen it, compare with the model.

The shipped DurableScheduler recovers exactly what was acknowledged (or that
plus the call in flight); the mutant that acknowledges before committing is
caught, and its failure comes out as a scenario that ends in ``restart``; a
scheduler that keeps nothing is caught; the probe sees state the views
cannot show; bad arguments are one line, exit 2.
"""

from __future__ import annotations

import os
import tempfile

import pytest

from fencepost.impl import durable
from fencepost.impl.durable import DurableScheduler
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec import model, profiles
from fencepost.spec.checkers import crash
from fencepost.spec.checkers.lockstep import run_calls
from fencepost.cli import main
from fencepost.spec.formats.scenario import load_scenario
from fencepost.impl.mutants import CRASH_MUTANTS
from fencepost.impl.mutants.durable_ack_before_commit import Scheduler as AckBeforeCommit
from fencepost.spec.protocol import OPERATIONS, OPTIONAL_OPERATIONS

#: tmpfs, where there is one: a kill tests SQLite's commit, not the disk's fsync.
FAST_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
#: Few kills keep the test short; ``fencepost crash --kills 200`` is the full run (README).
KILLS = 4
#: Kills the mutant gets; it fails at the first kill that lands after an acknowledged change.
MUTANT_KILLS = 20
#: A kill point past any call a child makes before its own lockstep speaks (a bound: a child
#: that never diverged would be killed there, after some seconds, and the test would fail).
UNREACHED_KILL = 10_000


#: Real seconds the held child gets to end itself, far above the hold limit the test sets.
HOLD_BOUND = 30.0


def test_a_child_held_for_a_kill_that_never_comes_ends_by_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child holding still after the call to be killed after, whose parent died first, ends on its own
    (else it would outlive the run for good), and makes no call after that one."""
    import multiprocessing

    monkeypatch.setattr(crash, "HOLD_LIMIT_S", 0.1)

    def held() -> None:
        hold = crash._Hold(after=1)
        hold.open("never-opened")
        hold.take(("call", "submit", {}))  # the first call that changes the state: the one to hold after
        hold.take(("ack", 1))
        os._exit(0)  # reached only if the hold returned: a call could follow

    child = multiprocessing.get_context("fork").Process(target=held, daemon=True)
    child.start()
    try:
        child.join(HOLD_BOUND)
        assert not child.is_alive(), f"the child still holds after {HOLD_BOUND} s"
        assert child.exitcode == crash.HELD_TOO_LONG
    finally:
        child.kill()
        child.join(HOLD_BOUND)


def test_the_durable_scheduler_recovers_every_acknowledged_call() -> None:
    report = crash.crash_test(DurableScheduler, kills=KILLS, seed=11, directory=FAST_DIR)
    assert report.passed, report.failure and report.failure.problem
    assert report.kills == KILLS
    assert report.exact + report.in_flight_applied == KILLS
    assert report.acknowledged > KILLS  # the kills landed mid-run, not before the first call


def test_a_mutant_that_acknowledges_before_committing_is_caught_by_a_kill() -> None:
    """With restarts off in the child, only the SIGKILL can show the lost call."""
    report = crash.crash_test(AckBeforeCommit, kills=MUTANT_KILLS, seed=11, directory=FAST_DIR, restarts=False)
    assert not report.passed, f"{MUTANT_KILLS} kills did not catch the ack-before-commit mutant"
    failure = report.failure
    assert failure.problem
    trace = crash.failure_trace(failure)
    last_restart = max(n for n, step in enumerate(trace) if step.op == "restart")
    assert trace[-1].problem and [step.op for step in trace[last_restart + 1:]] == [op for op, _ in failure.shown_by]
    assert [step.op for step in trace[:last_restart] if step.op != "restart"] == [
        call.op for call in failure.run.acknowledged if call.op != "restart"
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_kill_after_a_return_catches_the_mutant_for_certain_and_the_real_scheduler_never(seed: int) -> None:
    """The child holds still once the aimed call has returned, so the kill lands before the next call's
    BEGIN commits it: the mutant loses that acknowledged call at any load, the real scheduler nothing."""
    caught = crash.kill_once(AckBeforeCommit, seed=seed, kill_at=3, delay_s=0.0, steps=profiles.CI_STEPS,
                             directory=FAST_DIR, restarts=False, after=True)
    assert caught.problem and not caught.exact and caught.run.in_flight is None
    held = crash.kill_once(DurableScheduler, seed=seed, kill_at=3, delay_s=0.0, steps=profiles.CI_STEPS,
                           directory=FAST_DIR, restarts=False, after=True)
    assert held.problem is None and held.exact and held.run.in_flight is None


def test_with_restarts_the_childs_own_lockstep_sees_the_mutant_too() -> None:
    """A ``restart`` closes the connection, and the open transaction goes with it: a divergence, no kill needed.

    The kill is aimed past any call the child reaches, so no kill can catch the mutant first
    (``crash_test``'s seeded kill points once did, when the prune and batch rules moved the
    child's restarts later): what ends the run is the child's own verdict, whatever calls
    Hypothesis makes. Every child seed of 0..29 diverged at or after a restart within 0.7 s here.
    """
    with pytest.raises(crash.ChildFailure, match="diverged from the model without any crash") as caught:
        crash.kill_once(AckBeforeCommit, seed=3, kill_at=UNREACHED_KILL, delay_s=0.0, steps=profiles.CI_STEPS,
                        directory=FAST_DIR)
    lines = str(caught.value).splitlines()
    diverging = next(number for number, line in enumerate(lines) if "<-- diverges" in line)
    assert any("restart()" in line for line in lines[: diverging + 1]), "the divergence came before any restart"


def test_a_restart_loses_the_mutants_last_acknowledged_call_and_nothing_of_the_real_one() -> None:
    """The same mechanism driven directly, no Hypothesis: the mutant's submit returns with its
    transaction open, and the restart's close rolls it back."""
    calls = [("add_worker", {"worker": "w1", "capacity": 1}), ("submit", {}), ("restart", {})]
    trace = run_calls(lambda: durable.temporary(AckBeforeCommit, FAST_DIR), calls)
    assert trace is not None and trace[-1].op == "restart" and "task(1)" in trace[-1].problem
    assert run_calls(lambda: durable.temporary(directory=FAST_DIR), calls) is None


def test_a_scheduler_that_keeps_nothing_recovers_nothing() -> None:
    report = crash.crash_test(lambda path: SimpleScheduler(), kills=3, seed=2, directory=FAST_DIR)
    assert not report.passed
    assert "differs" in report.failure.problem or "unknown" in report.failure.problem or "probing" in report.failure.problem


def test_the_probe_sees_a_lost_worker_the_views_cannot_show() -> None:
    state, _ = model.apply(model.initial(), "add_worker", {"worker": "w1", "capacity": 2})
    state, _ = model.apply(state, "submit", {})
    forgot_the_worker = SimpleScheduler()
    forgot_the_worker.submit()  # same views: task 1 pending at time 0
    index, problem = crash.recovered_as(forgot_the_worker, [state])
    assert index is None and "add_worker(worker='w1'" in problem
    kept = SimpleScheduler()
    kept.add_worker("w1", 2)
    kept.submit()
    assert crash.recovered_as(kept, [state]) == (0, None)
    # With the call in flight as a second candidate, the probe tells which one happened.
    without = model.apply(model.initial(), "submit", {})[0]
    assert crash.recovered_as(kept_copy(), [without, state]) == (1, None)


def test_a_loss_only_the_probe_sees_is_in_the_failure_trace_so_a_replay_diverges_too() -> None:
    """A lost ``add_worker`` leaves the views as the model's: the restart alone replays clean, so the
    probe calls that showed the loss follow it, the last one marked (a CI run once wrote a scenario
    that replayed clean on the mutant it was found on)."""
    run = crash.Run("path")
    for message in [("call", "add_worker", {"worker": "w1", "capacity": 2}), ("ack", None), ("call", "submit", {}), ("ack", 1)]:
        run.take(message)
    forgot_the_worker = SimpleScheduler()
    forgot_the_worker.submit()
    index, problem, shown_by = crash._recovered_as(forgot_the_worker, [run.acked_state])
    assert index is None and shown_by == [("add_worker", {"worker": "w1", "capacity": 1})]
    trace = crash.failure_trace(crash.KillResult(run, 2, False, False, problem, shown_by=shown_by))
    assert [step.op for step in trace] == ["add_worker", "submit", "restart", "add_worker"]
    assert trace[2].problem is None and trace[3].problem == f"after the restart: {problem}"
    assert trace[3].expected == ("error", "worker 'w1' already exists")
    # Replayed: the mutant loses an add_worker made last before a restart, and only the probe step says so.
    lost = [("add_worker", {"worker": "w1", "capacity": 2}), ("restart", {}), *shown_by]
    diverged = run_calls(lambda: durable.temporary(AckBeforeCommit, FAST_DIR), lost)
    assert diverged is not None and diverged[-1].op == "add_worker" and "already exists" in diverged[-1].problem
    assert run_calls(lambda: durable.temporary(directory=FAST_DIR), lost) is None  # the real one replays clean


class _Pipe:
    """The child's end of the pipe, kept in a list."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []

    def send(self, message: tuple) -> None:
        self.sent.append(message)


def test_every_call_that_can_change_the_state_is_reported_to_the_parent() -> None:
    """``prune`` passed through unreported once: the parent's model missed it, and a kill after it
    found task 1 due at the clock prune had moved to (seed 11's ``due_at 9 where the model has 0``)."""
    assert set(crash.REPORTED_OPERATIONS) >= {*OPERATIONS, *OPTIONAL_OPERATIONS}
    pipe = _Pipe()
    reporting = crash._Reporting(SimpleScheduler(), pipe)
    assert reporting.prune(before=0, now=9) == 0
    assert pipe.sent == [("call", "prune", {"before": 0, "now": 9}), ("ack", 0)]
    run = crash.Run("path")
    for message in pipe.sent:
        run.take(message)
    assert run.acked_state.now == 9 and run.in_flight is None


def test_the_probe_reads_a_forgotten_task_as_forgotten_and_the_tasks_after_it() -> None:
    calls = [("add_worker", {"worker": "w1", "capacity": 1}), ("submit", {}), ("submit", {}),
             ("cancel", {"task_id": 1, "now": 1}), ("prune", {"before": 2, "now": 2})]
    state, recovered = model.initial(), SimpleScheduler()
    for op, args in calls:
        state = model.apply(state, op, args)[0]
        getattr(recovered, op)(**args)
    assert [t.forgotten for t in state.tasks] == [True, False]
    assert crash.recovered_as(recovered, [state]) == (0, None)


def kept_copy() -> SimpleScheduler:
    s = SimpleScheduler()
    s.add_worker("w1", 2)
    s.submit()
    return s


def test_cli_passes_the_durable_scheduler(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    if FAST_DIR:
        monkeypatch.setattr(tempfile, "tempdir", FAST_DIR)
    assert main(["crash", "impl.durable:DurableScheduler", "--kills", "1", "--seed", "3", "--ops", "20"]) == 0
    out = capsys.readouterr().out
    assert "1 kill (seed 3" in out and "every recovery holds" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["crash", "impl.durable:DurableScheduler", "--kills", "0"], "--kills"),
        (["crash", "impl.durable:DurableScheduler", "--ops", "x"], "--ops"),
        (["crash", "no.such.module:Opener"], "cannot import"),
        (["crash", "impl.durable:INT64_MAX"], "not callable"),
        (["crash", "impl.simple:SimpleScheduler"], "failed when called with a path"),
    ],
)
def test_cli_bad_arguments_are_one_line_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's own errors exit from inside the parser
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_writes_the_failure_as_a_scenario_that_replays(tmp_path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 1; the file fails at or after its last ``restart`` on the mutant and replays clean on the real scheduler.

    Certain at any load: seed 12's fifth kill is aimed after a return (the child holds still there),
    and a loss the views cannot show is written with the probe calls that showed it.
    """
    if FAST_DIR:
        monkeypatch.setattr(tempfile, "tempdir", FAST_DIR)
    out = tmp_path / "crash.toml"
    argv = ["crash", CRASH_MUTANTS["durable_ack_before_commit"], "--kills", str(MUTANT_KILLS), "--seed", "12",
            "--no-restarts", "--trace-out", str(out)]
    assert main(argv) == 1
    printed = capsys.readouterr().out
    assert "RECOVERY FAILED" in printed and "restart()" in printed and "<-- diverges" in printed
    scenario = load_scenario(out)
    ops = [step.op for step in scenario.steps]
    assert "restart" in ops and scenario.steps[-1].expect_state and scenario.steps[-1].note
    assert main(["replay", str(out), "--impl", "impl.mutants.durable_ack_before_commit:temporary"]) == 1
    assert main(["replay", str(out), "--impl", "impl.durable:temporary"]) == 0
