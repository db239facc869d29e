"""Hypothesis settings profiles for the spec.

* ``ci``: derandomized, so a CI run is reproducible; enough examples to reach
  every declared outcome and boundary within the CI budget.
* ``thorough``: randomized, many more and longer runs; for on-demand use
  (``pytest --hypothesis-profile=thorough``) after changing spec/ or impl/.

Loading this module registers both; it loads none.
"""

from hypothesis import HealthCheck, settings

#: Examples per conformance check in CI: each is a run of up to
#: ``CI_STEPS`` steps; this many reach every declared boundary on the shipped
#: implementations (see tests/spec/test_coverage.py).
CI_EXAMPLES = 200
#: Steps per run in CI.
CI_STEPS = 50
#: Examples per check in the thorough profile.
THOROUGH_EXAMPLES = 4000
#: Steps per run in the thorough profile: longer runs reach deeper retry chains.
THOROUGH_STEPS = 100

_COMMON = dict(
    deadline=None,  # logical time: wall-clock deadlines only make a slow CI machine flaky
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

settings.register_profile(
    "ci", max_examples=CI_EXAMPLES, stateful_step_count=CI_STEPS, derandomize=True, database=None,
    print_blob=False, **_COMMON,
)
settings.register_profile(
    "thorough", max_examples=THOROUGH_EXAMPLES, stateful_step_count=THOROUGH_STEPS, derandomize=False, **_COMMON,
)
