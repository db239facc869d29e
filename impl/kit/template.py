"""A complete adapter to copy: a toy queue behind the protocol, built from the kit alone.

Copy this file, replace ``ToyQueue`` with your queue's client, and change
each method's body to your queue's call (the docstrings say which call each
stands for). ``fencepost check fencepost.impl.kit.template:queue`` passes
on it; docs/adapter.md walks through it line by line.

``ToyQueue`` stands for a queue with a visibility timeout (SQS, Redis
Streams, most job tables): ``take`` hides the oldest job from others for
``timeout`` seconds and says how often it was taken; ``ack`` takes the job id
AND that count, and refuses a stale one; ``touch`` extends the timeout and
answers nothing, so the adapter reads the job back to decide a renew.
"""

from __future__ import annotations

from fencepost.impl.kit import (
    ACCEPTED, Book, CompositeToken, Lease, Outcome, check_submit, declare, not_offered, read_back,
)

#: What the adapter hands out as a lease's token: the job and how often it was taken (``kit.tokens``).
TOKEN = CompositeToken("job", "taken")
#: Why a report is refused without calling the queue: its token names no assignment of this task's job.
NOT_THIS_JOB = "not_this_tasks_job"


class ToyQueue:
    """Stands in for your queue's client. Jobs are taken oldest first; a taken job is hidden until its timeout."""

    def __init__(self) -> None:
        self.jobs: dict[int, dict] = {}  # id -> {"holder", "taken", "until", "done"}

    def put(self) -> int:
        job = len(self.jobs) + 1
        self.jobs[job] = {"holder": None, "taken": 0, "until": 0, "done": False}
        return job

    def visible(self, job: int, now: int) -> bool:
        row = self.jobs[job]
        return not row["done"] and (row["holder"] is None or now >= row["until"])

    def take(self, consumer: str, now: int, timeout: int) -> tuple[int, int] | None:
        job = next((j for j in sorted(self.jobs) if self.visible(j, now)), None)
        if job is None:
            return None
        row = self.jobs[job]
        row.update(holder=consumer, taken=row["taken"] + 1, until=now + timeout)
        return job, row["taken"]

    def held_by(self, consumer: str, now: int) -> int:
        return sum(1 for j, row in self.jobs.items() if row["holder"] == consumer and not self.visible(j, now)
                   and not row["done"])

    def ack(self, job: int, taken: int, now: int) -> bool:
        row = self.jobs[job]
        if row["done"] or row["taken"] != taken or self.visible(job, now):
            return False
        row["done"] = True
        return True

    def touch(self, job: int, taken: int, now: int, timeout: int) -> None:  # answers nothing
        row = self.jobs[job]
        if not row["done"] and row["taken"] == taken and not self.visible(job, now):
            row["until"] = now + timeout


class Adapter:
    """The protocol over one ``ToyQueue``. Each method: the kit's argument checks first, then the queue's call."""

    def __init__(self) -> None:
        self._book = Book()  # the clock, the workers, task id -> job id: what the queue does not keep
        self._queue = ToyQueue()

    @property
    def now(self) -> int:
        return self._book.now

    def add_worker(self, worker: str, capacity: int) -> None:
        self._book.add_worker(worker, capacity)

    def submit(self, priority: int = 0, due_at: int | None = None, max_attempts: int | None = None,
               retry_delay: int = 1) -> int:
        """``put``. The contract's errors first; then what the queue does not offer, by name."""
        check_submit(priority, due_at, max_attempts, retry_delay)
        for name, value in (("due_at", due_at), ("max_attempts", max_attempts)):
            if value is not None:
                raise not_offered(name, value, "the toy queue")
        if priority != 0:
            raise not_offered("priority", priority, "the toy queue", "first in, first out")
        return self._book.add_task(self._queue.put())

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """``take``, room permitting (the worker's held jobs, as the queue counts them)."""
        capacity = self._book.check_dispatch(worker, now, duration)
        self._book.move_to(now)
        if self._queue.held_by(worker, now) >= capacity:
            return None
        taken = self._queue.take(worker, now, duration)
        if taken is None:
            return None
        job, count = taken
        task_id, token = self._book.task_of(job), TOKEN.make(job=job, taken=count)
        self._book.handed_out(token, task_id)
        return Lease(task_id=task_id, worker=worker, token=token, started_at=now, expires_at=now + duration)

    def complete(self, task_id: int, token: object, now: int) -> Outcome:
        """``ack``: the queue's own answer."""
        parts = self._report(task_id, token, now)
        if parts is None:
            return Outcome(False, NOT_THIS_JOB)
        return ACCEPTED if self._queue.ack(*parts, now) else Outcome(False, "ack_refused")

    def renew(self, task_id: int, token: object, now: int, duration: int) -> Outcome:
        """``touch`` answers nothing: read the job back (``kit.read_back``), never trust the silence."""
        parts = self._report(task_id, token, now, duration)
        if parts is None:
            return Outcome(False, NOT_THIS_JOB)
        self._queue.touch(*parts, now, duration)
        return read_back(lambda: self._queue.jobs[parts[0]],
                         lambda row: row["taken"] == parts[1] and row["until"] == now + duration and not row["done"],
                         "touch_did_not_take")

    def advance(self, now: int) -> None:
        self._book.move_to(now)

    def _report(self, task_id: object, token: object, now: object, duration: object = None) -> tuple[int, int] | None:
        """The kit's report checks, the clock moved; the (job, taken) the token names if it is this task's."""
        job = self._book.check_report(task_id, token, now, duration)
        self._book.move_to(now)
        parts = TOKEN.parse(token)
        # ASCII digits only: "²".isdigit() is true, and int() refuses it (a ValueError, not a refusal)
        if parts is None or not (parts["taken"].isascii() and parts["taken"].isdigit()) or parts["job"] != str(job):
            return None
        return job, int(parts["taken"])


@declare({"order": "fifo", "tokens": "opaque", "views": "none", "without": "cancel,due_at,fail,keys,max_attempts"})
def queue() -> Adapter:
    """A fresh toy queue behind the protocol (the factory ``fencepost check`` calls)."""
    return Adapter()
