"""Deadlines on calls into a scheduler: a hang is a finding with the shortest calls that lead to it.

Every test that could hang if the deadline machinery were broken runs its
body under ``bounded``, which fails after a bound in real seconds instead.
"""

from __future__ import annotations

import inspect
import threading

import pytest

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.checkers.deadline import CallTimeout, Watch, Watched, run_watched, watched_factory
from fencepost.cli import main
from fencepost.spec.formats.scenario import load_scenario

#: Seconds a test body may take before it counts as hung: far above what the
#: deadlines below allow, so only a broken build reaches it.
BOUND = 120
#: The deadline the tests give a call that hangs for certain (no honest call runs under it).
TIMEOUT = 0.3
#: The deadline ``check`` and ``replay`` give every call, honest ones too. Each hanging replay of the
#: minimizer costs this much, but an honest call must never overrun it: a process descheduled for
#: 0.3 s at load 20 would turn an honest step into a false hang (a shorter path, or Hypothesis's Flaky).
CHECK_TIMEOUT = 1.0
HANG_PATH = ["add_worker", "submit", "dispatch", "cancel"]


def bounded(fn, seconds: float = BOUND):
    """``fn()``'s result, or a test failure if it has not returned within ``seconds``."""
    box = {}

    def work():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s: the deadline did not fire"
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_run_watched_returns_the_result_and_passes_exceptions_through():
    watch = Watch(1.0)
    assert run_watched(lambda: 42, watch) == 42
    with pytest.raises(KeyError, match="boom"):
        run_watched(lambda: {}["boom"], watch)


class _Stuck:
    """Something whose ``wait`` blocks until its gate opens."""

    def __init__(self) -> None:
        self.gate = threading.Event()

    def wait(self, label: str) -> bool:
        return self.gate.wait()


def test_a_call_past_its_deadline_is_named_and_the_worker_abandoned():
    watch = Watch(TIMEOUT)
    stuck = _Stuck()
    scheduler = Watched(stuck, watch)
    with pytest.raises(CallTimeout, match=r"wait\('here'\) did not return within 0.3 s"):
        bounded(lambda: run_watched(lambda: scheduler.wait("here"), watch))
    assert watch.abandoned
    stuck.gate.set()  # the hung call returns late; the abandoned worker stops at its next call


def test_the_watched_proxy_keeps_signatures_and_reads_properties_under_the_watch():
    watch = Watch(1.0)
    scheduler = watched_factory(SimpleScheduler, watch)()
    assert list(inspect.signature(scheduler.submit).parameters) == list(inspect.signature(SimpleScheduler().submit).parameters)
    assert scheduler.now == 0
    assert getattr(scheduler, "check_invariants", None) is None
    assert watch.current is None  # nothing in progress between calls


def test_a_hang_is_replayable_and_replay_stops_at_the_hung_step(tmp_path, capsys):
    cx = tmp_path / "hang.toml"
    factory = "tests.spec.schedulers:DeadlocksOnCancel"
    argv = ["check", factory, "--call-timeout", str(CHECK_TIMEOUT), "--trace-out", str(cx)]
    assert bounded(lambda: main(argv)) == 1
    out = capsys.readouterr().out
    assert "4. cancel(task_id=1" in out and f"got: no answer within {CHECK_TIMEOUT:g} s   <-- diverges" in out
    assert [s.op for s in load_scenario(cx).steps] == HANG_PATH

    assert bounded(lambda: main(["replay", str(cx), "--impl", factory, "--call-timeout", str(CHECK_TIMEOUT)])) == 1
    out = capsys.readouterr().out
    assert "MISMATCH: cancel(task_id=1" in out and "FAILED" in out and "step 4" in out.splitlines()[-1]
    assert main(["replay", str(cx)]) == 0  # the reference scheduler answers every step


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf", "soon"])
def test_a_call_timeout_that_is_not_a_positive_number_is_one_line_and_exit_2(capsys, text):
    with pytest.raises(SystemExit) as exited:
        main(["check", "impl:Scheduler", "--call-timeout", text])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--call-timeout" in err and repr(text) in err and len(err.strip().splitlines()) == 1
