"""``fencepost bench``: its measuring functions on tiny sizes, and the shape of its output.

Nothing here asserts how fast anything is: only that each figure is measured,
positive and reported where the table says.
"""

from __future__ import annotations

import argparse

import pytest

from fencepost.bench import schedulers as bench
from fencepost.bench import timing
from fencepost.commands import bench as bench_command
from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.simple import SimpleScheduler


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    bench_command.add_arguments(parser)
    return parser.parse_args(argv)


def test_the_floor_and_the_indexed_heap_hold_the_same_keys() -> None:
    """The floor is comparable only if both heaps see the same priorities in the same order."""
    initial, during = timing.priorities(50, 20, seed=3)
    scheduler = timing.build(IndexedScheduler, initial)
    assert sorted(entry[:3] for entry in scheduler._ready) == sorted((-p, 0, i) for i, p in enumerate(initial, 1))
    assert all(0 <= p < bench.PRIORITY_LEVELS for p in initial + during)
    assert timing.priorities(50, 20, seed=3) == (initial, during)


@pytest.mark.parametrize("factory", [IndexedScheduler, SimpleScheduler])
def test_a_cycle_keeps_the_pending_count(factory: type) -> None:
    initial, _ = timing.priorities(30, 0, seed=0)
    scheduler = timing.build(factory, initial)
    for priority in (1, 7, 0):
        scheduler.submit(priority)
        lease = scheduler.dispatch("w", 0, timing.DURATION)
        assert scheduler.complete(lease.task_id, lease.token, 0).accepted
    pending = [scheduler.task(i).status for i in range(1, 34)].count("pending")
    assert pending == 30


def test_timings_are_per_cycle_over_the_repetitions() -> None:
    floor = bench.measure_floor(20, cycles=10, repeats=3)
    cycle = bench.measure_cycle(IndexedScheduler, 20, cycles=10, repeats=2)
    assert (floor.cycles, floor.repeats) == (10, 3)
    assert (cycle.cycles, cycle.repeats) == (10, 2)
    for measured in (floor, cycle):
        assert 0 < measured.best_ns <= measured.median_ns


def test_bytes_per_task_counts_what_submit_allocates() -> None:
    assert bench.bytes_per_task(IndexedScheduler, 200) > 0
    assert bench.bytes_per_task(SimpleScheduler, 200) > 0


def test_every_size_gets_a_row_and_simple_is_skipped_above_its_limit() -> None:
    said: list[str] = []
    small, large = bench.measure([10, 20], cycles=5, repeats=2, simple_max=10, progress=said.append)
    assert (small.size, large.size) == (10, 20)
    assert small.simple is not None and large.simple is None
    assert small.indexed.repeats == large.floor.repeats == 2
    assert said[:2] == ["  building 10 pending tasks", "  building 20 pending tasks"]
    assert "  timing simple at 20" not in said
    assert bench.simple_cycles(10**5, 20_000) < bench.simple_cycles(10**3, 20_000)


def test_loops_run_the_cycles_they_are_asked_for() -> None:
    loop = bench.floor_loop(10, cycles=8)
    calls = []
    timing.timed({"counted": lambda count: calls.append(count) or loop(count)}, repeats=2, cycles=8)
    assert calls == [8, timing.WARM_CYCLES, 8, timing.WARM_CYCLES, 8]


def rows_for(*sizes: int) -> list[bench.Row]:
    return bench.measure(sizes, cycles=5, repeats=1, simple_max=max(sizes) // 2)


def test_the_table_has_a_row_per_size_and_says_what_was_skipped() -> None:
    text = bench.format_table(rows_for(10, 40), simple_max=20)
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["N", "pending", "heapq"]
    assert "idx/floor" in lines[0] and "idx/idx@10" in lines[0] and "idx B/task" in lines[0]
    assert lines[1].split()[0] == "10" and lines[2].split()[0] == "40"
    assert "skipped" in lines[2] and "skipped" not in lines[1]
    assert lines[1].split()[6] == "1.00x"  # the first size against itself
    assert "skipped above 20 (40)" in text
    assert "targets: judged only when the sizes include 1,000 and 1,000,000" in text


def test_targets_are_judged_at_a_million_against_a_thousand() -> None:
    timing = bench.Timing(100.0, 110.0, 1, 1)
    rows = [
        bench.Row(1_000, timing, bench.Timing(1000.0, 1000.0, 1, 1), None, 250.0, 150.0),
        bench.Row(1_000_000, bench.Timing(500.0, 500.0, 1, 1), bench.Timing(1500.0, 1600.0, 1, 1), None, 320.0, 170.0),
    ]
    lines = bench.format_targets(rows)
    assert lines[0] == "targets for IndexedScheduler at 1,000,000 pending tasks:"
    assert "3.00x" in lines[1] and lines[1].endswith("MISSED")  # 1500 / 500 > 2.5
    assert "1.50x" in lines[2] and lines[2].endswith("holds")  # 1500 / 1000 <= 1.6
    assert "320" in lines[3] and lines[3].endswith("MISSED")  # > 300 bytes
    assert "the heapq floor itself grows 5.00x" in lines[4]


def test_spec_speed_reports_both_machines() -> None:
    # The conformance machine is in this tree, so the figure must be measured, not "unavailable".
    speed = bench.spec_speed(examples=2, steps=5, repeats=2)
    assert not isinstance(speed, str), speed
    text = bench.format_spec_speed(speed)
    assert speed.full_steps > 0 and speed.trivial_steps > 0
    assert speed.full_steps_per_s > 0 and speed.trivial_steps_per_s > 0
    assert "full conformance machine" in text and "trivial two-rule machine" in text


def test_spec_speed_unavailable_is_one_line() -> None:
    text = bench.format_spec_speed("ImportError: no module named spec.machine")
    assert text == "spec speed: unavailable (ImportError: no module named spec.machine)"


def test_run_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_command.run(parse("--sizes", "10,30", "--cycles", "5", "--repeats", "1", "--no-spec")) == 0
    out = capsys.readouterr().out
    assert out.startswith("fencepost bench: sizes 10, 30")
    assert "N pending" in out and "spec speed" not in out


@pytest.mark.parametrize("argv", [("--sizes", "0"), ("--sizes", "ten"), ("--sizes", ",")])
def test_bad_sizes_are_a_usage_error(argv: tuple[str, ...]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse(*argv)
    assert exit_info.value.code == 2


def test_a_count_below_one_is_a_usage_error() -> None:
    from fencepost.cli import UsageError

    with pytest.raises(UsageError, match="--repeats must be >= 1, got 0"):
        bench_command.run(parse("--sizes", "10", "--repeats", "0", "--no-spec"))


def test_sizes_accept_underscores() -> None:
    assert parse("--sizes", "1_000,10").sizes == [1000, 10]
