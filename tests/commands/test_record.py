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


def test_an_unwritable_path_or_a_bad_number_is_one_line_before_any_recording(tmp_path: Path) -> None:
    """The path is checked before the recording (which may take minutes), not found out by a traceback after it;
    a tick or a switch interval out of range names its argument (a tick of 0 was taken as the default)."""
    missing = run(FACTORY, "zombie", str(tmp_path / "no-such-folder" / "OUT.jsonl"), "--rounds", "3")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.strip() == (f"record: error: PATH {str(tmp_path / 'no-such-folder' / 'OUT.jsonl')!r}: "
                                       "the folder it would go in does not exist")
    for argument, value in (("--switch-interval", "-1"), ("--tick-ms", "0")):
        bad = run(FACTORY, "zombie", str(tmp_path / "OUT.jsonl"), argument, value)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr and not (tmp_path / "OUT.jsonl").exists()
        assert f"argument {argument}: must be" in bad.stderr and repr(value) in bad.stderr


def test_a_folder_as_path_is_refused_asking_for_a_history_file_not_a_trace(tmp_path: Path) -> None:
    folder = run(FACTORY, "zombie", str(tmp_path), "--rounds", "3")
    assert folder.returncode == 2
    assert folder.stderr.strip() == (f"record: error: PATH {str(tmp_path)!r}: is a folder; "
                                     "give a file name for the history (JSON lines)")
