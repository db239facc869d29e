"""How a runner rides through calls whose outcome is unknown.

``OutcomeUnknown``: a scheduler over a network lost a call's answer
(docs/faults.md). A lost ``dispatch`` is left to lease expiry (the slot asks
again; a lease it never heard of ends at its expiry, as any lost worker's
does: ``claim_lost``); a lost ``complete`` or ``fail`` is resolved by reading
the task (``resolve``: still running under the attempt's token means it did
not take effect, and it is made again; otherwise the status and the attempt
count say whether it was accepted); a lost ``renew`` by the task's expiry
(``renewal``); a lost ``add_worker`` is made again (a slot's name is the
runner's own, so "already exists" then means the first took effect:
``add_worker``). A lost ``submit`` or ``cancel`` is the caller's:
``Runner.submit`` and ``Runner.cancel`` raise it (a shared runner's submits
carry a key, which the scheduler makes safe to repeat, so they do not lose
answers to a PostgreSQL reconnect). Calls with unknown outcomes are not in
the trace: a scenario has no step whose effect is unknown.

Each function takes the runner and is called under its lock (as the modes'
in ``shared.py`` are); none keeps state of its own.
"""

from __future__ import annotations

from fencepost.impl.runner.attempts import ASK_AGAIN, Attempt
from fencepost.spec.protocol import Outcome, OutcomeUnknown, Status, says_worker_exists

#: Times a call whose answer was lost is made again after reading says it did not take effect.
UNKNOWN_RETRIES = 10

#: The reason of an outcome read back from the task after the call's own answer was lost.
UNKNOWN_THEN_READ = "unknown_then_read"


def add_worker(runner: object, worker: str, capacity: int, named: bool) -> None:
    """Add the slot's scheduler worker, making the call again while its answer is lost.

    A duplicate is the runner's own worker when the runner is ``named`` (a
    named runner restarted: its slot is still registered, and is its own
    again) or when a lost ``add_worker`` before it took effect.

    Raises:
        OutcomeUnknown: the answer was lost ``UNKNOWN_RETRIES`` + 1 times.
        ValueError: the scheduler refused the worker (a duplicate of another's).
    """
    lost = 0
    while True:
        try:
            runner._call("add_worker", {"worker": worker, "capacity": capacity})
        except OutcomeUnknown:
            lost += 1
            if lost > UNKNOWN_RETRIES:
                raise
            continue  # made again: a duplicate then means the lost one took effect
        except ValueError as exc:
            if (not named and not lost) or not says_worker_exists(exc):
                raise
        return


def claim_lost(runner: object) -> object:
    """A dispatch (or ``dispatch_many``) lost its answer; ``ASK_AGAIN``.

    A lease it may have made is nobody's here: it ends at its expiry, by
    clock.now + lease at the latest, and its task is eligible again then,
    which no idle proof may hide. The slot asks again at once (the
    scheduler reconnects first).
    """
    runner._idle_proof.hint(runner._clock.now + runner._lease)
    runner._idle_proof.version += 1
    return ASK_AGAIN


def report(runner: object, op: str, attempt: Attempt, lost: bool = False) -> tuple[Outcome, int]:
    """``complete`` or ``fail`` the attempt; its answer and the time it was made at
    (for a lost answer resolved by reading the task, the clock's time when read).

    ``lost``: the first call was made (``Runner._finish`` makes it itself) and
    its answer lost, so this starts by resolving it. Each lost answer is
    resolved before the call is made again, ``UNKNOWN_RETRIES`` calls in all.
    """
    for _ in range(UNKNOWN_RETRIES):
        if not lost:
            try:
                return runner._timed_call(op, {"task_id": attempt.task_id, "token": attempt.token, "now": None})
            except OutcomeUnknown:
                pass
        lost = False
        answer = resolve(runner, op, attempt)
        if answer is not None:
            return answer, runner._clock.now
    raise RuntimeError(f"{op} of task {attempt.task_id} lost its answer {UNKNOWN_RETRIES} times in a row")


def resolve(runner: object, op: str, attempt: Attempt) -> Outcome | None:
    """What became of a ``complete``/``fail`` whose answer was lost; None if it did not take effect.

    Read from the task (one read, asked again by the scheduler across a
    reconnect): still running under this attempt's token, it did not take
    effect (None: make it again; the token fences a late copy of the lost
    one, so at most one is accepted). Otherwise it was accepted exactly
    when the task is in the state the call leaves it in -- succeeded for a
    completion, waiting to retry or failed for a failure -- and has not
    been dispatched since (its attempt count is still this attempt's).
    """
    view = runner._refresh(attempt.task_id)
    if view.status is Status.RUNNING and view.token == attempt.token:
        return None
    ends = (Status.SUCCEEDED,) if op == "complete" else (Status.RETRY_WAIT, Status.FAILED)
    if view.status in ends and view.attempts == attempt.number:
        return Outcome(True)
    return Outcome(False, UNKNOWN_THEN_READ)


def renewal(runner: object, attempt: Attempt, length: int) -> tuple[Outcome, int]:
    """What became of a ``renew`` for ``length`` ticks whose answer was lost, and the time it was made at.

    Accepted exactly when the lease is still this attempt's and ends later
    than it did: then it was made ``length`` ticks before that end.
    """
    view = runner._refresh(attempt.task_id)
    accepted = view.token == attempt.token and view.expires_at is not None and view.expires_at > attempt.expires_at
    if accepted:
        return Outcome(True), view.expires_at - length
    return Outcome(False, UNKNOWN_THEN_READ), runner._clock.now
