"""PostgresScheduler's single calls on one connection, in turns with another version's.

``fencepost bench pg-single [--against PYTHON] [--async-commit] [--cycles N] [--turns N]``
(the server: ``--dsn`` or ``$FENCEPOST_PG_DSN``).

A *cycle* is one ``submit``, one ``dispatch`` and one ``complete`` of the task
just submitted, one call after the other on one scheduler (one connection, one
process), time staying at 0: what one client that makes one call at a time
waits for, round trips and commits included. Each side is a process of its own
that warms up (50 cycles: statements prepared, plans cached), then runs
``cycles`` cycles per turn when told; the turns alternate between the sides
(the order flipping every turn) so that both meet the same load, and each
turn reads the CPU time its client (all threads) and its server backend
(``/proc/<pid>/schedstat``, when the server runs on this machine and the
file is readable) spent. The figures: cycles per second over all turns and
the median turn's, CPU microseconds per cycle, and each side's time per turn
over the first side's (the median of the per-turn ratios).

``--against PYTHON`` adds a side run by another interpreter, such as another
checkout's virtual environment: this file is run there as a script, so it
uses nothing of fencepost but ``PostgresScheduler`` and its schema helpers,
which every version has. That is how "before and after" figures are made
under one load.
"""

from __future__ import annotations

import glob
import os
import statistics
import subprocess
import sys
import time

#: Cycles per turn and turns, by default (and with --quick).
CYCLES, TURNS = 500, 6
QUICK_CYCLES, QUICK_TURNS = 100, 2
#: Untimed cycles before the first turn.
WARM_CYCLES = 50
#: Lease length: no lease expires.
DURATION = 1_000_000_000
#: Real seconds a side may take to start, or to run one turn.
BOUND = 600


def _cpu_ns(pid: int) -> int | None:
    """Nanoseconds process ``pid`` (all its threads) has run on a CPU, or None if unreadable."""
    try:
        return sum(int(open(path).read().split()[0]) for path in glob.glob(f"/proc/{pid}/task/*/schedstat"))
    except (OSError, ValueError, IndexError):
        return None


def _side(dsn: str, synchronous: bool) -> None:
    """One side: set up, say ``ready``, then for each line ``N`` run N cycles and answer wall, client and server CPU."""
    from fencepost.impl.postgres import PostgresScheduler

    try:
        from fencepost.impl.postgres.scheduler import drop_schema, temporary_schema_name
    except ImportError:  # before impl/postgres/ became a package
        from fencepost.impl.postgres import drop_schema, temporary_schema_name
    schema = temporary_schema_name("fp_bench_single")
    s = PostgresScheduler(dsn, schema=schema, synchronous_commit=synchronous)
    try:
        backend = s._conn.info.backend_pid
        me = os.getpid()
        s.add_worker("w", 1)

        def cycles(n: int) -> None:
            for _ in range(n):
                s.submit()
                lease = s.dispatch("w", 0, DURATION)
                assert s.complete(lease.task_id, lease.token, 0).accepted

        cycles(WARM_CYCLES)
        print("ready", flush=True)
        for line in sys.stdin:
            n = int(line)
            client, server = _cpu_ns(me), _cpu_ns(backend)
            start = time.perf_counter()
            cycles(n)
            wall = time.perf_counter() - start
            client_after, server_after = _cpu_ns(me), _cpu_ns(backend)
            used = [-1 if a is None or b is None else b - a for a, b in ((client, client_after), (server, server_after))]
            print(wall, *used, flush=True)
    finally:
        s.close()
        drop_schema(dsn, schema)


def measure(dsn: str, sides: list[tuple[str, str]], cycles: int, turns: int, synchronous: bool = True,
            progress=print) -> dict[str, list[tuple[float, int, int]]]:
    """(wall seconds, client CPU ns, server CPU ns; -1 where unreadable) of every turn of every ``(name, python)`` side."""
    mode = "sync" if synchronous else "async"
    procs = {name: subprocess.Popen([python, os.path.abspath(__file__), "--side", dsn, mode],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for name, python in sides}
    try:
        for name, proc in procs.items():
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the {name} side did not start (exit status {proc.wait(BOUND)})")
        names = [name for name, _ in sides]
        turns_of: dict[str, list[tuple[float, int, int]]] = {name: [] for name in names}
        for turn in range(turns):
            for name in (names if turn % 2 == 0 else names[::-1]):
                proc = procs[name]
                proc.stdin.write(f"{cycles}\n")
                proc.stdin.flush()
                wall, client, server = proc.stdout.readline().split()
                turns_of[name].append((float(wall), int(client), int(server)))
                progress(f"  turn {turn + 1}/{turns}: {name}: {cycles / float(wall):,.0f} cycles/s")
        return turns_of
    finally:
        for proc in procs.values():
            proc.stdin.close()
            proc.wait(BOUND)


def format_table(turns_of: dict[str, list[tuple[float, int, int]]], cycles: int) -> list[str]:
    """One row per side: cycles/s (all turns, median turn), CPU us per cycle, time per turn over the first side's."""
    first = next(iter(turns_of))
    lines = [f"{'side':>10}  {'cycles/s':>9}  {'median turn':>11}  {'client CPU/cycle':>16}  {'server CPU/cycle':>16}  "
             f"{'time/turn vs ' + first:>20}"]
    for name, turns in turns_of.items():
        done = cycles * len(turns)
        rate = done / sum(wall for wall, _, _ in turns)
        median = statistics.median(cycles / wall for wall, _, _ in turns)
        cpu = [f"{sum(t[k] for t in turns) / done / 1000:,.0f} us" if all(t[k] >= 0 for t in turns) else "-" for k in (1, 2)]
        ratio = statistics.median(a[0] / b[0] for a, b in zip(turns, turns_of[first]))
        lines.append(f"{name:>10}  {rate:>9,.0f}  {median:>11,.0f}  {cpu[0]:>16}  {cpu[1]:>16}  {ratio:>20.3f}")
    lines.append("a cycle: submit + dispatch + complete, one call at a time on one connection; CPU: the client process")
    lines.append("(all threads) and its server backend; time/turn: median over the turns of the ratio to the first side.")
    return lines


def run(dsn: str, quick: bool, cycles: int | None, turns: int | None, against: str | None,
        synchronous: bool = True) -> int:
    """Measure and print; the caller has checked ``dsn`` (and ``against``, an interpreter)."""
    cycles = cycles or (QUICK_CYCLES if quick else CYCLES)
    turns = turns or (QUICK_TURNS if quick else TURNS)
    sides = [("this", sys.executable)] + ([("against", against)] if against else [])
    load = os.getloadavg()
    print(f"fencepost bench pg-single: {cycles:,} cycles per turn, {turns} turns, "
          f"synchronous_commit={'on' if synchronous else 'off'}; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the start", flush=True)
    if against:
        print(f"  this: {sys.executable}; against: {against}", flush=True)
    turns_of = measure(dsn, sides, cycles, turns, synchronous, progress=lambda line: print(line, flush=True))
    print()
    print("\n".join(format_table(turns_of, cycles)))
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--side"]:
        del sys.path[0]  # this folder: its modules must not shadow anything the side imports
        _side(sys.argv[2], sys.argv[3] == "sync")
    else:  # the same as `fencepost bench pg-single`
        from fencepost.cli import main

        sys.exit(main(["bench", "pg-single", *sys.argv[1:]]))
