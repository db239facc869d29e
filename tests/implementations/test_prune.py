"""``prune(before, now)`` in every shipped scheduler, call for call against the model.

Random programs over a few tasks (keys, retries, cancels, expiries) with
``prune`` calls at times chosen to hit the boundary ``ended_at == before``;
after every call each id's view must be the model's, and a forgotten id must
raise ``ValueError`` saying so. Memory after pruning is checked by counting
what a scheduler holds (records, heap entries, keys, rows), never by timing.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fencepost.impl import durable
from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec import model
from fencepost.spec.protocol import Status


def _postgres():
    from fencepost.impl.postgres import scheduler as postgres

    return postgres.temporary()


FACTORIES = {"simple": SimpleScheduler, "indexed": IndexedScheduler, "durable": durable.temporary}
if os.environ.get("FENCEPOST_PG_DSN"):
    FACTORIES["postgres"] = _postgres

every_scheduler = pytest.mark.parametrize("make", list(FACTORIES.values()), ids=list(FACTORIES))

_ids = st.integers(1, 7)
_times = st.integers(0, 3)  # a step forward in time


@st.composite
def calls(draw) -> list[tuple[str, dict]]:
    """A program: each call's ``now`` is the previous one plus a small step (so boundaries coincide)."""
    now, program = 0, []
    for _ in range(draw(st.integers(1, 30))):
        now += draw(_times)
        op = draw(st.sampled_from(["submit", "submit", "dispatch", "dispatch", "complete", "fail", "cancel",
                                   "renew", "prune", "prune", "task"]))
        if op == "submit":
            args = {"max_attempts": draw(st.sampled_from([None, 1, 2])), "key": draw(st.sampled_from([None, "a", "b"]))}
        elif op == "dispatch":
            args = {"worker": "w", "now": now, "duration": draw(st.integers(1, 4))}
        elif op in ("complete", "fail"):
            args = {"task_id": draw(_ids), "token": draw(st.integers(1, 6)), "now": now}
        elif op == "renew":
            args = {"task_id": draw(_ids), "token": draw(st.integers(1, 6)), "now": now, "duration": 2}
        elif op == "cancel":
            args = {"task_id": draw(_ids), "now": now}
        elif op == "prune":
            args = {"before": draw(st.integers(max(0, now - 4), now + 1)), "now": now}  # now + 1: invalid
        else:
            args = {"task_id": draw(_ids)}
        program.append((op, args))
    return program


def _views(scheduler, state: model.State) -> None:
    """Every id's view agrees with the model's; a forgotten id raises saying so, an unknown one raises."""
    for task_id in range(1, len(state.tasks) + 2):
        try:
            expected = model.task(state, task_id)
        except ValueError as refusal:
            with pytest.raises(ValueError) as caught:
                scheduler.task(task_id)
            if "forgotten" in str(refusal):
                assert "forgot" in str(caught.value).lower(), caught.value
            continue
        assert scheduler.task(task_id) == expected


def run_in_lockstep(scheduler, program: list[tuple[str, dict]]) -> model.State:
    state = model.initial()
    state, _ = model.apply(state, "add_worker", {"worker": "w", "capacity": 2})
    scheduler.add_worker("w", 2)
    for op, args in program:
        if op == "task":
            _views(scheduler, state)
            continue
        try:
            state, expected = model.apply(state, op, args)
        except ValueError:
            with pytest.raises(ValueError):
                getattr(scheduler, op)(**args)
        else:
            got = getattr(scheduler, op)(**args)
            assert got == expected, (op, args)
        check = getattr(scheduler, "check_invariants", None)
        if check is not None:
            check()
    _views(scheduler, state)
    return state


@every_scheduler
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=calls())
def test_prune_agrees_with_the_model_call_for_call(make, program) -> None:
    scheduler = make()
    try:
        run_in_lockstep(scheduler, program)
    finally:
        getattr(scheduler, "close", lambda: None)()


def _boundary_program() -> list[tuple[str, dict]]:
    """Task 1 ends at t=5, task 2 at t=6, task 3 keeps running, task 4 waits; then prune(before=6, now=6)."""
    return [
        ("submit", {"key": "k"}), ("submit", {}), ("submit", {}), ("submit", {"due_at": 50}),
        ("dispatch", {"worker": "w", "now": 0, "duration": 100}),  # task 1, token 1
        ("dispatch", {"worker": "w", "now": 0, "duration": 100}),  # task 2, token 2
        ("complete", {"task_id": 1, "token": 1, "now": 5}),
        ("complete", {"task_id": 2, "token": 2, "now": 6}),
        ("dispatch", {"worker": "w", "now": 6, "duration": 100}),  # task 3, token 3
        ("prune", {"before": 6, "now": 6}),
    ]


@every_scheduler
def test_prune_forgets_exactly_what_ended_before_and_never_reuses_ids_tokens_or_keys(make) -> None:
    scheduler = make()
    try:
        state = run_in_lockstep(scheduler, _boundary_program())
        assert [t.id for t in state.tasks if t.forgotten] == [1]  # task 2 ended exactly at before: kept
        with pytest.raises(ValueError, match="forgotten"):
            scheduler.task(1)
        with pytest.raises(ValueError, match="forgotten"):
            scheduler.complete(1, 1, 6)
        assert scheduler.task(2).status == "succeeded"
        assert scheduler.submit(key="k") == 5  # the key was forgotten with task 1: a new task, a new id
        assert scheduler.complete(3, 3, 7).accepted
        lease = scheduler.dispatch("w", 7, 10)
        assert (lease.task_id, lease.token) == (5, 4)  # tokens go on from the last one issued
        assert scheduler.prune(8, 8) == 2  # tasks 2 and 3
        assert scheduler.submit() == 6
    finally:
        getattr(scheduler, "close", lambda: None)()


@pytest.mark.parametrize("bad", [
    {"before": 3, "now": 2}, {"before": -1, "now": 2}, {"before": "1", "now": 2}, {"before": True, "now": 2},
    {"before": 0, "now": -1}, {"before": 0, "now": 0.5},
])
@every_scheduler
def test_an_invalid_prune_names_the_argument_and_changes_nothing(make, bad) -> None:
    scheduler = make()
    try:
        scheduler.add_worker("w", 1)
        scheduler.submit()
        lease = scheduler.dispatch("w", 1, 1)
        with pytest.raises(ValueError) as caught:
            scheduler.prune(**bad)
        assert ("before" in str(caught.value)) or ("now" in str(caught.value))
        assert scheduler.now == 1
        assert scheduler.task(1).token == lease.token  # the lease due at 2 did not expire
    finally:
        getattr(scheduler, "close", lambda: None)()


# ------------------------------------------------------------------ memory returns to the live set


def _churn(scheduler, rounds: int, live: int) -> None:
    """``rounds`` tasks run to the end (every fifth keyed, every seventh cancelled waiting), ``live`` left running."""
    scheduler.add_worker("w", live + 1)
    now = 0
    for i in range(rounds):
        task_id = scheduler.submit(key=f"k{i}" if i % 5 == 0 else None)
        if i % 7 == 0:
            scheduler.cancel(task_id, now)
            continue
        lease = scheduler.dispatch("w", now, 1000)
        scheduler.complete(lease.task_id, lease.token, now)
        now += 1
    for _ in range(live):
        scheduler.submit()
        scheduler.dispatch("w", now, 10**6)
    scheduler.prune(now + 1, now + 1)


def test_the_indexed_scheduler_holds_only_the_live_tasks_after_pruning() -> None:
    s = IndexedScheduler()
    _churn(s, 5000, live=3)
    s.check_invariants()
    assert len(s._records()) == 3 and not s._final and not s._keys and not s._key_of
    assert len(s._tasks) + len(s._old) == 3  # no slot kept for a forgotten task
    assert len(s._expiry) - s._expiry_stale == 3
    assert len(s._ready) + len(s._due) + len(s._expiry) <= 3 + 64  # at most _COMPACT_MIN stale entries
    assert s._last_id == 5003 and s._last_token == 5000 - 715 + 3


def test_the_simple_scheduler_keeps_one_empty_slot_per_forgotten_task() -> None:
    s = SimpleScheduler()
    _churn(s, 700, live=3)
    assert sum(t is not None for t in s._tasks) == 3 and not s._keys


def test_the_durable_scheduler_deletes_the_rows_and_keeps_its_counters(tmp_path) -> None:
    path = tmp_path / "s.db"
    s = durable.DurableScheduler(path, synchronous="NORMAL")
    _churn(s, 700, live=3)
    s.check_invariants()
    reopened = s.reopen()
    try:
        conn = reopened._conn  # the scheduler owns the file exclusively: count through its connection
        assert conn.execute("SELECT count(*) FROM tasks").fetchone()[0] == 3
        assert conn.execute("SELECT count(*) FROM keys").fetchone()[0] == 0
        assert reopened.submit() == 704  # ids go on after a reopen, with every older row gone
        reopened.check_invariants()
    finally:
        reopened.close()


#: The layout of a version 1 file (before prune), as that version wrote it, with two tasks:
#: task 1 (key "k") succeeded under token 1 at some time before the clock, 4; task 2 pending.
V1_FILE = """
CREATE TABLE scheduler (only_row INTEGER PRIMARY KEY CHECK (only_row = 1), now INTEGER NOT NULL);
INSERT INTO scheduler (only_row, now) VALUES (1, 4);
CREATE TABLE workers (name TEXT PRIMARY KEY, capacity INTEGER NOT NULL CHECK (capacity >= 1)) WITHOUT ROWID;
CREATE TABLE tasks (
    id INTEGER PRIMARY KEY, priority INTEGER NOT NULL, due_at INTEGER NOT NULL, max_attempts INTEGER,
    retry_delay INTEGER NOT NULL, status TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0,
    token INTEGER, worker TEXT, started_at INTEGER, expires_at INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0, expired_token INTEGER
);
CREATE INDEX tasks_waiting ON tasks (priority DESC, due_at, id) WHERE status IN ('pending', 'retry_wait');
CREATE TABLE keys (key TEXT PRIMARY KEY, task_id INTEGER NOT NULL REFERENCES tasks (id), due_at INTEGER) WITHOUT ROWID;
INSERT INTO workers VALUES ('w', 1);
INSERT INTO tasks (id, priority, due_at, retry_delay, status, attempts, token) VALUES (1, 0, 0, 1, 'succeeded', 1, 1);
INSERT INTO tasks (id, priority, due_at, retry_delay) VALUES (2, 0, 4, 1);
INSERT INTO keys VALUES ('k', 1, NULL);
PRAGMA user_version = 1;
"""


def test_a_version_1_file_is_upgraded_and_its_final_tasks_count_as_ended_at_the_upgrade(tmp_path) -> None:
    import sqlite3

    path = tmp_path / "v1.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(V1_FILE)
    conn.close()
    upgraded = durable.DurableScheduler(path)
    try:
        upgraded.check_invariants()
        assert upgraded.prune(4, 4) == 0  # task 1 counts as ended at the upgrade, t=4
        assert upgraded.prune(5, 5) == 1
        assert upgraded.submit(key="k") == 3
        assert upgraded.dispatch("w", 5, 1).token == 2
    finally:
        upgraded.close()


@pytest.mark.skipif("postgres" not in FACTORIES, reason="FENCEPOST_PG_DSN is not set: no PostgreSQL server to test on")
def test_the_postgres_scheduler_deletes_the_rows_and_keeps_its_counters() -> None:
    s = _postgres()
    _churn(s, 300, live=3)
    now, views = s.snapshot()
    assert len(views) == 3
    assert s._conn.execute(f"SELECT count(*) FROM {s.schema}.keys").fetchone()[0] == 0
    other = s.reopen()
    try:
        assert other.submit() == 304
        assert other.dispatch("w", now, 5).token == 300 - 43 + 4
    finally:
        other.close()
        s.close()


@pytest.mark.skipif("postgres" not in FACTORIES, reason="FENCEPOST_PG_DSN is not set: no PostgreSQL server to test on")
def test_a_pruned_shared_task_takes_its_payload_with_it() -> None:
    from fencepost.impl.postgres.payloads import PostgresPayloads

    s = _postgres()
    store = PostgresPayloads(s.dsn, schema=s.schema)
    try:
        s.add_worker("w", 1)
        for key in ("k1", "k2"):
            store.put(key, "noop", [], {})
            s.submit(key=key)
        lease = s.dispatch("w", 0, 10)
        s.complete(lease.task_id, lease.token, 1)
        assert store.stamp() == (1, 2)
        assert s.prune(2, 2) == 1
        count = s._conn.execute(f"SELECT count(*) FROM {s.schema}.payloads").fetchone()[0]
        assert count == 1 and store.for_task(2) is not None and store.for_task(1) is None
        assert store.stamp() == (2, 2)  # the id counter, whatever rows are gone
    finally:
        store.close()
        s.close()


def test_the_indexed_scheduler_moves_the_survivors_of_a_sparse_registry_to_a_dict_and_still_serves_them() -> None:
    """Task 1 waits (low priority) and task 2 runs while 200 others come and are forgotten: the
    registry's list, all holes but those two, moves them to its dict; both still work from there."""
    s = IndexedScheduler()
    s.add_worker("w", 2)
    waiting, running = s.submit(priority=-1), s.submit(priority=5)
    held = s.dispatch("w", 0, 10**6)
    assert held.task_id == running
    for now in range(200):
        task_id = s.submit(priority=1)
        lease = s.dispatch("w", now, 10)
        assert lease.task_id == task_id
        assert s.complete(task_id, lease.token, now).accepted
    assert s.prune(200, 200) == 200
    assert s._first == 203 and s._tasks == [] and sorted(s._old) == [waiting, running]
    s.check_invariants()
    assert s.task(waiting).status is Status.PENDING and type(s._old[waiting]) is tuple
    lease = s.dispatch("w", 200, 10)
    assert lease.task_id == waiting and type(s._old[waiting]) is not tuple
    assert s.complete(running, held.token, 200).accepted  # an id below the list: the checked path
    assert s.complete(waiting, lease.token, 201).accepted
    s.check_invariants()
    assert s.prune(202, 202) == 2 and not s._old and s._tasks == []
    s.check_invariants()
    with pytest.raises(ValueError, match="forgotten"):
        s.complete(running, held.token, 203)
