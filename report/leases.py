"""Every lease of a timeline, laid out on lanes: what the report's lease picture draws.

``read_leases(timeline)`` walks the implementation's frames once (O(steps ×
capacity of a worker)) and returns each lease as a ``Lease`` on a lane of
the worker it went to: a worker of capacity c has c lanes, and a lease takes
the first of its worker's lanes that is free when it starts, as in the TUI's
lanes view. A lease covers ``[started_at, expires_at)`` as renewed; an
accepted completion or failure ends it early (``ended``); one that reached
``expires_at`` without either is ``expired``. A lease of a task leased
before is a retry. A rejected completion, failure or renewal is a ``Mark``
on the lane of the lease its token named (or, for a token never granted, of
the task's latest lease).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fencepost.story.timeline import Timeline


@dataclass(slots=True)
class Lease:
    """One lease as the implementation granted it."""

    task_id: int
    token: int
    worker: str
    started_at: int
    expires_at: int  # as last renewed
    step: int  # the dispatch's step number (1-based)
    attempt: int  # 1 for the task's first lease, 2 for its first retry...
    ended: int | None = None  # time of the accepted complete or fail that ended it
    end_kind: str | None = None  # "complete" or "fail"
    end_step: int | None = None
    expired: bool = False  # ran to expires_at with neither
    renewals: int = 0

    @property
    def retry(self) -> bool:
        return self.attempt > 1


@dataclass(frozen=True, slots=True)
class Mark:
    """A refused call on a lane: ``kind`` is the op (complete, fail or renew)."""

    time: int
    step: int
    kind: str
    task_id: int
    token: object


@dataclass(slots=True)
class Lane:
    name: str
    leases: list[Lease] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)


@dataclass(slots=True)
class Leases:
    lanes: list[Lane]
    span: int  # the latest time anything on the lanes reaches
    count: int

    @property
    def durations(self) -> list[int]:
        return [lease.expires_at - lease.started_at for lane in self.lanes for lease in lane.leases]


def read_leases(timeline: Timeline) -> Leases:
    """The leases of ``timeline``'s implementation side (see the module docstring)."""
    lanes: list[Lane] = []
    by_worker: dict[str, list[int]] = {}
    by_token: dict[object, tuple[int, Lease]] = {}
    by_task: dict[object, tuple[int, Lease]] = {}  # the latest lease of each task, for a token never issued
    attempts: dict[int, int] = {}
    span = count = 0
    for frame in timeline.frames[1:]:
        step, now = frame.step, frame.now
        span = max(span, now)
        if frame.error is not None:
            continue
        op, args, value = step.op, step.args, frame.outcome.value
        if op == "add_worker" and isinstance(args.get("capacity"), int):
            capacity = max(1, min(args["capacity"], _MAX_SLOTS))
            by_worker[args["worker"]] = list(range(len(lanes), len(lanes) + capacity))
            for slot in range(capacity):
                lanes.append(Lane(_lane_name(args["worker"], slot, capacity)))
        elif op in ("dispatch", "dispatch_many"):
            for granted in (value if op == "dispatch_many" and isinstance(value, list) else [value]):
                if not _ints(*(getattr(granted, name, None) for name in ("task_id", "token", "started_at", "expires_at"))):
                    continue
                attempts[granted.task_id] = attempts.get(granted.task_id, 0) + 1
                lease = Lease(granted.task_id, granted.token, granted.worker, granted.started_at, granted.expires_at,
                              frame.index, attempts[granted.task_id])
                lane = _free_lane(lanes, by_worker, granted.worker, granted.started_at)
                lanes[lane].leases.append(lease)
                by_token[granted.token] = by_task[granted.task_id] = (lane, lease)
                span, count = max(span, granted.expires_at), count + 1
        elif op in ("complete", "fail", "renew", "complete_many", "fail_many"):
            for single, report, outcome in _reports(op, args, value):
                found = _get(by_token, report.get("token")) or _get(by_task, report.get("task_id"))
                if found is None or not _ints(report.get("now"), report.get("duration", 0)):
                    continue
                lane, lease = found
                if not getattr(outcome, "accepted", False):
                    lanes[lane].marks.append(Mark(report["now"], frame.index, single, report["task_id"], report["token"]))
                elif lease.token != report["token"]:
                    continue  # accepted under a token this report never saw granted: no lease of its to change
                elif single == "renew":
                    lease.expires_at, lease.renewals = report["now"] + report["duration"], lease.renewals + 1
                    span = max(span, lease.expires_at)
                elif lease.ended is None:
                    lease.ended, lease.end_kind, lease.end_step = report["now"], single, frame.index
    last = timeline.frames[-1].now
    for lane in lanes:
        for lease in lane.leases:
            lease.expired = lease.ended is None and lease.expires_at <= last
    return Leases(lanes, span, count)


def _lane_name(worker: str, slot: int, capacity: int) -> str:
    """A worker's own name when it has one slot; ``w.1``, ``w.2``... for each slot when it has more,
    as the TUI's lanes name them (never ``w1`` beside ``w1.2``)."""
    return worker if capacity == 1 else f"{worker}.{slot + 1}"


def _reports(op: str, args: dict, value: object) -> list[tuple[str, dict, object]]:
    """The single reports one step made, each as ``(op, its arguments, its outcome)``.

    A ``complete_many`` or ``fail_many`` is its single calls in order (the contract's
    definition of a batch), each pair of ``reports`` with the batch's ``now`` and the
    outcome at its place; a batch whose reports or outcomes are not lists of the same
    length (an invalid call, a broken implementation) made none this picture can place.
    """
    if op not in ("complete_many", "fail_many"):
        return [(op, args, value)]
    reports = args.get("reports")
    if not isinstance(reports, list) or not isinstance(value, list) or len(reports) != len(value):
        return []
    single = op.removesuffix("_many")
    return [(single, {"task_id": pair[0], "token": pair[1], "now": args.get("now")}, outcome)
            for pair, outcome in zip(reports, value) if isinstance(pair, (list, tuple)) and len(pair) == 2]


def _ints(*values: object) -> bool:
    """All are ints (not bools): what a lease's times must be to be drawn. A broken
    implementation's lease with a float or a missing field is left off the picture."""
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _get(table: dict, key: object) -> tuple[int, Lease] | None:
    """``table.get(key)``; None for a key that cannot be one (a step that expects an error may carry a list)."""
    try:
        return table.get(key)
    except TypeError:
        return None


#: Lanes drawn for one worker at most; a larger capacity shares the last one.
_MAX_SLOTS = 64


def _free_lane(lanes: list[Lane], by_worker: dict[str, list[int]], worker: str, start: int) -> int:
    """The first lane of ``worker`` whose last lease had ended by ``start``; a new lane if none has
    (more leases than capacity: a broken implementation, drawn anyway)."""
    for index in by_worker.get(worker, ()):
        leases = lanes[index].leases
        if not leases or _end(leases[-1]) <= start:
            return index
    lanes.append(Lane(f"{worker}+"))
    by_worker.setdefault(worker, []).append(len(lanes) - 1)
    return len(lanes) - 1


def _end(lease: Lease) -> int:
    return lease.ended if lease.ended is not None else lease.expires_at
