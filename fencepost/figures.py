"""Write a measured figure into the docs, stamped with when, where and how it was measured.

    python -m fencepost.figures NAME -- COMMAND [ARG ...]

runs COMMAND (``fencepost ...`` means this interpreter's ``python -m
fencepost``, ``python ...`` this interpreter), and writes what it printed to ``docs/figures/NAME.md``: a
line saying the date, the commit, the CPU, the core count and the load
average when it ran, the command that refreshes it, and the output as a
block. A docs page shows it with ``--8<-- "figures/NAME.md"``. So a table in
the docs is always the output of a command anyone can rerun, and says how
old it is; ``tests/docs/test_figures.py`` checks every figure file has its
stamp and names a command that parses.

Exit status: the command's own, after writing; 2 with one line on bad
arguments (no NAME, no ``--``, a NAME that is not a plain file name).
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

#: Where figures are written, relative to the repository.
FIGURES = Path("docs") / "figures"
#: A figure's name: a plain file name, so it cannot write outside FIGURES.
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
#: The first line of every figure file starts with this, so a test can find the stamp.
STAMP_PREFIX = "<!-- figure:"


def cpu_model() -> str:
    """The CPU's model name as the kernel reports it, or the platform's word for it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def commit(repo: Path) -> str:
    """The short commit of ``repo``, with ``+changes`` when the tree differs from it; ``unknown`` outside git."""
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def stamp(command: list[str], repo: Path, when: datetime.datetime | None = None) -> str:
    """The stamp line: date, commit, CPU, cores, load (1, 5, 15 min), and the command that refreshes it."""
    when = when or datetime.datetime.now(datetime.timezone.utc)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"Measured {when:%Y-%m-%d %H:%M} UTC at commit {commit(repo)} on {cpu_model()} "
            f"({os.cpu_count()} cores), load average {load}, by `{shlex.join(command)}`.")


def write(name: str, command: list[str], repo: Path) -> int:
    """Run ``command`` and write ``FIGURES/name.md``; return the command's exit status."""
    if command[0] == "fencepost":
        argv = [sys.executable, "-m", "fencepost", *command[1:]]
    elif command[0] == "python":
        argv = [sys.executable, *command[1:]]
    else:
        argv = command
    line = stamp(command, repo)
    done = subprocess.run(argv, cwd=repo, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    out = done.stdout.rstrip("\n")
    refresh = shlex.join(["python", "-m", "fencepost.figures", name, "--", *command])
    body = (f"{STAMP_PREFIX} {name}; refresh with: {refresh} -->\n"
            f"*{line}*\n\n```text\n{out}\n```\n")
    target = repo / FIGURES / f"{name}.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(body, encoding="utf-8")
    if done.returncode:
        sys.stderr.write(done.stderr)
    return done.returncode


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or args[1] != "--":
        print("python -m fencepost.figures: usage: NAME -- COMMAND [ARG ...]", file=sys.stderr)
        return 2
    name, command = args[0], args[2:]
    if not NAME.fullmatch(name):
        print(f"python -m fencepost.figures: NAME must be lowercase letters, digits and '-', not {name!r}",
              file=sys.stderr)
        return 2
    return write(name, command, Path.cwd())


if __name__ == "__main__":
    raise SystemExit(main())
