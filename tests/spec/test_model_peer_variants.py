"""The variants the real queues needed beyond the first design: each rule, and that it keeps the core.

``order=priority-id`` and ``due=after`` (pgqueuer), ``duration=N`` (pgqueuer's
one heartbeat timeout), ``repeat=accept`` (SQS, litequeue), ``late`` with any
earlier token (SQS), ``without=max_attempts`` (all three). docs/contract.md
states each beside the rule it replaces; docs/findings.md says who chooses it.
"""

from __future__ import annotations

import pytest

from fencepost.spec import model
from fencepost.spec.protocol import Status
from fencepost.spec.variants import DEFAULT, Variants


def run(variants: Variants, calls: list[tuple[str, dict]]) -> tuple[model.State, list[object]]:
    state, results = model.initial(variants), []
    for op, args in calls:
        state, result = model.apply(state, op, args)
        results.append(result)
    return state, results


def test_priority_id_breaks_ties_by_id_not_by_due_time() -> None:
    calls = [("add_worker", {"worker": "w", "capacity": 1}), ("submit", {"due_at": 5}), ("submit", {"due_at": 3}),
             ("submit", {"priority": 1, "due_at": 6}), ("dispatch", {"worker": "w", "now": 6, "duration": 1})]
    _, results = run(Variants.from_declared({"order": "priority-id"}), calls)
    assert results[-1].task_id == 3  # priority first
    _, results = run(Variants.from_declared({"order": "priority-id"}), calls[:3] + calls[4:])
    assert results[-1].task_id == 1  # then the lower id, though task 2 was due earlier
    _, results = run(DEFAULT, calls[:3] + calls[4:])
    assert results[-1].task_id == 2  # the contract: the earlier due time


def test_due_after_makes_a_task_eligible_one_instant_after_its_due_time_never_before() -> None:
    after = Variants.from_declared({"due": "after"})
    calls = [("add_worker", {"worker": "w", "capacity": 1}), ("submit", {"due_at": 3})]
    for now, leased in ((2, False), (3, False), (4, True)):
        _, results = run(after, calls + [("dispatch", {"worker": "w", "now": now, "duration": 1})])
        assert (results[-1] is not None) is leased, now
    _, results = run(DEFAULT, calls + [("dispatch", {"worker": "w", "now": 3, "duration": 1})])
    assert results[-1] is not None
    # A task submitted without a due time is due at the submit time, so not at that instant.
    _, results = run(after, [("add_worker", {"worker": "w", "capacity": 1}), ("submit", {}),
                             ("dispatch", {"worker": "w", "now": 0, "duration": 1})])
    assert results[-1] is None


def test_duration_n_allows_only_that_lease_length() -> None:
    five = Variants.from_declared({"duration": "5"})
    state, _ = run(five, [("add_worker", {"worker": "w", "capacity": 1}), ("submit", {})])
    with pytest.raises(ValueError, match="duration must be 5"):
        model.apply(state, "dispatch", {"worker": "w", "now": 0, "duration": 4})
    state, lease = model.apply(state, "dispatch", {"worker": "w", "now": 0, "duration": 5})
    assert lease.expires_at == 5
    with pytest.raises(ValueError, match="duration must be 5"):
        model.apply(state, "renew", {"task_id": 1, "token": lease.token, "now": 1, "duration": 6})
    assert model.apply(state, "renew", {"task_id": 1, "token": lease.token, "now": 1, "duration": 5})[1].accepted


def test_repeat_accept_accepts_a_second_complete_with_any_token_the_task_had_and_changes_nothing() -> None:
    repeat = Variants.from_declared({"repeat": "accept", "interval": "closed"})
    calls = [("add_worker", {"worker": "w", "capacity": 2}), ("submit", {}), ("submit", {}),
             ("dispatch", {"worker": "w", "now": 0, "duration": 1}),   # token 1, task 1, lapses
             ("dispatch", {"worker": "w", "now": 2, "duration": 5}),   # token 2, task 1 again
             ("dispatch", {"worker": "w", "now": 2, "duration": 5}),   # token 3, task 2
             ("complete", {"task_id": 1, "token": 2, "now": 3})]
    state, results = run(repeat, calls)
    assert results[-1].accepted and state.tasks[0].status is Status.SUCCEEDED
    for token, accepted in ((2, True), (1, True), (3, False)):  # task 2's token is not task 1's
        after, outcome = model.apply(state, "complete", {"task_id": 1, "token": token, "now": 4})
        assert outcome.accepted is accepted, token
        assert after.tasks == state.tasks
    _, refused = model.apply(run(Variants.from_declared({"interval": "closed"}), calls)[0], "complete",
                             {"task_id": 1, "token": 2, "now": 4})
    assert refused.accepted is False


def test_late_accept_unclaimed_takes_any_earlier_token_but_never_while_another_lease_is_live() -> None:
    late = Variants.from_declared({"late": "accept-unclaimed"})
    calls = [("add_worker", {"worker": "w", "capacity": 1}), ("submit", {}),
             ("dispatch", {"worker": "w", "now": 0, "duration": 1}), ("dispatch", {"worker": "w", "now": 1, "duration": 1}),
             ("advance", {"now": 2})]
    state, _ = run(late, calls)
    assert state.tasks[0].status is Status.PENDING
    assert model.apply(state, "complete", {"task_id": 1, "token": 1, "now": 2})[1].accepted  # the older one too
    state, _ = model.apply(state, "dispatch", {"worker": "w", "now": 2, "duration": 5})
    assert not model.apply(state, "complete", {"task_id": 1, "token": 1, "now": 3})[1].accepted  # core: lease 3 is live


@pytest.mark.parametrize("declared, error", [
    ({"duration": "0"}, "duration must be any or a whole number >= 1"),
    ({"duration": "five"}, "duration must be"),
    ({"duration": True}, "duration must be"),
    ({"order": "lifo"}, "order must be one of priority, fifo, any, priority-id"),
    ({"without": ["max_attempts", "budget"]}, "not 'budget'"),
])
def test_bad_declarations_are_one_line_errors_naming_the_rule(declared, error) -> None:
    with pytest.raises(ValueError, match=error):
        Variants.from_declared(declared)


def test_the_new_variants_round_trip_through_files_and_the_command_line() -> None:
    v = Variants.from_declared({"duration": 5, "due": "after", "repeat": "accept", "order": "priority-id",
                                "without": "max_attempts,fail"})
    assert v.duration == "5" and v.lease_length() == 5 and not v.offers("max_attempts")
    assert Variants.from_declared(v.declared()) == v
    assert Variants.parse(v.assignments()) == v
    assert DEFAULT.lease_length() is None and DEFAULT.describe() == "the contract"


def test_a_wrong_typed_opaque_token_is_never_a_valid_token() -> None:
    """The machine's wrong-type disguises of a receipt handle: refused as tokens, and never a crash of the machine."""
    from fencepost.spec.checkers.invalid_calls import NON_INT_FORMS, disguise

    opaque = model.initial(Variants.from_declared({"tokens": "opaque"}))
    for form in NON_INT_FORMS:
        wrong = disguise("bkdbhfiychinluov", form)
        with pytest.raises(ValueError, match="token must be"):
            model.require_token(opaque, wrong)
    assert disguise(7, "str") == "7" and disguise(7, "float") == 7.0  # int tokens as before
