"""Amazon SQS as moto serves it (``moto.mock_aws``), driven through boto3's public SQS API.

Factories: ``standard`` (a standard queue) and ``fifo`` (a FIFO queue, one
message group per task). Each scheduler is one fresh queue; a task is one
message whose body is the task id.

The protocol maps onto SQS's own calls and nothing else:

=============  ==========================================================================
protocol       SQS call
=============  ==========================================================================
submit         ``SendMessage`` (``DelaySeconds = due_at - now`` on a standard queue)
dispatch       ``ReceiveMessage`` (one message, ``VisibilityTimeout = duration``, no wait);
               the lease's token is the receipt handle
complete       ``DeleteMessage`` with the report's receipt handle
renew          ``ChangeMessageVisibility`` with the report's receipt handle
advance        nothing: SQS computes visibility when asked
=============  ==========================================================================

What SQS promises, and so what the factories declare (``fencepost_variants``):
no priorities and, on a standard queue, no order at all (``order=any``; a FIFO
queue orders within a group: ``order=fifo``, see ``fifo``); receipt handles
are opaque strings, new at every receive (``tokens=opaque``); no workers or
capacity (``capacity=none``); no per-message read (``views=none``); no cancel,
no explicit failure, no idempotency keys through this adapter and no
per-message attempt budget (a budget is a queue's RedrivePolicy, not a
message's). Two documented behaviours differ from the contract on purpose:
deleting with the handle of an expired receive still deletes a message no one
holds (``late=accept-unclaimed``), and deleting a deleted message succeeds
(``repeat=accept``). moto 5.2.5's ``Message.visible`` is ``now > visible_at``,
so a message is hidden through exactly its visibility timeout's end
(``interval=closed``): a boundary convention, declared.

A report names a task and a token, ``DeleteMessage`` only a handle: a handle
this adapter received for another task is refused here without a call (no SQS
call means "delete task 3 with task 5's handle"); every other handle, known or
not, goes to SQS, which decides.

Logical time: moto reads the clock through ``unix_time`` and
``unix_time_millis``, imported by name into ``moto.sqs.models``. The adapter
replaces exactly those two names there (and nothing in moto.core), for the
whole process, with functions returning ``EPOCH_SECONDS + now`` of the
scheduler that is calling. moto offers no clock hook of its own for SQS.
Concurrent callers (the history recorder) share one clock: calls that race
carry the same ``now``.

No private state is read: queue contents are only ever seen through
``ReceiveMessage``.
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref

from fencepost.impl.kit import (
    ACCEPTED, EPOCH_SECONDS, Lease, Outcome, check_dispatch, check_min, check_new_worker, check_submit,
    check_task_id, check_time, check_token, declare, not_offered,
)

#: The SQS region the mock serves; any valid name works, moto keeps one backend per region.
REGION = "us-east-1"
#: Queue names start with this, so a queue made here is recognisable (and removable) in any backend.
QUEUE_PREFIX = "fp_peers_"
#: The longest delay SQS accepts on one message, in seconds (SendMessage's DelaySeconds).
MAX_DELAY_SECONDS = 900
#: Why a report is refused when its handle was received for another task (``Outcome.reason``).
OTHER_TASKS_HANDLE = "receipt_handle_of_another_task"
#: Why a report is refused when SQS answers ReceiptHandleIsInvalid.
INVALID_HANDLE = "receipt_handle_invalid"

COMMON_VARIANTS = {
    "interval": "closed",
    "tokens": "opaque",
    "late": "accept-unclaimed",
    "repeat": "accept",
    "capacity": "none",
    "views": "none",
}


class _LogicalClock:
    """The process-wide time moto's SQS sees: ``EPOCH_SECONDS + now`` of the calling scheduler."""

    def __init__(self) -> None:
        self.now = 0
        self.installed = False
        self.lock = threading.Lock()

    def seconds(self, dt: object = None) -> float:
        if dt is not None:  # moto converting a given datetime, not reading the clock
            return _REAL["unix_time"](dt)
        return float(EPOCH_SECONDS + self.now)

    def millis(self, dt: object = None) -> float:
        return self.seconds(dt) * 1000.0


_CLOCK = _LogicalClock()
_REAL: dict[str, object] = {}
_SESSION: dict[str, object] = {}  # the one mock and boto3 client of this process
_QUEUE_NUMBERS = itertools.count(1)


def _sqs_client() -> object:
    """Start moto's mock once per process, patch its SQS clock, and return the shared boto3 client.

    Raises:
        ModuleNotFoundError: moto or boto3 is not installed (the ``peers`` extra).
    """
    with _CLOCK.lock:
        if "client" in _SESSION:
            return _SESSION["client"]
        import boto3
        import moto.sqs.models as sqs_models
        from moto import mock_aws

        if not _CLOCK.installed:
            _REAL["unix_time"] = sqs_models.unix_time
            sqs_models.unix_time = _CLOCK.seconds
            sqs_models.unix_time_millis = _CLOCK.millis
            _CLOCK.installed = True
        mock = mock_aws()
        mock.start()
        # Credentials only for the mock: passed here, never put in the environment.
        client = boto3.client(
            "sqs", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing",
        )
        _SESSION.update(mock=mock, client=client)
        return client


def _error_code(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return response.get("Error", {}).get("Code")
    return None


def _delete_queue(sqs: object, url: str) -> None:
    try:
        sqs.delete_queue(QueueUrl=url)
    except Exception:  # noqa: BLE001 - already gone, or the mock stopped: nothing to free
        pass


class SqsScheduler:
    """One SQS queue behind the protocol; see the module docstring for the mapping.

    Thread-safe as far as moto and boto3 are (the client is shared; the
    adapter's own maps are guarded by a lock): the history recorder drives one
    scheduler from several threads.
    """

    def __init__(self, fifo: bool) -> None:
        self._sqs = _sqs_client()
        self._fifo = fifo
        name = f"{QUEUE_PREFIX}{os.getpid()}_{next(_QUEUE_NUMBERS)}" + (".fifo" if fifo else "")
        attributes = {"FifoQueue": "true"} if fifo else {}
        self._url = self._sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        # The mock keeps every queue of the process in memory: drop this one when nobody holds it.
        self._release = weakref.finalize(self, _delete_queue, self._sqs, self._url)
        self._now = 0
        self._tasks = 0
        self._workers: dict[str, int] = {}
        self._handles: dict[str, int] = {}  # receipt handle -> the task it was received for
        self._lock = threading.Lock()

    # ------------------------------------------------------------ the protocol

    @property
    def now(self) -> int:
        return self._now

    def _at(self, now: object) -> int:
        """Validate ``now`` and move this scheduler's clock (and so moto's) to it."""
        with self._lock:
            check_time(self._now, now)
            self._now = now
            _CLOCK.now = now
        return now

    def add_worker(self, worker: str, capacity: int) -> None:
        """Remember the name: SQS has no workers, so the capacity is not enforced (``capacity=none``)."""
        with self._lock:
            check_new_worker(worker, capacity, self._workers)
            self._workers[worker] = capacity

    def submit(self, priority: int = 0, due_at: int | None = None, max_attempts: int | None = None,
               retry_delay: int = 1) -> int:
        """``SendMessage``; the priority is ignored (SQS has none); returns the task id.

        Raises:
            ValueError: an invalid argument (the contract's rules), a
                ``max_attempts`` (SQS has no per-message budget), a ``due_at``
                on a FIFO queue (no per-message delay there) or more than
                ``MAX_DELAY_SECONDS`` ahead.
        """
        check_submit(priority, due_at, max_attempts, retry_delay)
        if max_attempts is not None:
            raise not_offered("max_attempts", max_attempts, "SQS", "a budget is a queue's RedrivePolicy")
        _CLOCK.now = self._now
        delay = 0 if due_at is None else max(0, due_at - self._now)
        if delay and self._fifo:
            raise not_offered("due_at", due_at, "a FIFO queue", "no per-message delay")
        if delay > MAX_DELAY_SECONDS:
            raise ValueError(f"due_at must be at most {MAX_DELAY_SECONDS} after now={self._now} on SQS: {due_at!r}")
        with self._lock:
            self._tasks += 1
            task_id = self._tasks
        message = {"QueueUrl": self._url, "MessageBody": str(task_id)}
        if self._fifo:
            message.update(MessageGroupId=str(task_id), MessageDeduplicationId=str(task_id))
        elif delay:
            message["DelaySeconds"] = delay
        self._sqs.send_message(**message)
        return task_id

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """``ReceiveMessage`` of one message hidden for ``duration`` seconds; its receipt handle is the token."""
        check_dispatch(worker, now, duration, current=self._now, workers=self._workers)
        self._at(now)
        answer = self._sqs.receive_message(
            QueueUrl=self._url, MaxNumberOfMessages=1, VisibilityTimeout=duration, WaitTimeSeconds=0,
        )
        messages = answer.get("Messages", [])
        if not messages:
            return None
        handle = messages[0]["ReceiptHandle"]
        task_id = int(messages[0]["Body"])
        with self._lock:
            self._handles[handle] = task_id
        return Lease(task_id=task_id, worker=worker, token=handle, started_at=now, expires_at=now + duration)

    def complete(self, task_id: int, token: object, now: int) -> Outcome:
        """``DeleteMessage`` with the report's handle: accepted unless SQS calls the handle invalid."""
        self._report_arguments(task_id, token, now)
        self._at(now)
        refused = self._other_tasks_handle(task_id, token)
        if refused:
            return refused
        return self._call_with_handle(self._sqs.delete_message, QueueUrl=self._url, ReceiptHandle=str(token))

    def renew(self, task_id: int, token: object, now: int, duration: int) -> Outcome:
        """``ChangeMessageVisibility`` to ``duration`` seconds from now with the report's handle."""
        self._report_arguments(task_id, token, now)
        check_min("duration", duration, 1)
        self._at(now)  # only once every argument is valid: an invalid call changes nothing
        refused = self._other_tasks_handle(task_id, token)
        if refused:
            return refused
        return self._call_with_handle(
            self._sqs.change_message_visibility, QueueUrl=self._url, ReceiptHandle=str(token), VisibilityTimeout=duration,
        )

    def advance(self, now: int) -> None:
        """Move the clock; SQS needs no call (visibility is worked out when a receive asks)."""
        self._at(now)

    def close(self) -> None:
        """Delete the queue (also done when the scheduler is garbage collected)."""
        self._release()

    # ------------------------------------------------------------ helpers

    def _report_arguments(self, task_id: object, token: object, now: object) -> None:
        """The contract's argument rules for a report's task, token and time (the clock does not move)."""
        check_task_id(task_id, self._tasks)
        check_token(token, opaque=True)
        check_time(self._now, now)

    def _other_tasks_handle(self, task_id: int, token: object) -> Outcome | None:
        owner = self._handles.get(token) if isinstance(token, str) else None
        if owner is not None and owner != task_id:
            return Outcome(False, OTHER_TASKS_HANDLE)
        return None

    @staticmethod
    def _call_with_handle(call, **request: object) -> Outcome:
        try:
            call(**request)
        except Exception as exc:
            if _error_code(exc) in ("ReceiptHandleIsInvalid", "MessageNotInflight"):
                return Outcome(False, INVALID_HANDLE)
            raise
        return ACCEPTED


@declare({**COMMON_VARIANTS, "order": "any", "without": "cancel,fail,keys,max_attempts"})
def standard() -> SqsScheduler:
    """A fresh standard queue: no order promised, per-message delays for due times."""
    return SqsScheduler(fifo=False)


@declare({**COMMON_VARIANTS, "order": "fifo", "without": "cancel,due_at,fail,keys,max_attempts"})
def fifo() -> SqsScheduler:
    """A fresh FIFO queue, one message group per task (one group would let one message be in flight at a time).

    SQS orders only within a group; moto hands groups out in send order, which
    is what ``order=fifo`` checks. FIFO queues take no per-message delay, so
    due times are not offered.
    """
    return SqsScheduler(fifo=True)
