"""What ``--jobs`` buys ``fencepost check`` and ``fencepost explore``: whole commands, side by side.

  fencepost bench jobs [--impl MODULE:FACTORY] [--jobs J] [--rounds R] [--only check|explore]

Runs ``fencepost check IMPL --jobs 1`` and ``--jobs J`` (default: one per
core), then ``fencepost explore --jobs 1`` and ``--jobs J`` at explore's
default scope, each as a process of its own, alternating the two job counts
``--rounds`` times so that both see the same load. The table gives each
command's wall seconds (min, median, max), the ratio of the medians, and the
median of the rounds' own ratios (each round runs both job counts one after
the other, so its ratio sees one load: on a machine whose speed drifts, the
steadier figure). Each pair's outputs must be the same, line for line, but
for the lines that say how long a run took: ``--jobs`` changes the speed and
never the verdict (``spec/checkers/shards.py``); a pair that differs ends the
benchmark with exit status 1. Last, how independent the cores are under the
same load: J copies of a CPU-bound loop at once against one
(``CORES_LOOP``), as many rounds, so that a speed-up short of J can be
told apart from cores that share an execution unit or a host's other guests.
A benchmark, not a test: no figure is asserted anywhere.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time

#: Words in a command's output that depend on the run's speed, not its verdict: lines holding them are
#: left out of the comparison of the two job counts' outputs.
TIMING_WORDS = re.compile(r"\d+(\.\d+)? ?(s|ms|seconds)\b|/s\b|per second|\bjobs?\b|processes")


def command(what: str, impl: str, jobs: int) -> list[str]:
    """The command line of one measured run."""
    tail = ["check", impl] if what == "check" else ["explore"]
    return [sys.executable, "-m", "fencepost", *tail, "--jobs", str(jobs)]


#: How independent the cores are: a CPU-bound loop in plain Python that shares no memory, run alone and
#: as ``--jobs`` copies at once. ``jobs`` times one copy's wall time over the copies' together is the
#: work the cores did at once against one core's: ``jobs`` when they are independent, less when they
#: share an execution unit (SMT siblings) or a host's other guests take their turns. Not a ceiling for
#: check or explore, whose single process also pays for memory and caches that their shards do not.
CORES_LOOP = "x = 0\nfor i in range(20_000_000):\n    x += i * i\n"


def _verdict(output: str) -> list[str]:
    return [line for line in output.splitlines() if not TIMING_WORDS.search(line)]


def time_one(argv: list[str]) -> tuple[float, int, str]:
    """(wall seconds, exit status, stdout + stderr) of one process."""
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, done.returncode, done.stdout + done.stderr


def turns(rounds: int, jobs: int):
    """The job counts in the order they run: 1 then ``jobs``, then ``jobs`` then 1, and so on, so that
    neither always goes first (a machine warming up or settling would favour it)."""
    for turn in range(rounds):
        yield from ((1, jobs) if turn % 2 == 0 else (jobs, 1))


def time_copies(argv: list[str], copies: int) -> float:
    """Wall seconds for ``copies`` processes of ``argv`` started at once, until the last ends."""
    started = time.perf_counter()
    running = [subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(copies)]
    for process in running:
        process.wait()
    return time.perf_counter() - started


def cores_at_once(jobs: int, rounds: int) -> tuple[list[float], list[float]]:
    """(one copy's wall seconds, ``jobs`` copies' at once), a pair per round, alternating which goes first."""
    argv = [sys.executable, "-c", CORES_LOOP]
    one: list[float] = []
    many: list[float] = []
    for count in turns(rounds, jobs):
        (one if count == 1 else many).append(time_copies(argv, count))
    return one, many


def run(impl: str, jobs: int, rounds: int, only: str | None) -> int:
    """``fencepost bench jobs``: see the module docstring. 0, or 1 when two job counts disagreed."""
    cores = os.cpu_count() or 1
    print(f"fencepost bench jobs: --jobs 1 against --jobs {jobs}, {rounds} round(s), {cores} core(s); "
          f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} at the start", flush=True)
    rows = []
    for what in ("check", "explore"):
        if only not in (None, what):
            continue
        seconds: dict[int, list[float]] = {1: [], jobs: []}
        outputs: dict[int, list[str]] = {}
        for count in turns(rounds, jobs):
            wall, status, output = time_one(command(what, impl, count))
            seconds[count].append(wall)
            print(f"  {what} --jobs {count}: {wall:.1f} s, exit status {status}", flush=True)
            verdict = [f"exit status {status}", *_verdict(output)]
            if outputs.setdefault(count, verdict) != verdict or outputs.get(1, verdict) != verdict:
                print(f"fencepost bench jobs: {what} printed another verdict with --jobs {count}:", file=sys.stderr)
                print("\n".join(verdict), file=sys.stderr)
                return 1
        rows.append((what, seconds))
    print()
    print(f"{'command':<36}  {'min s':>7}  {'median s':>8}  {'max s':>7}  speed-up  per round")
    for what, seconds in rows:
        one = statistics.median(seconds[1])
        for count, walls in seconds.items():
            shown = " ".join(command(what, impl, count)[3:])
            ratio = paired = ""
            if count != 1:
                ratio = f"{one / statistics.median(walls):.2f}x"
                paired = f"{statistics.median(a / b for a, b in zip(seconds[1], walls)):.2f}x"
            print(f"fencepost {shown:<26}  {min(walls):>7.1f}  {statistics.median(walls):>8.1f}  {max(walls):>7.1f}"
                  f"  {ratio:>8}  {paired:>9}")
    if jobs > 1:
        one, many = cores_at_once(jobs, rounds)
        work = [jobs * a / b for a, b in zip(one, many)]
        print(f"the cores: {jobs} copies of a CPU-bound loop at once did {jobs * statistics.median(one) / statistics.median(many):.2f}x "
              f"one copy's work in the same time ({statistics.median(work):.2f}x per round, {min(work):.2f}x to {max(work):.2f}x; "
              f"{jobs}x when the cores are independent)")
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":  # the same as `fencepost bench jobs`
    from fencepost.cli import main

    raise SystemExit(main(["bench", "jobs", *sys.argv[1:]]))
