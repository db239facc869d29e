"""The shipped schedulers a scenario can be opened on, and the one its needs choose.

A scenario says what it needs (``needs``, plus what its steps imply: see
``spec.formats.scenario.needs_of``); it never names code. When the command
line names no scheduler (no ``--impl``, no ``--exec``), ``replay`` and
``tui`` -- and the TUI's ``o`` and load, for every walkthrough it opens --
run it on the first scheduler in ``SHIPPED`` that offers all of it. A
scheduler the command line names is used as given, needs or not (a restart
on one without ``reopen()`` is then the usual one-line error).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fencepost.spec.arguments import DEFAULT_IMPL, UsageError, load_factory
from fencepost.spec.formats.scenario import NEEDS, Scenario, is_variant_need, needs_of
from fencepost.spec.protocol import RESTART


@dataclass(frozen=True)
class Shipped:
    """One shipped scheduler factory, by its MODULE:NAME, and the ``NEEDS`` it offers
    (variants it follows as ``NAME=VALUE``)."""

    name: str
    offers: frozenset[str]


#: The shipped schedulers, in the order they are preferred: the default first,
#: then the in-process ones that add capabilities. (PostgreSQL is in
#: ``ON_A_SERVER`` instead: it needs a server named by the user.)
#: ``tests/spec/test_needs.py`` checks each ``offers`` against what
#: ``spec.checkers.capabilities.detect`` finds.
SHIPPED: tuple[Shipped, ...] = (
    Shipped(DEFAULT_IMPL, frozenset({"prune", "batch"})),
    Shipped("impl.simple:SimpleScheduler", frozenset({"prune", "batch"})),
    Shipped("impl.durable:temporary", frozenset({RESTART, "prune", "batch"})),
)

#: The shipped schedulers that need a server (``$FENCEPOST_PG_DSN``), never chosen
#: by a scenario's needs, only named with ``--impl``. The walkthroughs are held true
#: on them too, when a server is named (``tests/implementations/test_postgres_walkthroughs.py``).
ON_A_SERVER: tuple[Shipped, ...] = (
    Shipped("impl.postgres:temporary", frozenset({RESTART, "prune", "batch"})),
)


def scheduler_for(needs: Iterable[str]) -> str:
    """The MODULE:NAME of the first shipped scheduler that offers every one of ``needs``.

    Raises:
        UsageError: no shipped scheduler offers them all (one line naming what is missing).
    """
    wanted = set(needs)
    unknown = sorted(name for name in wanted if name not in NEEDS and not is_variant_need(name))
    if unknown:
        raise UsageError(f"needs {', '.join(unknown)}, which fencepost does not know (known: {', '.join(NEEDS)})")
    for shipped in SHIPPED:
        if wanted <= shipped.offers:
            return shipped.name
    raise UsageError(f"needs {', '.join(sorted(wanted))}, which no shipped scheduler offers together; name one with --impl")


@dataclass(frozen=True)
class Opened:
    """What a scenario runs on: the factory, its name, and a line saying why it was chosen (or None)."""

    factory: Callable[[], object]
    name: str
    reason: str | None


def choose_impl(scenario: Scenario) -> tuple[str, str | None]:
    """The MODULE:NAME to run ``scenario`` on when the command line names none, and a
    line saying why when it is not the default (else None).

    Raises:
        UsageError: no shipped scheduler offers what the scenario needs.
    """
    needs = needs_of(scenario)
    name = scheduler_for(needs)
    reason = None if name == DEFAULT_IMPL else f"it needs {', '.join(needs)}: opened on {name} (--impl chooses another)"
    return name, reason


def open_for(scenario: Scenario, impl: str | None = None) -> Opened:
    """The scheduler to run ``scenario`` on: ``impl`` if given (``--impl``), else the one its needs choose.

    Raises:
        UsageError: ``impl`` cannot be loaded, or no shipped scheduler offers what the scenario needs.
    """
    if impl is not None:
        return Opened(load_factory(impl, "--impl"), impl, None)
    name, reason = choose_impl(scenario)
    return Opened(load_factory(name, "--impl"), name, reason)
