"""What declared variants cost ``fencepost check``: steps per second, side by side.

  fencepost bench variants [--impl MODULE:FACTORY] [--examples N] [--rounds R]
                                                  [--variant NAME=VALUE ...]

Checks the same scheduler (default ``impl:Scheduler``) under the contract and
under the given variants (default ``order=any`` and ``tokens=opaque``, the two
that make the lockstep follow the scheduler's choice and rename tokens),
alternating, ``--rounds`` times each, so that both see the same load. A step
is one call into the scheduler (every outcome the coverage counted); the table
gives steps, seconds and steps/s per run, then the ratio of the medians. A
benchmark, not a test: the figures depend on the machine and its load, and
none is asserted anywhere.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from fencepost.spec.checkers.check import check_factory
from fencepost.spec.variants import DEFAULT, Variants

#: The variants measured when none are given: the two that make the checker follow and rename.
MEASURED = ("order=any", "tokens=opaque")


def measure(factory: object, variants: Variants, examples: int) -> tuple[int, float]:
    """(steps, seconds) of one ``check_factory`` run of ``examples`` runs under ``variants``."""
    started = time.perf_counter()
    result = check_factory(factory, max_examples=examples, variants=variants, call_timeout=None)
    seconds = time.perf_counter() - started
    if not result.passed:
        raise SystemExit(f"the scheduler does not conform under {variants.describe()}: {result.failure}")
    return sum(result.coverage.outcomes.values()), seconds


def run(factory: Callable[[], object], variants: Variants, examples: int, rounds: int) -> int:
    """``fencepost bench variants``: the contract and ``variants`` in alternating checks, steps/s; 0."""
    rates: dict[str, list[float]] = {"the contract": [], variants.describe(): []}
    print(f"{'under':<40}  {'steps':>7}  {'seconds':>8}  {'steps/s':>8}")
    for _ in range(rounds):
        for side in (DEFAULT, variants):
            steps, seconds = measure(factory, side, examples)
            rates[side.describe()].append(steps / seconds)
            print(f"{side.describe():<40}  {steps:>7}  {seconds:>8.2f}  {steps / seconds:>8.0f}", flush=True)
    contract, declared = (statistics.median(r) for r in rates.values())
    print(f"median steps/s: the contract {contract:.0f}, {variants.describe()} {declared:.0f}; "
          f"the contract is {contract / declared:.2f}x as fast")
    return 0


if __name__ == "__main__":  # the same as `fencepost bench variants`
    import sys

    from fencepost.cli import main

    raise SystemExit(main(["bench", "variants", *sys.argv[1:]]))
