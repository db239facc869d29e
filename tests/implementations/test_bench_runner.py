"""``fencepost bench --runner``: both turns really run the tasks, and the report says what it measured.

Nothing here asserts how fast anything is.
"""

from __future__ import annotations

import pytest

from fencepost.impl import bench_runner
from fencepost.cli import main


def test_both_turns_run_every_task(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    monkeypatch.setattr(bench_runner, "noop", lambda ctx=None: calls.append(ctx))
    assert bench_runner.executor_turn(50) > 0
    assert len(calls) == 50
    assert bench_runner.runner_turn(50) > 0
    assert len(calls) == 100 and all(getattr(ctx, "task_id", None) for ctx in calls[50:])


def test_the_figures_come_from_the_best_turns() -> None:
    times = iter([2.0, 3.0, 1.0, 4.0, 5.0, 2.5])  # executor, runner, alternating
    result = bench_runner.measure_runner(1_000, 3, turns=(lambda n: next(times), lambda n: next(times)))
    assert (result.executor_best, result.runner_best) == (1.0, 2.5)
    assert result.ratio == pytest.approx(0.4)
    assert result.overhead_us == pytest.approx(1_500.0)
    text = bench_runner.format_runner_bench(result)
    assert "0.40x  MISSES" in text and "1500.0 us" in text


def test_the_command_prints_the_side_by_side_table(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "--runner", "--tasks", "200", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "ThreadPoolExecutor(4)" in out and "Runner(workers=4)" in out and "us/task" in out


def test_tasks_without_runner_is_bad_input(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "--tasks", "5"]) == 2
    assert "--tasks goes with --runner" in capsys.readouterr().err


def test_the_table_puts_one_and_four_workers_side_by_side() -> None:
    times = iter([1.0, 2.0, 1.0, 1.25])  # 1 worker: executor, runner; 4 workers: executor, runner
    benches = [bench_runner.measure_runner(1_000, 1, turns=(lambda n, w=None: next(times), lambda n, w=None: next(times)),
                                           workers=workers) for workers in bench_runner.WORKER_COUNTS]
    text = bench_runner.format_runner_benches(benches)
    lines = text.splitlines()
    assert lines[2].split()[0] == "1" and lines[3].split()[0] == "4"
    assert "0.50x" in lines[2] and "0.80x" in lines[3] and "250.0 us/task" in lines[3]
    assert text.endswith("0.80x  holds")
