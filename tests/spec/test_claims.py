"""The curriculum as executable truth: every claim it makes, run on the model and the reference schedulers.

The table of checks, one short function each, registered with the claim ids
it runs (``claims.py`` says what an id names). A check runs on ``Model``
(``spec/model.py``), ``SimpleScheduler``, ``IndexedScheduler`` and the
durable scheduler unless it names fewer. A claim that is false fails its
check; a claim with no check, or a check naming no known claim, fails
``test_every_claim_has_a_check_and_every_check_a_claim``.

Claims about a part other than the schedulers (the runner, the mutants) are
checked where that part is tested: ``ELSEWHERE`` names the test, and
``test_a_claim_checked_elsewhere_names_a_test_that_exists`` keeps the name true.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from claims import CHECKS, RESTARTABLE, SCHEDULERS, all_claims, check, leased, raises, refused, seen
from fencepost.spec import model
from fencepost.spec.variants import DEFAULT, VALUES, Variants
from fencepost.story.walkthroughs import builtin_names, resolve
from fencepost.spec.formats.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------- time and timed calls


@check("rule-time", "term-logical-time")
def time_is_an_int_that_never_goes_backwards(s) -> None:
    s.add_worker("w", 1)
    s.advance(5)
    raises(lambda: s.advance(4), "backwards")
    raises(lambda: s.dispatch("w", 4, 1), "backwards")
    raises(lambda: s.advance(-1) if s.now == 0 else s.dispatch("w", -1, 1), "now")
    raises(lambda: s.advance(True), "now", "int")
    assert s.now == 5
    s.advance(5)  # the same time again is not backwards
    assert s.now == 5


@check("rule-untimed", "term-submit", "term-task")
def submit_and_add_worker_take_no_time(s) -> None:
    task_id, lease = leased(s, duration=3)
    s.advance(2)
    s.add_worker("v", 1)
    assert [s.submit(), s.submit(), s.submit()] == [2, 3, 4]
    assert s.now == 2 and s.task(task_id).status == "running"
    assert s.task(2).status == "pending" and s.task(2).due_at == 2


@check("rule-timed-expiry", "term-timed-call", "term-expiry")
def each_timed_call_expires_by_itself(s) -> None:
    s.add_worker("w", 6)
    ids = [s.submit() for _ in range(7)]
    for n in range(6):
        assert s.dispatch("w", 0, n + 1).task_id == ids[n]
    s.dispatch("w", 1, 9)  # t=1: task 1's lease [0, 1) ends first, then task 1 is leased again
    assert s.task(1).attempts == 2
    s.complete(7, 12345, 2)
    assert s.task(2).status == "pending"
    s.fail(7, 12345, 3)
    assert s.task(3).status == "pending"
    s.cancel(7, 4)
    assert s.task(4).status == "pending" and s.task(7).status == "cancelled"
    s.renew(1, 12345, 5, 1)
    assert s.task(5).status == "pending"
    s.advance(6)
    assert s.task(6).status == "pending"
    short = s.dispatch("w", 6, 1)  # [6, 7): the optional timed calls expire first too
    s.prune(0, 7)
    assert s.task(short.task_id).status == "pending"


@check("rule-timed-expiry", "term-timed-call")
def the_timed_batches_expire_first_too(s) -> None:
    s.add_worker("w", 4)
    ids = [s.submit() for _ in range(4)]
    for n in range(3):
        s.dispatch("w", 0, n + 1)  # tasks 1, 2, 3 leased over [0, 1), [0, 2), [0, 3)
    assert s.complete_many([(ids[3], 999)], 1)[0].reason == "not_running"
    assert s.task(1).status == "pending"
    assert s.fail_many([(ids[3], 999)], 2)[0].reason == "not_running"
    assert s.task(2).status == "pending"
    assert [lease.task_id for lease in s.dispatch_many("w", 3, 5, 1)] == [1]  # task 3 ended first: its slot is free
    assert s.task(3).status == "pending"


@check("rule-advance", "term-advance")
def advance_only_moves_the_clock(s) -> None:
    task_id, lease = leased(s, duration=5)
    s.submit(due_at=3)
    before = seen(s, 2)
    s.advance(4)
    assert seen(s, 2)[1] == before[1] and s.now == 4  # a task falling due is not a change of view
    s.advance(5)
    assert s.task(task_id).status == "pending" and s.task(2).status == "pending"


@check("rule-half-open", "term-half-open-interval", "rule-exact-end", "term-closed-interval-bug", "term-lease",
       "term-duration")
def a_lease_is_alive_at_its_start_and_over_at_its_end(s) -> None:
    task_id, lease = leased(s, now=5, duration=5)
    assert (lease.started_at, lease.expires_at) == (5, 10)
    assert s.renew(task_id, lease.token, 5, 5).accepted  # alive at its start
    assert s.renew(task_id, lease.token, 9, 1).accepted  # [9, 10)
    assert refused(s.complete(task_id, lease.token, 10), "lease_expired")  # over at exactly its end
    raises(lambda: s.renew(task_id, lease.token, 10, 0), "duration")


@check("rule-exact-end", "term-closed-interval-bug", on=("model",))
def a_closed_interval_is_the_declared_variant_not_the_contract(s) -> None:
    closed = model.initial(Variants(interval="closed"))
    closed, _ = model.add_worker(closed, "w", 1)
    closed, task_id = model.submit(closed)
    closed, lease = model.dispatch(closed, "w", 0, 5)
    _, outcome = model.complete(closed, task_id, lease.token, 5)
    assert outcome.accepted  # alive at exactly its end: the bug, unless declared
    assert DEFAULT.interval == "half-open"


@check("rule-capacity", "term-capacity", "term-slot", "term-worker")
def a_worker_holds_at_most_capacity_leases_and_a_slot_frees_when_a_lease_ends(s) -> None:
    s.add_worker("w", 2)
    for _ in range(5):
        s.submit()
    first, second = s.dispatch("w", 0, 5), s.dispatch("w", 0, 3)
    assert s.dispatch("w", 0, 5) is None and second.expires_at == 3
    assert s.complete(first.task_id, first.token, 1).accepted
    third = s.dispatch("w", 1, 9)
    assert third is not None and s.dispatch("w", 1, 9) is None
    assert s.dispatch("w", 3, 9) is not None  # second's lease [0, 3) ended at 3: its slot is free at 3
    assert s.dispatch("w", 3, 9) is None


@check("rule-dispatch-none", "term-none", "term-dispatch")
def an_empty_dispatch_assigns_nothing_and_uses_no_token_or_id(s) -> None:
    s.add_worker("w", 1)
    assert s.dispatch("w", 0, 5) is None
    task_id = s.submit()
    assert task_id == 1
    lease = s.dispatch("w", 0, 5)
    assert lease.token == 1
    assert s.dispatch("w", 0, 5) is None  # full
    s.add_worker("v", 1)
    assert s.dispatch("v", 1, 5).token == 2 if s.submit() == 2 else False


@check("rule-fresh-token", "term-token")
def every_lease_gets_a_fresh_token_even_the_same_task_on_the_same_worker(s) -> None:
    task_id, lease = leased(s, duration=2)
    tokens = [lease.token]
    for now in (2, 4, 6):
        again = s.dispatch("w", now, 2)
        assert again.task_id == task_id and again.worker == "w"
        tokens.append(again.token)
    assert tokens == sorted(set(tokens)) and len(tokens) == 4


@check("rule-current-token", "term-complete", "term-accepted", "term-rejected")
def only_the_current_token_before_the_end_is_accepted(s) -> None:
    task_id, lease = leased(s, duration=5)
    assert refused(s.complete(task_id, lease.token + 1, 1), "stale_token")
    assert refused(s.renew(task_id, 999, 1, 5), "stale_token")
    assert refused(s.fail(task_id, 0, 1), "stale_token")
    assert s.task(task_id).status == "running"  # a rejection changes no task
    s.advance(5)
    assert refused(s.complete(task_id, lease.token, 5), "lease_expired")
    again = s.dispatch("w", 5, 5)
    assert refused(s.complete(task_id, lease.token, 6), "stale_token")
    assert s.complete(task_id, again.token, 6).accepted


@check("rule-unknown", "term-stale-token")
def stale_token_is_any_other_token_while_the_task_runs(s) -> None:
    task_id, lease = leased(s, duration=5)
    for token in (999, lease.token + 1, lease.token - 1, -7):
        assert refused(s.complete(task_id, token, 1), "stale_token"), token
    s.complete(task_id, lease.token, 1)
    assert refused(s.complete(task_id, 999, 2), "already_final")
    waiting = s.submit()
    assert refused(s.complete(waiting, 999, 2), "not_running")


@check("rule-unknown")
def the_token_whose_lease_expired_last_is_the_exception_waiting_or_final(s) -> None:
    s.add_worker("w", 2)
    waits, ends = s.submit(), s.submit(max_attempts=1)
    a, b = s.dispatch("w", 0, 5), s.dispatch("w", 0, 5)
    s.advance(5)
    assert (s.task(waits).status, s.task(ends).status) == ("pending", "failed")
    assert refused(s.complete(waits, a.token, 5), "lease_expired")  # waiting, yet not not_running
    assert refused(s.complete(ends, b.token, 5), "lease_expired")  # final, yet not already_final
    assert refused(s.complete(waits, b.token, 5), "not_running")  # any other token gets the row's reasons
    assert refused(s.complete(ends, a.token, 5), "already_final")
    again = s.dispatch("w", 5, 5)
    assert refused(s.complete(waits, a.token, 6), "stale_token")  # while it runs, no exception
    s.complete(waits, again.token, 6)
    assert refused(s.complete(waits, a.token, 7), "already_final")  # the re-dispatch ended the exception


@check("rule-unknown", "term-error", "term-worker")
def unknown_ids_and_workers_are_errors_not_rejections(s) -> None:
    s.add_worker("w", 1)
    raises(lambda: s.add_worker("w", 1), "w")
    raises(lambda: s.dispatch("nobody", 0, 1), "nobody")
    raises(lambda: s.complete(1, 1, 0), "task_id")
    s.submit()
    raises(lambda: s.cancel(2, 0), "task_id", "2")
    raises(lambda: s.complete(1, "1", 0), "token")  # a token is an int
    assert s.now == 0


@check("rule-succeeded", "term-succeeded")
def an_accepted_complete_ends_the_task_succeeded(s) -> None:
    task_id, lease = leased(s)
    assert s.complete(task_id, lease.token, 1).accepted
    view = s.task(task_id)
    assert view.status == "succeeded" and view.worker is None and view.token is None


@check("rule-expiry", "term-expiry", "term-pending", "term-failed", "term-cancelled")
def an_expired_task_is_pending_cancelled_or_failed(s) -> None:
    s.add_worker("w", 3)
    plain, spent, asked = s.submit(), s.submit(max_attempts=1), s.submit(max_attempts=1)
    for _ in range(3):
        s.dispatch("w", 0, 5)
    assert s.cancel(asked, 1).accepted
    s.advance(5)
    assert [s.task(t).status for t in (plain, spent, asked)] == ["pending", "failed", "cancelled"]


@check("rule-at-least-once", "term-at-least-once", "term-zombie")
def work_whose_lease_expired_runs_again_unless_budget_or_cancel_says_otherwise(s) -> None:
    s.add_worker("w", 1)
    again, spent = s.submit(priority=1), s.submit(max_attempts=1)
    first = s.dispatch("w", 0, 5)
    s.advance(5)
    second = s.dispatch("w", 5, 5)
    assert (first.task_id, second.task_id) == (again, again)  # it runs again
    assert refused(s.complete(again, first.token, 6), "stale_token")  # the zombie's report counts for nothing
    s.complete(again, second.token, 6)
    s.dispatch("w", 6, 5)
    s.advance(11)
    assert s.task(spent).status == "failed" and s.dispatch("w", 11, 5) is None  # the caveat: budget spent


@check("rule-fencing", "term-fencing", "term-fencing-token", "rule-effects-fence", on=("model",))
def a_fence_per_task_refuses_a_late_write_only_after_a_newer_one(s) -> None:
    s.add_worker("w", 2)
    a, b = s.submit(), s.submit()
    old = s.dispatch("w", 0, 5)
    s.advance(5)
    new = s.dispatch("w", 5, 5)
    other = s.dispatch("w", 5, 5)
    assert old.task_id == new.task_id == a and other.task_id == b
    fence: dict[int, int] = {}  # per task: the highest token seen

    def write(task_id: int, token: int) -> bool:
        if token < fence.get(task_id, 0):
            return False
        fence[task_id] = token
        return True

    assert write(a, old.token)  # a zombie that writes first passes the fence
    assert write(a, new.token) and not write(a, old.token)  # once the newer one has landed, it refuses
    per_account = max(new.token, other.token)
    assert min(new.token, other.token) < per_account  # one mark for both tasks would refuse a live token
    assert write(b, other.token)


@check("rule-due", "term-due-time", "term-eligible", "term-waiting")
def a_task_starts_once_due_inclusive(s) -> None:
    s.add_worker("w", 1)
    task_id = s.submit(due_at=20)
    assert s.dispatch("w", 19, 5) is None
    lease = s.dispatch("w", 20, 5)
    assert lease.task_id == task_id
    s.fail(task_id, lease.token, 21)  # retry_wait until 22
    assert s.task(task_id).status == "retry_wait" and s.dispatch("w", 21, 5) is None
    assert s.dispatch("w", 22, 5).task_id == task_id


@check("rule-dispatch-order", "term-dispatch-order", "term-priority")
def highest_priority_then_earliest_due_then_lowest_id(s) -> None:
    s.add_worker("w", 1)
    ids = [s.submit(due_at=d, priority=p) for p, d in ((0, 0), (0, 0), (1, 5), (1, 3), (-1, 0))]
    for _ in range(6):
        s.submit()
    late = s.submit()  # id 12
    order = []
    for now in range(10, 100, 1):
        lease = s.dispatch("w", now, 1)
        if lease is None:
            break
        order.append(lease.task_id)
        s.complete(lease.task_id, lease.token, now)
    assert order[:4] == [ids[3], ids[2], 1, 2] and order[4:10] == [6, 7, 8, 9, 10, 11]
    assert order[10:] == [late, ids[4]]  # 10 before 12, numerically; priority -1 last


@check("rule-final", "term-final", "rule-already-final", "term-already-final")
def final_tasks_never_change_and_reports_get_already_final(s) -> None:
    s.add_worker("w", 1)
    done, failed_, cancelled = s.submit(), s.submit(max_attempts=1), s.submit()
    first = s.dispatch("w", 0, 5)
    s.complete(done, first.token, 1)
    lease = s.dispatch("w", 1, 5)
    s.fail(failed_, lease.token, 2)
    s.cancel(cancelled, 2)
    before = seen(s, 3)
    for task_id in (done, failed_, cancelled):
        assert refused(s.complete(task_id, first.token, 3), "already_final")
        assert refused(s.fail(task_id, 999, 3), "already_final")
        assert refused(s.cancel(task_id, 3), "already_final")
    assert refused(s.complete(done, first.token, 3), "already_final")  # the duplicate
    assert s.dispatch("w", 3, 5) is None
    assert seen(s, 3)[1] == before[1]


@check("rule-already-final", "term-already-final", "term-lease-expired")
def the_token_that_expired_last_gets_lease_expired_even_once_final(s) -> None:
    s.add_worker("w", 2)
    spent, asked = s.submit(max_attempts=1), s.submit()
    a, b = s.dispatch("w", 0, 5), s.dispatch("w", 0, 5)
    s.cancel(asked, 1)
    s.advance(5)
    assert (s.task(spent).status, s.task(asked).status) == ("failed", "cancelled")
    assert refused(s.complete(spent, a.token, 6), "lease_expired")
    assert refused(s.complete(asked, b.token, 6), "lease_expired")
    assert refused(s.complete(spent, 999, 6), "already_final")
    plain = s.submit()
    c = s.dispatch("w", 6, 5)
    s.advance(11)
    assert refused(s.complete(plain, c.token, 11), "lease_expired")  # nobody holds it
    d = s.dispatch("w", 11, 5)
    assert refused(s.complete(plain, c.token, 12), "stale_token")  # someone does now
    s.complete(plain, d.token, 12)
    assert refused(s.complete(plain, c.token, 13), "already_final")  # and once it has ended


@check("term-lease-expired")
def a_token_whose_lease_expired_gets_not_running_once_a_newer_lease_ends_waiting(s) -> None:
    s.add_worker("w", 1)
    failed, lapsed = s.submit(retry_delay=10), s.submit(due_at=100)
    first = s.dispatch("w", 0, 5)
    s.advance(5)
    second = s.dispatch("w", 5, 5)
    assert s.fail(failed, second.token, 6).accepted and s.task(failed).status == "retry_wait"
    assert refused(s.complete(failed, first.token, 7), "not_running")  # the newer lease was failed
    third = s.dispatch("w", 50, 5)  # the backoff is over by 50
    s.advance(55)
    assert s.task(failed).status == "pending" and third.task_id == failed
    assert refused(s.complete(failed, first.token, 55), "not_running")  # the newer lease expired
    assert refused(s.complete(failed, third.token, 55), "lease_expired")
    assert s.task(lapsed).status == "pending"


@check("rule-invalid", "term-error", "term-argument-rules")
def an_invalid_call_changes_nothing(s) -> None:
    task_id, lease = leased(s, duration=5)
    s.submit()
    before = seen(s, 2)
    bad = [lambda: s.dispatch("w", 7, 0), lambda: s.complete(task_id, lease.token, -1),
           lambda: s.renew(task_id, lease.token, 7, True), lambda: s.cancel(3, 7),
           lambda: s.submit(priority=1.5), lambda: s.submit(max_attempts=0), lambda: s.add_worker("v", 0)]
    for call in bad:
        raises(call)
        assert seen(s, 2) == before  # no expiry (the lease ends at 5), no clock change
    assert s.submit() == 3  # no id used
    s.advance(5)
    assert s.dispatch("w", 5, 5).token == lease.token + 1  # no token used


@check("rule-empty-dispatch", "rule-rejection-timed", "term-rejected")
def an_empty_dispatch_and_a_rejection_still_move_the_clock(s) -> None:
    s.add_worker("w", 1)
    s.add_worker("v", 1)
    task_id, other = s.submit(), s.submit()
    lease = s.dispatch("w", 0, 5)
    s.dispatch("v", 0, 5)
    assert s.dispatch("w", 3, 5) is None and s.now == 3
    assert refused(s.complete(task_id, 999, 5), "stale_token") or s.task(task_id).status == "pending"
    assert s.now == 5 and s.task(other).status == "pending"  # the clock moved and both leases ended
    assert s.task(task_id).status == "pending" and lease.expires_at == 5


@check("rule-reasons", "term-reason", "term-not-running")
def reasons_follow_fencepost_order(s) -> None:
    task_id, lease = leased(s, duration=5, max_attempts=2)
    s.fail(task_id, lease.token, 1)
    assert s.task(task_id).status == "retry_wait"
    assert refused(s.fail(task_id, lease.token, 1), "not_running")  # a second fail, same token
    never = s.submit()
    assert refused(s.complete(never, 1, 1), "not_running")  # never dispatched
    s.cancel(never, 1)
    again = s.dispatch("w", 2, 5)
    assert s.cancel(task_id, 3).accepted
    assert refused(s.renew(task_id, again.token, 3, 5), "cancel_requested")
    assert refused(s.renew(task_id, 999, 3, 5), "stale_token")  # stale_token comes first


@check("rule-keys", "term-key", "term-idempotent")
def a_known_key_with_the_same_arguments_returns_the_first_id(s) -> None:
    s.add_worker("w", 1)
    first = s.submit(priority=2, key="order-1")
    assert s.submit(priority=2, key="order-1") == first
    assert s.submit() == first + 1  # the repeat used no id
    lease = s.dispatch("w", 0, 5)
    s.complete(first, lease.token, 1)
    assert s.submit(priority=2, key="order-1") == first  # kept while its task is, final or not
    assert not hasattr(s.task(first), "key")


@check("rule-keys", "rule-prune", "term-key", "term-prune", on=("model", "simple", "indexed", "durable"))
def prune_forgets_final_tasks_that_ended_before_and_their_keys(s) -> None:
    s.add_worker("w", 1)
    done = s.submit(key="k")
    waiting = s.submit(due_at=100)
    lease = s.dispatch("w", 0, 5)
    s.complete(done, lease.token, 2)
    assert s.prune(2, 3) == 0  # it ended at 2, not before 2
    assert s.prune(3, 3) == 1
    raises(lambda: s.task(done), "forgotten")
    assert s.task(waiting).status == "pending"  # only final tasks are forgotten
    assert s.submit(key="k") == 3  # the key may make a new task; ids are never reused
    raises(lambda: s.prune(4, 3), "before")


@check("rule-key-conflict", "term-key-conflict")
def a_known_key_with_other_arguments_is_an_error(s) -> None:
    s.advance(4)
    first = s.submit(key="k")
    raises(lambda: s.submit(due_at=4, key="k"), "k", "due_at")  # a left-out due_at is not the 4 it stood for
    raises(lambda: s.submit(priority=1, key="k"), "priority")
    assert s.submit(key="k") == first and s.submit() == first + 1


@check("rule-keys-validated", "term-key")
def arguments_are_validated_before_the_key_is_looked_up(s) -> None:
    first = s.submit(key="k")
    raises(lambda: s.submit(priority=True, key="k"), "priority")  # not the first id back
    raises(lambda: s.submit(key=""), "key")
    raises(lambda: s.submit(key=7), "key")
    assert s.submit() == first + 1


@check("rule-fail", "term-fail", "term-backoff", "term-retry-wait")
def an_accepted_fail_waits_out_a_doubling_backoff(s) -> None:
    task_id, lease = leased(s, duration=50, retry_delay=3, max_attempts=4)
    now, dues = 0, []
    for attempt in range(1, 4):
        assert s.fail(task_id, lease.token, now + 1).accepted
        view = s.task(task_id)
        assert view.status == "retry_wait" and view.due_at == now + 1 + 3 * 2 ** (attempt - 1)
        dues.append(view.due_at - (now + 1))
        now = view.due_at
        lease = s.dispatch("w", now, 50)
    assert dues == [3, 6, 12]
    s.fail(task_id, lease.token, now + 1)
    assert s.task(task_id).status == "failed"
    other, lease = s.submit(max_attempts=1), None
    lease = s.dispatch("w", now + 1, 5)
    s.cancel(other, now + 2)
    assert s.fail(other, lease.token, now + 2).accepted and s.task(other).status == "cancelled"


@check("rule-budget", "term-attempt")
def every_dispatch_is_an_attempt_and_max_attempts_caps_them(s) -> None:
    s.add_worker("w", 1)
    capped, free = s.submit(max_attempts=2, priority=1), s.submit()
    for now in (0, 1):
        assert s.dispatch("w", now, 1).task_id == capped
    s.advance(2)
    assert s.task(capped).status == "failed" and s.task(capped).attempts == 2
    for now in range(2, 30):
        s.dispatch("w", now, 1)
    assert s.task(free).attempts == 28 and s.task(free).status == "running"


@check("rule-expired-attempt", "term-expired-attempt")
def an_expiry_uses_an_attempt_without_backoff(s) -> None:
    task_id, lease = leased(s, duration=5, retry_delay=100, max_attempts=3)
    s.advance(5)
    view = s.task(task_id)
    assert view.status == "pending" and view.attempts == 1
    assert s.dispatch("w", 5, 5).task_id == task_id


@check("rule-renew", "term-renew", "term-heartbeat")
def renew_moves_the_end_with_the_same_token_and_cannot_revive(s) -> None:
    task_id, lease = leased(s, duration=10)
    assert s.renew(task_id, lease.token, 2, 3).accepted
    assert s.task(task_id).expires_at == 5 and s.task(task_id).token == lease.token  # shortened
    for now in (4, 8, 12):  # heartbeats keep it alive
        assert s.renew(task_id, lease.token, now, 5).accepted
    s.advance(17)
    assert refused(s.renew(task_id, lease.token, 17, 5), "lease_expired")
    assert s.task(task_id).status == "pending"


@check("rule-argument-types", "term-argument-rules")
def int_arguments_are_ints_never_bools_with_their_minimums(s) -> None:
    raises(lambda: s.add_worker("w", True), "capacity")
    raises(lambda: s.add_worker("w", 0), "capacity")
    s.add_worker("w", 1)
    raises(lambda: s.submit(retry_delay=0), "retry_delay")
    raises(lambda: s.submit(max_attempts=False), "max_attempts")
    raises(lambda: s.submit(due_at=-1), "due_at")
    raises(lambda: s.dispatch("w", 0, 0), "duration")
    raises(lambda: s.advance(-1), "now")
    for name in ("", 1, None):
        raises(lambda: s.add_worker(name, 1), "worker")  # a non-empty str
    for key in ("", 1, True):
        raises(lambda: s.submit(key=key), "key")  # a non-empty str when given
    assert s.submit(due_at=0, max_attempts=1, retry_delay=1) == 1


@check("rule-past-due", "term-due-time")
def a_past_due_at_is_due_at_once_and_a_left_out_one_means_now(s) -> None:
    s.add_worker("w", 1)
    s.advance(10)
    past, now_ = s.submit(due_at=3, priority=1), s.submit()
    assert s.task(now_).due_at == 10
    assert s.dispatch("w", 10, 1).task_id == past


@check("rule-cancel", "term-cancel", "term-cooperative")
def cancel_ends_waiting_tasks_and_only_asks_running_ones(s) -> None:
    s.add_worker("w", 1)
    running, pending, later = s.submit(priority=1), s.submit(), s.submit(due_at=50)
    lease = s.dispatch("w", 0, 5)
    assert s.cancel(pending, 1).accepted and s.cancel(later, 1).accepted
    assert s.cancel(running, 1).accepted
    assert [s.task(t).status for t in (running, pending, later)] == ["running", "cancelled", "cancelled"]
    assert s.task(running).cancel_requested and lease.token == s.task(running).token
    assert s.dispatch("w", 60, 5) is None  # a cancelled task never starts


@check("rule-cancel-requested", "term-cancel-requested")
def after_a_cancel_request_renew_is_refused_complete_counts_fail_cancels(s) -> None:
    s.add_worker("w", 3)
    a, b, c = s.submit(), s.submit(max_attempts=1), s.submit()
    la, lb, lc = (s.dispatch("w", 0, 5) for _ in range(3))
    for task_id in (a, b, c):
        s.cancel(task_id, 1)
    assert refused(s.renew(a, la.token, 1, 5), "cancel_requested")
    s.submit()
    assert s.dispatch("w", 1, 5) is None  # the leases keep their slots
    assert s.complete(a, la.token, 2).accepted and s.task(a).status == "succeeded"
    assert s.fail(b, lb.token, 2).accepted and s.task(b).status == "cancelled"  # even with the budget spent
    s.advance(5)
    assert s.task(c).status == "cancelled"


@check("rule-view", "term-task-view", "term-running")
def lease_fields_show_only_while_running(s) -> None:
    task_id, lease = leased(s, duration=5)
    view = s.task(task_id)
    assert (view.status, view.worker, view.token, view.expires_at) == ("running", "w", lease.token, 5)
    s.cancel(task_id, 1)
    assert s.task(task_id).cancel_requested
    s.advance(5)
    view = s.task(task_id)
    assert (view.worker, view.token, view.expires_at, view.cancel_requested) == (None, None, None, False)
    assert len(view.__dataclass_fields__) == 9


@check("rule-same-instant", "term-same-instant")
def at_exactly_the_end_a_call_finds_the_lease_over(s) -> None:
    task_id, lease = leased(s, duration=5)
    assert s.cancel(task_id, 5).accepted
    assert s.task(task_id).status == "cancelled"  # pending at 5, so cancelled at once
    other, lease2 = s.submit(), None
    lease2 = s.dispatch("w", 5, 5)
    assert refused(s.renew(other, lease2.token, 10, 5), "lease_expired")


@check("rule-safety-only", "term-liveness")
def nothing_happens_without_a_timed_call(s) -> None:
    task_id, lease = leased(s, duration=5)
    s.submit()
    s.submit(due_at=3)
    assert s.now == 0 and s.task(task_id).status == "running"  # untimed calls expire nothing
    assert s.task(task_id).expires_at == 5 and s.task(2).status == "pending"


@check("rule-restart", "term-restart", "term-durable", "term-key", on=RESTARTABLE)
def a_restart_loses_and_changes_nothing_acknowledged(s) -> None:
    task_id, lease = leased(s, duration=10, key="k")
    s.submit(due_at=30)
    s.cancel(2, 1)
    before = seen(s, 2)
    s = s.reopen()
    assert seen(s, 2) == before
    assert s.submit(key="k") == task_id
    s.advance(10)
    assert s.task(task_id).status == "pending"  # the lease keeps its end


@check("rule-in-memory", on=("simple", "indexed"))
def an_in_memory_scheduler_has_no_restart(s) -> None:
    task_id, _ = leased(s)
    assert not hasattr(s, "reopen")
    assert raises(lambda: type(s)().task(task_id), "task_id")  # a new process starts empty
    keyed = s.submit(key="k")
    assert type(s)().submit(key="k") != keyed  # and forgets every key: the glossary's "key" says so


@check("rule-exactly-once", "term-exactly-once", "rule-effects-idempotent", "term-idempotent", on=("durable",))
def a_ledger_makes_its_own_write_happen_once_and_nothing_outside_it(s) -> None:
    import tempfile

    from fencepost.impl.runner.effects import EffectLedger

    task_id, first = leased(s, duration=5)
    s.advance(5)
    second = s.dispatch("w", 5, 5)
    charges: list[int] = []
    with tempfile.TemporaryDirectory() as folder, EffectLedger(Path(folder) / "ledger.db") as ledger:
        assert ledger.apply("task-1", first.token, lambda: charges.append(first.token)).accepted  # zombie first
        outcome = ledger.apply("task-1", second.token, lambda: charges.append(second.token))
        assert outcome.accepted and outcome.reason == "already_applied"  # once per key
        assert refused(ledger.apply("task-1", first.token, lambda: charges.append(0)), "stale_token")
        assert ledger.apply("task-2", first.token, lambda: charges.append(-1)).accepted  # per key, not global
        try:
            ledger.apply("task-3", second.token, lambda: (charges.append(3), 1 / 0))
        except ZeroDivisionError:
            pass  # the charge ran; the ledger recorded nothing: a retry runs it again
        assert ledger.apply("task-3", second.token, lambda: charges.append(3)).accepted
    assert charges == [first.token, -1, 3, 3]
    assert task_id == second.task_id


@check("rule-batches", "term-batch")
def a_batch_is_its_single_calls_as_one_all_or_nothing_call(s) -> None:
    s.add_worker("w", 3)
    assert s.submit_many([{}, {"priority": 2}, {"key": "k"}]) == [1, 2, 3]
    raises(lambda: s.submit_many([{}, {"priority": "high"}]), "tasks[1]", "nothing")
    assert s.submit() == 4  # the failed batch used no id
    leases = s.dispatch_many("w", 0, 5, 5)
    assert [lease.task_id for lease in leases] == [2, 1, 3]  # stops when the worker is full
    outcomes = s.complete_many([(2, leases[0].token), (1, 999)], 1)
    assert outcomes[0].accepted and refused(outcomes[1], "stale_token")
    raises(lambda: s.complete_many([(1, leases[1].token), (99, 1)], 2), "reports[1]")
    assert s.task(1).status == "running" and s.now == 1  # all or nothing, no clock change


@check("rule-variants", "term-declared-variant", "term-safety-core", on=("model",))
def a_variant_changes_a_choice_never_the_core(s) -> None:
    findings = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    for queue in ("SQS", "litequeue", "pgqueuer", "Redis", "Celery"):  # the row names them: none conforms
        assert re.search(rf"\| [^|\n]*{queue}[^|\n]*\|[^\n]*\*\*does not conform\*\*", findings), queue
    assert all(values[0] == getattr(DEFAULT, name) for name, values in VALUES.items())
    for variants in (Variants(order="any"), Variants(interval="closed"), Variants(late="accept-unclaimed")):
        state = model.initial(variants)
        state, _ = model.add_worker(state, "w", 2)
        state, task_id = model.submit(state)
        state, lease = model.dispatch(state, "w", 0, 5)
        state, second = model.dispatch(state, "w", 0, 5)
        assert second is None  # at most one live lease per task, whatever is declared
        state, outcome = model.complete(state, task_id, lease.token, 1)
        state, again = model.dispatch(state, "w", 9, 5)
        assert again is None  # a final task never runs again


@check("rule-time-source", "rule-skew", "term-clock-skew", "term-heartbeat", on=("model", "simple", "indexed", "durable"))
def a_client_ahead_expires_others_early_and_one_behind_gets_an_error(s) -> None:
    task_id, lease = leased(s, duration=10)  # a worker at true time 0 holds [0, 10)
    s.submit()
    s.advance(12)  # a client whose clock runs 12 ahead makes a call at true time 0
    assert s.task(task_id).status == "pending"  # the lease ended early: at true time 0, not 10
    raises(lambda: s.complete(task_id, lease.token, 3), "backwards")  # the worker, on true time 3, is refused
    assert s.renew(task_id, lease.token, 12, 10).accepted is False
    again = s.dispatch("w", 12, 5)  # [12, 17), heartbeats every 3 until 15, then a pause of 5
    for now in (12, 15):
        assert s.renew(again.task_id, again.token, now, 5).accepted
    s.advance(20)
    assert refused(s.renew(again.task_id, again.token, 20, 5), "lease_expired")  # heartbeats or not


@check("rule-time-race", on=("model",))
def backwards_time_under_a_shared_clock_is_a_race(s) -> None:
    s.add_worker("w", 1)
    s.submit()
    read_by_a = s.now  # two clients read the shared clock, 0; a's call is delayed
    s.advance(read_by_a + 3)  # b moves it to 3 first
    raises(lambda: s.dispatch("w", read_by_a, 5), "backwards")  # a's call, on a correct time, is refused
    assert s.dispatch("w", s.now, 5) is not None  # made again at the clock's current time


@check("term-heap", "term-stale-entry", on=("indexed",))
def the_indexed_scheduler_drops_a_head_entry_at_once_and_leaves_others_stale(s) -> None:
    s.add_worker("w", 2)
    first, second = s.submit(), s.submit()
    a, b = s.dispatch("w", 0, 5), s.dispatch("w", 0, 9)
    assert [entry[2] for entry in sorted(s._expiry)] == [first, second]
    s.complete(second, b.token, 1)  # below the head: its entry turns stale
    assert s._expiry_stale == 1 and len(s._expiry) == 2
    s.complete(first, a.token, 1)  # at the head: popped at once
    assert s._expiry_stale == 1 and len(s._expiry) == 1
    s.check_invariants()


@check("term-heap", "term-stale-entry", on=("indexed",))
def the_stale_entries_walkthrough_leaves_no_stale_entry_after_its_completion(s) -> None:
    s.add_worker("w1", 1)
    s.submit(priority=5)
    s.submit()
    s.cancel(1, 0)
    assert s._ready_stale == 1  # step 4: the cancelled task's entry stays
    lease = s.dispatch("w1", 0, 5)
    assert lease.task_id == 2 and s._ready_stale == 0  # step 5: dropped when it reached the top
    s.renew(2, lease.token, 1, 9)
    assert s._expiry_stale == 1  # step 6: the old end, 5, is stale
    s.advance(5)
    assert s._expiry_stale == 0 and len(s._expiry) == 1  # step 7: dropped at the top
    s.complete(2, lease.token, 6)
    assert (len(s._expiry), s._expiry_stale, len(s._ready), s._ready_stale) == (0, 0, 0, 0)  # step 8: nothing left


#: Claims about parts other than the schedulers, and the test that checks each there.
ELSEWHERE = {
    "term-runner": "tests/implementations/test_runner_walkthrough.py::test_the_running_work_walkthrough_is_the_calls_a_real_runner_makes",
    "term-user-work": "tests/implementations/test_runner.py::test_user_work_never_runs_under_the_lock",
    "term-lock": "tests/implementations/test_runner.py::test_user_work_never_runs_under_the_lock",
    "term-mutant": "tests/mutation/test_spec_as_test.py::test_conforms_to_the_spec",
    "rule-force-cancel": "tests/implementations/test_runner_processes.py::test_a_forced_cancel_terminates_the_running_attempt",
    "term-process-isolation": "tests/implementations/test_runner.py::test_forcing_a_cancel_with_threads_is_refused_and_changes_nothing",
}


# ---------------------------------------------------------------- the tests


def _cases() -> list:
    return [pytest.param(c, name, id=f"{c.name}-{name}") for c in CHECKS for name in c.on]


@pytest.mark.parametrize(("claim_check", "scheduler"), _cases())
def test_a_claim_holds(claim_check, scheduler: str) -> None:
    claim_check.run(SCHEDULERS[scheduler]())


def test_every_claim_has_a_check_and_every_check_a_claim() -> None:
    claims = all_claims()
    checked = {claim for c in CHECKS for claim in c.claims} | set(ELSEWHERE)
    assert sorted(set(claims) - checked) == [], "claims with no check"
    assert sorted(checked - set(claims)) == [], "checks naming a claim that is not in the table or the glossary"
    assert all(c.claims and c.on and set(c.on) <= set(SCHEDULERS) for c in CHECKS)
    assert len({c.name for c in CHECKS}) == len(CHECKS), "two checks share a name"


def test_a_claim_checked_elsewhere_names_a_test_that_exists() -> None:
    missing = []
    for where in ELSEWHERE.values():
        path, test = where.split("::")
        if not (ROOT / path).is_file() or f"def {test}(" not in (ROOT / path).read_text(encoding="utf-8"):
            missing.append(where)
    assert missing == []


@pytest.mark.parametrize("name", builtin_names())
def test_a_walkthrough_names_the_claims_its_steps_state(name: str) -> None:
    """``meta.claims``: ``"3 rule-due, 5 term-final"``, a step number and the claim its text states."""
    scenario = load_scenario(resolve(name))
    named = scenario.meta.get("claims", "")
    pairs = [item.split() for item in named.split(",") if item.strip()]
    assert pairs, f"{name} names no claim"
    known = all_claims()
    wrong = [p for p in pairs if len(p) != 2 or not p[0].isdigit() or not 1 <= int(p[0]) <= len(scenario.steps)
             or p[1] not in known]
    assert wrong == [], f"{name}: (step, claim) pairs naming no step or no known claim: {wrong}"


def test_the_three_wrong_statements_of_issue_31_stay_gone() -> None:
    """Each sentence the expert review found false, in its place; the checks above run the truth."""
    table = (ROOT / "docs" / "curriculum.md").read_text(encoding="utf-8")
    assert "Every report on a final task is rejected" not in table
    assert "a token that names no lease of the task is `not_running`" not in table
    words = all_claims()
    assert "newer token" not in words["term-stale-token"]
    assert "finished while running, renewed" not in words["term-stale-entry"]
    stale = load_scenario(resolve("stale-entries"))
    assert not any(re.search(r"still in a heap|stale entry since the completion", (step.note or "") + (stale.description or ""))
                   for step in stale.steps)


def test_the_wrong_and_misleading_statements_of_review_round_2_stay_gone() -> None:
    """The sentences the second review found false or misleading; the checks above run the truth."""
    words = all_claims()
    assert "not_running" in words["term-lease-expired"] and "lease_expired" in words["rule-unknown"]
    assert "prune" in words["term-timed-call"] and "durable" in words["term-key"]
    assert "does not conform" not in words["rule-variants"] and "breaking the core" in words["rule-variants"]
    lessons = {name: load_scenario(resolve(name)) for name in ("invalid-calls", "argument-rules", "time-and-queues")}
    said = " ".join((step.note or "") + (f"{step.question.ask} {step.question.why}" if step.question else "")
                    for scenario in lessons.values() for step in scenario.steps)
    # "refused" is a rejection (glossary "rejected"); an invalid call is an error, never "refused"
    assert not re.search(r"refused loudly|it is refused, never|clock that runs behind is refused|Is SQS wrong", said)
    assert "refused" not in words["term-clock-skew"] and "is refused" not in words["rule-skew"]


def _mutants() -> list[str]:
    import pkgutil

    import fencepost.impl.mutants as mutants

    return sorted(m.name for m in pkgutil.iter_modules(mutants.__path__))


@pytest.mark.parametrize("name", _mutants())
def test_the_checks_can_fail_every_mutant_fails_one(name: str) -> None:
    """A check that cannot fail checks nothing: each deliberate bug breaks some claim."""
    import importlib

    make = importlib.import_module(f"fencepost.impl.mutants.{name}").Scheduler
    broken = []
    for claim_check in CHECKS:
        if not set(claim_check.on) & {"simple", "indexed"}:
            continue
        try:
            claim_check.run(make())
        except (AssertionError, ValueError, AttributeError, TypeError):
            broken.append(claim_check.name)
    assert broken, f"the mutant {name} passes every check"
