"""The conformance check as a pytest (or unittest) test class.

Two lines in your own suite check your scheduler against the whole spec::

    from fencepost.spec.testing import conformance_test
    TestMySchedulerConforms = conformance_test(MyScheduler)

The test runs the same check as ``fencepost check`` under the active
Hypothesis profile (at least the ``ci`` profile's number of runs), and fails
with the numbered counterexample, or with the declared outcomes and
boundaries the run never reached.
"""

from __future__ import annotations

import unittest
from collections.abc import Callable

from hypothesis import settings

from fencepost.spec import profiles
from fencepost.spec.checkers.check import check_factory, report_failure


def conformance_test(factory: Callable[[], object], *, max_examples: int | None = None) -> type[unittest.TestCase]:
    """A ``unittest.TestCase`` class whose one test checks ``factory`` against the spec.

    Args:
        factory: zero-argument callable (a class works) returning a fresh scheduler.
        max_examples: runs per batch; default the active profile's count, and
            never fewer than ``spec.profiles.CI_EXAMPLES``.
    """

    class ConformanceTest(unittest.TestCase):
        def test_conforms_to_the_fencepost_spec(self) -> None:
            base = settings.default
            runs = max_examples or max(base.max_examples, profiles.CI_EXAMPLES)
            result = check_factory(factory, max_examples=runs, base=base)
            if not result.passed:
                self.fail("\n" + report_failure(result))
            if result.missing:
                self.fail("the check never reached: " + "; ".join(result.missing))

    name = getattr(factory, "__name__", "Factory")
    ConformanceTest.__name__ = ConformanceTest.__qualname__ = f"Test{name}Conforms"
    return ConformanceTest
