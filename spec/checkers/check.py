"""Check a scheduler factory against the whole spec.

``fencepost check MODULE:FACTORY`` builds the conformance machine for the
factory, runs it under Hypothesis, and prints either a conformance summary
(exit 0) or the shrunk counterexample as numbered steps -- call, expected,
got -- (exit 1). Bad arguments and factories that cannot be imported are one
line and exit 2.

After the machine, fixed boundary probes (``spec.checkers.boundaries``) try
the ends of every value's range: the largest valid and the smallest invalid
int, lease end, retry time, worker name and key.

Without ``--seed`` the run is derandomized, so the same command gives the same
verdict every time; ``--seed S`` explores a different, reproducible part of
the space.

``fencepost check --exec COMMAND`` checks a scheduler in any language instead:
a program speaking the adapter protocol (``spec.formats.adapter``), started
once. Every call has the ``--call-timeout`` deadline (``spec.checkers.deadline``);
a call that does not return in time is a counterexample ending in that call.

``--variant NAME=VALUE`` (repeatable) checks under declared contract
variants (``spec.variants``) instead of the contract's rule for each; a
factory or its class may declare its own (``fencepost_variants = {...}``),
an ``--exec`` program in its ``hello``; a flag that disagrees with the
declaration is a usage error. The summary says which variants were in force.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import hypothesis
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from fencepost.spec import profiles
from fencepost.spec.arguments import (
    UsageError,
)
from fencepost.spec.checkers.boundaries import check_boundaries
from fencepost.spec.checkers.capabilities import Capabilities, detect
from fencepost.spec.checkers.coverage import Coverage
from fencepost.spec.checkers.deadline import DEFAULT_CALL_TIMEOUT, CallTimeout, Watch, run_watched, watched_factory
from fencepost.spec.formats.trace import TraceStep
from fencepost.spec.checkers.machine import conformance_machine
from fencepost.spec.checkers.results import format_trace
from fencepost.spec.checkers.lockstep import hang_trace
from fencepost.spec.checkers.canonical import canonical
from fencepost.spec.checkers.minimize import minimize
from fencepost.spec.checkers.why import why_line
from fencepost.spec.checkers.realtime import real_clock_machine, run_timed_calls, ticked, Timing
from fencepost.spec.checkers.shards import ShardPool, shard_seed as _shard_seed, shard_sizes
from fencepost.spec.variants import DEFAULT, Variants

#: Examples ``fencepost check`` runs when ``--max-examples`` is not given: the
#: CI profile's count, which reaches every declared outcome and boundary.
DEFAULT_MAX_EXAMPLES = profiles.CI_EXAMPLES
#: Most batches of runs a check makes while a declared outcome or boundary is
#: still unreached; past this the check reports the gap as a failure. Six, since
#: the batch and prune rules joined the machine: a scheduler offering them all
#: (the durable one, with restarts too) reached ``fail -> accepted:cancelled``
#: only in its fourth batch, so four left no margin.
COVERAGE_BATCHES = 6


@dataclass
class CheckResult:
    """The verdict of one check."""

    passed: bool
    trace: list[TraceStep] = field(default_factory=list)  # the shrunk counterexample, if it failed
    failure: str | None = None  # what went wrong, in one paragraph
    coverage: Coverage = field(default_factory=Coverage)
    examples: int = 0  # runs of the machine Hypothesis made
    seconds: float = 0.0
    seed: int | None = None
    batches: int = 1  # batches run; more than one when coverage needed them
    capabilities: Capabilities = field(default_factory=Capabilities)  # optional parts found and checked
    variants: Variants = DEFAULT  # the declared contract variants the run checked under
    timing: Timing | None = None  # under --clock real: the tick, the lateness seen, the inconclusive runs

    @property
    def missing(self) -> list[str]:
        """Declared outcomes or boundaries this run never reached."""
        return self.coverage.missing()


def check_factory(
    factory: Callable[[], object],
    *,
    max_examples: int | None = None,
    seed: int | None = None,
    steps: int | None = None,
    base: settings | None = None,
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
    capabilities: Capabilities | None = None,
    variants: Variants | None = None,
    timing: Timing | None = None,
    jobs: int | None = None,
) -> CheckResult:
    """Run the conformance machine against ``factory``.

    Runs come in batches of ``max_examples``. While the implementation
    conforms but some declared outcome or boundary is still unreached, another
    batch runs with the next seed, up to ``COVERAGE_BATCHES`` batches: rare
    paths (a fail after a cancel request) get found without making every run
    pay for them.

    Args:
        factory: zero-argument callable returning a fresh scheduler.
        max_examples: runs per batch; default the base settings' count.
        seed: None for a derandomized first batch, else the Hypothesis seed
            of the first batch; later batches use the following seeds.
        steps: steps per run; default the base settings'.
        base: Hypothesis settings to start from; default the ``ci`` profile.
        call_timeout: seconds any one call into a scheduler (the factory's
            included) may take; one that takes longer is a counterexample
            ending in that call, shrunk like any other. The calls run on a
            watched worker thread (``spec.checkers.deadline``), unless the
            factory keeps its own deadlines (``--exec``). None: no deadline,
            calls on this thread.
        capabilities: the optional parts to check (keys, restart); default
            what ``spec.checkers.capabilities.detect`` finds. Their outcomes
            join the ones the run must reach.
        variants: the declared contract variants to check under; default
            what the factory declares (``fencepost_variants``), else the contract.
        timing: given, the run is on the real clock (``spec.checkers.realtime``):
            ticks of ``timing.tick_ms`` on the wall clock, every call timed, the
            judge allowing what the measured timing allows; runs it cannot
            decide are set aside (counted in ``timing.inconclusive``), never
            findings. None: logical time.
        jobs: None: each batch is one Hypothesis run of ``max_examples``.
            A number: each batch is split into shards of at most
            ``SHARD_EXAMPLES`` runs, each with its own seed, run on ``jobs``
            forked processes (one under ``timing`` or a factory that keeps its
            own deadlines); the verdict, the counterexample (the earliest
            shard's that failed), the coverage and the run count are the
            same for any number of jobs (``spec.checkers.shards``).

    Returns:
        A ``CheckResult``; ``passed`` is False with the shrunk counterexample
        in ``trace`` when the implementation diverged or broke an invariant.

    Raises:
        ShardWorkerDied: with ``jobs``, a forked process ended in the middle of
            a shard (the scheduler ended it): there is no verdict.
    """
    base = base or settings.get_profile("ci")
    if timing is not None:
        factory = ticked(factory, timing.tick_ms)
    if variants is None:
        variants = Variants.from_declared(getattr(factory, "fencepost_variants", None), "fencepost_variants")
    if capabilities is None:
        capabilities = _detect(factory, call_timeout)
    coverage = Coverage(capabilities=capabilities, variants=variants)
    started = time.perf_counter()
    runs = 0
    if jobs is not None and (timing is not None or getattr(factory, "keeps_deadlines", False)):
        jobs = 1  # one program's pipes, or the real clock's timing, cannot be shared with forked processes
    def run_shard(shard_seed: object, size: int, shard_coverage: Coverage) -> tuple[bool, list[TraceStep], str | None, int]:
        return _run_batch(factory, shard_coverage, capabilities, base, size, steps, shard_seed, call_timeout, variants, timing)

    with ShardPool(run_shard, lambda: Coverage(capabilities=capabilities, variants=variants), jobs or 1) as pool:
        for batch in range(COVERAGE_BATCHES):
            if jobs is None:
                batch_seed = None if seed is None and batch == 0 else (seed or 0) + batch
                passed, trace, failure, batch_runs = _run_batch(
                    factory, coverage, capabilities, base, max_examples, steps, batch_seed, call_timeout, variants, timing,
                )
            else:
                examples = max_examples or base.max_examples
                plan = [(_shard_seed(seed, batch, shard), size) for shard, size in enumerate(shard_sizes(examples))]
                outcome = pool.run(plan)
                passed, trace, failure, batch_runs = outcome.result
                coverage.merge(outcome.coverage)
            runs += batch_runs
            if not passed or not coverage.missing():
                break
    if passed and variants == DEFAULT and timing is None:
        passed, trace, failure = _check_boundaries(factory, capabilities, call_timeout)
    return CheckResult(
        passed=passed, trace=trace, failure=failure, coverage=coverage,
        examples=runs, seconds=time.perf_counter() - started, seed=seed, batches=batch + 1,
        capabilities=capabilities, variants=variants, timing=timing,
    )


def _check_boundaries(factory: Callable[[], object], capabilities: Capabilities,
                      call_timeout: float | None) -> tuple[bool, list[TraceStep], str | None]:
    """The boundary probes (``spec.checkers.boundaries``): (passed, the failing probe's trace, its problem)."""
    if getattr(factory, "keeps_deadlines", False):
        call_timeout = None  # the adapter times its own calls
    trace = check_boundaries(factory, capabilities, call_timeout)
    if trace is None:
        return True, [], None
    problems = [step.problem for step in trace if step.problem]
    return False, trace, problems[-1] if problems else "the factory failed on a boundary probe"


def _detect(factory: Callable[[], object], call_timeout: float | None) -> Capabilities:
    """``detect``, its calls (a sample scheduler, a probe) under the deadline too.

    Raises:
        CallTimeout: making or probing the sample did not return in time.
    """
    if call_timeout is None or getattr(factory, "keeps_deadlines", False):
        return detect(factory)
    watch = Watch(call_timeout)
    return run_watched(lambda: detect(watched_factory(factory, watch)), watch)


def _run_batch(
    factory: Callable[[], object], coverage: Coverage, capabilities: Capabilities, base: settings,
    max_examples: int | None, steps: int | None, seed: int | None, call_timeout: float | None,
    variants: Variants = DEFAULT, timing: Timing | None = None,
) -> tuple[bool, list[TraceStep], str | None, int]:
    """One Hypothesis run of the machine: (passed, minimized trace, failure, runs made)."""
    if getattr(factory, "keeps_deadlines", False):
        call_timeout = None  # the adapter times its own calls, and a watched thread would add nothing
    watch = Watch(call_timeout) if call_timeout is not None else None
    replay = {} if timing is None else {"replay": run_timed_calls(timing)}
    if timing is None:
        machine = conformance_machine(factory, coverage=coverage, capabilities=capabilities, watch=watch, variants=variants)
    else:  # drawn against the model, each run replayed on the queue on the real clock
        machine = real_clock_machine(factory, coverage=coverage, capabilities=capabilities, variants=variants,
                                     timing=timing, call_timeout=call_timeout)
        watch = None
    runs = 0
    original_init = machine.__init__

    def counting_init(self: object) -> None:
        nonlocal runs
        runs += 1
        original_init(self)

    machine.__init__ = counting_init
    run_settings = settings(
        base,
        max_examples=max_examples or base.max_examples,
        stateful_step_count=steps or base.stateful_step_count,
        derandomize=seed is None,
        database=None,
        print_blob=False,
        # Hypothesis's shrinker replays whole runs hundreds of times; ``minimize``
        # deletes concrete calls instead, which is faster and reads better.
        phases=(Phase.explicit, Phase.reuse, Phase.generate),
    )
    if seed is not None:
        machine = hypothesis.seed(seed)(machine)
    try:
        if watch is None:
            run_state_machine_as_test(machine, settings=run_settings)
        else:
            run_watched(lambda: run_state_machine_as_test(machine, settings=run_settings), watch)
    except CallTimeout as exc:  # the watching thread gave up on a call: Hypothesis's run is abandoned with it
        trace = minimize(factory, hang_trace(watch.context, exc), call_timeout, variants, **replay)
        problems = [step.problem for step in trace if step.problem]
        return False, trace, problems[-1] if problems else str(exc), runs
    except Exception as exc:  # noqa: BLE001 - an implementation's bug may surface as any exception, flakiness included
        # on the real clock Hypothesis's last run is its replay, which timing may have let pass
        failing = timing.failing if timing is not None and timing.failing else machine.last_trace
        trace = minimize(factory, list(failing), call_timeout, variants, **replay)
        trace = canonical(factory, trace, call_timeout, variants, **replay, search=timing is None)
        problems = [step.problem for step in trace if step.problem]
        return False, trace, problems[-1] if problems else f"{type(exc).__name__}: {exc}", runs
    return True, [], None, runs


def report_failure(result: CheckResult) -> str:
    """The counterexample as a person reads it: numbered steps, then one ``why:`` line (``spec.checkers.why``)."""
    lines = [
        f"counterexample ({len(result.trace)} step{'s' if len(result.trace) != 1 else ''}, shrunk):",
        format_trace(result.trace, result.variants.interval),
        why_line(result.trace, result.failure, result.variants),
    ]
    return "\n".join(lines)


def variants_summary(variants: Variants) -> str:
    """One line for a check's summary: the variants in force and what the queue does not offer."""
    text = (f"declared variants in force: {variants.describe()}; the core was checked whatever they say; "
            "the boundary probes (the ends of every value's range) run under the contract only")
    absent = [part for part in ("renew", "cancel", "fail", "priority", "due_at", "max_attempts", "keys") if not variants.offers(part)]
    if variants.views == "none":
        absent.append("task views")
    if absent:
        text += f"; not offered, so not called: {', '.join(absent)}"
    return text


def required_methods(variants: Variants = DEFAULT) -> tuple[str, ...]:
    """The protocol's methods a scheduler must have under ``variants``: none it is declared ``without``, no ``task`` under ``views=none``."""
    names = ("add_worker", "submit", "dispatch", "complete", "fail", "cancel", "renew", "advance", "task")
    return tuple(n for n in names if not (n in ("fail", "cancel", "renew") and not variants.offers(n))
                 and not (n == "task" and variants.views == "none"))


def probe_factory(factory: Callable[[], object], text: str, variants: Variants = DEFAULT) -> None:
    """Make one scheduler up front, so a broken factory is a usage error, not a counterexample."""
    try:
        scheduler = factory()
    except Exception as exc:  # noqa: BLE001 - a user's factory may fail any way: a usage error naming it
        raise UsageError(f"FACTORY {text!r} failed when called with no arguments: {type(exc).__name__}: {exc}") from None
    missing = [name for name in required_methods(variants) if not callable(getattr(scheduler, name, None))]
    if missing or not hasattr(scheduler, "now"):
        missing += [] if hasattr(scheduler, "now") else ["now"]
        raise UsageError(f"FACTORY {text!r} returned a {type(scheduler).__name__} without the protocol's {', '.join(missing)}")
