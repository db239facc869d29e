"""What checking on the real clock costs, and the Redis 7.0 claim boundary, measured.

  fencepost bench real-clock [--impl MODULE:FACTORY] [--examples N] [--steps N] [--rounds R] [--tick-ms N]
  fencepost bench real-clock-soak [--impl MODULE:FACTORY] [--runs N] [--tick-ms N]
  fencepost bench redis-boundary [--trials N] [--idle-ms M]

``real-clock`` checks one scheduler (default the in-memory reference,
``fencepost:Scheduler``) with the same runs and steps on logical time and on
the real clock (``--clock real``), alternating, ``--rounds`` times each: wall
seconds, CPU seconds of this process, steps (calls the coverage counted) and
steps per wall second, then the ratio of the medians, and the real clock's
lateness. A factory on its server's clock (``fencepost_clock = "real"``) is
measured on the real clock only. A benchmark, not a test: nothing here is
asserted anywhere.

``real-clock-soak`` runs the check ``fencepost check IMPL --clock real``
runs (its default runs and steps) ``--runs`` times in a row, run ``i``
with seed ``i`` so each explores other calls, and prints one line per check:
its verdict, the inconclusive runs, the lateness and the load average
before and after. It says how many checks found something; on a correct
scheduler that must be none, whatever the load (put the load there
yourself, e.g. ``for i in 1 2 3 4; do python3 -c 'while 1: pass' & done``).

``redis-boundary`` probes where ``XAUTOCLAIM`` takes an entry back: in one
Lua script (the server's clock stands still inside one), ``XCLAIM ... IDLE M``
makes an entry exactly ``M`` ms idle, then ``XAUTOCLAIM`` with
``min-idle-time`` ``M - 1``, ``M`` and ``M + 1`` says whether it claims it.
The documentation says it claims entries "pending for more than
min-idle-time milliseconds"; the count at exactly ``M`` says what the server does.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

from fencepost.spec.checkers.check import check_factory
from fencepost.spec.checkers.realtime import Timing
from fencepost.spec.realclock import declares_real_clock
from fencepost.spec.variants import Variants


def measure(factory: Callable[[], object], examples: int, steps: int, timing: Timing | None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, steps) of one check of ``examples`` runs of ``steps`` steps; logical without ``timing``."""
    variants = Variants.from_declared(getattr(factory, "fencepost_variants", None))
    wall, cpu = time.perf_counter(), time.process_time()
    result = check_factory(factory, max_examples=examples, steps=steps, variants=variants, timing=timing,
                           call_timeout=None)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if not result.passed:
        raise SystemExit(f"the scheduler does not conform: {result.failure}")
    return wall, cpu, sum(result.coverage.outcomes.values())


def run(factory: Callable[[], object], examples: int, steps: int, rounds: int, tick_ms: int) -> int:
    """``fencepost bench real-clock``: logical and real-clock checks in turns, a table; 0."""
    sides = ["real"] if declares_real_clock(factory) else ["logical", "real"]
    rows: dict[str, list[tuple[float, float, int]]] = {side: [] for side in sides}
    timings: list[Timing] = []
    print(f"load average at the start: {', '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"{examples} runs of up to {steps} steps, tick {tick_ms} ms, {rounds} round(s)")
    print(f"{'side':<8} {'round':>5} {'wall s':>8} {'cpu s':>7} {'steps':>6} {'steps/s':>8}")
    for number in range(1, rounds + 1):
        for side in sides:
            timing = Timing(tick_ms) if side == "real" else None
            wall, cpu, done = measure(factory, examples, steps, timing)
            if timing is not None:
                timings.append(timing)
            rows[side].append((wall, cpu, done))
            print(f"{side:<8} {number:>5} {wall:>8.2f} {cpu:>7.2f} {done:>6} {done / wall:>8.1f}")
    medians = {side: (statistics.median(r[0] for r in rows[side]), statistics.median(r[1] for r in rows[side]))
               for side in sides}
    if len(sides) == 2:
        print(f"real clock / logical, medians: {medians['real'][0] / medians['logical'][0]:.1f}x the wall time, "
              f"{medians['real'][1] / medians['logical'][1]:.2f}x the CPU time")
    merged = Timing(tick_ms)
    for timing in timings:
        merged.lateness += timing.lateness
        merged.either += timing.either
        merged.explained += timing.explained
        merged.inconclusive += timing.inconclusive
    print(merged.summary())
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


def soak(factory: Callable[[], object], runs: int, tick_ms: int) -> int:
    """``fencepost bench real-clock-soak``: ``runs`` real-clock checks in a row, one line each; 0.

    A finding is printed with its counterexample's failure and counted, not
    raised: the table is the result. Each check costs what ``fencepost check
    --clock real`` costs (seconds to minutes).
    """
    from fencepost.spec.checkers.realtime import REAL_EXAMPLES, REAL_STEPS, ticked

    variants = Variants.from_declared(getattr(factory, "fencepost_variants", None))
    print(f"{runs} checks on the real clock, tick {tick_ms} ms, {REAL_EXAMPLES} runs of up to {REAL_STEPS} steps each, "
          f"check i with seed i")
    print(f"{'check':>5} {'verdict':<9} {'runs':>5} {'inconcl.':>8} {'lateness p50/p99/max ms':>24} "
          f"{'wall s':>7} {'load before':>12} {'load after':>11}")
    findings = inconclusive = 0
    for number in range(1, runs + 1):
        timing = Timing(tick_ms)
        before = os.getloadavg()[0]
        wall = time.perf_counter()
        result = check_factory(ticked(factory, tick_ms), max_examples=REAL_EXAMPLES, steps=REAL_STEPS, seed=number,
                               variants=variants, timing=timing)
        wall = time.perf_counter() - wall
        median, p99, top = timing.percentiles()
        findings += not result.passed
        inconclusive += timing.inconclusive
        print(f"{number:>5} {'conforms' if result.passed else 'FINDING':<9} {result.examples:>5} {timing.inconclusive:>8} "
              f"{f'{median:.2f}/{p99:.2f}/{top:.2f}':>24} {wall:>7.1f} {before:>12.1f} {os.getloadavg()[0]:>11.1f}",
              flush=True)
        if not result.passed:
            print(f"      {result.failure}")
    print(f"{findings} of {runs} checks found something; {inconclusive} runs inconclusive in all (set aside, not findings)")
    return 0


# In one script the server's time stands still: XCLAIM ... IDLE sets the entry's delivery time to
# now - IDLE exactly, so XAUTOCLAIM sees it idle for exactly IDLE ms.
_PROBE = """
redis.call('XCLAIM', KEYS[1], 'g', 'holder', 0, ARGV[1], 'IDLE', ARGV[2], 'JUSTID')
local claimed = redis.call('XAUTOCLAIM', KEYS[1], 'g', 'claimer', ARGV[3], '0-0', 'COUNT', 1, 'JUSTID')
return #claimed[2]
"""


def probe(trials: int, idle_ms: int, url: str | None = None) -> dict[int, int]:
    """How many of ``trials`` entries idle exactly ``idle_ms`` ms ``XAUTOCLAIM`` claims, per min-idle-time tried."""
    import redis

    from fencepost.impl.peers.redis_streams import DEFAULT_URL

    client = redis.Redis.from_url(url or os.environ.get("FENCEPOST_REDIS_URL", DEFAULT_URL), decode_responses=True)
    key = f"fp:boundary:{os.getpid()}"
    script = client.register_script(_PROBE)
    claimed = {idle_ms - 1: 0, idle_ms: 0, idle_ms + 1: 0}
    try:
        client.delete(key)
        client.xgroup_create(key, "g", id="0", mkstream=True)
        for _ in range(trials):
            for min_idle in claimed:
                entry = client.xadd(key, {"probe": 1})
                client.xreadgroup("g", "holder", {key: ">"}, count=1)
                claimed[min_idle] += script(keys=[key], args=[entry, idle_ms, min_idle])
                client.xack(key, "g", entry)
    finally:
        client.delete(key)
    return claimed


def run_boundary(trials: int, idle_ms: int) -> int:
    """``fencepost bench redis-boundary``: the claims at min-idle-time M - 1, M and M + 1 of entries idle exactly M ms; 0."""
    import redis

    from fencepost.impl.peers.redis_streams import DEFAULT_URL

    client = redis.Redis.from_url(os.environ.get("FENCEPOST_REDIS_URL", DEFAULT_URL))
    version = client.info("server")["redis_version"]
    claimed = probe(trials, idle_ms)
    print(f"Redis {version}: entries idle exactly {idle_ms} ms (XCLAIM ... IDLE {idle_ms}, then XAUTOCLAIM, in one script)")
    for min_idle, count in claimed.items():
        print(f"  XAUTOCLAIM min-idle-time {min_idle}: claimed {count}/{trials}")
    return 0
