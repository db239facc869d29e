"""Celery's Redis broker (kombu's Redis transport) behind the protocol, with late acknowledgement, on the real clock.

Factory: ``queue``. A task is one message published to one queue; a worker is
one consumer: its own kombu ``Connection`` and ``Channel``, as each Celery
worker process has. The adapter drives kombu 5.7.0's public channel API
(``Producer.publish``, ``Channel.basic_get``, ``Channel.basic_ack``,
``Channel.qos.restore_visible``) with the transport options Celery passes
through ``broker_transport_options``; no Celery worker runs, because the
worker acknowledges through this same call: with ``acks_late`` its
``Request.acknowledge`` calls ``message.ack_log_error`` (``celery/worker/
consumer/consumer.py`` passes it as ``on_ack``), which is ``Message.ack``,
which is ``channel.basic_ack(delivery_tag)``.

=============  ==========================================================================
protocol       kombu's Redis transport (5.7.0)
=============  ==========================================================================
submit         ``Producer.publish`` to exchange/queue ``celery`` (``LPUSH`` of the
               message, whose properties carry a fresh ``delivery_tag``, a uuid)
dispatch       the consumer's sweep ``qos.restore_visible`` (every message in the
               ``unacked_index`` zset delivered ``visibility_timeout`` seconds ago or
               more goes back to the queue, ``RPUSH``), then ``basic_get`` with
               acknowledgement (``RPOP``; ``QoS.append`` records the message in the
               ``unacked`` hash under its delivery tag and in ``unacked_index`` with
               the consumer's ``time()``); the token is the message's delivery tag
complete       ``basic_ack(delivery_tag)`` (``QoS.ack``: ``ZREM unacked_index tag``,
               ``HDEL unacked tag``), guarded by ``HEXISTS unacked tag``
advance        nothing: a lease ends when a consumer's sweep finds it old enough
=============  ==========================================================================

**When a lease ends.** kombu keeps no timer: a message delivered with
acknowledgement stays in the ``unacked`` hash until some consumer's
``restore_visible`` finds its ``unacked_index`` score ``visibility_timeout``
seconds or more in the past, by that consumer's own ``time()`` (Celery's
worker sweeps when its event loop starts and every ``unacked_restore_interval``
seconds; a ``drain_events`` consumer after every empty poll). So expiry is
decided by the sweeper, whatever the holder expects, as ``XAUTOCLAIM``'s
min-idle-time is for Redis Streams: one lease length for everyone
(``duration=5``, ``visibility_timeout = 5 * tick_ms()`` milliseconds, the
sweep throttle ``unacked_restore_throttle`` set to 1 so every dispatch
sweeps). The clock is the consumers' wall clock (``time.time()``), not the
Redis server's and not a monotonic one: nobody can set it, so the factory runs
on the real clock only (``kit.real_clock``, ``fencepost check --clock real``).

**The token.** The delivery tag is made once, when the message is published
(``virtual.Channel._inplace_augment_message``), and travels inside the
message: ``restore_by_tag`` pushes the stored payload back unchanged (only
``redelivered`` is set), so every delivery of a message carries the tag of
the first. It is the only handle ``basic_ack`` takes, and the ``unacked``
hash is keyed by it. So a lease's token is never fresh after a redelivery:
this breaks the core, which no variant excuses, and it is what ``fencepost
check`` finds first. Its consequence is the zombie's ack: a consumer whose
visibility timeout passed, and whose message was restored and delivered to
another consumer, acknowledges with the same tag and removes the new
holder's ``unacked`` entry (docs/findings.md, K1).

**Which read decides ``complete``.** ``basic_ack`` answers nothing, whether it
removed an entry or not, so the adapter reads the queue's record first
(``kit.guard``): the ``unacked`` hash holds the tag (delivered, not yet
acknowledged nor restored), else the ack is refused (``not_unacked``) and made
anyway, as a worker would make it. The read is not atomic with the ack: in a
history recorded from several threads another client may act between them.

What the transport promises, and so what ``queue`` declares: opaque tokens
(``tokens=opaque``); no bound on what a consumer holds through ``basic_get``
(``capacity=none``; ``prefetch_count`` gates only ``basic_consume``); no
per-message view that does not move on its own (``views=none``); one lease
length (``duration=5``); and, as for Redis Streams, a late ``basic_ack`` while
the message is still in the ``unacked`` hash (nobody swept it back) removes
it for good, so a late ``complete`` while nobody took the task since counts
(``late=accept-unclaimed``, the closer of the two values: once a sweep has
pushed the message back, and before anyone takes it, the same ack removes
nothing and the message runs again, which no value describes; docs/findings.md,
K3). Order: messages are delivered in publish order,
but a sweep pushes the messages it restores to the head of the list
(``RPUSH``, oldest delivery nearest the head), ahead of messages restored by an
earlier sweep: a message restored later can be delivered before one
published earlier, so the order is declared ``any``. Not offered:
``renew`` (no call moves a message's ``unacked_index`` score), ``fail``
(``basic_reject(requeue=True)`` makes it deliverable at once, where the
contract's retry waits; a Celery retry publishes a new message), ``cancel``
(a revoke is a worker-side list, not the broker's), priorities (kombu's four
priority steps are not the contract's order), due times, attempt budgets and
keys.

The server is ``FENCEPOST_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``).
Every key the transport makes starts with ``fp:celery:PID:N:`` (kombu's
``global_keyprefix``); all of them are deleted when the scheduler is closed or
collected. kombu is the ``peers`` extra.
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref

from fencepost.impl.kit import (
    ACCEPTED,
    Book,
    Lease,
    Outcome,
    check_submit,
    declare,
    guard,
    real_clock,
    require_tick,
    unknown_worker,
)

#: The server, unless ``FENCEPOST_REDIS_URL`` names another.
DEFAULT_URL = "redis://127.0.0.1:6379/0"
#: The one lease length, in ticks: the transport's ``visibility_timeout`` is ``LEASE * tick_ms()`` ms.
LEASE = 5
#: The exchange, queue and routing key every task goes through (Celery's defaults).
QUEUE = "celery"
#: Every key of a scheduler starts with this, then ``PID:N:`` (kombu's ``global_keyprefix``).
KEY_PREFIX = "fp:celery:"
#: Why a report is refused when its token was handed out for another task (no call is made).
OTHER_TASKS_TOKEN = "token_of_another_task"
#: Why a report is refused when the ``unacked`` hash does not hold the tag (acknowledged, or swept back).
NOT_UNACKED = "not_unacked"
#: kombu's ``unacked`` hash (the ``unacked_key`` transport option, left at kombu's default).
UNACKED_KEY = "unacked"

VARIANTS = {
    "order": "any",
    "tokens": "opaque",
    "late": "accept-unclaimed",
    "capacity": "none",
    "views": "none",
    "duration": str(LEASE),
    "without": "cancel,due_at,fail,keys,max_attempts,priority,renew",
}

_NUMBERS = itertools.count(1)


def transport_options(prefix: str, lease_ms: int) -> dict:
    """The ``broker_transport_options`` a Celery app would pass: the key prefix, the lease, a sweep on every call."""
    return {
        "global_keyprefix": prefix,
        "visibility_timeout": lease_ms / 1000,
        # restore_visible scans only on every Nth call by default (10); 1: every dispatch sweeps.
        "unacked_restore_throttle": 1,
        "socket_timeout": 10,
    }


def _release(url: str, prefix: str | None, connections: list) -> None:
    """Close every kombu connection (each channel gives its unacked messages back first), then, given a
    ``prefix`` (the scheduler's own, never a client's), delete every key under it."""
    for connection in connections:
        try:
            connection.release()
        except Exception:  # noqa: BLE001 - the server went away: nothing left to free
            pass
    if not prefix:  # a client: the keys are its scheduler's to delete (and "" would match every key)
        return
    try:
        import redis

        client = redis.Redis.from_url(url, socket_timeout=10)
        keys = list(client.scan_iter(match=f"{prefix}*", count=500))
        if keys:
            client.delete(*keys)
        client.close()
    except Exception:  # noqa: BLE001 - the server went away: nothing left to free
        pass


class CeleryRedisQueue:
    """One queue of kombu's Redis transport behind the protocol; see the module docstring.

    ``client()`` opens another set of connections to the same queue, sharing
    this scheduler's ``Book`` (the history recorder's clients).

    Raises:
        ValueError: made outside ``--clock real`` (no tick in force).
        ModuleNotFoundError: kombu (the ``peers`` extra) is not installed.
        redis.ConnectionError: the server cannot be reached.
    """

    def __init__(self, url: str | None = None, prefix: str | None = None, lease_ms: int | None = None,
                 owner: CeleryRedisQueue | None = None) -> None:
        import redis
        from kombu import Connection, Exchange, Queue

        self._lease_ms = lease_ms if lease_ms is not None else LEASE * require_tick("celery_redis:queue")
        self._url = url or os.environ.get("FENCEPOST_REDIS_URL", DEFAULT_URL)
        self._prefix = prefix or f"{KEY_PREFIX}{os.getpid()}:{next(_NUMBERS)}:"
        self._options = transport_options(self._prefix, self._lease_ms)
        self._exchange = Exchange(QUEUE, type="direct")
        self._queue = Queue(QUEUE, self._exchange, routing_key=QUEUE)
        self._redis = redis.Redis.from_url(self._url, decode_responses=True, socket_timeout=10)
        self._connections: list = []
        self._Connection = Connection
        self._producer_connection = self._connect()
        self._producer_channel = self._producer_connection.channel()
        self._queue(self._producer_channel).declare()
        self._consumers: dict[str, object] = {}  # worker -> its channel (made on its first dispatch)
        self._lock = threading.Lock()  # one client's channels are made once
        if owner is None:
            self._book = Book()
            self._holder: dict[str, str] = {}  # delivery tag -> the worker that received it last
            self._release = weakref.finalize(self, _release, self._url, self._prefix, self._connections)
        else:
            self._book = owner._book
            self._holder = owner._holder
            self._release = weakref.finalize(self, _release, self._url, None, self._connections)

    def _connect(self) -> object:
        connection = self._Connection(self._url, transport_options=self._options)
        self._connections.append(connection)
        return connection

    @property
    def key_prefix(self) -> str:
        """What every key this scheduler's transport makes starts with (kombu's ``global_keyprefix``)."""
        return self._prefix

    def client(self) -> CeleryRedisQueue:
        """Another producer and other consumers on the same queue, sharing this scheduler's records."""
        return CeleryRedisQueue(self._url, self._prefix, self._lease_ms, owner=self)

    # ------------------------------------------------------------ the protocol

    @property
    def now(self) -> int:
        return self._book.now

    def add_worker(self, worker: str, capacity: int) -> None:
        """Remember the consumer's name: ``basic_get`` bounds no consumer's load (``capacity=none``)."""
        self._book.add_worker(worker, capacity)

    def submit(self, priority: int = 0, due_at: int | None = None, max_attempts: int | None = None,
               retry_delay: int = 1) -> int:
        """``Producer.publish`` of ``{"task": N}``; returns the task id (1, 2, 3... in publish order).

        Raises:
            ValueError: an invalid argument, or a priority, due time or attempt budget (not offered).
        """
        from kombu import Producer

        check_submit(priority, due_at, max_attempts, retry_delay)
        if priority != 0 or due_at is not None or max_attempts is not None:
            raise ValueError(f"priority, due_at and max_attempts are not offered by this adapter: "
                             f"{priority!r}, {due_at!r}, {max_attempts!r}")
        with self._book.lock:  # task ids follow the publish order
            task_id = self._book.issued + 1
            Producer(self._producer_channel).publish(
                {"task": task_id}, exchange=self._exchange, routing_key=QUEUE, serializer="json",
                declare=[self._queue])
            self._book.add_task(task_id)
        return task_id

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        """The worker's sweep (``restore_visible``), then ``basic_get`` with acknowledgement; None if empty."""
        self._book.check_dispatch(worker, now, duration)
        if duration != LEASE:
            raise ValueError(f"duration must be {LEASE} (the transport's one visibility_timeout): {duration!r}")
        self._book.move_to(now)
        channel = self._channel(worker)
        channel.qos.restore_visible(num=channel.unacked_restore_limit, interval=channel.unacked_restore_throttle)
        message = channel.basic_get(QUEUE, no_ack=False)
        if message is None:
            return None
        task_id = message.decode()["task"]
        token = message.delivery_tag
        self._book.handed_out(token, task_id)
        with self._book.lock:
            self._holder[token] = worker
        return Lease(task_id=task_id, worker=worker, token=token, started_at=now, expires_at=now + LEASE)

    def complete(self, task_id: int, token: object, now: int) -> Outcome:
        """``basic_ack(token)`` on the channel that received it last, refused unless ``unacked`` holds the tag."""
        self._book.check_report(task_id, token, now)
        self._book.move_to(now)
        if self._book.other_task(task_id, token):
            return Outcome(False, OTHER_TASKS_TOKEN)
        refused = guard(lambda: self._redis.hexists(self._prefix + UNACKED_KEY, str(token)), bool, NOT_UNACKED)
        worker = self._holder.get(token) if isinstance(token, str) else None
        if worker is not None:
            self._channel(worker).basic_ack(token)  # a worker acks whether or not its entry is still there
        return refused or ACCEPTED

    def advance(self, now: int) -> None:
        """Move the logical clock; the transport needs no call (a sweep decides expiry)."""
        self._book.move_to(now)

    def close(self) -> None:
        """Close every connection and, for the scheduler itself, delete its keys (also done when collected)."""
        self._release()

    # ------------------------------------------------------------ helpers

    def _channel(self, worker: str) -> object:
        """The worker's consumer channel on this client: its own connection, made on first use."""
        if worker not in self._consumers:
            with self._lock:
                if worker not in self._consumers:
                    if not self._book_knows(worker):
                        raise unknown_worker(worker)
                    channel = self._connect().channel()
                    self._queue(channel).declare()
                    self._consumers[worker] = channel
        return self._consumers[worker]

    def _book_knows(self, worker: str) -> bool:
        try:
            self._book.capacity(worker)
        except KeyError:
            return False
        return True


@real_clock
@declare(VARIANTS)
def queue() -> CeleryRedisQueue:
    """A fresh queue on kombu's Redis transport, consumed with late acknowledgement as Celery's worker does."""
    return CeleryRedisQueue()
