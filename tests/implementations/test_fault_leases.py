"""``leases never overlap`` in the fault suite's judge (``impl/faults/inject.py``), on hand-made histories.

A complete or fail whose outcome is unknown may have ended its lease: a later
lease of the task before the first one's expiry is no overlap then (the
linearizable check decides whether the call could have taken effect). An
acknowledged lease never ended stays an overlap.
"""

from __future__ import annotations

from fencepost.impl.faults.inject import leases_by_task, pair


def _history(report_kind: str) -> list[dict]:
    """Task 1 leased [0, 10) with token 1, reported at 3 (``report_kind``: ok, info), leased again at 4."""
    events = []
    calls = [
        ("dispatch", {"worker": "w1", "now": 0, "duration": 10}, "ok",
         {"task_id": 1, "worker": "w1", "token": 1, "started_at": 0, "expires_at": 10}),
        ("fail", {"task_id": 1, "token": 1, "now": 3}, report_kind, {"accepted": True} if report_kind == "ok" else None),
        ("dispatch", {"worker": "w2", "now": 4, "duration": 10}, "ok",
         {"task_id": 1, "worker": "w2", "token": 2, "started_at": 4, "expires_at": 14}),
    ]
    for time, (op, args, kind, result) in enumerate(calls):
        events.append({"type": "invoke", "process": "c1", "op": op, "args": args, "time": 2 * time})
        done = {"type": kind, "process": "c1", "op": op, "time": 2 * time + 1}
        if kind == "ok":
            done["result"] = result
        events.append(done)
    return events


def _overlapping(events: list[dict]) -> bool:
    (first, second), = leases_by_task(pair(events)).values()
    return second["started_at"] < first["end"]


def test_a_lease_ended_by_an_acknowledged_fail_does_not_overlap_the_next() -> None:
    assert not _overlapping(_history("ok"))


def test_a_lease_a_fail_of_unknown_outcome_may_have_ended_does_not_overlap_the_next() -> None:
    assert not _overlapping(_history("info"))


def test_a_lease_nothing_ended_overlaps_the_next() -> None:
    events = _history("ok")
    del events[2:4]  # no fail at all: the second lease starts inside the first
    assert _overlapping(events)
