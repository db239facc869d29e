"""IndexedScheduler's heaps: what the protocol-level conformance check cannot see.

The conformance machine compares only public results. These tests look
inside: stale entries stay bounded under many cancels, renews and
out-of-order completions, compaction happens, ``check_invariants`` catches a
corrupted index, and over random call sequences the indexed scheduler agrees
with ``SimpleScheduler`` call for call -- results, reasons, error messages and
every task view -- with ``check_invariants()`` passing after every call.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fencepost.impl.indexed as indexed
from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import Lease, Status


def running_pair(duration: int = 10) -> tuple[IndexedScheduler, Lease]:
    s = IndexedScheduler()
    s.add_worker("w", 1)
    s.submit()
    lease = s.dispatch("w", 0, duration)
    assert lease is not None
    return s, lease


def count_rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the size of every heap rebuild."""
    sizes: list[int] = []
    real = indexed._rebuild

    def spy(heap: list, tasks: list) -> None:
        sizes.append(len(heap))
        real(heap, tasks)

    monkeypatch.setattr(indexed, "_rebuild", spy)
    return sizes


# ---------------------------------------------------------------- stale entries stay bounded


def test_cancelling_waiting_tasks_compacts_the_ready_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    rebuilds = count_rebuilds(monkeypatch)
    s = IndexedScheduler()
    ids = [s.submit(priority=i % 5) for i in range(300)]
    for task_id in ids:
        assert s.cancel(task_id, 0).accepted
        s.check_invariants()
        live = 300 - task_id
        assert len(s._ready) <= max(2 * live, live + indexed._COMPACT_MIN)
    assert rebuilds, "300 cancels never rebuilt the ready heap"
    assert len(s._ready) <= indexed._COMPACT_MIN
    assert s._ready_stale == len(s._ready)


def test_cancelling_future_tasks_compacts_the_due_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    rebuilds = count_rebuilds(monkeypatch)
    s = IndexedScheduler()
    ids = [s.submit(due_at=100 + i % 7) for i in range(200)]
    assert len(s._due) == 200 and not s._ready
    for task_id in ids[::-1]:
        s.cancel(task_id, 0)
        s.check_invariants()
    assert rebuilds
    assert len(s._due) <= indexed._COMPACT_MIN


def test_renewing_one_lease_many_times_keeps_the_expiration_heap_small(monkeypatch: pytest.MonkeyPatch) -> None:
    rebuilds = count_rebuilds(monkeypatch)
    s, lease = running_pair(duration=5)
    for step in range(1000):
        outcome = s.renew(lease.task_id, lease.token, step // 200, 5 + step % 3)
        assert outcome.accepted
        s.check_invariants()
        assert len(s._expiry) <= indexed._COMPACT_MIN + 1
    assert rebuilds
    assert s.task(lease.task_id).expires_at == 4 + 5 + 999 % 3


def test_renewing_to_the_same_expiry_adds_no_entry() -> None:
    s, lease = running_pair(duration=10)
    assert s.renew(lease.task_id, lease.token, 5, 5).accepted  # 5 + 5 == 10: unchanged
    assert len(s._expiry) == 1 and s._expiry_stale == 0
    s.check_invariants()


def test_renewing_back_to_an_earlier_expiry_expires_once() -> None:
    """10 -> 15 -> 10: two entries (10, token) exist, only the newest is live."""
    s, lease = running_pair(duration=10)
    assert s.renew(lease.task_id, lease.token, 5, 10).accepted
    assert s.renew(lease.task_id, lease.token, 6, 4).accepted
    s.check_invariants()
    s.advance(10)
    s.check_invariants()
    view = s.task(lease.task_id)
    assert view.status is Status.PENDING and view.token is None
    assert s.complete(lease.task_id, lease.token, 10).reason == "lease_expired"


def test_completing_out_of_order_compacts_the_expiration_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    rebuilds = count_rebuilds(monkeypatch)
    s = IndexedScheduler()
    s.add_worker("w", 300)
    for _ in range(300):
        s.submit()
    leases = [s.dispatch("w", 0, 10 + i) for i in range(300)]
    for lease in leases[::-1]:  # the latest expiry first: never the heap's head
        assert s.complete(lease.task_id, lease.token, 1).accepted
        s.check_invariants()
    assert rebuilds
    assert len(s._expiry) <= indexed._COMPACT_MIN


def test_completing_the_earliest_lease_pops_it_at_once() -> None:
    s, lease = running_pair()
    assert s.complete(lease.task_id, lease.token, 1).accepted
    assert s._expiry == [] and s._expiry_stale == 0


def test_stale_entries_surface_and_are_dropped_without_reviving_a_task() -> None:
    s = IndexedScheduler()
    s.add_worker("w", 1)
    cancelled = s.submit(priority=9)
    kept = s.submit(priority=1)
    assert s.cancel(cancelled, 0).accepted
    assert s._ready_stale == 1
    lease = s.dispatch("w", 0, 5)
    assert lease is not None and lease.task_id == kept
    assert s._ready == [] and s._ready_stale == 0
    assert s.task(cancelled).status is Status.CANCELLED
    s.check_invariants()


def test_a_task_falls_due_into_the_ready_heap_when_time_reaches_it() -> None:
    s = IndexedScheduler()
    task_id = s.submit(due_at=7)
    assert s._due == [(7, task_id)] and s._ready == []
    s.advance(6)
    assert s._ready == []
    s.advance(7)
    assert s._due == [] and s._ready == [(0, 7, task_id)]
    s.check_invariants()


def test_a_failed_task_waits_in_the_due_heap_then_becomes_ready() -> None:
    s, lease = running_pair()
    assert s.fail(lease.task_id, lease.token, 3).accepted  # retry at 3 + 1 * 2**0 = 4
    assert s._due == [(4, lease.task_id)]
    assert s.dispatch("w", 3, 5) is None
    again = s.dispatch("w", 4, 5)
    assert again is not None and again.task_id == lease.task_id and again.token == lease.token + 1
    s.check_invariants()


def test_an_expired_lease_goes_back_to_the_ready_heap() -> None:
    s, lease = running_pair(duration=5)
    s.advance(5)
    assert s._expiry == [] and s._ready == [(0, 0, lease.task_id)]
    assert s._load == {"w": 0}
    s.check_invariants()


# ---------------------------------------------------------------- check_invariants catches corruption
#
# ``check_invariants()`` is the oracle every other test leans on, so each of its
# checks gets a corruption that only that check catches, and the test pins the
# whole message: a weaker check, or one that names the wrong entry, fails here.
# (These cases are in mutmut's test selection for that reason.)


def healthy() -> IndexedScheduler:
    """Tasks 1-6 fresh with priorities 0-5, 7 and 8 not yet due, 6 running
    (token 1, expires at 10) and 1 cancelled: every heap and record kind."""
    s = IndexedScheduler()
    s.add_worker("w", 2)
    for priority in range(6):
        s.submit(priority=priority)
    s.submit(due_at=50)
    s.submit(due_at=60)
    assert s.dispatch("w", 0, 10).task_id == 6
    assert s.cancel(1, 0).accepted
    s.check_invariants()
    return s


def replace_fresh(s: IndexedScheduler, task_id: int, record: tuple) -> None:
    """Put ``record`` in place of a fresh task's tuple, in the registry and the ready heap."""
    old = s._at(task_id)
    s._ready[next(i for i, e in enumerate(s._ready) if e is old)] = record
    s._tasks[task_id - s._first] = record


def swap_due_root(s: IndexedScheduler) -> str:
    s._due[0], s._due[1] = s._due[1], s._due[0]
    return "due heap property broken at index 1: (60, 8) > (50, 7)"


def swap_below_root(s: IndexedScheduler) -> str:
    heap = s._ready
    assert heap[1] < heap[3] and heap[1] != heap[2]  # so the message's parent is unambiguous
    heap[1], heap[3] = heap[3], heap[1]
    return f"ready heap property broken at index 3: {heap[1]} > {heap[3]}"


def push_an_entry_twice(s: IndexedScheduler) -> str:
    indexed.heappush(s._due, s._due[0])
    return "entry (50, 7) is in the due heap twice or in two heaps"


def push_an_entry_for_no_task(s: IndexedScheduler) -> str:
    indexed.heappush(s._due, (70, 99))
    return "due entry (70, 99) names no task"


def miscount_stale(s: IndexedScheduler) -> str:
    s._ready_stale += 1
    return "ready heap says 2 stale entries, a recount finds 1 of 5"


def skip_compaction(s: IndexedScheduler) -> str:
    for i in range(70):  # distinct stale entries for cancelled task 1, ordered after every live one
        indexed.heappush(s._ready, (100, i, 1))
    s._ready_stale += 70
    return "ready heap holds 71 stale entries of 75: past the compaction threshold"


def cut_a_fresh_record(s: IndexedScheduler) -> str:
    replace_fresh(s, 3, s._at(3) + (None,))
    return "task 3's fresh record is (-2, 0, 3, None)"


def make_a_fresh_record_not_due(s: IndexedScheduler) -> str:
    replace_fresh(s, 3, (-2, 5, 3, None, 1))
    return "task 3's fresh record is (-2, 5, 3, None, 1)"


def move_a_fresh_record_to_the_due_heap(s: IndexedScheduler) -> str:
    record = s._at(3)
    s._ready.remove(record)
    indexed.heapify(s._ready)
    indexed.heappush(s._due, record)
    return "fresh task 3 is in the due heap"


def drop_a_running_worker(s: IndexedScheduler) -> str:
    s._get(6).worker = None
    return "task 6 is running with worker=None token=1 expires_at=10"


def request_cancel_of_a_waiting_task(s: IndexedScheduler) -> str:
    s._get(3).cancel_requested = True
    return "task 3 is pending with cancel_requested"


def overspend_a_running_task(s: IndexedScheduler) -> str:
    s._get(6).max_attempts = 0
    return "task 6 has 1 attempts, above max_attempts=0"


def spend_a_waiting_task(s: IndexedScheduler) -> str:
    t = s._get(3)
    t.max_attempts = t.attempts = 2
    return "task 3 is pending with its attempt budget spent"


def move_a_lease_to_an_unknown_worker(s: IndexedScheduler) -> str:
    s._get(6).worker = "x"
    return "task 6 runs on unknown worker 'x'"


def keep_an_expired_lease(s: IndexedScheduler) -> str:
    s._now = 10
    return "task 6's lease is alive at now=10 >= expires_at=10"


def forge_a_token(s: IndexedScheduler) -> str:
    s._get(6).token = 2
    return "task 6 holds token 2, never issued"


def give_a_final_task_an_entry(s: IndexedScheduler) -> str:
    s._get(1).entry = (0, 0, 1)
    return "task 1 is final (cancelled) but has a live entry (0, 0, 1)"


def drop_a_live_entry(s: IndexedScheduler) -> str:
    s._ready.remove(s._get(3).entry)
    indexed.heapify(s._ready)
    return "task 3 (pending) has its live entry (-2, 0, 3) in the None heap, not the ready heap"


def move_a_live_entry_to_the_wrong_heap(s: IndexedScheduler) -> str:
    entry = s._get(7).entry
    s._due.remove(entry)
    indexed.heappush(s._ready, entry)
    return "task 7 (pending) has its live entry (50, 7) in the ready heap, not the due heap"


def change_a_key_behind_its_entry(s: IndexedScheduler) -> str:
    s._get(3).priority = 100
    return "task 3's live entry is (-2, 0, 3), its record says (-100, 0, 3)"


def miscount_load(s: IndexedScheduler) -> str:
    s._load["w"] = 0
    return "per-worker running counts are {'w': 0}, a recount finds {'w': 1}"


def shrink_capacity_under_a_lease(s: IndexedScheduler) -> str:
    s._capacity["w"] = 0
    return "worker 'w' runs 1 tasks, above its capacity 0"


def share_a_token(s: IndexedScheduler) -> str:
    second = s.dispatch("w", 0, 10)
    assert (second.task_id, second.token) == (5, 2)
    t = s._get(5)
    s._expiry.remove(t.entry)
    t.token, t.entry = 1, (10, 1, 5)
    indexed.heappush(s._expiry, t.entry)
    return "two running tasks share a token: [1, 1]"


def file_a_record_under_an_id_never_issued(s: IndexedScheduler) -> str:
    s._old[9] = s._get(1)
    return "the registry holds task 9, never issued"


def miscount_the_holes(s: IndexedScheduler) -> str:
    s._holes += 1
    return "the registry says 1 holes, a recount finds 0"


def leave_the_list_mostly_holes(s: IndexedScheduler) -> str:
    s._tasks[:0] = [None] * 9  # nine holes left uncut before task 1
    s._first -= 9
    s._holes += 9
    return "the registry's list is 9 holes of 17: past the cutting threshold"


def file_a_record_in_the_dict_above_the_list_start(s: IndexedScheduler) -> str:
    s._tasks[0], s._old[1] = None, s._tasks[0]
    s._holes += 1
    return "the registry's list holds ids 1..8 and its dict [1], of the 8 issued"


def forget_when_a_task_ended(s: IndexedScheduler) -> str:
    s._get(1).ended_at = None
    return "task 1 is cancelled with ended_at=None"


def drop_a_task_from_the_final_queue(s: IndexedScheduler) -> str:
    s._final.clear()
    return "the final queue holds [], the final tasks are [1]"


def forget_a_record_but_not_its_place_in_the_final_queue(s: IndexedScheduler) -> str:
    s._tasks[0] = None  # its stale ready entry names a forgotten task, which is allowed
    s._holes += 1
    return "the final queue holds [1], the final tasks are []"


def queue_the_last_two_final_tasks_out_of_order(s: IndexedScheduler) -> str:
    assert s.cancel(2, 3).accepted and s.cancel(7, 5).accepted  # ended at 0, 3, 5: queue [1, 2, 7]
    s._final[1], s._final[2] = s._final[2], s._final[1]
    return "the final queue is not in the order the tasks ended: [(0, 1), (5, 7), (3, 2)]"


def keep_a_key_without_its_task(s: IndexedScheduler) -> str:
    s._keys["k"] = (3, (0, None, None, 1))
    return "the keys {'k': (3, (0, None, None, 1))} and the keyed tasks {} disagree"


def keep_a_key_of_a_forgotten_task(s: IndexedScheduler) -> str:
    s._keys["k"], s._key_of[9] = (9, (0, None, None, 1)), "k"
    return "a key names a task not in the registry: {9: 'k'}"


CORRUPTIONS = [
    swap_due_root, swap_below_root, push_an_entry_twice, push_an_entry_for_no_task, miscount_stale,
    skip_compaction, cut_a_fresh_record, make_a_fresh_record_not_due, move_a_fresh_record_to_the_due_heap,
    drop_a_running_worker, request_cancel_of_a_waiting_task, overspend_a_running_task, spend_a_waiting_task,
    move_a_lease_to_an_unknown_worker, keep_an_expired_lease, forge_a_token, give_a_final_task_an_entry,
    drop_a_live_entry, move_a_live_entry_to_the_wrong_heap, change_a_key_behind_its_entry, miscount_load,
    shrink_capacity_under_a_lease, share_a_token, file_a_record_under_an_id_never_issued,
    miscount_the_holes, leave_the_list_mostly_holes, file_a_record_in_the_dict_above_the_list_start,
    forget_when_a_task_ended, drop_a_task_from_the_final_queue, forget_a_record_but_not_its_place_in_the_final_queue,
    queue_the_last_two_final_tasks_out_of_order, keep_a_key_without_its_task, keep_a_key_of_a_forgotten_task,
]


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda f: f.__name__)
def test_check_invariants_catches_a_corrupted_index(corrupt) -> None:
    s = healthy()
    message = corrupt(s)
    with pytest.raises(AssertionError) as caught:
        s.check_invariants()
    assert str(caught.value) == message


def test_a_fresh_task_is_its_own_ready_entry_until_something_needs_more() -> None:
    s = IndexedScheduler()
    s.add_worker("w", 1)
    first, second, later = s.submit(priority=2), s.submit(max_attempts=3, retry_delay=2), s.submit(due_at=5)
    assert s._at(first) is s._ready[0] == (-2, 0, first)  # the defaults: three fields
    assert s._at(second) == (0, 0, second, 3, 2)
    assert type(s._at(later)) is indexed._Task  # not due yet: a full record in the due heap
    view = s.task(second)
    assert (view.status, view.priority, view.due_at, view.attempts, view.token) == (Status.PENDING, 0, 0, 0, None)
    assert type(s._at(second)) is tuple  # looking changes nothing
    assert s.complete(second, 1, 0).reason == "not_running"
    lease = s.dispatch("w", 0, 5)
    assert lease.task_id == first and type(s._at(first)) is indexed._Task
    assert s.cancel(second, 0).accepted
    record = s._at(second)
    assert type(record) is indexed._Task and record.max_attempts == 3 and record.retry_delay == 2
    assert s._ready_stale == 1  # the fresh tuple is still in the heap, now stale
    s.check_invariants()


@pytest.mark.parametrize("call", ["fail", "renew"])
def test_a_rejected_call_on_a_fresh_task_keeps_it_pending(call: str) -> None:
    s = IndexedScheduler()
    task_id = s.submit(priority=4)
    args = {"task_id": task_id, "token": 1, "now": 0} | ({"duration": 3} if call == "renew" else {})
    assert getattr(s, call)(**args).reason == "not_running"
    assert s.task(task_id).status is Status.PENDING
    s.check_invariants()


def test_unusual_ints_are_kept_as_given_in_a_full_record() -> None:
    """An int subclass takes the checked path; the view shows the object the caller gave."""
    from enum import IntEnum

    class Level(IntEnum):
        HIGH = 5

    s = IndexedScheduler()
    task_id = s.submit(priority=Level.HIGH)
    assert type(s._at(task_id)) is indexed._Task
    assert s.task(task_id).priority is Level.HIGH
    s.check_invariants()


def test_the_fast_lease_builder_makes_real_leases() -> None:
    s = IndexedScheduler()
    s.add_worker("w", 1)
    s.submit(), s.submit()
    assert s.complete(1, s.dispatch("w", 0, 5).token, 0).accepted
    lease = s.dispatch("w", 1, 8)
    assert type(lease) is Lease
    assert lease == Lease(2, "w", 2, 1, 9)
    assert repr(lease) == repr(Lease(2, "w", 2, 1, 9)) and hash(lease) == hash(Lease(2, "w", 2, 1, 9))
    with pytest.raises(AttributeError):
        lease.token = 8  # type: ignore[misc]


# ---------------------------------------------------------------- agreement with SimpleScheduler

OPS = ("add_worker", "submit", "dispatch", "complete", "fail", "cancel", "renew", "advance", "task")

# Abstract calls: an op and four small choices, resolved against the current state.
calls = st.lists(
    st.tuples(st.sampled_from(OPS), st.integers(0, 7), st.integers(0, 7), st.integers(0, 7), st.integers(0, 5)),
    max_size=80,
)


def resolve(s: SimpleScheduler, issued: int, tokens: list[int], op: str, a: int, b: int, c: int, d: int,
            anywhere: int | None = None) -> dict:
    """Concrete arguments for ``op``: mostly valid, landing on boundaries, sometimes invalid.

    ``anywhere``, when given, picks the task among all issued ids rather than the newest.
    """
    now = s.now
    views = [s.task(task_id) for task_id in range(1, issued + 1)]
    running = [view for view in views if view.status is Status.RUNNING]

    def when(pick: int) -> object:
        if pick == 0 and running:
            return running[a % len(running)].expires_at  # exactly at expiry
        if pick == 1 and running:
            return max(now, running[a % len(running)].expires_at - 1)
        if pick == 2:
            return now - 1 if now else -1  # invalid: backwards or negative
        if pick == 3 and a == 7:
            return True  # invalid: bool
        return now + (pick - 3 if pick > 3 else 0)

    def task_id() -> int:
        if b == 7:
            return issued + 1  # unknown
        if b == 6 and running:
            return running[a % len(running)].id
        if anywhere is not None and issued:
            return 1 + anywhere % issued
        return issued - (a * 8 + c) % issued if issued else 1  # one of the 64 newest

    def token(task: int) -> int:
        if c == 7 or not tokens:
            return (tokens[-1] if tokens else 0) + 1  # never issued
        current = views[task - 1].token if 1 <= task <= issued else None
        return current if current is not None and c < 4 else tokens[(a + c) % len(tokens)]

    durations = (1, 1, 2, 3, 5, 0)
    workers = ("w1", "w2", "w3", "w1", "ghost", 7, "", "w2")
    if op == "add_worker":
        return {"worker": workers[a], "capacity": (1, 2, 3, 0, True)[d % 5]}
    if op == "submit":
        return {
            "priority": (0, 1, 2, -1, 0, 1, 2, 9)[a],
            "due_at": (None, now, now + 1, now + 2, max(0, now - 1), -1, None, now + 5)[b],
            "max_attempts": (None, 1, 2, 3, None, 0)[d],
            "retry_delay": (1, 2, 1, 3, 0, 1, 1, 1)[c],
        }
    if op == "dispatch":
        return {"worker": workers[b], "now": when(c), "duration": durations[d]}
    if op in ("complete", "fail"):
        task = task_id()
        return {"task_id": task, "token": token(task), "now": when(d)}
    if op == "cancel":
        return {"task_id": task_id(), "now": when(d)}
    if op == "renew":
        task = task_id()
        return {"task_id": task, "token": token(task), "now": when(c % 6), "duration": durations[d]}
    if op == "advance":
        return {"now": when(c % 6)}
    return {"task_id": task_id() if b != 5 else 0}


def outcome(scheduler: object, op: str, args: dict) -> tuple:
    try:
        return ("returned", getattr(scheduler, op)(**args))
    except ValueError as exc:
        return ("raised", str(exc))


def agree(script: list[tuple]) -> None:
    """Run ``script`` (``resolve``'s choices) on both schedulers; answers, views and clocks must match."""
    simple, fast = SimpleScheduler(), IndexedScheduler()
    issued, tokens = 0, []
    for number, (op, *choices) in enumerate(script, 1):
        args = resolve(simple, issued, tokens, op, *choices)
        expected, got = outcome(simple, op, args), outcome(fast, op, args)
        assert got == expected, f"step {number}: {op}({args}) gave {got}, SimpleScheduler gave {expected}"
        if isinstance(expected[1], Lease):
            tokens.append(expected[1].token)
        elif op == "submit" and expected[0] == "returned":
            issued = expected[1]
        fast.check_invariants()
        assert fast.now == simple.now
        for task_id in range(1, issued + 1):
            assert fast.task(task_id) == simple.task(task_id), f"step {number}: task {task_id} differs"


@settings(max_examples=150, deadline=None)
@given(calls)
def test_agrees_with_simple_scheduler(script: list[tuple[str, int, int, int, int]]) -> None:
    agree(script)


@settings(max_examples=100, deadline=None)
@given(calls)
def test_agrees_with_simple_scheduler_when_every_stale_entry_compacts(script: list) -> None:
    """With thresholds at their smallest, nearly every call rebuilds a heap."""
    saved = indexed._COMPACT_MIN
    indexed._COMPACT_MIN = 0
    try:
        agree(script)
    finally:
        indexed._COMPACT_MIN = saved


def test_agrees_over_a_long_busy_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hundreds of tasks, most cancelled, so the default thresholds are crossed too."""
    import random

    rebuilds = count_rebuilds(monkeypatch)
    rng = random.Random(7)
    busy = ("submit",) * 2 + ("cancel",) * 6 + ("dispatch", "dispatch", "complete", "fail", "renew", "advance")
    script: list[tuple] = [("add_worker", i, 0, 0, 2) for i in range(3)]
    script += [("submit", rng.randrange(8), rng.choice((0, 2, 7)), 0, 0) for _ in range(150)]
    script += [(rng.choice(busy), rng.randrange(8), rng.randrange(7), rng.randrange(8), rng.randrange(6),
                rng.randrange(10**6)) for _ in range(600)]
    agree(script)
    assert rebuilds, "the busy run never crossed a compaction threshold"
