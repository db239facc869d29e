"""The regression corpus: every scenario under tests/regressions/ replays clean on every shipped scheduler.

Saving a counterexample there (``fencepost check ... --trace-out
tests/regressions/NAME.toml``) makes it a test. The shipped files are the
counterexamples the spec found for its own pitfall mutants; each must still
fail against the mutant it was found for, so the corpus keeps its teeth.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.simple import SimpleScheduler
from fencepost.cli import load_factory
from fencepost.spec.checkers.replay import replay
from fencepost.spec.formats.scenario import load_scenario

CORPUS = Path(__file__).resolve().parent.parent / "regressions"
FILES = sorted([*CORPUS.glob("*.toml"), *CORPUS.glob("*.json")])


def test_the_corpus_is_not_empty():
    assert FILES


@pytest.mark.parametrize("make", [SimpleScheduler, IndexedScheduler], ids=lambda c: c.__name__)
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_saved_scenario_replays_clean(path, make):
    mismatches = [r for r in replay(load_scenario(path), make()) if r.mismatch]
    assert not mismatches, f"{path.name}: step {mismatches[0].number}: {mismatches[0].mismatch}"


@pytest.mark.parametrize("path", [p for p in FILES if "impl" in load_scenario(p).meta], ids=lambda p: p.stem)
def test_a_saved_counterexample_still_fails_its_implementation_at_the_diverging_step(path):
    scenario = load_scenario(path)
    replayed = replay(scenario, load_factory(scenario.meta["impl"])())
    first = next(r for r in replayed if r.mismatch)
    assert first.number == scenario.meta["diverging_step"]
