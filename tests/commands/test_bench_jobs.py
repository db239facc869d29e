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
    assert jobs.run("impl:Scheduler", 2, 2, "check") == 0
    assert ran == [("check", "1"), ("check", "2"), ("check", "2"), ("check", "1")]  # alternating turns
    assert "speed-up" in capsys.readouterr().out
    ran.clear()
    assert jobs.run("impl:Scheduler", 2, 2, "explore") == 1  # explore's verdict changed with --jobs 2
    assert "explore printed another verdict with --jobs 2" in capsys.readouterr().err
