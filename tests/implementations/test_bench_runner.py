"""``fencepost bench --runner``: both turns really run the tasks, and the report says what it measured.

Nothing here asserts how fast anything is.
"""

from __future__ import annotations

import pytest

from fencepost.bench import runner as bench_runner
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


# ---------------------------------------------------------------- --shared-runner (PostgreSQL)


def test_the_shared_runner_table_puts_single_calls_beside_the_default_batch() -> None:
    from fencepost.bench import shared_runner as b

    seconds = {(1, 1): [2.0, 4.0], (1, None): [1.0, 1.5], (2, 1): [1.0, 1.0], (2, None): [0.8, 0.9]}
    lines = b.format_table(seconds, 1_000, counts=(1, 2))
    assert "batch=1 (single calls)" in lines[0] and "default batch" in lines[0]
    assert lines[1].split()[0] == "1" and "500/s" in lines[1] and "1,000/s" in lines[1] and lines[1].endswith("2.00x")
    assert lines[2].split()[0] == "2" and lines[2].endswith("1.25x")


def test_a_shared_runner_turn_runs_every_task_on_the_server() -> None:
    import pg_server

    from fencepost.bench import shared_runner as b

    dsn = pg_server.require_server()
    assert b.turn(dsn, 12, 1, None) > 0  # returns only once the schema has no unfinished task


def test_shared_runner_with_another_run_is_bad_input(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "--shared-runner", "--runner"]) == 2
    assert "--shared-runner is a separate run" in capsys.readouterr().err


def test_one_turn_as_a_script_runs_every_task_in_memory_and_on_sqlite(monkeypatch, capsys) -> None:
    calls: list[object] = []
    monkeypatch.setattr(bench_runner, "noop", lambda ctx=None: calls.append(ctx))
    assert bench_runner.durable_turn(30, 2) > 0 and len(calls) == 30
    assert main(["bench", "runner-turn", "--tasks", "40", "--workers", "2", "--batch", "2"]) == 0
    assert len(calls) == 70
    assert "tasks/s  (Runner(workers=2) on its own scheduler, batch 2)" in capsys.readouterr().out
