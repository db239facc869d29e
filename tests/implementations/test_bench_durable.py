"""``fencepost bench --durable``: its measuring functions on tiny sizes, and the shape of its output.

Nothing here asserts how fast anything is: only that the floor and the cycle
do what they say, and that every figure is measured and reported.
"""

from __future__ import annotations

import gc
import sqlite3
import tempfile
from pathlib import Path

from fencepost.bench import durable as bench_durable
from fencepost.cli import main


def test_the_floor_commits_three_single_row_writes_per_cycle(tmp_path: Path) -> None:
    loop = bench_durable.floor_loop(tmp_path / "floor.db", "NORMAL")
    loop(4)
    del loop  # closes the connection, releasing the exclusive lock
    gc.collect()
    conn = sqlite3.connect(tmp_path / "floor.db")
    assert conn.execute("SELECT count(*), min(value), max(value) FROM floor").fetchone() == (4, 2, 2)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_durable_cycle_keeps_the_pending_count(tmp_path: Path) -> None:
    loop = bench_durable.cycle_loop(tmp_path / "cycle.db", 30, 5, "NORMAL")
    loop(5)
    del loop
    gc.collect()
    scheduler = bench_durable.DurableScheduler(tmp_path / "cycle.db")
    statuses = [scheduler.task(i).status for i in range(1, 36)]
    assert statuses.count("pending") == 30 and statuses.count("succeeded") == 5
    scheduler.close()


def test_every_figure_is_measured_and_reported(tmp_path: Path) -> None:
    report = bench_durable.measure_durable(20, cycles=3, repeats=2, warm=1, reopen_size=50, folder=str(tmp_path))
    assert [row.synchronous for row in report.rows] == ["FULL", "NORMAL"]
    assert all(0 < row.floor.best_ns and 0 < row.cycle.best_ns for row in report.rows)
    assert report.reopen_s > 0 and report.bytes_per_task > 0 and report.reopen_tasks == 50
    text = bench_durable.format_durable(report)
    assert "synchronous=FULL" in text and "synchronous=NORMAL" in text
    assert "reopen of a 50-task file" in text and "bytes on disk per task" in text
    assert list(tmp_path.iterdir()) == []  # the files are removed afterwards


def test_the_cli_runs_the_durable_bench(capsys, monkeypatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setenv("TMPDIR", "/dev/shm" if Path("/dev/shm").is_dir() else tempfile.gettempdir())
    assert main(["bench", "--durable", "--quick", "--cycles", "2", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "durable/floor" in out and "reopen of a 1,000-task file" in out


def test_the_batch_rows_run_every_job_and_judge_the_target(tmp_path: Path) -> None:
    lines = []
    best = bench_durable.measure_batches(20, rounds=2, folder=str(tmp_path), progress=lines.append)
    assert sorted(best) == [1, 10] and all(rate > 0 for rate in best.values())
    assert len(lines) == 2 and all("batch 1: " in line and "batch 10: " in line and "load" in line for line in lines)
    text = bench_durable.format_batches(best)
    assert "batch 1: " in text and "batch 10: " in text and "target: DurableScheduler batch 10 / its batch 1 >= 5.0x" in text
    assert text.rstrip().endswith(("holds", "MISSED"))
    assert "not measured" in bench_durable.format_batches({1: 10.0})
    assert list(tmp_path.iterdir()) == []  # the files are removed afterwards


def test_the_batch_sizes_take_turns_each_on_its_own_file(tmp_path: Path, monkeypatch) -> None:
    """Every size runs TURN_JOBS jobs, then the next size: both see the same disk, turn by turn."""
    turns = []
    real = bench_durable.job_cycle

    def recorded(s, worker, batch, duration=bench_durable.DURATION):
        cycle = real(s, worker, batch, duration)
        return lambda: (turns.append((str(s.path.name), batch)), cycle())

    monkeypatch.setattr(bench_durable, "job_cycle", recorded)
    monkeypatch.setattr(bench_durable, "WAL_STEADY_BYTES", 0)  # the log counts as full at once: no more warm-up
    rates = bench_durable.batch_rates(60, folder=str(tmp_path))
    assert sorted(rates) == [1, 10]
    timed = turns[2 * bench_durable.BATCH_WARM_CYCLES:]
    assert len(timed) == 60 + 6  # 60 dispatches at batch 1, 6 dispatch_many of 10
    runs = [batch for n, (_, batch) in enumerate(timed) if n == 0 or timed[n - 1][1] != batch]
    assert runs == [1, 10, 1, 10, 1, 10]  # 20 jobs a turn: three turns each
    assert {name for name, _ in turns} == {"batch-1.db", "batch-10.db"}


def test_the_warm_up_fills_the_write_ahead_log_before_timing(tmp_path: Path, monkeypatch) -> None:
    """Timing starts once each file's log is full size, where a running scheduler's commits reuse it."""
    sizes = {}
    real = bench_durable.job_cycle

    def recorded(s, worker, batch, duration=bench_durable.DURATION):
        cycle, log = real(s, worker, batch, duration), s.path.with_name(s.path.name + "-wal")
        return lambda: (sizes.setdefault(batch, []).append(log.stat().st_size), cycle())

    monkeypatch.setattr(bench_durable, "job_cycle", recorded)
    full = 1_500_000  # more than BATCH_WARM_CYCLES cycles write at either size
    monkeypatch.setattr(bench_durable, "WAL_STEADY_BYTES", full)
    bench_durable.batch_rates(20, folder=str(tmp_path))
    for batch, seen in sizes.items():
        assert seen[bench_durable.BATCH_WARM_CYCLES] < full <= seen[-(20 // batch)], batch


def test_a_batch_cycle_claims_and_acknowledges_its_batch(tmp_path: Path) -> None:
    with bench_durable.DurableScheduler(tmp_path / "cycle.db") as s:
        s.add_worker("w", 3)
        s.submit_many([{}] * 7)
        bench_durable.job_cycle(s, "w", 3)()
        bench_durable.job_cycle(s, "w", 1)()
        assert [s.task(i).status for i in range(1, 8)] == ["succeeded"] * 4 + ["pending"] * 3


def test_the_cli_runs_the_batch_rows_alone(capsys, monkeypatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setenv("TMPDIR", "/dev/shm" if Path("/dev/shm").is_dir() else tempfile.gettempdir())
    assert main(["bench", "--durable", "--batches", "--cycles", "20", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "round 1/1: DurableScheduler, batch 1: " in out and "target: DurableScheduler batch 10" in out
    assert main(["bench", "--batches"]) == 2
    assert "--batches goes with --durable" in capsys.readouterr().err
