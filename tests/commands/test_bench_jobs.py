"""``fencepost bench jobs``: the two job counts' verdicts must agree; the timings are never asserted."""

from __future__ import annotations

from fencepost.bench import jobs


def test_lines_about_speed_are_left_out_of_the_verdict() -> None:
    output = "impl:Scheduler conforms: 200 runs in 13.1 s (4,100 steps/s)\ncoverage: 27 of 27\n"
    assert jobs._verdict(output) == ["coverage: 27 of 27"]


def test_runs_alternate_and_a_verdict_that_changes_with_the_job_count_ends_it(monkeypatch, capsys) -> None:
    ran = []

    def fake(argv):
        ran.append((argv[3], argv[-1]))
        verdict = "conforms" if argv[-1] == "1" or argv[3] == "check" else "does NOT conform"
        return 1.0, 0, verdict + "\n"

    monkeypatch.setattr(jobs, "time_one", fake)
    monkeypatch.setattr(jobs, "time_copies", lambda argv, copies: 1.0)
    assert jobs.run("impl:Scheduler", 2, 2, "check") == 0
    assert ran == [("check", "1"), ("check", "2"), ("check", "2"), ("check", "1")]  # alternating turns
    assert "speed-up" in capsys.readouterr().out
    ran.clear()
    assert jobs.run("impl:Scheduler", 2, 2, "explore") == 1  # explore's verdict changed with --jobs 2
    assert "explore printed another verdict with --jobs 2" in capsys.readouterr().err


def test_the_table_gives_the_ratio_of_the_medians_and_the_median_of_the_rounds_ratios(monkeypatch, capsys) -> None:
    walls = iter([10.0, 5.0, 10.0, 40.0, 30.0, 30.0])  # in call order: round 1 (1, 2), round 2 (2, 1), round 3 (1, 2)
    monkeypatch.setattr(jobs, "time_one", lambda argv: (next(walls), 0, "conforms\n"))
    monkeypatch.setattr(jobs, "time_copies", lambda argv, copies: 1.0)
    assert jobs.run("impl:Scheduler", 2, 3, "check") == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("fencepost check") and "--jobs 2" in line)
    # medians 30 / 10 = 3.00x; the rounds' own ratios 10/5, 40/10, 30/30 have the median 2.00x
    assert row.split()[-2:] == ["3.00x", "2.00x"]


def test_the_cores_figure_is_jobs_copies_of_a_loop_at_once_against_one(monkeypatch, capsys) -> None:
    copies = []

    def fake(argv, count):
        copies.append(count)
        return {1: 2.0, 2: 2.5}[count]  # two at once take 1.25x one's time: 1.60x the work

    monkeypatch.setattr(jobs, "time_copies", fake)
    assert jobs.cores_at_once(2, 3) == ([2.0, 2.0, 2.0], [2.5, 2.5, 2.5])
    assert copies == [1, 2, 2, 1, 1, 2]  # alternating, as the commands' rounds do
    monkeypatch.setattr(jobs, "time_one", lambda argv: (1.0, 0, "conforms\n"))
    assert jobs.run("impl:Scheduler", 2, 1, "check") == 0
    assert "did 1.60x one copy's work in the same time (1.60x per round" in capsys.readouterr().out


def test_copies_are_all_started_before_any_is_waited_for(monkeypatch) -> None:
    events = []

    class Process:
        def __init__(self, argv, **_):
            events.append("start")

        def wait(self):
            events.append("wait")

    monkeypatch.setattr(jobs.subprocess, "Popen", Process)
    jobs.time_copies(["python"], 3)
    assert events == ["start", "start", "start", "wait", "wait", "wait"]
