"""Benchmark ``replay`` and ``report`` of long traces (a measurement, not a test).

Usage: ``fencepost bench long-trace [--tasks 10000,100000] [--keep FOLDER]``

For each size, writes ``fencepost bench tui``'s generated scenario of that
many tasks (``tui.generate``: the submits, then a few hundred rounds of
dispatches, completions, failures, expiries and stale completions) as a JSON
file, then times each command a user runs on it, as a process of its own
(``python -m fencepost``), so the figure is the whole command: starting
Python, reading the file, running it, writing the output.

* ``replay FILE``: every step on the default scheduler, each one checked;
* ``report FILE -o PAGE``: every step on the default scheduler with the
  model beside it, then the page.

It prints wall and CPU seconds (the child's user + system time) per command
and per size, the largest peak memory of the commands so far, and the CPU microseconds per step past the command's fixed cost
(its CPU on a trace of ``BASE_TASKS`` tasks: Python, the imports): flat
across the sizes when the command is linear in the trace's length (issue 33:
10^4, 10^5, 10^6).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fencepost.bench.tui import generate
from fencepost.spec.formats.scenario import dump_scenario

#: The trace whose CPU time is taken as a command's fixed cost: a few hundred steps.
BASE_TASKS = 10


def _timed(argv: list[str]) -> tuple[float, float, int]:
    """Run ``python -m fencepost ARGV``: (wall seconds, CPU seconds, exit status); the largest
    child's peak memory so far is ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fencepost", *argv], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # 1: a scenario that does not conform, still a full run
        raise SystemExit(f"fencepost {' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def _peak() -> float:
    """The largest peak memory of any command run so far, in MB (Linux counts it in KiB)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def run(sizes: list[int], keep: str | None = None) -> int:
    """``fencepost bench long-trace``: one line per command and size. Always 0."""
    folder = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="fencepost-long-trace-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the start; files in {folder}", flush=True)
    print(f"{'command':<8}{'tasks':>10}{'steps':>10}{'MB':>7}{'wall s':>9}{'CPU s':>9}{'us/step':>13}{'peak MB':>9}", flush=True)
    per_step: dict[str, list[float]] = {}
    base: dict[str, tuple[int, float]] = {}  # command -> (steps, CPU seconds) of the BASE_TASKS trace
    for tasks in (BASE_TASKS, *sizes):
        scenario = generate(tasks)
        path = folder / f"trace-{tasks}.json"
        dump_scenario(scenario, path)
        steps = len(scenario.steps)
        megabytes = path.stat().st_size / 1e6
        page = folder / f"trace-{tasks}.html"
        for name, argv in (("replay", ["replay", str(path)]), ("report", ["report", str(path), "-o", str(page)])):
            wall, cpu, _ = _timed(argv)
            if name not in base:
                base[name] = (steps, cpu)
                print(f"{name:<8}{tasks:>10,}{steps:>10,}{megabytes:>7.1f}{wall:>9.2f}{cpu:>9.2f}{'(fixed cost)':>13}"
                      f"{_peak():>9.0f}   load {os.getloadavg()[0]:.1f}", flush=True)
                continue
            micro = (cpu - base[name][1]) / (steps - base[name][0]) * 1e6
            per_step.setdefault(name, []).append(micro)
            print(f"{name:<8}{tasks:>10,}{steps:>10,}{megabytes:>7.1f}{wall:>9.2f}{cpu:>9.2f}{micro:>13.1f}"
                  f"{_peak():>9.0f}   load {os.getloadavg()[0]:.1f}", flush=True)
    for name, micros in per_step.items():
        growth = ", ".join(f"{m / micros[0]:.2f}" for m in micros)
        print(f"{name}: CPU per step past the fixed cost, against the first size: {growth} (1.00 all along: linear)")
    if not keep:
        for leftover in folder.iterdir():
            leftover.unlink()
        folder.rmdir()
    return 0
