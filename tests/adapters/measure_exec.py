"""Measure what crossing a process boundary costs: ``check --exec`` against the in-process check.

    .venv/bin/python tests/adapters/measure_exec.py [RUNS]

Runs the same derandomized check (``RUNS`` runs per batch, default 200, the
CI count) on ``fencepost.Scheduler`` in process and behind
``python_adapter.py`` (and ``scheduler.js`` where Node is installed), and
prints steps per second for each, with the CPU seconds of fencepost's
process and of the adapter program. A step is one call of the conformance
machine (with the views it reads afterwards).
"""

from __future__ import annotations

import resource
import shlex
import shutil
import sys
import time
from pathlib import Path

from fencepost import Scheduler
from fencepost.spec.adapters.exec import ExecProgram
from fencepost.spec.checkers import lockstep
from fencepost.spec.checkers.check import check_factory

HERE = Path(__file__).resolve().parent


def measure(name: str, factory: object, runs: int) -> None:
    steps = 0
    original = lockstep.Lockstep.step

    def counting(self, op, args):
        nonlocal steps
        steps += 1
        return original(self, op, args)

    lockstep.Lockstep.step = counting
    mine, theirs = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    try:
        result = check_factory(factory, max_examples=runs)
        if isinstance(factory, ExecProgram):
            factory.close()  # reaped, so its CPU time is counted
    finally:
        lockstep.Lockstep.step = original
    seconds = time.perf_counter() - started
    mine2, theirs2 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (mine2.ru_utime + mine2.ru_stime) - (mine.ru_utime + mine.ru_stime)
    child = (theirs2.ru_utime + theirs2.ru_stime) - (theirs.ru_utime + theirs.ru_stime)
    print(f"{name:<28} {'conforms' if result.passed else 'FAILS':<9} {result.examples:>5} runs {steps:>7} steps "
          f"{seconds:7.1f} s  {steps / seconds:7.0f} steps/s  cpu: fencepost {cpu:5.1f} s, program {child:5.1f} s", flush=True)


def main(argv: list[str]) -> None:
    runs = int(argv[0]) if argv else 200
    measure("in process", Scheduler, runs)
    python = ExecProgram(f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'python_adapter.py'))}")
    python.start()
    measure("--exec python_adapter.py", python, runs)
    if shutil.which("node"):
        node = ExecProgram(f"node {shlex.quote(str(HERE / 'scheduler.js'))}")
        node.start()
        measure("--exec scheduler.js", node, runs)


if __name__ == "__main__":
    main(sys.argv[1:])
