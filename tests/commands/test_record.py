"""``python -m fencepost.impl.peers.record``: the pinned command, its arguments parsed in the commands layer.

The library module keeps the races and the recording; its ``__main__`` block
hands the command line to ``fencepost.commands.record`` (``test_layers.py``
states the rule). These run the command as a user types it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fencepost.spec.formats.history import load_history

#: The command, as the docs pin it.
COMMAND = [sys.executable, "-m", "fencepost.impl.peers.record"]

#: A factory every install has: one in-memory scheduler, called from every thread.
FACTORY = "fencepost.impl.simple:SimpleScheduler"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=120, check=False)


def test_the_pinned_command_records_a_history_and_says_what_the_race_saw(tmp_path: Path) -> None:
    out = tmp_path / "OUT.jsonl"
    done = run(FACTORY, "zombie", str(out), "--rounds", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (f"{out}: {len(load_history(out).events)} events, 4 threads, 3 rounds of zombie; "
                                   "the race saw 0 problem(s): nothing")
    assert done.stderr == ""


def test_bad_arguments_are_one_line_and_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "OUT.jsonl"
    unknown = run("fencepost.impl.simple:Nothing", "zombie", str(out), "--rounds", "3")
    assert unknown.returncode == 2 and not out.exists()
    assert unknown.stderr.strip().splitlines() == [unknown.stderr.strip()] and "record: error:" in unknown.stderr
    assert "Nothing" in unknown.stderr and "Traceback" not in unknown.stderr
    race = run(FACTORY, "stampede", str(out))
    assert race.returncode == 2 and "invalid choice: 'stampede'" in race.stderr and "Traceback" not in race.stderr
