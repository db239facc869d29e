"""The public protocol every fencepost scheduler offers.

This module holds the contract's vocabulary and nothing else: the task
statuses, the detached values a scheduler hands out (``Lease``, ``Outcome``,
``TaskView``), the rejection reasons, and a ``typing.Protocol`` naming the
methods. The reference model (``spec.model``), both implementations in
``impl/`` and any third-party implementation checked by ``fencepost check``
speak these names; a third-party implementation need not import this module,
it only needs objects with the same attribute names.

All time is caller-supplied logical time: ``int`` values >= 0 that never go
backwards. A lease covers the half-open interval ``[started_at, expires_at)``.

Every value an argument may take is bounded here, once (``INT_MIN``,
``INT_MAX``, ``MAX_TEXT_BYTES``, ``FORBIDDEN_TEXT``): the model refuses what
they refuse, and so must every scheduler, whatever its storage
(docs/contract.md, "Values").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable


# ---------------------------------------------------------------- values

#: The smallest int any argument may be: every int the protocol takes or gives
#: is a signed 64-bit integer, what SQLite's INTEGER, PostgreSQL's bigint and
#: most languages' JSON readers hold exactly.
INT_MIN = -(2**63)
#: The largest int any argument may be, and the latest time: a call whose
#: lease would end (``now + duration``) or whose retry time would fall after it
#: is invalid, as is an argument past it.
INT_MAX = 2**63 - 1
#: The longest worker name or idempotency key, in UTF-8 bytes: an ordinary URL
#: fits (servers commonly cap a request line near 8 KiB), and any scheduler can
#: store and index it (PostgreSQL indexes a hash of it, as a btree entry holds
#: at most 2,704 bytes).
MAX_TEXT_BYTES = 8192
#: Characters no worker name or key may hold: the C0 controls other than tab
#: and newline (NUL among them, which PostgreSQL cannot store), DEL, the C1
#: controls, lone surrogates (which no UTF-8 storage can hold) and the
#: bidirectional overrides and isolates that make text display in an order
#: other than it reads. The same set no file fencepost reads may hold
#: (``spec.formats.limits``), so whatever a scheduler accepts, a history can record.
FORBIDDEN_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")
#: The arguments that are texts (a worker name, an idempotency key) and follow
#: ``MAX_TEXT_BYTES`` and ``FORBIDDEN_TEXT``; every other argument but a token
#: under ``tokens=opaque`` is an int.
TEXT_ARGUMENTS = ("worker", "key")


def int_shown(value: int) -> str:
    """An int as an error message may quote it: in digits up to 40 of them, else by its size
    (Python refuses to write an int of more than 4,300 digits at all)."""
    return repr(value) if value.bit_length() <= 128 else f"an int of {value.bit_length():,} bits"


def text_problem(value: str, name: str = "text") -> str | None:
    """Why ``value`` may not be a worker name or key (``FORBIDDEN_TEXT``, ``MAX_TEXT_BYTES``), or None:
    the error's words, naming the argument ``name``, the rule and the value (its first 40 characters).

    Words only, for both the model's and the schedulers' errors; each of them
    calls it where its own rules say. O(len(value)).
    """
    shown = f"{value[:40]!r}{'...' if len(value) > 40 else ''}"
    if len(value) > MAX_TEXT_BYTES:  # too long whatever its characters: no need to read it all
        return f"{name} is {len(value):,} characters, longer than the limit of {MAX_TEXT_BYTES:,} bytes of UTF-8: {shown}"
    bad = FORBIDDEN_TEXT.search(value)
    if bad:
        return (f"{name} holds U+{ord(bad.group()):04X} at character {bad.start() + 1} (no control character but tab "
                f"and newline, no lone surrogate, no direction override): {shown}")
    if len(value) > MAX_TEXT_BYTES // 4:  # shorter ones fit whatever their characters
        size = len(value.encode("utf-8"))
        if size > MAX_TEXT_BYTES:
            return f"{name} is {size:,} bytes of UTF-8, longer than the limit of {MAX_TEXT_BYTES:,}: {shown}"
    return None


class Status(StrEnum):
    """Where a task is in its lifecycle; the value is the protocol's string."""

    PENDING = "pending"  # waiting for dispatch (possibly not yet due)
    RUNNING = "running"  # held by exactly one current lease
    RETRY_WAIT = "retry_wait"  # failed explicitly, waiting for its backoff due time
    SUCCEEDED = "succeeded"  # completed under its current lease (final)
    FAILED = "failed"  # attempt budget spent (final)
    CANCELLED = "cancelled"  # cancelled before claim or at the end of its lease (final)


#: Statuses a task never leaves.
FINAL_STATUSES = frozenset({Status.SUCCEEDED, Status.FAILED, Status.CANCELLED})

#: Statuses ``dispatch`` may pick from, once ``due_at <= now``.
DISPATCHABLE_STATUSES = frozenset({Status.PENDING, Status.RETRY_WAIT})


class Reason:
    """Why an operation was refused: the ``Outcome.reason`` vocabulary.

    Reasons are for people; ``fencepost check`` compares only
    ``Outcome.accepted``, so another implementation may word them differently.
    """

    #: The task is running under a different token (older, newer or never issued alike).
    STALE_TOKEN = "stale_token"
    #: The token's lease reached ``expires_at`` and the task was taken back.
    LEASE_EXPIRED = "lease_expired"
    #: The task is not running (pending or waiting to retry).
    NOT_RUNNING = "not_running"
    #: The task is succeeded, failed or cancelled and never changes again.
    ALREADY_FINAL = "already_final"
    #: A cancellation was requested, so the lease may not be extended.
    CANCEL_REQUESTED = "cancel_requested"

    ALL = (STALE_TOKEN, LEASE_EXPIRED, NOT_RUNNING, ALREADY_FINAL, CANCEL_REQUESTED)


@dataclass(frozen=True, slots=True)
class Lease:
    """A successful dispatch: one assignment of one task to one worker.

    ``token`` is unique across the scheduler and changes with every dispatch,
    so it identifies the assignment, not the worker or the task.
    """

    task_id: int
    worker: str
    token: int
    started_at: int
    expires_at: int


@dataclass(frozen=True, slots=True)
class Outcome:
    """The answer to ``complete``, ``fail``, ``cancel`` and ``renew``."""

    accepted: bool
    reason: str | None = None


ACCEPTED = Outcome(True)


@dataclass(frozen=True, slots=True)
class TaskView:
    """A detached snapshot of one task; changing the scheduler never changes it.

    ``worker``, ``token`` and ``expires_at`` are set exactly while the task is
    ``running`` and are ``None`` otherwise.
    """

    id: int
    status: Status
    priority: int
    due_at: int
    attempts: int
    worker: str | None
    token: int | None
    expires_at: int | None
    cancel_requested: bool


#: The protocol's operations, in the order the README's contract table lists them.
OPERATIONS = ("add_worker", "submit", "dispatch", "complete", "fail", "cancel", "renew", "advance")

#: Operations a scheduler may offer or not (``spec.checkers.capabilities``
#: detects them): ``prune(before, now)`` forgets final tasks that ended before
#: ``before`` and returns how many; the batches are the single calls they
#: stand for, as one atomic call (see ``spec.model``).
PRUNE_OPERATIONS = ("prune",)
BATCH_OPERATIONS = ("submit_many", "dispatch_many", "complete_many", "fail_many")
OPTIONAL_OPERATIONS = PRUNE_OPERATIONS + BATCH_OPERATIONS

#: Not an operation but a step of checks and scenarios: the scheduler is
#: replaced by its ``reopen()`` (as a new process would see its storage) and
#: must then agree on everything. The contract's state does not change.
RESTART = "restart"


@runtime_checkable
class SchedulerProtocol(Protocol):
    """What ``fencepost check`` drives. Every invalid argument raises ``ValueError``.

    ``submit``'s ``key`` (an idempotency key, None or a non-empty str) is an
    optional capability: a scheduler whose ``submit`` takes no ``key`` is
    still checked, without keys. So is ``reopen()`` (not listed here): a
    scheduler whose objects have it is checked across restarts too (see
    ``spec.checkers.capabilities``).
    """

    @property
    def now(self) -> int: ...

    def add_worker(self, worker: str, capacity: int) -> None: ...

    def submit(
        self,
        priority: int = 0,
        due_at: int | None = None,
        max_attempts: int | None = None,
        retry_delay: int = 1,
        key: str | None = None,
    ) -> int: ...

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None: ...

    def complete(self, task_id: int, token: int, now: int) -> Outcome: ...

    def fail(self, task_id: int, token: int, now: int) -> Outcome: ...

    def cancel(self, task_id: int, now: int) -> Outcome: ...

    def renew(self, task_id: int, token: int, now: int, duration: int) -> Outcome: ...

    def advance(self, now: int) -> None: ...

    def task(self, task_id: int) -> TaskView: ...


class PruneProtocol(Protocol):
    """The optional retention operation (not part of ``SchedulerProtocol``: a scheduler may lack it).

    ``prune(before, now)`` is timed (leases due at ``now`` expire first);
    ``before`` is an int with ``0 <= before <= now``. It forgets every final
    task that became final at a time ``< before``, with its idempotency key,
    and returns how many it forgot. Afterwards ``task`` and every call naming
    a forgotten id raise ``ValueError`` saying the task was forgotten; ids and
    tokens are never reused; a forgotten key may be submitted again.
    """

    def prune(self, before: int, now: int) -> int: ...


#: What the ``ValueError`` of a call naming a forgotten task must say (case-insensitive:
#: "forgotten", "forgot"): the one word by which a scheduler in any language says it.
FORGOTTEN_WORD = "forgot"


#: The contract's words for refusing a timed call whose ``now`` is behind the scheduler's clock: every
#: scheduler's message says them (``spec.model``'s starts with them), in any language, so a client
#: sharing the clock knows to read it again and retry (``says_backwards``).
BACKWARDS = "time can't go backwards"


def says_backwards(error: ValueError) -> bool:
    """Whether ``error``, raised by a timed call, refuses its ``now`` as behind the scheduler's clock."""
    return BACKWARDS in str(error)


#: The contract's words for refusing ``add_worker`` of a name already added: a client that made the
#: call again after its answer was lost knows by them that the first took effect (``says_worker_exists``).
WORKER_EXISTS = "already exists"


def says_worker_exists(error: ValueError) -> bool:
    """Whether ``error``, raised by ``add_worker``, refuses the worker as already added."""
    return WORKER_EXISTS in str(error)


def offers_restart(scheduler: object) -> bool:
    """True when ``scheduler`` can take a ``restart`` step: it has a callable ``reopen``."""
    return callable(getattr(scheduler, "reopen", None))


def offers_batches(scheduler: object) -> bool:
    """True when ``scheduler`` has every batch operation, each callable (all four or none)."""
    return all(callable(getattr(scheduler, op, None)) for op in BATCH_OPERATIONS)


def says_forgotten(error: ValueError) -> bool:
    """Whether ``error``, raised by a call naming a task, says the task was forgotten by prune."""
    return FORGOTTEN_WORD in str(error).lower()


class OutcomeUnknown(Exception):
    """A call was sent to the scheduler and its answer never came: it may or may not have taken effect.

    Not a ``ValueError``: the call was valid, and the scheduler did not refuse
    it. Raised by a scheduler over a network or a database (``PostgresScheduler``)
    when the connection was lost, or the call timed out, after the call was
    sent and before its answer arrived. ``op`` and ``args`` are the call (its
    protocol name and its arguments by name); ``why`` is one line saying what
    happened to the connection. A history records such a call as ``info``.
    What a caller should do depends on the call (docs/faults.md): read the
    task (``task``), whose status and token say whether a completion,
    failure or renewal took effect; leave a lost ``dispatch`` to lease expiry.
    """

    def __init__(self, op: str, args: dict, why: str) -> None:
        super().__init__(op, dict(args), why)
        self.op = op
        self.call_args = dict(args)
        self.why = why

    def __str__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.call_args.items())
        return f"{self.op}({shown}): outcome unknown, it may or may not have taken effect: {self.why}"
