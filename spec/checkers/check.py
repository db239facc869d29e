"""Check a scheduler factory against the whole spec.

``fencepost check MODULE:FACTORY`` builds the conformance machine for the
factory, runs it under Hypothesis, and prints either a conformance summary
(exit 0) or the shrunk counterexample as numbered steps -- call, expected,
got -- (exit 1). Bad arguments and factories that cannot be imported are one
line and exit 2.

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

import argparse
import shlex
import time
from dataclasses import dataclass, field
from typing import Callable

import hypothesis
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from fencepost.spec import profiles
from fencepost.spec.arguments import (
    EXIT_OK,
    EXIT_VIOLATION,
    UsageError,
    add_exec_arguments,
    add_variant_arguments,
    check_output_path,
    declared_variants,
    exec_name,
    load_factory,
    open_exec,
    variants_in_force,
)
from fencepost.spec.checkers.capabilities import Capabilities, detect
from fencepost.spec.checkers.coverage import Coverage
from fencepost.spec.checkers.deadline import DEFAULT_CALL_TIMEOUT, CallTimeout, Watch, run_watched, watched_factory
from fencepost.spec.formats.trace import TraceStep
from fencepost.spec.checkers.machine import conformance_machine
from fencepost.spec.checkers.results import format_trace
from fencepost.spec.checkers.lockstep import hang_trace
from fencepost.spec.checkers.minimize import minimize
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

    Returns:
        A ``CheckResult``; ``passed`` is False with the shrunk counterexample
        in ``trace`` when the implementation diverged or broke an invariant.
    """
    base = base or settings.get_profile("ci")
    if variants is None:
        variants = Variants.from_declared(getattr(factory, "fencepost_variants", None), "fencepost_variants")
    if capabilities is None:
        capabilities = _detect(factory, call_timeout)
    coverage = Coverage(capabilities=capabilities, variants=variants)
    started = time.perf_counter()
    runs = 0
    for batch in range(COVERAGE_BATCHES):
        batch_seed = None if seed is None and batch == 0 else (seed or 0) + batch
        passed, trace, failure, batch_runs = _run_batch(
            factory, coverage, capabilities, base, max_examples, steps, batch_seed, call_timeout, variants,
        )
        runs += batch_runs
        if not passed or not coverage.missing():
            break
    return CheckResult(
        passed=passed, trace=trace, failure=failure, coverage=coverage,
        examples=runs, seconds=time.perf_counter() - started, seed=seed, batches=batch + 1,
        capabilities=capabilities, variants=variants,
    )


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
    variants: Variants = DEFAULT,
) -> tuple[bool, list[TraceStep], str | None, int]:
    """One Hypothesis run of the machine: (passed, minimized trace, failure, runs made)."""
    if getattr(factory, "keeps_deadlines", False):
        call_timeout = None  # the adapter times its own calls, and a watched thread would add nothing
    watch = Watch(call_timeout) if call_timeout is not None else None
    machine = conformance_machine(factory, coverage=coverage, capabilities=capabilities, watch=watch, variants=variants)
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
        trace = minimize(factory, hang_trace(watch.context, exc), call_timeout, variants)
        problems = [step.problem for step in trace if step.problem]
        return False, trace, problems[-1] if problems else str(exc), runs
    except Exception as exc:  # an implementation's bug may surface as any exception, flakiness included
        trace = minimize(factory, list(machine.last_trace), call_timeout, variants)
        problems = [step.problem for step in trace if step.problem]
        return False, trace, problems[-1] if problems else f"{type(exc).__name__}: {exc}", runs
    return True, [], None, runs


def report_failure(result: CheckResult) -> str:
    """The counterexample as a person reads it: numbered steps, then the violation."""
    lines = [
        f"counterexample ({len(result.trace)} step{'s' if len(result.trace) != 1 else ''}, shrunk):",
        format_trace(result.trace),
        f"violation: {result.failure}",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- command line


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("factory", metavar="MODULE:FACTORY", nargs="?", default=None,
                        help="zero-argument callable returning a fresh scheduler, e.g. impl:Scheduler (or --exec COMMAND)")
    parser.add_argument("--max-examples", type=_positive, default=None, metavar="N", help=f"runs of the state machine (default {DEFAULT_MAX_EXAMPLES})")
    parser.add_argument("--seed", type=_seed, default=None, metavar="S", help="random seed; without it the run is derandomized and repeatable")
    parser.add_argument("--steps", type=_positive, default=None, metavar="N", help="steps per run (default %d)" % profiles.CI_STEPS)
    parser.add_argument("--coverage", action="store_true", help="print how often each outcome and boundary was reached")
    parser.add_argument("--trace-out", metavar="FILE", default=None, help="write a counterexample as a scenario (JSON if FILE ends in .json, else TOML)")
    add_variant_arguments(parser)
    add_exec_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if (args.factory is None) == (args.exec_command is None):
        raise UsageError("give a MODULE:FACTORY or --exec COMMAND, exactly one of them")
    if args.trace_out:
        check_output_path(args.trace_out)
    if args.exec_command is not None:
        variants_in_force(args.variants)  # a bad flag is an error before the program starts
        with open_exec(args.exec_command, args.call_timeout) as program:
            variants = variants_in_force(args.variants, (declared_variants(program), "the program's hello"))
            program.opaque_tokens = variants.tokens == "opaque"  # its answers may then carry str tokens
            return _check(args, program, exec_name(args.exec_command), variants)
    variants = variants_in_force(args.variants)
    factory = load_factory(args.factory)
    variants = variants_in_force(args.variants, (declared_variants(factory), f"{args.factory}'s fencepost_variants"))
    probe_factory(factory, args.factory, variants)
    return _check(args, factory, args.factory, variants)


def _check(args: argparse.Namespace, factory: Callable[[], object], name: str, variants: Variants = DEFAULT) -> int:
    try:
        result = check_factory(factory, max_examples=args.max_examples, seed=args.seed, steps=args.steps,
                               call_timeout=args.call_timeout, variants=variants)
    except CallTimeout as exc:  # making a sample scheduler, before any step
        raise UsageError(f"{name}: {exc}") from None
    mode = "derandomized" if args.seed is None else f"seed {args.seed}"
    if args.coverage:
        print(result.coverage.report())
    print(result.capabilities.summary())
    if variants != DEFAULT:
        print(variants_summary(variants))
    if not result.passed:
        print(f"{name} does NOT conform to the fencepost spec ({mode}, {result.examples} runs, {result.seconds:.1f}s)")
        print(report_failure(result))
        if args.trace_out:
            from fencepost.spec.formats.trace import write_counterexample

            try:
                path = write_counterexample(result, args.trace_out, factory_spec=args.factory, exec_command=args.exec_command)
                # the file records its variants, so replaying it needs no --variant
            except OSError as exc:
                raise UsageError(f"cannot write --trace-out {args.trace_out!r}: {exc.strerror or exc}") from None
            again = f"--exec {shlex.quote(args.exec_command)}" if args.exec_command else f"--impl {args.factory}"
            print(f"counterexample written to {path}; replay it with: fencepost replay {path} {again}")
        return EXIT_VIOLATION
    missing = result.missing
    if missing:
        print(f"{name} passed, but the run never reached: {'; '.join(missing)}")
        print("the check is vacuous there: raise --max-examples or --steps")
        return EXIT_VIOLATION
    print(f"{name} conforms to the fencepost spec ({mode}, {result.examples} runs in {result.batches} batch{'es' if result.batches > 1 else ''}, {result.seconds:.1f}s); every declared outcome and boundary reached")
    return EXIT_OK


def variants_summary(variants: Variants) -> str:
    """One line for a check's summary: the variants in force and what the queue does not offer."""
    text = f"declared variants in force: {variants.describe()}; the core was checked whatever they say"
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
    except Exception as exc:
        raise UsageError(f"FACTORY {text!r} failed when called with no arguments: {type(exc).__name__}: {exc}") from None
    missing = [name for name in required_methods(variants) if not callable(getattr(scheduler, name, None))]
    if missing or not hasattr(scheduler, "now"):
        missing += [] if hasattr(scheduler, "now") else ["now"]
        raise UsageError(f"FACTORY {text!r} returned a {type(scheduler).__name__} without the protocol's {', '.join(missing)}")

