"""Redis Streams consumer groups behind the protocol, on the Redis server's own clock.

Factories: ``group`` (what a Redis user writes from the documented commands)
and ``fenced`` (the same with the fix a maintainer would write). Each
scheduler is one fresh stream with one consumer group; a task is one entry;
a worker is a consumer of the group. Both run on the real clock only
(``kit.real_clock``): Redis keeps a pending entry's idle time on
its own clock, which nobody can set, so ``fencepost check`` drives them with
``--clock real`` and a lease of ``D`` ticks is ``D * tick_ms()`` milliseconds
on the server (``spec.realclock``).

=============  ==========================================================================
protocol       Redis (7.0 commands)
=============  ==========================================================================
submit         ``XADD stream * task N``
dispatch       ``XAUTOCLAIM stream g worker LEASE 0-0 COUNT 1`` (an entry idle for the
               lease's length or more: its lease expired), else
               ``XREADGROUP GROUP g worker COUNT 1 STREAMS stream >`` (a new entry);
               then ``XPENDING`` of that entry for its delivery count
complete       ``XACK stream g id``
renew          ``XCLAIM stream g worker 0 id JUSTID`` (resets the idle time, keeps the count)
advance        nothing: Redis counts idle time itself
=============  ==========================================================================

A lease's token is ``ID/WORKER/COUNT``: the entry, the consumer that holds
it, and the entry's delivery count, which every claim raises (``XREADGROUP``
delivers with 1; ``XAUTOCLAIM`` adds one), so no token is issued twice even
when one consumer takes an entry back.

What a consumer group promises, and so what both declare: entries in ID
order (``order=fifo``: an expired entry was delivered before any new one, so
its ID is lower); tokens are the adapter's strings (``tokens=opaque``); no
capacity (``capacity=none``; ``COUNT`` bounds one read, not what a consumer
holds); no per-entry view that does not move with the server's clock
(``views=none``); one lease length for everyone (``duration=5``): the
min-idle-time a claimer passes to ``XAUTOCLAIM`` decides when an entry is
taken back, whatever its holder asked for, so the holder's lease and the
claimer's threshold are the one group-wide setting. No cancel, fail, due
times, attempt budgets or keys.

``group`` also declares what the commands document beyond that:
``XACK`` of an entry that is still pending succeeds whoever acknowledges it,
so a late ``complete`` while nobody took the entry since counts
(``late=accept-unclaimed``), and ``XCLAIM`` of an entry still in its
consumer's pending list resets its idle time, so a late ``renew`` while nobody
took it revives the lease (``revive=unclaimed``). What it does not promise, and
what ``fencepost check`` finds: ``XACK`` takes only the ID, so a consumer whose
entry was ``XAUTOCLAIM``ed by another acknowledges it while the new holder
works on it, and ``XCLAIM ... 0`` from that zombie takes it back.

``fenced`` checks, in one Lua script per call (atomic on the server), that
the entry is pending for the token's consumer with the token's delivery count
and idle for less than the lease, before ``XACK`` or ``XCLAIM``; its dispatch
claims and reads the count in one script too. It declares neither late
variant and conforms.

The server is ``FENCEPOST_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``).
Keys are ``fp:streams:PID:N``, deleted when the scheduler is closed or
collected. The ``redis`` client is the ``peers`` extra.
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref

from fencepost.impl.kit import (
    ACCEPTED,
    Lease,
    Outcome,
    check_min,
    check_new_worker,
    check_submit,
    check_task_id,
    check_time,
    check_worker_name,
    declare,
    real_clock,
    require_tick,
    unknown_worker,
)

#: The server, unless ``FENCEPOST_REDIS_URL`` names another.
DEFAULT_URL = "redis://127.0.0.1:6379/0"
#: The one lease length, in ticks: the group's min-idle-time is ``LEASE * tick_ms()`` milliseconds.
LEASE = 5
#: The consumer group of every stream made here.
GROUP = "g"
#: Stream keys start with this, so a stream made here is recognisable (and removable).
KEY_PREFIX = "fp:streams:"
#: Why a report is refused when its token names another task's entry (no Redis call is made).
OTHER_TASKS_TOKEN = "token_of_another_task"
#: Why ``group`` refuses a report when Redis says the entry is not pending (XACK or XCLAIM answered nothing).
NOT_PENDING = "not_pending"

COMMON_VARIANTS = {
    "order": "fifo",
    "tokens": "opaque",
    "capacity": "none",
    "views": "none",
    "duration": str(LEASE),
    "without": "cancel,due_at,fail,keys,max_attempts",
}

# The fenced report: the entry must be pending for the token's consumer, with the token's delivery
# count, idle for less than the lease; then XACK (complete) or XCLAIM (renew). One script: atomic.
_FENCED_REPORT = """
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #p == 0 then return 'not_running' end
local entry = p[1]
if entry[2] ~= ARGV[3] or tostring(entry[4]) ~= ARGV[4] then return 'stale_token' end
if tonumber(entry[3]) >= tonumber(ARGV[5]) then return 'lease_expired' end
if ARGV[6] == 'complete' then
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
else
  redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], 'JUSTID')
end
return 'ok'
"""

# The fenced dispatch: claim an expired entry (or read a new one) and its delivery count, atomically.
_FENCED_DISPATCH = """
local claimed = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], '0-0', 'COUNT', 1)
local id = nil
local entries = claimed[2]
while #entries == 0 and claimed[1] ~= '0-0' do
  claimed = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], claimed[1], 'COUNT', 1)
  entries = claimed[2]
end
if #entries > 0 then
  id = entries[1][1]
else
  local read = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', 1, 'STREAMS', KEYS[1], '>')
  if not read or #read == 0 or #read[1][2] == 0 then return false end
  id = read[1][2][1][1]
end
local p = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1)
return {id, tostring(p[1][4])}
"""

_NUMBERS = itertools.count(1)


def _client(url: str) -> object:
    """A client of the server; raises ``ModuleNotFoundError`` without the ``peers`` extra."""
    import redis

    return redis.Redis.from_url(url, decode_responses=True, socket_timeout=10)


def _delete(client: object, key: str) -> None:
    try:
        client.delete(key)
        client.close()
    except Exception:  # noqa: BLE001 - the server went away: nothing left to free
        pass


class StreamScheduler:
    """One stream and its consumer group behind the protocol; see the module docstring.

    ``fenced`` chooses the reports' fencing. ``client()`` opens another
    connection to the same stream (the history recorder's clients).

    Raises:
        ValueError: made outside ``--clock real`` (no tick in force).
        redis.ConnectionError: the server cannot be reached.
    """

    def __init__(self, fenced: bool, url: str | None = None, key: str | None = None, lease_ms: int | None = None,
                 owner: StreamScheduler | None = None) -> None:
        who = f"redis_streams:{'fenced' if fenced else 'group'}"
        self._lease_ms = lease_ms if lease_ms is not None else LEASE * require_tick(who)
        self._fenced = fenced
        self._url = url or os.environ.get("FENCEPOST_REDIS_URL", DEFAULT_URL)
        self._redis = _client(self._url)
        self._shared = owner._shared if owner is not None else {"tasks": 0, "entries": {}, "lock": threading.Lock()}
        if key is None:
            key = f"{KEY_PREFIX}{os.getpid()}:{next(_NUMBERS)}"
            self._redis.delete(key)
            self._redis.xgroup_create(key, GROUP, id="0", mkstream=True)
            self._release = weakref.finalize(self, _delete, self._redis, key)
        self._key = key
        self._now = 0
        self._workers: dict[str, int] = {} if owner is None else owner._workers
        if fenced:
            self._report_script = self._redis.register_script(_FENCED_REPORT)
            self._dispatch_script = self._redis.register_script(_FENCED_DISPATCH)

    def client(self) -> StreamScheduler:
        """Another connection to the same stream and group, sharing this scheduler's task numbering."""
        return StreamScheduler(self._fenced, self._url, self._key, self._lease_ms, owner=self)

    # ------------------------------------------------------------ the protocol

    @property
    def now(self) -> int:
        return self._now

    def _at(self, now: object) -> None:
        check_time(self._now, now)
        self._now = now

    def add_worker(self, worker: str, capacity: int) -> None:
        """Remember the consumer's name: a group bounds no consumer's load (``capacity=none``)."""
        with self._shared["lock"]:
            check_new_worker(worker, capacity, self._workers)
            self._workers[worker] = capacity

    def submit(self, priority: int = 0, due_at: int | None = None, max_attempts: int | None = None,
               retry_delay: int = 1) -> int:
        """``XADD``; returns the task id (1, 2, 3... in submit order).

        Raises:
            ValueError: an invalid argument, a ``due_at`` or a ``max_attempts`` (not offered).
        """
        check_submit(priority, due_at, max_attempts, retry_delay)
        if due_at is not None or max_attempts is not None:
            raise ValueError(f"due_at and max_attempts are not offered by a consumer group: {due_at!r}, {max_attempts!r}")
        with self._shared["lock"]:
            self._shared["tasks"] += 1
            task_id = self._shared["tasks"]
            entry = self._redis.xadd(self._key, {"task": task_id})
            self._shared["entries"][task_id] = entry
        return task_id

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """Claim an entry idle for the lease's length or more, else read a new one; None if neither."""
        check_worker_name(worker)
        if worker not in self._workers:
            raise unknown_worker(worker)
        check_time(self._now, now)
        check_min("duration", duration, 1)
        if duration != LEASE:
            raise ValueError(f"duration must be {LEASE} (the group's one min-idle-time): {duration!r}")
        self._at(now)
        if self._fenced:
            answer = self._dispatch_script(keys=[self._key], args=[GROUP, worker, self._lease_ms])
            if not answer:
                return None
            entry, count = answer[0], answer[1]
        else:
            entry = self._claim(worker) or self._read(worker)
            if entry is None:
                return None
            pending = self._redis.xpending_range(self._key, GROUP, entry, entry, 1)
            count = pending[0]["times_delivered"] if pending else 0
        task_id = self._task_of(entry)
        return Lease(task_id=task_id, worker=worker, token=f"{entry}/{worker}/{count}", started_at=now,
                     expires_at=now + duration)

    def complete(self, task_id: int, token: object, now: int) -> Outcome:
        """``XACK`` (``group``), or the fenced script's checks and then ``XACK`` (``fenced``)."""
        entry, worker, count = self._report(task_id, token, now)
        if entry is None:
            return Outcome(False, OTHER_TASKS_TOKEN)
        if self._fenced:
            return self._fenced_report("complete", entry, worker, count)
        acked = self._redis.xack(self._key, GROUP, entry)
        return ACCEPTED if acked else Outcome(False, NOT_PENDING)

    def renew(self, task_id: int, token: object, now: int, duration: int) -> Outcome:
        """``XCLAIM ... 0 ... JUSTID`` for the token's consumer (``group``), fenced by the script (``fenced``)."""
        entry, worker, count = self._report(task_id, token, now, duration)
        if entry is None:
            return Outcome(False, OTHER_TASKS_TOKEN)
        if self._fenced:
            return self._fenced_report("renew", entry, worker, count)
        claimed = self._redis.xclaim(self._key, GROUP, worker, 0, [entry], justid=True)
        return ACCEPTED if claimed else Outcome(False, NOT_PENDING)

    def advance(self, now: int) -> None:
        """Move the logical clock; Redis needs no call (it counts idle time itself)."""
        self._at(now)

    def close(self) -> None:
        """Delete the stream (also done when the scheduler is garbage collected); other clients just disconnect."""
        release = getattr(self, "_release", None)
        if release is not None:
            release()
        else:
            self._redis.close()

    # ------------------------------------------------------------ helpers

    def _claim(self, worker: str) -> str | None:
        """``XAUTOCLAIM`` of the first entry idle for the lease or more, following the cursor to the end."""
        start = "0-0"
        while True:
            answer = self._redis.xautoclaim(self._key, GROUP, worker, self._lease_ms, start, count=1)
            cursor, entries = answer[0], answer[1]
            if entries:
                return entries[0][0]
            if cursor == "0-0":
                return None
            start = cursor

    def _read(self, worker: str) -> str | None:
        answer = self._redis.xreadgroup(GROUP, worker, {self._key: ">"}, count=1)
        if not answer or not answer[0][1]:
            return None
        return answer[0][1][0][0]

    def _task_of(self, entry: str) -> int:
        for task_id, known in self._shared["entries"].items():
            if known == entry:
                return task_id
        raise RuntimeError(f"the stream handed out {entry!r}, which no submit here added")

    def _report(self, task_id: object, token: object, now: object, duration: object = None) -> tuple[str | None, str, str]:
        """Validate a report's arguments, move the clock, and parse its token: (entry or None, worker, count).

        The entry is None when the token names another task's entry (refused without a call) or is
        not a token this adapter makes (a never-issued one).
        """
        check_task_id(task_id, self._shared["tasks"])
        if isinstance(token, bool) or not isinstance(token, (str, int)) or token == "":
            raise ValueError(f"token must be a non-empty str or an int, not {type(token).__name__}: {token!r}")
        check_time(self._now, now)
        if duration is not None:
            check_min("duration", duration, 1)
            if duration != LEASE:
                raise ValueError(f"duration must be {LEASE} (the group's one min-idle-time): {duration!r}")
        self._at(now)
        parts = token.split("/") if isinstance(token, str) else []
        if len(parts) != 3 or self._shared["entries"].get(task_id) != parts[0]:
            return None, "", ""
        return parts[0], parts[1], parts[2]

    def _fenced_report(self, op: str, entry: str, worker: str, count: str) -> Outcome:
        answer = self._report_script(keys=[self._key], args=[GROUP, entry, worker, count, self._lease_ms, op])
        return ACCEPTED if answer == "ok" else Outcome(False, answer)


@real_clock
@declare({**COMMON_VARIANTS, "late": "accept-unclaimed", "revive": "unclaimed"})
def group() -> StreamScheduler:
    """A fresh stream and group, reported on as the Redis documentation shows (XACK, XCLAIM): unfenced."""
    return StreamScheduler(fenced=False)


@real_clock
@declare(COMMON_VARIANTS)
def fenced() -> StreamScheduler:
    """A fresh stream and group whose reports are fenced by owner, delivery count and idle time (Lua)."""
    return StreamScheduler(fenced=True)
