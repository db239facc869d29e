"""``IndexedScheduler``: the same contract as ``SimpleScheduler``, in O(log n) per call.

It refines ``impl.simple.SimpleScheduler``: for every sequence of calls it
returns the same leases, outcomes (reasons included) and task views, and
raises ``ValueError`` for exactly the same invalid calls, changing nothing
then. What changes is the representation. Where ``SimpleScheduler`` scans
every task, this one keeps

* a registry: one record per task, in a list indexed by ``id - _first``
  (``_first`` is 1 until a ``prune`` moves it), plus a dict ``_old`` for the
  surviving tasks with ids below ``_first``. A ``prune`` puts None in the
  list slots of the tasks it forgets; once those holes are more than half
  the list, their leading run is cut off and, if the list is still more
  than half holes, its survivors move to ``_old`` and the list starts
  empty, so the registry holds the live and the retained tasks only.
  ``_last_id`` counts the ids issued, which are never reused. (A dict keyed
  by id costs about 42 bytes a task at 10^6 tasks, a list slot 9: see
  docs/figures/bench-indexed.md);
* a **final queue**: the ids of final tasks in the order they ended, which
  is the order of their ``ended_at`` since time never goes backwards, so a
  ``prune`` pops exactly the tasks it forgets off its head;
* per-worker running counts, so capacity is one dictionary lookup;
* a **ready heap** of ``(-priority, due_at, id)`` for waiting tasks (pending
  or retry_wait) whose ``due_at <= now``: its head is the dispatch choice;
* a **due heap** of ``(due_at, id)`` for waiting tasks not yet due; entries
  move to the ready heap as time reaches them;
* an **expiration heap** of ``(expires_at, token, id)`` for running leases.

A task's record is usually a ``_Task``. A *fresh* task -- submitted due at
once, and not dispatched, cancelled or otherwise handled since -- is stored
more cheaply: its record is its ready-heap entry itself, the tuple
``(-priority, due_at, id, max_attempts, retry_delay)``, or just
``(-priority, due_at, id)`` when ``max_attempts`` is None and ``retry_delay``
1 (the defaults: 16 bytes less), which says all there is to say (pending,
no attempts, no lease). That halves the memory of a
backlog and keeps the ready heap's entries close together. The first call
that needs more (``dispatch`` picking it, ``cancel``, ``fail``, ``renew``)
replaces the record with a ``_Task`` whose entry is that same tuple.

Deletion is lazy. A task remembers the one heap entry that currently speaks
for it (``_Task.entry``, or the fresh record itself; compared by identity,
like asyncio's timer handles or Trio's deadline check); any other entry
naming it is stale and is dropped when it reaches a heap's head. Stale entries come from ``cancel`` of a
waiting task, ``complete``/``fail`` of a running one (its expiration entry)
and ``renew`` (its old expiration entry). Each heap counts its stale entries
and is rebuilt once they are more than ``_COMPACT_MIN`` and more than half
of it, so a heap never holds more than ``max(2 * live, live + _COMPACT_MIN)``
entries. ``check_invariants()`` recounts all of this in O(n).

Complexity, n the entries in the heap concerned: ``submit``, ``dispatch``,
``complete``, ``fail``, ``cancel`` and ``renew`` O(log n) amortized, plus
O(k log n) for the k leases that expire or tasks that fall due at that call;
``advance`` the same; ``add_worker`` and ``task`` O(1); ``prune`` O(k) for
the k tasks it forgets, plus the expiry above. A rebuild is O(n), paid for
by the more than n / 2 stale entries it drops. After a ``prune``, memory is
what the remaining tasks need: their records, their keys, and heap entries
bounded as above (a stale entry may name a forgotten task; it is dropped
like any other).

The hot paths (``submit``, ``dispatch``, ``complete``) test their arguments
with exact-type comparisons first and fall back to the kit's checks (``impl.kit``),
in ``SimpleScheduler``'s order, only when one fails, so an invalid call raises
the same ``ValueError`` with the same message.

Speed tricks: eight pieces of code are here for speed or memory alone, each
marked "Speed trick" with what taking it out costs a submit + dispatch +
complete cycle at 10^4 and 10^5 pending tasks: the Lease builder, the fresh
records and their short form, dispatch's record built slot by slot,
complete's lease ending written out, the exact-type checks, the skipped
``_advance_to`` and the module names for ``Status`` members. ``fencepost bench --tricks`` measures them
(``fencepost/bench/tricks.py`` names the rewrite that takes each one out, and its
test checks the scheduler without it still conforms); docs/design.md has the
figures, and what was taken out because it did not pay.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from heapq import heapify, heappop, heappush

from fencepost.impl import kit as v
from fencepost.impl._batches import FoldedBatches
from fencepost.spec.protocol import ACCEPTED, INT_MAX as _INT_MAX, INT_MIN as _INT_MIN, Lease, Outcome, Reason, Status, TaskView

_COMPACT_MIN = 64  # a heap with at most this many stale entries is never rebuilt: they drain off its head
_COMPACT_RATIO = 2  # past _COMPACT_MIN, rebuild once stale * _COMPACT_RATIO > len(heap): over half is stale

# Speed trick: a module name is one global load; Status.RUNNING goes through the
# enum class's attribute lookup each time (about 13x slower in timeit). Taking the
# names out of the hot path costs about 9-11% of a cycle (`fencepost bench --tricks`).
_PENDING = Status.PENDING
_RUNNING = Status.RUNNING
_RETRY_WAIT = Status.RETRY_WAIT
_SUCCEEDED = Status.SUCCEEDED
_FAILED = Status.FAILED
_CANCELLED = Status.CANCELLED
_FINAL = (_SUCCEEDED, _FAILED, _CANCELLED)

_NOT_RUNNING = Outcome(False, Reason.NOT_RUNNING)
_STALE_TOKEN = Outcome(False, Reason.STALE_TOKEN)
_LEASE_EXPIRED = Outcome(False, Reason.LEASE_EXPIRED)
_ALREADY_FINAL = Outcome(False, Reason.ALREADY_FINAL)
_CANCEL_REQUESTED = Outcome(False, Reason.CANCEL_REQUESTED)


# Speed trick: dispatch builds its Lease through the slots' descriptors, in about half
# the time of the frozen dataclass's __init__, which sets each field with
# object.__setattr__, and writes it out in place (a function for it costs one more
# call, about 2.4% of a cycle's instructions). Taking it out costs about 10% of a
# submit + dispatch + complete cycle at 10^4 and 10^5 pending tasks (`fencepost bench
# --tricks`, docs/design.md). No fallback at run time: tests/implementations/test_indexed.py
# checks dispatch builds what Lease(...) builds, so a Lease with other fields fails there.
_set_task_id, _set_worker, _set_token, _set_started_at, _set_expires_at = (
    Lease.__dict__[name].__set__ for name in ("task_id", "worker", "token", "started_at", "expires_at"))
_new_object = object.__new__


class _Task:
    """One task's full record; its id is its registry index plus one."""

    __slots__ = (
        "priority", "due_at", "max_attempts", "retry_delay", "status", "attempts",
        "worker", "token", "expires_at", "cancel_requested", "expired_token", "entry", "ended_at",
    )

    def __init__(self, priority: int, due_at: int, max_attempts: int | None, retry_delay: int,
                 entry: tuple[int, ...]) -> None:
        self.priority = priority
        self.due_at = due_at  # waiting: in the ready heap iff due_at <= now, else in the due heap
        self.max_attempts = max_attempts  # None: unlimited
        self.retry_delay = retry_delay
        self.status = _PENDING
        self.attempts = 0  # dispatches so far
        self.worker = None  # worker, token, expires_at: set exactly while running
        self.token = None
        self.expires_at = None
        self.cancel_requested = False  # only ever True while running
        self.expired_token = None  # the token whose lease expired last, for lease_expired
        # The live heap entry for this task (ready or due while waiting,
        # expiration while running), None once final. Any other entry is stale.
        self.entry = entry
        self.ended_at = None  # when it became final; set exactly while final


#: What a token-carrying call other than ``renew`` passes for ``duration``: it takes none, so none is
#: checked. Not None, which ``renew`` must refuse as a duration like any other non-int.
_NO_DURATION = object()


class IndexedScheduler(FoldedBatches):
    """An in-memory lease scheduler with a ready heap, a due heap and an expiration heap.

    The public behaviour is ``SimpleScheduler``'s exactly (see ``spec.protocol``
    for the contract); the module docstring describes the representation.
    Every method raises ``ValueError`` for an invalid argument, naming the
    argument, the value and the rule, and then changes nothing: arguments are
    checked before any lease expires. The batches (``submit_many``,
    ``dispatch_many``, ``complete_many``, ``fail_many``) are the single calls
    in order, checked whole first (``impl._batches``): the same cost per task.
    """

    def __init__(self) -> None:
        self._now = 0  # logical time; never decreases
        # The registry: a _Task or a fresh entry per task; None for a forgotten one.
        self._tasks: list[_Task | tuple | None] = []  # ids _first.._last_id, at index id - _first
        self._first = 1  # the id at self._tasks[0]
        self._holes = 0  # the Nones in self._tasks
        self._old: dict[int, _Task | tuple] = {}  # the remembered tasks with ids below _first
        self._last_id = 0  # ids issued so far: 1.._last_id, each in the registry unless forgotten
        self._final: deque[int] = deque()  # ids of the final tasks in the registry, in the order they ended
        self._key_of: dict[int, str] = {}  # task id -> its idempotency key, for the keyed tasks in the registry
        self._capacity: dict[str, int] = {}  # worker -> slots
        self._load: dict[str, int] = {}  # worker -> running tasks; equals a recount
        self._last_token = 0  # tokens issued so far
        self._keys: dict[str, tuple[int, tuple]] = {}  # idempotency key -> (task id, submit arguments as passed)
        # Each heap holds the live entry of every task in its state, once,
        # plus exactly ``*_stale`` entries that no task's ``entry`` is.
        self._ready: list[tuple] = []  # (-priority, due_at, id[, max_attempts, retry_delay]), due_at <= now
        self._ready_stale = 0
        self._due: list[tuple[int, int]] = []  # (due_at, id), due_at > now
        self._due_stale = 0
        self._expiry: list[tuple[int, int, int]] = []  # (expires_at, token, id), expires_at > now
        self._expiry_stale = 0

    @property
    def now(self) -> int:
        """The current logical time (0 at the start)."""
        return self._now

    # -------------------------------------------------------------- untimed

    def add_worker(self, worker: str, capacity: int) -> None:
        """Register ``worker`` with room for ``capacity`` simultaneous leases. Untimed.

        Args:
            worker: a non-empty name, not already added.
            capacity: an int >= 1.

        Raises:
            ValueError: an empty or non-str name, a bad capacity, or a duplicate name.
        """
        v.check_new_worker(worker, capacity, self._capacity)
        self._capacity[worker] = capacity
        self._load[worker] = 0

    def submit(self, priority: int = 0, due_at: int | None = None,
               max_attempts: int | None = None, retry_delay: int = 1, key: str | None = None) -> int:
        """Add a pending task and return its id (1, 2, 3... in submit order). Untimed.

        Args:
            priority: any int; higher is dispatched first.
            due_at: an int >= 0, or None for the current time; an earlier time
                is eligible at once.
            max_attempts: an int >= 1, or None for unlimited dispatches.
            retry_delay: an int >= 1, the base of the backoff after ``fail``.
            key: None, or a non-empty str: an idempotency key. A key submitted
                before with the same other arguments (as passed) returns that
                task's id and changes nothing.

        Raises:
            ValueError: any argument of the wrong type or out of range, or a
                known key with different arguments.

        Complexity: O(log n), n the entries of the heap it joins.
        """
        if key is not None:  # keyed submits are rare: no fast path
            v.check_submit(priority, due_at, max_attempts, retry_delay)
            v.check_key(key)
            arguments = (priority, due_at, max_attempts, retry_delay)
            known = v.keyed_task(self._keys, key, arguments)
            if known is not None:
                return known
            task_id = self._submit_record(priority, self._now if due_at is None else due_at, max_attempts, retry_delay)
            self._keys[key] = (task_id, arguments)
            self._key_of[task_id] = key
            return task_id
        if due_at is None:
            due_at = self._now
        # Speed trick: exact-type tests inline, the validators only on a miss. Calling
        # them every time costs about 35-45% of a cycle here and in dispatch and complete
        # (`fencepost bench --tricks`).
        if (type(priority) is not int or type(due_at) is not int or not 0 <= due_at <= self._now
                or type(retry_delay) is not int or not 1 <= retry_delay <= _INT_MAX or not _INT_MIN <= priority <= _INT_MAX
                or (max_attempts is not None and (type(max_attempts) is not int or not 1 <= max_attempts <= _INT_MAX))):
            return self._submit_record(priority, due_at, max_attempts, retry_delay)
        # The common case, plain ints due at once: the entry is the whole record.
        # Speed trick (memory): a _Task here makes a pending task 277 bytes, not 157,
        # at 10^4 tasks (300, not 180, at 10^5: the 300-byte target's edge), and a
        # cycle about as fast, 2.5% slower at 10^5 (`fencepost bench --tricks`).
        self._last_id = task_id = self._last_id + 1
        # Speed trick (memory): the defaults leave two fields out, 16 bytes a task.
        if max_attempts is None and retry_delay == 1:
            fresh = (-priority, due_at, task_id)
        else:
            fresh = (-priority, due_at, task_id, max_attempts, retry_delay)
        heappush(self._ready, fresh)
        self._tasks.append(fresh)
        return task_id

    def _issued_ids(self) -> int:
        """How many task ids have been issued (the batches' id check): the counter, since
        ``prune`` takes forgotten tasks out of the registry and ids are never reused."""
        return self._last_id

    def task(self, task_id: int) -> TaskView:
        """A detached view of one task.

        Raises:
            ValueError: ``task_id`` is not an id issued so far, or was forgotten.
        """
        t = self._record(task_id)
        if type(t) is tuple:  # a fresh task
            return TaskView(task_id, _PENDING, -t[0], t[1], 0, None, None, None, False)
        return TaskView(task_id, t.status, t.priority, t.due_at, t.attempts,
                        t.worker, t.token, t.expires_at, t.cancel_requested)

    # -------------------------------------------------------------- timed

    def advance(self, now: int) -> None:
        """Move time to ``now``, expiring every lease with ``expires_at <= now``.

        Raises:
            ValueError: ``now`` is not an int, is negative or is earlier than ``self.now``.
        """
        v.check_time(self._now, now)
        self._advance_to(now)

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """Lease the best eligible task to ``worker`` for ``[now, now + duration)``.

        Best: highest priority, then earliest ``due_at``, then lowest id, among
        pending and retry_wait tasks with ``due_at <= now``. Due leases expire
        first, whatever the answer.

        Args:
            worker: a name given to ``add_worker``.
            now: the logical time, an int >= ``self.now``.
            duration: the lease length, an int >= 1.

        Returns:
            The new lease with a fresh token, or None (no token issued, nothing
            assigned) when the worker is full or nothing is eligible.

        Raises:
            ValueError: a non-str or unknown worker, a bad time or a bad duration.

        Complexity: O(log n) amortized, plus O(log n) for each stale ready entry dropped.
        """
        # Speed trick, as in submit: exact-type tests inline, the validators only on a miss.
        capacity = self._capacity.get(worker) if type(worker) is str else None
        if (capacity is None or type(now) is not int or now < self._now or type(duration) is not int or duration < 1
                or now + duration > _INT_MAX):
            capacity = self._check_dispatch(worker, now, duration)
        # Speed trick: _advance_to only when a heap head is due. Calling it every time
        # costs about 9-10% of a cycle, with complete's copy (`fencepost bench --tricks`).
        expiry = self._expiry
        if (expiry and expiry[0][0] <= now) or (self._due and self._due[0][0] <= now):
            self._advance_to(now)
        else:
            self._now = now
        load = self._load
        if load[worker] >= capacity:
            return None
        ready, tasks, first = self._ready, self._tasks, self._first
        while ready:
            entry = heappop(ready)
            task_id = entry[2]
            t = tasks[task_id - first] if task_id >= first else self._old.get(task_id)
            if t is entry:  # a fresh task: its record was this entry
                # Speed trick: _promoted(entry) written out, each slot set once (the lines
                # below set the rest), without __init__'s call: about 5% of a cycle's
                # instructions (`fencepost bench --tricks`).
                t = _new_object(_Task)
                t.priority = -entry[0]
                t.due_at = entry[1]
                if len(entry) == 3:
                    t.max_attempts = None
                    t.retry_delay = 1
                else:
                    t.max_attempts = entry[3]
                    t.retry_delay = entry[4]
                t.attempts = 0
                t.cancel_requested = False
                t.ended_at = None
                if task_id >= first:
                    tasks[task_id - first] = t
                else:
                    self._old[task_id] = t
                break
            if t is not None and t.entry is entry:  # None: a stale entry of a forgotten task
                break
            self._ready_stale -= 1
        else:
            return None
        if self._ready_stale > _COMPACT_MIN:
            self._compact_ready()
        token = self._last_token + 1
        self._last_token = token
        expires_at = now + duration
        t.status = _RUNNING
        t.attempts += 1
        t.worker = worker
        t.token = token
        t.expires_at = expires_at
        t.expired_token = None
        t.entry = entry = (expires_at, token, task_id)
        heappush(expiry, entry)
        load[worker] += 1
        lease = _new_object(Lease)  # the Lease builder, written out (see _set_task_id)
        _set_task_id(lease, task_id)
        _set_worker(lease, worker)
        _set_token(lease, token)
        _set_started_at(lease, now)
        _set_expires_at(lease, expires_at)
        return lease

    def complete(self, task_id: int, token: int, now: int) -> Outcome:
        """Accept completion from the current lease only: the task succeeds, its slot frees.

        Accepted even when a cancellation was requested: the work did finish.

        Args:
            task_id: an id issued so far.
            token: any int; only the current lease's token is accepted.
            now: the logical time, an int >= ``self.now``.

        Returns:
            ``Outcome(True)``, or a rejection (``stale_token``, ``lease_expired``,
            ``already_final``, ``not_running``) that changes nothing but time.

        Raises:
            ValueError: an unknown task id, a non-int token or a bad time.

        Complexity: O(log n) amortized.
        """
        # Speed tricks, as in dispatch: exact-type tests inline, _advance_to only when due.
        # A task below _first (kept in _old by a prune) takes the checked path.
        tasks = self._tasks
        t = tasks[task_id - self._first] if type(task_id) is int and 0 <= task_id - self._first < len(tasks) else None
        if (t is None or type(token) is not int
                or not _INT_MIN <= token <= _INT_MAX or type(now) is not int or not self._now <= now <= _INT_MAX):
            self._check_lease_call(task_id, token, now)
            t = self._at(task_id)
        expiry = self._expiry
        if (expiry and expiry[0][0] <= now) or (self._due and self._due[0][0] <= now):
            self._advance_to(now)
        else:
            self._now = now
        if type(t) is not _Task:  # a fresh task: pending, never leased
            return _NOT_RUNNING
        if t.token != token:  # only a running task has a token
            return _rejection(t, token)
        # Speed trick: _end_lease and _ended written out (two calls, about 3% of a
        # cycle's instructions; `fencepost bench --tricks`).
        self._load[t.worker] -= 1
        entry = t.entry
        t.status = _SUCCEEDED
        t.worker = t.token = t.expires_at = t.entry = None  # first: a rebuild below must see entry as stale
        t.cancel_requested = False
        if expiry[0] is entry:
            heappop(expiry)
        else:
            self._expiry_stale += 1
            self._compact_expiry()
        t.ended_at = now
        self._final.append(task_id)
        return ACCEPTED

    def fail(self, task_id: int, token: int, now: int) -> Outcome:
        """Accept an explicit failure from the current lease.

        The task ends ``cancelled`` if a cancellation was requested, ``failed``
        if its attempt budget is spent, and otherwise waits in ``retry_wait``
        until ``now + retry_delay * 2 ** (attempts - 1)``.

        Args and Raises: as for ``complete``.

        Complexity: O(log n) amortized.
        """
        self._check_lease_call(task_id, token, now)
        self._check_fail(task_id, token, now)
        self._advance_to(now)
        t = self._get(task_id)
        if t.token != token:
            return _rejection(t, token)
        if t.cancel_requested:
            self._end_lease(t, _CANCELLED)
            self._ended(t, task_id, now)
        elif t.max_attempts is not None and t.attempts >= t.max_attempts:
            self._end_lease(t, _FAILED)
            self._ended(t, task_id, now)
        else:
            self._end_lease(t, _RETRY_WAIT)
            t.due_at = due_at = now + t.retry_delay * 2 ** (t.attempts - 1)
            t.entry = entry = (due_at, task_id)  # due_at > now: not yet due
            heappush(self._due, entry)
        return ACCEPTED

    def cancel(self, task_id: int, now: int) -> Outcome:
        """Cancel a waiting task; mark a running one ``cancel_requested``; refuse a final one.

        Cancelling running work is cooperative: the task keeps its lease until
        ``complete``, ``fail`` or expiry ends it (see those).

        Args:
            task_id: an id issued so far.
            now: the logical time, an int >= ``self.now``.

        Raises:
            ValueError: an unknown task id or a bad time.

        Complexity: O(1) amortized (the waiting task's entry turns stale).
        """
        t = self._get(task_id)
        v.check_time(self._now, now)
        self._advance_to(now)
        status = t.status
        if status is _RUNNING:
            t.cancel_requested = True
            return ACCEPTED
        if status is not _PENDING and status is not _RETRY_WAIT:
            return _ALREADY_FINAL
        t.status = _CANCELLED
        t.entry = None
        self._ended(t, task_id, now)
        if t.due_at <= now:
            self._ready_stale += 1
            self._compact_ready()
        else:
            self._due_stale += 1
            self._compact_due()
        return ACCEPTED

    def renew(self, task_id: int, token: int, now: int, duration: int) -> Outcome:
        """Move the current lease's end to ``now + duration``, keeping its token.

        Args:
            task_id: an id issued so far.
            token: any int; only the current lease's token is accepted.
            now: the logical time, an int >= ``self.now``.
            duration: an int >= 1.

        Returns:
            ``Outcome(True)``, a rejection as for ``complete``, or
            ``cancel_requested`` once a cancellation was requested.

        Raises:
            ValueError: a bad duration, an unknown task id, a non-int token or a bad time.

        Complexity: O(log n) amortized (the old expiration entry turns stale).
        """
        t = self._lease_call(task_id, token, now, duration)
        if t.token != token:
            return _rejection(t, token)
        if t.cancel_requested:
            return _CANCEL_REQUESTED
        expires_at = now + duration
        if expires_at != t.expires_at:
            t.expires_at = expires_at
            t.entry = entry = (expires_at, token, task_id)
            heappush(self._expiry, entry)
            self._expiry_stale += 1
            self._compact_expiry()
        return ACCEPTED

    def prune(self, before: int, now: int) -> int:
        """Forget every final task that ended at a time ``< before``, with its key; return how many.

        Timed: leases due at ``now`` expire first (a task that ends so, ends
        at ``now >= before`` and is kept). Afterwards ``task`` and every call
        naming a forgotten id raise ``ValueError`` saying it was forgotten;
        ids and tokens are never reused; a forgotten key may be submitted
        again and makes a new task.

        Args:
            before: an int, ``0 <= before <= now``.
            now: the logical time, an int >= ``self.now``.

        Raises:
            ValueError: ``before`` not an int or out of range, or a bad time.

        Complexity: O(k) for the k tasks forgotten, plus the expiry, amortized:
        the registry's list is cut (O(its length)) only once it is more than
        half holes, and a dict is copied (O(what it keeps)) only when it lost
        more than it keeps, so both shrink to what is left.
        """
        v.check_prune(self._now, before, now)
        self._advance_to(now)
        final, key_of, keys, old = self._final, self._key_of, self._keys, self._old
        tasks, first = self._tasks, self._first
        forgotten = from_old = 0
        while final and self._at(final[0]).ended_at < before:
            task_id = final.popleft()
            if task_id >= first:
                tasks[task_id - first] = None
            else:
                del old[task_id]
                from_old += 1
            key = key_of.pop(task_id, None)
            if key is not None:
                del keys[key]
            forgotten += 1
        self._holes += forgotten - from_old
        if self._holes * 2 > len(tasks):
            self._cut_holes()
        # A dict never shrinks its table on deletion; a copy of one this sparse is compact.
        if from_old > len(old):
            self._old = dict(old)
        if forgotten > len(key_of):
            self._keys = dict(keys)
            self._key_of = dict(key_of)
        return forgotten

    def _cut_holes(self) -> None:
        """Shrink a registry list that is more than half holes: drop its leading run of
        holes; if it is still more than half holes, move its records to ``_old``, empty it."""
        tasks = self._tasks
        lead = next((i for i, t in enumerate(tasks) if t is not None), len(tasks))
        del tasks[:lead]
        self._first += lead
        self._holes -= lead
        if self._holes * 2 > len(tasks):
            first = self._first
            self._old.update((first + i, t) for i, t in enumerate(tasks) if t is not None)
            self._tasks = []
            self._first = self._last_id + 1
            self._holes = 0

    # -------------------------------------------------------------- invariants

    def check_invariants(self) -> None:
        """Recount everything the heaps and counters claim; O(n) in tasks and entries.

        Raises:
            AssertionError: naming the first broken invariant.
        """
        now, tasks = self._now, self._records()
        heaps = {
            "ready": (self._ready, self._ready_stale),
            "due": (self._due, self._due_stale),
            "expiration": (self._expiry, self._expiry_stale),
        }
        where: dict[int, str] = {}  # id(entry) -> heap name, for every entry in any heap
        for name, (heap, stale) in heaps.items():
            for i in range(1, len(heap)):
                _require(heap[(i - 1) // 2] <= heap[i], f"{name} heap property broken at index {i}: {heap[(i - 1) // 2]} > {heap[i]}")
            live = 0
            for entry in heap:
                _require(id(entry) not in where, f"entry {entry} is in the {name} heap twice or in two heaps")
                where[id(entry)] = name
                task_id = _entry_id(entry)
                _require(type(task_id) is int and 1 <= task_id <= self._last_id, f"{name} entry {entry} names no task")
                live += _is_live(entry, tasks.get(task_id))
            _require(stale == len(heap) - live,
                     f"{name} heap says {stale} stale entries, a recount finds {len(heap) - live} of {len(heap)}")
            _require(stale <= _COMPACT_MIN or stale * _COMPACT_RATIO <= len(heap),
                     f"{name} heap holds {stale} stale entries of {len(heap)}: past the compaction threshold")
        load = dict.fromkeys(self._capacity, 0)
        ended = []  # (ended_at, id) of every final task in the registry
        for task_id, t in tasks.items():
            _require(type(task_id) is int and 1 <= task_id <= self._last_id, f"the registry holds task {task_id!r}, never issued")
            if type(t) is tuple:  # a fresh task: pending, due, its record is its ready entry
                _require(len(t) in (3, 5) and t[2] == task_id and t[1] <= now, f"task {task_id}'s fresh record is {t}")
                _require(where.get(id(t)) == "ready", f"fresh task {task_id} is in the {where.get(id(t))} heap")
                continue
            status, entry = t.status, t.entry
            _require((t.ended_at is not None) == (status in _FINAL),
                     f"task {task_id} is {status} with ended_at={t.ended_at}")
            _require((t.worker is None) == (t.token is None) == (t.expires_at is None) == (status is not _RUNNING),
                     f"task {task_id} is {status} with worker={t.worker!r} token={t.token} expires_at={t.expires_at}")
            _require(not t.cancel_requested or status is _RUNNING, f"task {task_id} is {status} with cancel_requested")
            _require(t.max_attempts is None or t.attempts <= t.max_attempts,
                     f"task {task_id} has {t.attempts} attempts, above max_attempts={t.max_attempts}")
            if status is _PENDING or status is _RETRY_WAIT:
                _require(t.max_attempts is None or t.attempts < t.max_attempts,
                         f"task {task_id} is {status} with its attempt budget spent")
                if t.due_at <= now:
                    expected, key = "ready", (-t.priority, t.due_at, task_id)
                else:
                    expected, key = "due", (t.due_at, task_id)
            elif status is _RUNNING:
                _require(t.worker in load, f"task {task_id} runs on unknown worker {t.worker!r}")
                load[t.worker] += 1
                _require(now < t.expires_at, f"task {task_id}'s lease is alive at now={now} >= expires_at={t.expires_at}")
                _require(t.token <= self._last_token, f"task {task_id} holds token {t.token}, never issued")
                expected, key = "expiration", (t.expires_at, t.token, task_id)
            else:
                _require(entry is None, f"task {task_id} is final ({status}) but has a live entry {entry}")
                ended.append((t.ended_at, task_id))
                continue
            _require(where.get(id(entry)) == expected,
                     f"task {task_id} ({status}) has its live entry {entry} in the {where.get(id(entry))} heap, "
                     f"not the {expected} heap")
            _require(entry[:len(key)] == key, f"task {task_id}'s live entry is {entry}, its record says {key}")
        _require(load == self._load, f"per-worker running counts are {self._load}, a recount finds {load}")
        for worker, running in load.items():
            _require(running <= self._capacity[worker],
                     f"worker {worker!r} runs {running} tasks, above its capacity {self._capacity[worker]}")
        tokens = [t.token for t in tasks.values() if type(t) is _Task and t.status is _RUNNING]
        _require(len(tokens) == len(set(tokens)), f"two running tasks share a token: {sorted(tokens)}")
        queued = [(tasks[i].ended_at, i) if i in tasks else (None, i) for i in self._final]
        _require(sorted(queued, key=lambda pair: pair[1]) == sorted(ended, key=lambda pair: pair[1]),
                 f"the final queue holds {sorted(i for _, i in queued)}, the final tasks are {sorted(i for _, i in ended)}")
        _require(all(queued[i][0] <= queued[i + 1][0] for i in range(len(queued) - 1)),
                 f"the final queue is not in the order the tasks ended: {queued}")
        _require({key: task_id for task_id, key in self._key_of.items()} == {key: r[0] for key, r in self._keys.items()},
                 f"the keys {self._keys} and the keyed tasks {self._key_of} disagree")
        _require(all(task_id in tasks for task_id in self._key_of), f"a key names a task not in the registry: {self._key_of}")
        _require(self._first + len(self._tasks) == self._last_id + 1 and all(i < self._first for i in self._old),
                 f"the registry's list holds ids {self._first}..{self._first + len(self._tasks) - 1} and its dict "
                 f"{sorted(self._old)}, of the {self._last_id} issued")
        holes = self._tasks.count(None)
        _require(self._holes == holes, f"the registry says {self._holes} holes, a recount finds {holes}")
        _require(holes * 2 <= len(self._tasks),
                 f"the registry's list is {holes} holes of {len(self._tasks)}: past the cutting threshold")

    # -------------------------------------------------------------- internals

    def _at(self, task_id: int) -> _Task | tuple | None:
        """The record of an issued ``task_id``, None if it was forgotten."""
        return self._tasks[task_id - self._first] if task_id >= self._first else self._old.get(task_id)

    def _records(self) -> dict[int, _Task | tuple]:
        """Every record in the registry by id: O(n), for ``check_invariants`` and tests."""
        first = self._first
        records = {first + i: t for i, t in enumerate(self._tasks) if t is not None}
        records.update(self._old)
        return records

    def _record(self, task_id: object) -> _Task | tuple:
        """The record of a valid ``task_id``; raise for an id never issued or forgotten."""
        t = self._at(v.check_task_id(task_id, self._last_id))
        if t is None:
            raise v.forgotten_task(task_id)
        return t

    def _get(self, task_id: object) -> _Task:
        """The record of a valid ``task_id``, as a ``_Task`` (a fresh task's tuple is replaced)."""
        t = self._record(task_id)
        if type(t) is tuple:
            t = _promoted(t)
            if task_id >= self._first:
                self._tasks[task_id - self._first] = t
            else:
                self._old[task_id] = t
        return t

    def _ended(self, t: _Task, task_id: int, now: int) -> None:
        """Record that ``t`` (now final) ended at ``now``: it joins the final queue's tail."""
        t.ended_at = now
        self._final.append(task_id)

    def _submit_record(self, priority: int, due_at: int, max_attempts: int | None, retry_delay: int) -> int:
        """``submit`` for all but the common case: check every argument, then keep a ``_Task``."""
        v.check_submit(priority, due_at, max_attempts, retry_delay)
        self._last_id = task_id = self._last_id + 1
        if due_at <= self._now:
            entry = (-priority, due_at, task_id)
            heappush(self._ready, entry)
        else:
            entry = (due_at, task_id)
            heappush(self._due, entry)
        self._tasks.append(_Task(priority, due_at, max_attempts, retry_delay, entry))
        return task_id

    def _check_dispatch(self, worker: object, now: object, duration: object) -> int:
        """Check ``dispatch``'s arguments in the contract's order; return the capacity."""
        return v.check_dispatch(worker, now, duration, current=self._now, workers=self._capacity)

    def _check_lease_call(self, task_id: object, token: object, now: object, duration: object = _NO_DURATION) -> None:
        """Check a token-carrying call's arguments in the contract's order (``duration``: ``renew``'s)."""
        self._record(task_id)
        v.check_int("token", token)
        v.check_time(self._now, now)
        if duration is not _NO_DURATION:
            v.check_min("duration", duration, 1)
            v.check_lease_end(now, duration)

    def _check_fail(self, task_id: int, token: int, now: int) -> bool:
        """Whether ``fail(task_id, token, now)`` (its arguments checked) is accepted; raise, before
        any change, if it would send the task to retry after the latest time (``kit.check_retry_time``)."""
        t = self._at(task_id)
        if type(t) is not _Task or t.token != token or t.expires_at <= now:
            return False
        if not t.cancel_requested and (t.max_attempts is None or t.attempts < t.max_attempts):
            v.check_retry_time(now, t.retry_delay, t.attempts)
        return True

    def _lease_call(self, task_id: int, token: int, now: int, duration: object = _NO_DURATION) -> _Task:
        """Check a token-carrying call's arguments, then move time (rule 3); return the task."""
        self._check_lease_call(task_id, token, now, duration)
        self._advance_to(now)
        return self._get(task_id)

    def _advance_to(self, now: int) -> None:
        """Rule 3, then due times: expire leases with ``expires_at <= now``, move due tasks to ready."""
        at, expiry, due, ready = self._at, self._expiry, self._due, self._ready
        while expiry and expiry[0][0] <= now:
            entry = heappop(expiry)
            t = at(entry[2])
            if t is None or t.entry is not entry:  # None: a forgotten task's stale entry
                self._expiry_stale -= 1
                continue
            token = t.token
            if t.cancel_requested:
                self._end_lease(t, _CANCELLED, popped=True)
                self._ended(t, entry[2], now)
            elif t.max_attempts is not None and t.attempts >= t.max_attempts:
                self._end_lease(t, _FAILED, popped=True)
                self._ended(t, entry[2], now)
            else:
                self._end_lease(t, _PENDING, popped=True)
                t.entry = back = (-t.priority, t.due_at, entry[2])  # due_at <= start < now: ready
                heappush(ready, back)
            t.expired_token = token
        while due and due[0][0] <= now:
            entry = heappop(due)
            t = at(entry[1])
            if t is None or t.entry is not entry:
                self._due_stale -= 1
                continue
            t.entry = ready_entry = (-t.priority, entry[0], entry[1])
            heappush(ready, ready_entry)
        self._now = now
        self._compact_expiry()
        self._compact_due()

    def _end_lease(self, t: _Task, status: Status, popped: bool = False) -> None:
        """Clear ``t``'s assignment, free its slot and move it to ``status``.

        ``popped`` says its expiration entry has already left the heap; otherwise
        it is dropped now if it is the head, else it turns stale.
        """
        self._load[t.worker] -= 1
        entry = t.entry
        t.status = status
        t.worker = t.token = t.expires_at = t.entry = None  # first: a rebuild below must see entry as stale
        t.cancel_requested = False
        if not popped:
            expiry = self._expiry
            if expiry[0] is entry:
                heappop(expiry)
            else:
                self._expiry_stale += 1
            self._compact_expiry()

    def _compact_ready(self) -> None:
        if self._ready_stale > _COMPACT_MIN and self._ready_stale * _COMPACT_RATIO > len(self._ready):
            _rebuild(self._ready, self._at)
            self._ready_stale = 0

    def _compact_due(self) -> None:
        if self._due_stale > _COMPACT_MIN and self._due_stale * _COMPACT_RATIO > len(self._due):
            _rebuild(self._due, self._at)
            self._due_stale = 0

    def _compact_expiry(self) -> None:
        if self._expiry_stale > _COMPACT_MIN and self._expiry_stale * _COMPACT_RATIO > len(self._expiry):
            _rebuild(self._expiry, self._at)
            self._expiry_stale = 0


def _rebuild(heap: list, at: Callable[[int], _Task | tuple | None]) -> None:
    """Drop every stale entry of ``heap`` in place (callers hold references to it); ``at``
    gives the record of an id."""
    heap[:] = [entry for entry in heap if _is_live(entry, at(_entry_id(entry)))]
    heapify(heap)


def _is_live(entry: tuple, record: _Task | tuple | None) -> bool:
    """Whether ``entry`` speaks for the task whose record is ``record`` (None: forgotten):
    it is that record or its record's entry."""
    return record is entry or (type(record) is _Task and record.entry is entry)


def _promoted(fresh: tuple) -> _Task:
    """The ``_Task`` for a fresh record, with that tuple as its (ready) entry."""
    if len(fresh) == 3:
        return _Task(-fresh[0], fresh[1], None, 1, fresh)
    return _Task(-fresh[0], fresh[1], fresh[3], fresh[4], fresh)


def _entry_id(entry: tuple) -> int:
    """The task id an entry names: ``(due_at, id)``, ``(-priority, due_at, id, ...)``, ``(expires_at, token, id)``."""
    return entry[1] if len(entry) == 2 else entry[2]


def _rejection(t: _Task, token: int) -> Outcome:
    """Why ``token`` may not act on ``t``, which is not running under it."""
    if t.status is _RUNNING:
        return _STALE_TOKEN
    if t.expired_token is not None and t.expired_token == token:
        return _LEASE_EXPIRED
    if t.status is _PENDING or t.status is _RETRY_WAIT:
        return _NOT_RUNNING
    return _ALREADY_FINAL


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)
