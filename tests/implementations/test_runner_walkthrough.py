"""The `running-work` walkthrough is what a real runner does, call for call."""

from __future__ import annotations

from fencepost.spec.formats.scenario import load_scenario
from fencepost.story.walkthroughs import resolve
from runner_walkthrough import walkthrough_run


def test_the_running_work_walkthrough_is_the_calls_a_real_runner_makes() -> None:
    """Same operations with the same arguments, in the same order; every result the runner got is
    what the walkthrough expects (the walkthrough may say more, such as a rejection's reason)."""
    committed = load_scenario(resolve("running-work")).steps
    ran = walkthrough_run()
    assert [(s.op, s.args) for s in committed] == [(s.op, s.args) for s in ran]
    drifted = [(number, mine.expect, real.expect) for number, (mine, real) in enumerate(zip(committed, ran), 1)
               if not (mine.expect == real.expect
                       or isinstance(real.expect, dict) and real.expect.items() <= mine.expect.items())]
    assert drifted == []
