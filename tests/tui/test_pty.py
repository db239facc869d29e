"""The commands a newcomer types, in a real terminal (a pseudo-terminal, not a pipe): none ends in a traceback.

Issue 20: ``fencepost demo`` raised ``AttributeError`` (``exec_command``)
every time in a terminal, after writing its trace, and no test saw it
because every test piped its output, where the demo only writes the file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fencepost.spec.formats.history import write_history
from long_history import long_history
from pty_helpers import fencepost_command, run_in_pty

ROOT = Path(__file__).resolve().parents[2]

#: The README and the docs pages its sections moved to: what a newcomer reads and types from.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: What the app draws once it is up and reading keys.
STEP_SCREEN = "step 0/"


def no_traceback(run, status: int = 0) -> None:
    assert "Traceback" not in run.text, run.text[-3000:]
    assert run.status == status, run.text[-3000:]


def test_fencepost_demo_opens_its_trace_in_the_tui_and_quits_cleanly(tmp_path):
    out = tmp_path / "demo.toml"
    run = run_in_pty([*fencepost_command(), "demo", "--out", str(out)], [(STEP_SCREEN, b"l"), ("Step 1 of", b"q")],
                     cwd=tmp_path)
    no_traceback(run)
    assert "wrote" in run.text and out.exists()
    assert "fencepost demo --workers 4 --tasks 16 --seed 0" in run.text  # the trace's title, on the TUI's screen


def readme_subcommands() -> set[str]:
    """Every subcommand the README (or a docs page it moved to) shows as ``fencepost NAME``."""
    from fencepost.cli import SUBCOMMANDS

    shown = set().union(*(re.findall(r"\bfencepost ([a-z]+)\b", page.read_text()) for page in PAGES))
    return shown & set(SUBCOMMANDS)


#: A cheap, real run of each subcommand the README shows, in the README's own words where those
#: are cheap: (argv after `fencepost`, keys to type, exit status). The TUI's are quit with q
#: (Esc first where the command line has the keys).
def readme_runs(tmp_path: Path) -> dict[str, list[tuple[list[str], list[tuple[str, bytes]], int]]]:
    history = tmp_path / "run.jsonl"
    write_history(history, long_history(20).events)
    return {
        "check": [(["check", "mypackage.sched:MyScheduler"], [], 2),
                  (["check", "impl.mutants.worker_identity:Scheduler", "--trace-out", "cx.toml"], [], 1)],
        "replay": [(["replay", "cx.toml", "--impl", "impl.mutants.worker_identity:Scheduler"], [], 1),
                   (["replay", "cx.toml"], [], 0)],
        "tui": [([], [(STEP_SCREEN, b"q")], 0),
                (["tui", "--list"], [], 0),
                (["tui", "capacity-one"], [(STEP_SCREEN, b"q")], 0),
                (["tui", "cx.toml"], [(STEP_SCREEN, b"dq")], 0),
                # Esc once the line has the focus (its footer says "Leave line"), q once the footer
                # says "Interact" (the line is left): a q typed sooner would go into the line
                (["tui", "--new"], [("Leave line", b"\x1b"), ("Interact", b"q")], 0),
                (["tui", str(history)], [("NOT linearizable", b"fq")], 0)],
        "explore": [(["explore", "--impl", "mypackage.sched:MyScheduler"], [], 2),
                    (["explore", "--tasks", "1", "--horizon", "1", "--depth", "3"], [], 0)],
        "linearize": [(["linearize", str(history)], [], 1), (["linearize", str(history), "--order"], [], 1)],
        "crash": [(["crash", "impl.durable:DurableScheduler", "--kills", "2"], [], 0)],
        "faults": [(["faults", "--faults", "nonsense"], [], 2), (["faults", "--times", "0"], [], 2)],
        "bench": [(["bench", "--sizes", "nonsense"], [], 2)],
        "demo": [(["demo", "--workers", "1"], [], 2)],
        "report": [(["report", "no-such-walkthrough"], [], 2)],
    }


def test_every_subcommand_the_readme_shows_has_a_run_below(tmp_path):
    assert readme_subcommands() <= set(readme_runs(tmp_path)), "a subcommand the README shows has no pty run here"
    assert {"check", "replay", "tui"} <= readme_subcommands()


@pytest.mark.parametrize("name", sorted(readme_subcommands()))
def test_each_subcommand_the_readme_shows_ends_without_a_traceback_in_a_terminal(tmp_path, name):
    if name in ("replay", "tui"):  # a counterexample to replay and look at, as the README does
        run_in_pty([*fencepost_command(), "check", "impl.mutants.worker_identity:Scheduler", "--trace-out", "cx.toml"],
                   cwd=tmp_path)
    for argv, keys, status in readme_runs(tmp_path)[name]:
        run = run_in_pty([*fencepost_command(), *argv], keys, cwd=tmp_path)
        no_traceback(run, status)
        if status == 2:
            errors = [line for line in run.text.splitlines() if ": error: " in line]
            assert len(errors) == 1, run.text
