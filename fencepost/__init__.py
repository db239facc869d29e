"""fencepost: the reference for lease-based task scheduling.

The public API, importable without naming fencepost's subpackages:

* ``Scheduler``: the default scheduler (``fencepost.impl.indexed.IndexedScheduler``);
  ``SimpleScheduler`` is the direct O(T) scan it refines.
* The protocol's values: ``Lease``, ``Outcome``, ``TaskView``, ``Status``, ``Reason``.
* ``conformance_test(factory)``: a pytest test class that checks ``factory``'s
  schedulers against the spec (``fencepost.spec.testing``).
* ``check(factory, ...)``: the check behind ``fencepost check``
  (``fencepost.spec.checkers.check.check_factory``).

Subpackages: ``fencepost.spec`` (the contract and its checkers),
``fencepost.impl`` (the schedulers) and ``fencepost.tui`` (the terminal UI).
In the repository they are the top-level folders ``spec/``, ``impl/`` and ``tui/``.
"""

from __future__ import annotations

from fencepost.impl.indexed import IndexedScheduler as Scheduler
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import Lease, Outcome, Reason, Status, TaskView

__all__ = [
    "Lease",
    "Outcome",
    "Reason",
    "Scheduler",
    "SimpleScheduler",
    "Status",
    "TaskView",
    "check",
    "conformance_test",
]


def __getattr__(name: str) -> object:
    # The checkers import Hypothesis; load them only when asked for, so that
    # `import fencepost` stays cheap for code that only runs a scheduler.
    if name == "conformance_test":
        from fencepost.spec.testing import conformance_test

        return conformance_test
    if name == "check":
        from fencepost.spec.checkers.check import check_factory

        return check_factory
    raise AttributeError(f"module 'fencepost' has no attribute {name!r}")
