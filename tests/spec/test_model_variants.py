"""The model under declared variants, prune and batches: each rule at its boundary.

The state machine checks implementations against these; here the model's
own answers are pinned, one rule a test, with the contract's answer beside
each variant's where they differ.
"""

from __future__ import annotations

import pytest

from fencepost.spec import model
from fencepost.spec.protocol import Lease, Status
from fencepost.spec.variants import DEFAULT, Variants, explicit, merge_declarations


def run(state, *calls):
    """Apply ``(op, args)`` calls in order; the final state and the last result."""
    result = None
    for op, args in calls:
        state, result = model.apply(state, op, args)
    return state, result


def started(variants=DEFAULT, capacity=1, **submit):
    state = model.initial(variants)
    state, _ = model.add_worker(state, "w1", capacity)
    state, _ = model.submit(state, **submit)
    return state


# ---------------------------------------------------------------- parsing variants


def test_parse_reads_name_value_pairs_and_records_only_what_differs():
    v = Variants.parse(["order=any", "tokens=opaque", "without=renew,cancel"])
    assert (v.order, v.tokens, v.without) == ("any", "opaque", ("cancel", "renew"))
    assert v.declared() == {"order": "any", "tokens": "opaque", "without": ["cancel", "renew"]}
    assert Variants.from_declared(v.declared()) == v
    assert Variants.parse(v.assignments()) == v
    assert DEFAULT.describe() == "the contract"
    assert v.describe() == "order=any, tokens=opaque, without=cancel,renew"


@pytest.mark.parametrize("text, words", [
    ("order", "NAME=VALUE"),
    ("colour=red", "unknown variant 'colour'"),
    ("order=random", "order must be one of priority, fifo, any"),
    ("without=sleep", "without may name only"),
])
def test_a_bad_variant_is_refused_naming_it(text, words):
    with pytest.raises(ValueError, match=words):
        Variants.parse([text])


def test_declarations_that_disagree_are_one_error_and_agreeing_ones_merge():
    assert merge_declarations(explicit(["order=any"]), {"tokens": "opaque"}) == Variants(order="any", tokens="opaque")
    assert merge_declarations(explicit(["order=any"]), {"order": "any"}) == Variants(order="any")
    with pytest.raises(ValueError, match="--variant says order=priority but the scheduler declares order=any"):
        merge_declarations(explicit(["order=priority"]), {"order": "any"})
    assert merge_declarations(None, None) == DEFAULT


# ---------------------------------------------------------------- order


def three_tasks(variants):
    state = model.initial(variants)
    state, _ = model.add_worker(state, "w1", 3)
    for priority in (0, 5, 1):
        state, _ = model.submit(state, priority=priority)
    return state


def test_order_fifo_ignores_priority_and_order_any_follows_any_eligible_task():
    _, lease = model.dispatch(three_tasks(DEFAULT), "w1", 0, 5)
    assert lease.task_id == 2
    _, lease = model.dispatch(three_tasks(Variants(order="fifo")), "w1", 0, 5)
    assert lease.task_id == 1
    anyorder = three_tasks(Variants(order="any"))
    chosen = Lease(task_id=3, worker="w1", token=1, started_at=0, expires_at=5)
    after, lease = model.follow(anyorder, "dispatch", {"worker": "w1", "now": 0, "duration": 5}, chosen)
    assert lease == chosen and after.tasks[2].status is Status.RUNNING
    # the contract follows only its own pick
    assert model.follow(three_tasks(DEFAULT), "dispatch", {"worker": "w1", "now": 0, "duration": 5}, chosen) is None


def test_order_any_never_allows_a_task_not_due_or_running_or_a_full_worker():
    v = Variants(order="any")
    state = started(v, due_at=10)
    args = {"worker": "w1", "now": 0, "duration": 5}
    early = Lease(task_id=1, worker="w1", token=1, started_at=0, expires_at=5)
    assert model.follow(state, "dispatch", args, early) is None  # not due: core
    assert model.follow(state, "dispatch", args, None) is not None  # nothing eligible: None is right
    state, _ = model.submit(state)
    state, _ = model.dispatch(state, "w1", 0, 5)  # w1 is now full (capacity 1)
    state, _ = model.submit(state)
    again = Lease(task_id=3, worker="w1", token=2, started_at=1, expires_at=6)
    assert model.follow(state, "dispatch", {"worker": "w1", "now": 1, "duration": 5}, again) is None


# ---------------------------------------------------------------- interval


def test_interval_closed_keeps_the_lease_live_at_exactly_expires_at():
    for variants, accepted in ((DEFAULT, False), (Variants(interval="closed"), True)):
        state, lease = model.dispatch(started(variants), "w1", 5, 5)
        _, outcome = model.complete(state, 1, lease.token, 10)
        assert outcome.accepted is accepted
    state, lease = model.dispatch(started(Variants(interval="closed")), "w1", 5, 5)
    _, outcome = model.complete(state, 1, lease.token, 11)
    assert not outcome.accepted


# ---------------------------------------------------------------- tokens


def test_tokens_opaque_takes_any_fresh_token_and_refuses_one_handed_out_before():
    v = Variants(tokens="opaque")
    state = started(v, capacity=2)
    state, _ = model.submit(state)
    args = {"worker": "w1", "now": 0, "duration": 5}
    first = Lease(task_id=1, worker="w1", token="rh-a", started_at=0, expires_at=5)
    state, _ = model.follow(state, "dispatch", args, first)
    reused = Lease(task_id=2, worker="w1", token="rh-a", started_at=0, expires_at=5)
    assert model.follow(state, "dispatch", args, reused) is None  # core: never issued before
    assert model.follow(state, "dispatch", args, Lease(2, "w1", "", 0, 5)) is None
    assert model.follow(state, "dispatch", args, Lease(2, "w1", True, 0, 5)) is None
    _, outcome = model.complete(state, 1, "rh-a", 1)
    assert outcome.accepted
    _, outcome = model.complete(state, 1, "rh-b", 1)
    assert not outcome.accepted
    # under the contract the token is exactly the next int
    contract = started()
    assert model.follow(contract, "dispatch", args, Lease(1, "w1", 7, 0, 5)) is None
    assert model.follow(contract, "dispatch", args, Lease(1, "w1", 1, 0, 5)) is not None
    with pytest.raises(ValueError, match="token must be an int"):
        model.complete(contract, 1, "rh-a", 1)


# ---------------------------------------------------------------- late reports, exhaustion, capacity


def test_late_accept_unclaimed_takes_the_last_expired_token_until_the_task_is_handed_out_again():
    for variants, accepted in ((DEFAULT, False), (Variants(late="accept-unclaimed"), True)):
        state, lease = model.dispatch(started(variants, capacity=2), "w1", 0, 5)
        after, outcome = model.complete(state, 1, lease.token, 7)
        assert outcome.accepted is accepted
        if accepted:
            assert after.tasks[0].status is Status.SUCCEEDED and after.tasks[0].ended_at == 7
    v = Variants(late="accept-unclaimed")
    state, old = model.dispatch(started(v, capacity=2), "w1", 0, 5)
    state, new = model.dispatch(state, "w1", 6, 5)  # handed out again: the old token is stale
    _, outcome = model.complete(state, 1, old.token, 7)
    assert not outcome.accepted
    state, lease = model.dispatch(started(v), "w1", 0, 5)
    _, outcome = model.renew(state, 1, lease.token, 6, 5)  # a late token never renews
    assert not outcome.accepted


def test_exhaust_at_dispatch_ends_the_spent_task_at_the_next_dispatch():
    v = Variants(exhaust="at-dispatch")
    state, _ = model.dispatch(started(v, max_attempts=1), "w1", 0, 5)
    state, _ = model.advance(state, 5)
    assert state.tasks[0].status is Status.PENDING
    state, lease = model.dispatch(state, "w1", 8, 5)
    assert lease is None and state.tasks[0].status is Status.FAILED and state.tasks[0].ended_at == 8
    state, _ = model.dispatch(started(max_attempts=1), "w1", 0, 5)
    state, _ = model.advance(state, 5)
    assert state.tasks[0].status is Status.FAILED and state.tasks[0].ended_at == 5


def test_capacity_none_lets_a_worker_hold_any_number_of_leases():
    for variants, second in ((DEFAULT, None), (Variants(capacity="none"), 2)):
        state = started(variants)
        state, _ = model.submit(state)
        state, _ = model.dispatch(state, "w1", 0, 5)
        _, lease = model.dispatch(state, "w1", 0, 5)
        assert (lease and lease.task_id) == second


# ---------------------------------------------------------------- prune


def finished_at(end):
    state, lease = model.dispatch(started(key="k"), "w1", 0, 50)
    state, _ = model.complete(state, 1, lease.token, end)
    return state


def test_prune_forgets_final_tasks_ended_before_the_boundary_and_keeps_one_ended_at_it():
    state, count = model.prune(finished_at(7), 7, 9)
    assert count == 0 and model.task(state, 1).status is Status.SUCCEEDED
    state, count = model.prune(finished_at(7), 8, 9)
    assert count == 1
    with pytest.raises(ValueError, match="forgotten"):
        model.task(state, 1)
    with pytest.raises(ValueError, match="forgotten"):
        model.complete(state, 1, 1, 9)


def test_prune_never_forgets_live_work_and_never_reuses_ids_or_tokens_and_frees_the_key():
    state = finished_at(3)
    state, _ = model.submit(state)  # task 2, pending
    state, count = model.prune(state, 9, 9)
    assert count == 1 and model.task(state, 2).status is Status.PENDING
    state, again = model.submit(state, key="k")  # the forgotten task's key makes a new task
    assert again == 3
    state, lease = model.dispatch(state, "w1", 9, 5)
    assert lease.token == 2


@pytest.mark.parametrize("before, now, words", [(10, 9, "before must be"), (-1, 9, "before must be"),
                                                 ("1", 9, "before must be an int"), (1, -1, "now must be")])
def test_a_bad_prune_is_invalid_and_changes_nothing(before, now, words):
    state = finished_at(3)
    with pytest.raises(ValueError, match=words):
        model.prune(state, before, now)


# ---------------------------------------------------------------- batches


def test_submit_many_is_all_or_nothing():
    state = model.initial()
    state, ids = model.submit_many(state, [{"priority": 1}, {}, {"key": "a"}])
    assert ids == [1, 2, 3]
    with pytest.raises(ValueError, match=r"tasks\[1\].*retry_delay"):
        model.submit_many(state, [{}, {"retry_delay": 0}])
    with pytest.raises(ValueError, match="takes no argument 'colour'"):
        model.submit_many(state, [{"colour": 1}])
    with pytest.raises(ValueError, match=r"tasks\[0\]: submit takes no argument 1 "):  # not a TypeError
        model.submit_many(state, [{"colour": 1, 1: 0}])
    assert model.submit_many(state, [])[1] == []


def test_dispatch_many_stops_at_the_worker_s_room_and_never_hands_a_task_twice():
    state = model.initial()
    state, _ = model.add_worker(state, "w1", 2)
    state, _ = model.submit_many(state, [{}, {}, {}])
    after, leases = model.dispatch_many(state, "w1", 0, 5, 10)
    assert [lease.task_id for lease in leases] == [1, 2] and [lease.token for lease in leases] == [1, 2]
    args = {"worker": "w1", "now": 0, "duration": 5, "limit": 10}
    twice = [Lease(1, "w1", 1, 0, 5), Lease(1, "w1", 2, 0, 5)]
    assert model.follow(state, "dispatch_many", args, twice) is None
    assert model.follow(state, "dispatch_many", args, leases[:1]) is None  # stopped while room was left
    assert model.follow(state, "dispatch_many", args, leases) is not None
    with pytest.raises(ValueError, match="limit must be >= 1"):
        model.dispatch_many(state, "w1", 0, 5, 0)


def test_complete_many_judges_each_report_as_the_single_calls_in_order():
    state = model.initial()
    state, _ = model.add_worker(state, "w1", 2)
    state, _ = model.submit_many(state, [{}, {}])
    state, leases = model.dispatch_many(state, "w1", 0, 5, 2)
    _, outcomes = model.complete_many(state, [(1, 1), (1, 1), (2, 1), (2, 2)], 3)
    assert [o.accepted for o in outcomes] == [True, False, False, True]
    with pytest.raises(ValueError, match=r"reports\[1\]"):
        model.complete_many(state, [(1, 1), (9, 1)], 3)
    after, outcomes = model.complete_many(state, [], 6)
    assert outcomes == [] and after.now == 6 and after.tasks[0].status is Status.PENDING


# ---------------------------------------------------------------- why_not on final tasks


def test_why_not_names_a_final_tasks_end_only_where_the_state_still_holds_it():
    """A dispatch of a final task: the model's own state says how and when it ended; a search
    state that erased those (linearize's canonical form) says only that it is final; a pruned
    task is said to be pruned, not to have ended at a time the state no longer keeps."""
    from fencepost.spec.checkers.linearize_states import canonical

    any_order = Variants.parse(["order=any"])
    state, _ = run(started(any_order), ("dispatch", {"worker": "w1", "now": 1, "duration": 5}))
    state, _ = run(state, ("complete", {"task_id": 1, "token": 1, "now": 3}))
    args = {"worker": "w1", "now": 4, "duration": 5}
    lease = Lease(task_id=1, worker="w1", token=2, started_at=4, expires_at=9)
    assert model.why_not(state, "dispatch", args, lease) == "task 1 is final (succeeded since t=3)"
    assert model.why_not(canonical(state), "dispatch", args, lease) == "task 1 is final"
    pruned, _ = run(state, ("prune", {"before": 4, "now": 4}))
    assert model.why_not(pruned, "dispatch", args, lease) == "task 1 is final and was pruned"
