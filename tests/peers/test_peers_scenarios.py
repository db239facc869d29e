"""Every finding on a real queue, replayed against the real library by ``fencepost replay``.

Each scenario in ``tests/peers/scenarios/`` records what the contract says
under the queue's declared variants (``meta.variants``) and says what kind
of finding it is (``meta.kind``): a **bug** must still reproduce (replay
exits 1, and the first mismatch is the step the file names in
``meta.diverging_step``); a **documented choice** or **boundary convention**
must still hold (replay exits 0). So a release of the queue that fixes a bug,
or changes a documented choice, turns this test red and the findings page
(docs/findings.md) gets updated.
"""

from __future__ import annotations

import tomllib

import pytest

from peers_env import FILES, KINDS, adapter_of, meta_of, replay_on_queue, require


def test_every_finding_is_shipped() -> None:
    adapters = {adapter_of(meta_of(path)["impl"]) for path in FILES}
    assert adapters == {"sqs", "litequeue", "pgqueuer"}
    assert {meta_of(path)["kind"] for path in FILES} == set(KINDS)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_the_real_queue_still_does_what_the_file_says(path) -> None:
    """Bugs still diverge first at the step the file names; choices and conventions still hold."""
    with path.open("rb") as handle:
        scenario = tomllib.load(handle)
    meta = scenario["meta"]
    require(adapter_of(meta["impl"]))
    failures = replay_on_queue(scenario)
    if meta["kind"] == "bug":
        assert failures and failures[0][0] == meta["diverging_step"], failures
    else:
        assert failures == []


def expect_of(op: str, result: object) -> object:
    if op == "dispatch":
        if result is None:
            return "none"
        return {name: getattr(result, name) for name in ("task_id", "worker", "token", "started_at", "expires_at")}
    if op in ("complete", "renew", "fail", "cancel"):
        return {"accepted": result.accepted}
    if op == "submit":
        return {"task_id": result}
    return None


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_expectation_is_what_the_model_says_under_the_files_variants(path) -> None:
    """No queue needed: the files' expectations are the contract's, under the declared variants."""
    from fencepost.spec import model
    from fencepost.spec.variants import Variants

    with path.open("rb") as handle:
        scenario = tomllib.load(handle)
    state = model.initial(Variants.from_declared(scenario["meta"]["variants"]))
    for number, step in enumerate(scenario["steps"], start=1):
        args = {k: v for k, v in step.items() if k not in ("op", "expect", "note")}
        state, result = model.apply(state, step["op"], args)
        if "expect" in step:
            assert expect_of(step["op"], result) == step["expect"], f"{path.name} step {number}"
