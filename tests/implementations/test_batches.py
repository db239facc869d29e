"""Batches in every shipped scheduler: the single calls in order, all or nothing, one commit.

The conformance check drives batches wherever they are offered (the machine's
batch rules); these tests pin what it cannot see: a batch that raises changes
nothing in any scheduler (ids and tokens included), the durable scheduler
commits a batch once and reloads its caches when one rolls back, the
PostgreSQL scheduler makes one round trip per batch, and batched workers
racing on one schema never hand a task out twice, never accept a stale
report, and leave a linearizable history.
"""

from __future__ import annotations

import random

import pytest

import pg_server
from fencepost.impl.durable import temporary as durable_temporary
from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec import model
from fencepost.spec.checkers.linearize import check_history
from fencepost.spec.formats.history import HistoryLog, dumps_event, loads_history
from pg_races import clients, race


def postgres() -> object:
    pg_server.require_server()
    from fencepost.impl.postgres.scheduler import temporary

    return temporary()


FACTORIES = {"simple": SimpleScheduler, "indexed": IndexedScheduler, "durable": durable_temporary, "postgres": postgres}
every_scheduler = pytest.mark.parametrize("make", FACTORIES.values(), ids=FACTORIES.keys())


def views(s: object) -> list:
    found, task_id = [], 1
    while True:
        try:
            found.append(s.task(task_id))
        except ValueError:
            return found
        task_id += 1


def random_batches(make, seed: int, steps: int = 60) -> None:
    """Random batches and single calls, each compared with the model: results, then every view."""
    rnd = random.Random(seed)
    s, state = make(), model.initial()
    s.add_worker("w", 3)
    state, _ = model.add_worker(state, "w", 3)
    now = 0
    for _ in range(steps):
        op = rnd.choice(("submit_many", "dispatch_many", "complete_many", "fail_many", "advance", "dispatch"))
        if op == "submit_many":
            choices = ({}, {"priority": 2}, {"key": "a"}, {"key": "a", "priority": 1}, {"retry_delay": 0}, {"max_attempts": 1})
            args = {"tasks": [dict(rnd.choice(choices)) for _ in range(rnd.randint(0, 4))]}
        elif op in ("dispatch_many", "dispatch"):
            now += rnd.randint(0, 2)
            args = {"worker": "w", "now": now, "duration": rnd.randint(1, 4)}
            if op == "dispatch_many":
                args["limit"] = rnd.randint(0, 5)
        elif op == "advance":
            now += rnd.randint(0, 3)
            args = {"now": now}
        else:
            now += rnd.randint(0, 1)
            args = {"reports": [[rnd.randint(1, len(state.tasks) + 1), rnd.randint(1, state.last_token + 1)]
                                for _ in range(rnd.randint(0, 4))], "now": now}
        try:
            state, want = model.apply(state, op, args)
        except ValueError:
            with pytest.raises(ValueError):
                getattr(s, op)(**args)
        else:
            have = getattr(s, op)(**args)
            assert model.same_answer(want, have), (op, args, want, have)
        assert views(s) == [model.view(t) for t in state.tasks], (op, args)
        if hasattr(s, "check_invariants"):
            s.check_invariants()
    getattr(s, "close", lambda: None)()


@every_scheduler
def test_batches_and_single_calls_agree_with_the_model(make) -> None:
    for seed in range(4):
        random_batches(make, seed)


@every_scheduler
def test_an_invalid_batch_changes_nothing_and_consumes_no_id_or_token(make) -> None:
    s = make()
    s.add_worker("w", 2)
    assert s.submit_many([{}, {"key": "k"}]) == [1, 2]
    refused = (
        ("submit_many", {"tasks": [{}, {"priority": 1}, {"retry_delay": 0}]}),
        ("submit_many", {"tasks": [{}, {"key": "k", "priority": 5}]}),  # a key conflict, found last
        ("submit_many", {"tasks": [{}, {"key": "new"}, {"key": "new", "priority": 1}]}),  # within the batch
        ("submit_many", {"tasks": [{}, {"colour": 1}]}),
        ("dispatch_many", {"worker": "w", "now": 1, "duration": 5, "limit": 0}),
        ("complete_many", {"reports": [[1, 1], [9, 1]], "now": 1}),
        ("fail_many", {"reports": [[1, 1], [1, "1"]], "now": 1}),
    )
    for op, args in refused:
        with pytest.raises(ValueError, match=r"\[\d\]|limit"):
            getattr(s, op)(**args)
        assert s.now == 0 and len(views(s)) == 2, op
    assert s.submit() == 3  # no id was consumed
    assert [lease.token for lease in s.dispatch_many("w", 1, 5, 5)] == [1, 2]  # nor a token
    getattr(s, "close", lambda: None)()


def test_a_durable_batch_is_one_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    s = durable_temporary()
    s.add_worker("w", 10)
    commits = []
    original = type(s)._commit
    monkeypatch.setattr(type(s), "_commit", lambda self, conn: (commits.append(1), original(self, conn)))
    s.submit_many([{}] * 10)
    leases = s.dispatch_many("w", 1, 5, 10)
    s.complete_many([(lease.task_id, lease.token) for lease in leases], 2)
    assert len(commits) == 3
    s.close()


def test_a_durable_batch_that_rolls_back_reloads_its_caches() -> None:
    s = durable_temporary()
    s.add_worker("w", 2)
    s.submit(key="k")
    with pytest.raises(ValueError, match=r"tasks\[2\]"):
        s.submit_many([{}, {}, {"key": "k", "priority": 9}])  # two submits done, then the conflict rolls all back
    s.check_invariants()  # the caches (task count) are the file's again
    assert s.submit() == 2
    reopened = s.reopen()
    assert len(views(reopened)) == 2
    reopened.close()


class _Counting:
    """A connection that counts the statements sent to it (an executemany counts once)."""

    def __init__(self, conn: object) -> None:
        self.conn, self.sent = conn, 0

    def execute(self, *args: object) -> object:
        self.sent += 1
        return self.conn.execute(*args)

    def executemany(self, *args: object) -> object:
        self.sent += 1
        return self.conn.executemany(*args)

    def __getattr__(self, name: str) -> object:
        return getattr(self.conn, name)


def statements(s: object, call) -> int:
    """How many statements ``call()`` sends to the durable scheduler's file."""
    counting = s._conn = _Counting(s._conn)
    try:
        call()
    finally:
        s._conn = counting.conn
    return counting.sent


def test_a_durable_batch_is_a_few_statements_whatever_its_size() -> None:
    """Set-based batches: the statements a batch sends do not grow with its size."""
    counts = {}
    for size in (2, 20):
        s = durable_temporary()
        s.add_worker("w", size)
        submitted = statements(s, lambda: s.submit_many([{}] * size))
        leases = []
        dispatched = statements(s, lambda: leases.extend(s.dispatch_many("w", 1, 5, size)))
        completed = statements(s, lambda: s.complete_many([(lease.task_id, lease.token) for lease in leases], 2))
        counts[size] = (submitted, dispatched, completed)
        s.check_invariants()
        s.close()
    # BEGIN, the batch's statements (the INSERT; the SELECT and the UPDATE; the UPDATE), COMMIT, plus the clock's
    # UPDATE at a new time. A fold of single calls sent three statements per call.
    assert counts[2] == counts[20] == (3, 5, 4), counts


def test_a_large_durable_batch_answers_as_simple() -> None:
    """A thousand rows a batch, keys on all, duplicates in the reports: every row written, SimpleScheduler's answers."""
    size = 1007
    calls = [("add_worker", {"worker": "w", "capacity": size}),
             ("submit_many", {"tasks": [{"priority": n % 3, "key": f"k{n}"} for n in range(size)]}),
             ("dispatch_many", {"worker": "w", "now": 1, "duration": 5, "limit": size + 1})]
    s, twin = durable_temporary(), SimpleScheduler()
    got = [_answer(s, op, args) for op, args in calls]
    assert got == [_answer(twin, op, args) for op, args in calls]
    leases = got[-1]
    half = [(lease.task_id, lease.token) for lease in leases[::2]]
    more = [("complete_many", {"reports": half + half[:3], "now": 2}),
            ("fail_many", {"reports": [(lease.task_id, lease.token) for lease in leases], "now": 3})]
    assert [_answer(s, op, args) for op, args in more] == [_answer(twin, op, args) for op, args in more]
    assert views(s) == views(twin)
    s.check_invariants()
    s.close()


def simple_twin(calls: list) -> list:
    """The answers SimpleScheduler gives to ``calls`` ((op, kwargs) pairs): reasons included."""
    s = SimpleScheduler()
    return [_answer(s, op, args) for op, args in calls]


def _answer(s: object, op: str, args: dict) -> object:
    try:
        return getattr(s, op)(**args)
    except ValueError as exc:
        return ("ValueError", str(exc).split(":")[0])


def test_durable_report_batches_judge_each_report_after_the_ones_before_it() -> None:
    """Twice the same report, a stale token after an accepted one, an expired lease: answers and reasons as SimpleScheduler's."""
    calls = [
        ("add_worker", {"worker": "w", "capacity": 4}),
        ("submit_many", {"tasks": [{}, {}, {"max_attempts": 1}, {}]}),
        ("dispatch_many", {"worker": "w", "now": 1, "duration": 3, "limit": 2}),  # tasks 1, 2: tokens 1, 2
        ("dispatch_many", {"worker": "w", "now": 2, "duration": 10, "limit": 9}),  # tasks 3, 4: tokens 3, 4
        ("complete_many", {"reports": [[1, 2], [1, 1], [1, 1], [2, 1], [3, 3]], "now": 3}),
        ("fail_many", {"reports": [[2, 2], [4, 4], [4, 4], [3, 3]], "now": 4}),  # task 2's lease ended at 4
        ("dispatch_many", {"worker": "w", "now": 5, "duration": 10, "limit": 9}),  # task 2, then 4 (due at 5)
        ("cancel", {"task_id": 2, "now": 5}),
        ("fail_many", {"reports": [[2, 5], [2, 5]], "now": 6}),  # cancel requested: cancelled, then already final
        ("complete_many", {"reports": [[2, 5], [4, 6], [9, 1]], "now": 6}),  # an unknown id: the whole batch refused
        ("complete_many", {"reports": [[4, 6]], "now": 7}),
    ]
    s = durable_temporary()
    got = [_answer(s, op, args) for op, args in calls]
    s.check_invariants()
    assert got == simple_twin(calls)
    assert [view.status for view in views(s)] == ["succeeded", "cancelled", "succeeded", "succeeded"]
    reopened = s.reopen()
    assert [view.status for view in views(reopened)] == ["succeeded", "cancelled", "succeeded", "succeeded"]
    reopened.close()


def test_a_durable_fail_many_whose_retry_time_leaves_64_bits_changes_nothing() -> None:
    s = durable_temporary()
    s.add_worker("w", 2)
    s.submit_many([{}, {"retry_delay": 2**62}])
    a, b = s.dispatch_many("w", 2**62, 5, 2)
    s.complete(a.task_id, a.token, 2**62)  # only b is left running, under a lease that the retry must outlive
    before = views(s)
    with pytest.raises(ValueError, match=r"reports\[1\].*the retry time .* is after the latest time"):
        s.fail_many([(a.task_id, a.token), (b.task_id, b.token)], 2**62 + 1)
    assert views(s) == before and s.now == 2**62
    s.check_invariants()
    s.close()


@every_scheduler
@pytest.mark.parametrize("op", ["complete_many", "fail_many"])
def test_a_report_batch_naming_a_forgotten_task_is_refused_whole_with_the_models_words(make, op) -> None:
    """PostgreSQL used to answer rejected (no reason) for a pruned id in a batch (``check --jobs 2`` found it)."""
    s = make()
    s.add_worker("w", 2)
    s.submit_many([{}, {}, {}])
    first = s.dispatch("w", 1, 5)
    assert s.complete(first.task_id, first.token, 2).accepted
    assert s.prune(3, 3) == 1
    second, third = s.dispatch_many("w", 3, 5, 2)
    reports = [(second.task_id, second.token), (first.task_id, first.token), (third.task_id, third.token)]
    with pytest.raises(ValueError) as caught:
        getattr(s, op)(reports, 4)
    assert str(caught.value) == ("reports[1]: task_id 1 was forgotten: it was final and pruned since "
                                 "(its id is never reused) (nothing in the batch was done)")
    assert [s.task(2).status, s.task(3).status] == ["running", "running"] and s.now == 3
    if hasattr(s, "check_invariants"):
        s.check_invariants()


def test_durable_submit_many_keys_as_the_single_submits_would() -> None:
    calls = [
        ("submit_many", {"tasks": [{"key": "a"}, {}, {"key": "a"}, {"key": "b", "priority": 3}]}),  # a twice: one task
        ("submit_many", {"tasks": [{"key": "b", "priority": 3}, {"key": "c"}]}),  # b known: its id, c new
        ("submit_many", {"tasks": [{"key": "d"}, {"key": "b"}]}),  # b with other arguments: all refused
        ("submit_many", {"tasks": [{"key": "d"}, {"priority": 2**63}]}),  # past the contract's 64 bits: all refused
        ("submit_many", {"tasks": [{"key": "d"}]}),
        ("submit_many", {"tasks": []}),
    ]
    s = durable_temporary()
    got = [_answer(s, op, args) for op, args in calls]
    want = simple_twin(calls)
    assert got == want and got[4:] == [[5], []]
    assert got[3] == ("ValueError", "tasks[1]")
    s.check_invariants()
    reopened = s.reopen()
    assert reopened.submit(key="a") == 1 and reopened.submit(key="d") == 5 and reopened.submit() == 6
    reopened.close()


def test_a_postgres_batch_is_one_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    s = postgres()
    s.add_worker("w", 10)
    calls = []
    original = type(s)._call
    monkeypatch.setattr(type(s), "_call", lambda self, op, *rest, **kw: (calls.append(op), original(self, op, *rest, **kw))[1])
    s.submit_many([{}] * 10)
    leases = s.dispatch_many("w", 1, 5, 10)
    outcomes = s.complete_many([(lease.task_id, lease.token) for lease in leases], 2)
    assert calls == ["submit_many", "dispatch_many", "complete_many"]
    assert len(leases) == 10 and all(o.accepted for o in outcomes)
    s.close()


#: Batched workers per race, the tasks each round, and the rounds.
WORKERS, TASKS, ROUNDS = 4, 9, 6


def batched_worker_race(scheduler: object, wrap=lambda s, name: s, run=race) -> list[str]:
    """Per round: every worker claims up to 3 at once, then reports all it got plus a zombie's stale report.

    The zombie report names the task another worker holds, with the token of
    an earlier round's lease: it must be refused whatever was accepted before
    it in its batch. ``run`` makes a round's calls (default: all at once, in threads).
    """
    cs = clients(scheduler, WORKERS, wrap)
    first = cs[0]
    problems: list[str] = []
    try:
        for i in range(WORKERS):
            first.add_worker(f"w{i}", 3)
        for round_ in range(ROUNDS):
            t = 100 * round_
            first.submit_many([{}] * TASKS)
            batches = run([lambda c=c, i=i: c.dispatch_many(f"w{i}", t, 50, 3) for i, c in enumerate(cs)])
            leases = [lease for batch in batches for lease in batch]
            ids = [lease.task_id for lease in leases]
            if len(set(ids)) != len(ids):
                problems.append(f"round {round_}: a task leased twice at once: {sorted(ids)}")
            if len(set(ids)) != TASKS:
                problems.append(f"round {round_}: {TASKS} tasks due, {len(set(ids))} leased")
            reports = []
            for n, batch in enumerate(batches):
                pairs = [[lease.task_id, lease.token] for lease in batch]
                other = batches[(n + 1) % len(batches)]
                if pairs and other:
                    pairs.insert(1, [other[0].task_id, 1])  # token 1 is round 0's: stale from round 1 on
                reports.append(pairs)
            outcomes = run([lambda c=c, r=r: c.complete_many(r, t + 1) for c, r in zip(cs, reports)])
            accepted = sorted(tuple(pair) for r, o in zip(reports, outcomes) for pair, out in zip(r, o) if out.accepted)
            held = sorted((lease.task_id, lease.token) for lease in leases)
            if round_ and accepted != held:
                problems.append(f"round {round_}: accepted {accepted}, the current leases are {held}")
    finally:
        for c in cs[1:]:
            getattr(c, "close", lambda: None)()
    return problems


def test_batched_workers_racing_on_one_schema_hand_out_each_task_once_and_refuse_stale_reports() -> None:
    s = postgres()
    assert batched_worker_race(s) == []
    s.close()


def test_batched_workers_race_history_is_linearizable() -> None:
    s = postgres()
    log = HistoryLog()
    assert batched_worker_race(s, wrap=log.recorder) == []
    s.close()
    text = "\n".join(dumps_event(e) for e in log.events) + "\n"
    history = loads_history(text, "batched race")
    assert sum(1 for call in history.calls if call.op in ("dispatch_many", "complete_many")) == 2 * WORKERS * ROUNDS
    verdict = check_history(history)
    assert verdict.linearizable is True, verdict.failure


def test_the_race_catches_a_batch_that_trusts_its_earlier_reports() -> None:
    """The same rounds over a scheduler whose complete_many accepts a stale token after an accepted one."""
    from fencepost.impl.mutants.complete_many_trusts_batch import Scheduler

    shared = Scheduler()

    class Client:  # several clients of one in-memory scheduler
        def __getattr__(self, name: str) -> object:
            return getattr(shared, name)

        def reopen(self) -> "Client":
            return Client()

    # In order, not at once: each worker's batch (with its stale report on the next worker's task)
    # comes before that worker's own, which is when the bug shows; racing threads may hide it.
    problems = batched_worker_race(Client(), run=lambda calls: [call() for call in calls])
    assert any("accepted" in p for p in problems), problems


@pytest.mark.parametrize("storage", ["durable", "postgres"])
def test_crash_recovers_batches_whole_on_durable_sqlite_and_postgres(storage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``fencepost crash`` with batches in its workload: every kill recovers the calls that returned, a batch whole."""
    import fencepost.spec.checkers.crash as crash
    from fencepost.impl.durable import DurableScheduler

    if storage == "postgres":
        pg_server.require_server()
        from fencepost.impl.postgres.scheduler import opener
    else:
        opener = DurableScheduler
    runs = []
    check = crash.check_recovery
    monkeypatch.setattr(crash, "check_recovery", lambda op, run, durations: (runs.append(run), check(op, run, durations))[1])
    report = crash.crash_test(opener, kills=4, seed=3)
    assert report.failure is None, report.failure
    batches = [call.op for run in runs if run for call in run.calls if call.op.endswith("_many")]
    assert {"submit_many", "dispatch_many", "complete_many"} <= set(batches), batches
