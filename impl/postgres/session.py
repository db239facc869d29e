"""One PostgreSQL session that outlives its server's faults: reconnects, call timeouts, unknown outcomes.

``PostgresScheduler`` and ``PostgresPayloads`` run every statement through a
``Session``. What it does when the connection is lost (the backend was
terminated, the server crashed or restarted, a network blip, an idle reaper)
or a call takes longer than ``call_timeout`` (the server paused, a lock never
granted):

* Before a statement is sent, a connection known to be dead (closed, or the
  server already said something unasked, such as the "terminating connection"
  message a terminated backend leaves in the socket) is replaced first. That
  call was never sent, so its outcome is not in doubt.
* A statement whose answer was lost is *sent*: whether it committed is
  unknown. What happens next depends on the call's ``Effect``: ``READ``
  (changes nothing) and ``REPEATABLE`` (the contract makes a second run
  harmless and its answer the answer) are run again on a new connection;
  ``ONCE`` (a second run could do something twice or answer differently) is
  never run again: it raises ``OutcomeUnknown`` naming the call, and the
  connection is replaced at the next call.
* Reconnecting waits with jittered exponential backoff ("equal jitter": a
  uniform delay in ``[cap/2, cap]`` for ``cap = min(max_delay, first_delay *
  2**n)``, so clients spread out but the total wait has a floor), at most
  ``Reconnect.attempts`` times; then the call gives up with one line naming the
  dsn (password hidden): ``psycopg.OperationalError`` for a call that changed
  nothing for certain, ``OutcomeUnknown`` for one that may have.
* With a ``Patience`` (``Session.patience``; a ``Runner`` gives one to the
  scheduler, payload store and clock it works through), reconnecting has no
  count: the same capped backoff goes on until the server is back, until
  ``Patience.limit`` seconds have passed (then the one-line error above, saying
  how long it waited), or until ``Patience.stopping`` is set (``StoppedWaiting``).
  A statement whose answer is lost again on every new connection is one
  outage too: it gives up once its answers have been lost for ``limit`` seconds.
  Meanwhile ``Session.outage`` says what it waits for, and the log (logger
  ``fencepost.impl.postgres.session``) says "waiting for the database" once
  the first try failed, again every ``OUTAGE_LOG_EVERY`` seconds, and "the
  database is back" when a try succeeds: an outage of any length is ridden
  through by a process that has somewhere to wait.
* A call that has not answered after ``call_timeout`` seconds has its
  connection cut from a watchdog thread (the socket shut down, which wakes the
  waiting client at once); it is then a lost answer as above. The server's
  ``statement_timeout`` is set to the same bound on every connection (the
  first one included), so a statement that waits in a running server is also
  cancelled there.

What this costs a call that meets no fault: no round trip (the statement is
the only one sent, on a cursor made once per connection), one non-blocking
``poll`` of the socket, and arming and
disarming the watchdog, which takes a lock and wakes the watchdog's thread
only when the new deadline is earlier than the one it sleeps until (about
once per ``call_timeout`` under steady calls, not once per call).

The object is not dead after giving up: the next call tries to reconnect again.
"""

from __future__ import annotations

import logging
import os
import random
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import psycopg

from fencepost.impl.kit.outages import Patience, WaitStopped
from fencepost.spec.protocol import OutcomeUnknown


class Effect(Enum):
    """What running a statement a second time would do, so whether a lost answer may be asked for again."""

    READ = "read"  # changes nothing: run again freely
    REPEATABLE = "repeatable"  # changes state, but a second run is harmless and its answer is the answer
    ONCE = "once"  # a second run could act twice or answer differently: never run again blindly


@dataclass(frozen=True)
class Reconnect:
    """How a lost connection is replaced: at most ``attempts`` tries, jittered exponential backoff.

    ``attempts=0`` never reconnects (the first fault is final for that call).
    The delay before try ``n`` (0-based) is uniform in ``[cap/2, cap]`` seconds,
    ``cap = min(max_delay, first_delay * 2**n)`` (equal jitter: spread out, with
    a floor); each try waits at most ``connect_timeout`` seconds for the server
    (libpq's minimum is 2). The defaults wait between 7.6 and 15.2 seconds in
    all before giving up: a server restart shorter than that is ridden through.

    Raises:
        ValueError: a field outside its range (named, with the value).
    """

    attempts: int = 12
    first_delay: float = 0.05
    max_delay: float = 2.0
    connect_timeout: int = 5

    def __post_init__(self) -> None:
        if not isinstance(self.attempts, int) or isinstance(self.attempts, bool) or self.attempts < 0:
            raise ValueError(f"reconnect attempts must be an int >= 0: {self.attempts!r}")
        for name in ("first_delay", "max_delay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"reconnect {name} must be a number of seconds > 0: {value!r}")
        if not isinstance(self.connect_timeout, int) or isinstance(self.connect_timeout, bool) or self.connect_timeout < 2:
            raise ValueError(f"reconnect connect_timeout must be an int >= 2 (seconds, libpq's minimum): {self.connect_timeout!r}")

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before reconnect try ``attempt`` (0-based, any size): equal jitter."""
        cap = min(self.max_delay, self.first_delay * 2.0 ** min(attempt, _DOUBLINGS))
        return rng.uniform(cap / 2, cap)


#: A policy that never reconnects.
NO_RECONNECT = Reconnect(attempts=0)

#: Doublings of the first delay past which ``Reconnect.delay`` stops growing it: the cap has been
#: reached long before, and an unbounded try count must not overflow a float.
_DOUBLINGS = 64

#: Real seconds between the log's "still waiting for the database" lines during one outage.
OUTAGE_LOG_EVERY = 30.0

_log = logging.getLogger(__name__)


class StoppedWaiting(psycopg.OperationalError, WaitStopped):
    """A call waiting for its database through an outage was told to stop (``Patience.stopping``)."""


@dataclass
class Outage:
    """What a session waiting for its database waits for: ``where``, since when, tries so far, the last error."""

    where: str
    since: float  # time.monotonic() when the connection was found lost
    tries: int = 0
    last: str = ""

    def describe(self) -> str:
        """One line: ``waiting for the database: <where> unreachable for 12.3 s (14 tries so far; last: ...)``."""
        return (f"waiting for the database: {self.where} unreachable for {time.monotonic() - self.since:.1f} s "
                f"({self.tries} {'try' if self.tries == 1 else 'tries'} so far; last: {self.last})")

#: Seconds a call may wait for its answer by default before its connection is cut (None: no bound).
DEFAULT_CALL_TIMEOUT = 30.0

#: Seconds the watchdog waits past ``call_timeout`` before cutting a connection: a running server
#: cancels the statement itself first (its ``statement_timeout``), so only a server that cannot
#: (paused, unreachable) has its connection cut under a statement that may still run later.
WATCHDOG_GRACE = 1.0


def check_call_timeout(call_timeout: object) -> float | None:
    """``call_timeout`` if it is None or a number of seconds > 0, else ValueError naming it."""
    if call_timeout is None:
        return None
    if isinstance(call_timeout, bool) or not isinstance(call_timeout, (int, float)) or not call_timeout > 0:
        raise ValueError(f"call_timeout must be None or a number of seconds > 0: {call_timeout!r}")
    return float(call_timeout)


class _Watchdog:
    """One thread per process that cuts the connections of calls past their deadline.

    ``arm`` and ``disarm`` are O(1). The thread sleeps until ``_wake_at`` (the
    earliest deadline it saw, or for ever when none was armed) and is woken
    only by a deadline earlier than that: calls share one timeout, so a call
    armed after the thread went to sleep has a later deadline and wakes
    nobody. When the thread wakes on time it cuts what is late and sleeps
    until the earliest deadline left.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: dict[int, tuple[float, psycopg.Connection]] = {}
        self._fired: set[int] = set()
        self._next = 0
        self._thread: threading.Thread | None = None
        self._wake_at: float | None = None  # when the thread wakes by itself (None: only when notified)

    def arm(self, conn: psycopg.Connection, seconds: float) -> int:
        deadline = time.monotonic() + seconds
        with self._cond:
            self._next += 1
            ticket = self._next
            self._armed[ticket] = (deadline, conn)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="fencepost-pg-watchdog", daemon=True)
                self._thread.start()
            elif self._wake_at is None or deadline < self._wake_at:
                self._wake_at = deadline  # so a second arm before the thread runs does not notify again
                self._cond.notify()
        return ticket

    def disarm(self, ticket: int) -> bool:
        """Forget ``ticket``; True if its deadline had passed and its connection was cut."""
        with self._cond:
            self._armed.pop(ticket, None)
            if ticket in self._fired:
                self._fired.discard(ticket)
                return True
            return False

    def _loop(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                late = [t for t, (d, _) in self._armed.items() if d <= now]
                for ticket in late:
                    _, conn = self._armed.pop(ticket)
                    self._fired.add(ticket)
                    _cut(conn)
                self._wake_at = min((d for d, _ in self._armed.values()), default=None)
                self._cond.wait(None if self._wake_at is None else max(0.0, self._wake_at - now))


def _cut(conn: psycopg.Connection) -> None:
    """Shut the connection's socket down under the thread waiting on it: it wakes with an error at once."""
    try:
        fd = conn.pgconn.socket
        sock = socket.socket(fileno=os.dup(fd))
    except (OSError, psycopg.Error):
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


_WATCHDOG = _Watchdog()


def _reset_watchdog_in_child() -> None:
    global _WATCHDOG
    _WATCHDOG = _Watchdog()  # the parent's thread did not come along


os.register_at_fork(after_in_child=_reset_watchdog_in_child)


def looks_dead(conn: psycopg.Connection, poller: select.poll | None = None) -> bool:
    """True if ``conn`` is closed, broken, or the server sent something unasked (it is saying goodbye).

    An idle session gets nothing from the server; a terminated or crashed
    backend leaves its last message (or the end of the stream) in the socket.
    One non-blocking poll, O(1); ``poller``: ``_poller(conn)`` made earlier, to reuse.
    """
    if conn.closed or conn.broken:
        return True
    try:
        return bool((poller or _poller(conn)).poll(0))
    except (OSError, ValueError, psycopg.Error):
        return True


#: What a poll of an idle connection's socket looks for: anything to read, an error, a hang-up.
_GOODBYE = select.POLLIN | select.POLLERR | select.POLLHUP


def _poller(conn: psycopg.Connection) -> select.poll:
    """A poll object watching ``conn``'s socket for ``_GOODBYE``."""
    poller = select.poll()
    poller.register(conn.pgconn.socket, _GOODBYE)
    return poller


class Session:
    """A connection to ``dsn`` that is replaced when it is lost; each ``run`` is one statement.

    Args:
        where: the server as errors name it, its password hidden (``PostgreSQL at dsn='...'``).
        connect: makes a new connection (called again on every reconnect).
        reconnect: the backoff policy (``Reconnect``).
        call_timeout: seconds a statement may wait for its answer (None: no bound).
        setup: ``SET`` statements for every connection the session uses, the
            first included, sent in one round trip with its ``statement_timeout``
            (``call_timeout``, or 0 for none: a reused connection keeps no other's).
        conn: a connection to start with (else one is made now); set up too.

    Not for two threads at once (the caller serialises, as psycopg does for a connection).
    """

    def __init__(self, where: str, connect: Callable[[], psycopg.Connection], *, reconnect: Reconnect,
                 call_timeout: float | None, setup: str = "", conn: psycopg.Connection | None = None) -> None:
        self.where = where
        self.closed = False
        self._connect = connect
        timeout_ms = 0 if call_timeout is None else max(1, int(call_timeout * 1000))
        self._setup = f"SET statement_timeout = {timeout_ms}" + (f"; {setup}" if setup else "")
        self.reconnect = reconnect
        self.call_timeout = call_timeout
        # the watchdog cuts a call this long after it was sent (None: never); see WATCHDOG_GRACE
        self._cut_after = None if call_timeout is None else call_timeout + WATCHDOG_GRACE
        self._rng = random.Random()
        self.reconnects = 0  # connections replaced so far (for tests and reports)
        self.patience: Patience | None = None  # set: reconnecting has no count (see the module docstring)
        self.outage: Outage | None = None  # while replace() has failed at least once and still tries
        # for the connection in it: looks_dead's poller, and the cursor every statement runs on (made once: a
        # cursor per statement, as Connection.execute makes, cost a call more than the rest of the session)
        self._attached: tuple[psycopg.Connection, select.poll, psycopg.Cursor] | None = None
        if conn is None:
            self.conn = self._new()
        else:
            self._set_up(conn)
            self.conn = conn

    def _new(self) -> psycopg.Connection:
        conn = self._connect()
        try:
            self._set_up(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _set_up(self, conn: psycopg.Connection) -> None:
        conn.execute(self._setup.encode())  # bytes: several statements in one simple query, one round trip

    def _attach(self, conn: psycopg.Connection) -> tuple[psycopg.Connection, select.poll, psycopg.Cursor]:
        """``conn``, its poller and its cursor, made once per connection."""
        attached = self._attached
        if attached is None or attached[0] is not conn:
            attached = self._attached = (conn, _poller(conn), conn.cursor())
        return attached

    def _dead(self, conn: psycopg.Connection) -> bool:
        """``looks_dead(conn)``, reusing one poll object per connection (a call makes none)."""
        try:
            poller = self._attach(conn)[1]
        except (OSError, ValueError, psycopg.Error):  # closed or lost: no socket to watch
            return True
        return looks_dead(conn, poller)

    def replace(self, why: str) -> None:
        """Close the connection and make a new one, with backoff; one-line OperationalError on giving up.

        Without ``patience``, at most ``reconnect.attempts`` tries; with it, as
        many as its ``limit`` allows (``StoppedWaiting`` when it is told to stop).
        """
        old, self.conn = self.conn, None
        if old is not None:
            try:
                old.close()
            except Exception:  # noqa: BLE001 - a dead connection may fail to close; it is gone either way
                pass
        if self.reconnect.attempts == 0:
            raise psycopg.OperationalError(f"lost the connection to {self.where} ({why}) and reconnecting is off")
        patience = self.patience
        started = time.monotonic()
        outage = Outage(self.where, started)
        logged = 0.0  # when the log last said we wait (0: not yet)
        try:
            while patience is not None or outage.tries < self.reconnect.attempts:
                delay = self.reconnect.delay(outage.tries, self._rng)
                if patience is None:
                    time.sleep(delay)
                else:
                    if patience.limit is not None:
                        left = patience.limit - (time.monotonic() - started)
                        if left <= 0:
                            break
                        delay = min(delay, left)
                    if patience.stopping.wait(delay):
                        raise StoppedWaiting(f"stopped waiting for {self.where} after {time.monotonic() - started:.1f} s: "
                                             f"told to stop (the connection was lost: {why})")
                try:
                    self.conn = self._new()
                except (psycopg.Error, OSError) as exc:
                    outage.tries += 1
                    outage.last = _first_line(exc)  # open_connection's own line already names the dsn, password hidden
                    if patience is not None:
                        self.outage = outage
                        if time.monotonic() - logged >= OUTAGE_LOG_EVERY:
                            logged = time.monotonic()
                            _log.warning("%s (still trying, every %g s at most%s)", outage.describe(),
                                         self.reconnect.max_delay,
                                         "" if patience.limit is None else f", for {patience.limit} s in all")
                    continue
                self.reconnects += 1
                if logged:
                    _log.warning("the database is back: %s reconnected after %d tries in %.1f s",
                                 self.where, outage.tries + 1, time.monotonic() - started)
                return
        finally:
            self.outage = None
        last = outage.last
        if self.where not in last:
            last = f"cannot connect to {self.where}: {last}"
        waited = time.monotonic() - started
        if patience is not None:
            raise psycopg.OperationalError(f"{last}: gave up waiting for the database after {outage.tries} tries in "
                                           f"{waited:.1f} s, its outage limit being {patience.limit} s (the connection was lost: {why})")
        raise psycopg.OperationalError(
            f"{last}: gave up reconnecting after {self.reconnect.attempts} tries "
            f"in {waited:.1f} s (the connection was lost: {why})"
        )

    def run(self, query: str | bytes, args: tuple | None, fetch: Callable[[psycopg.Cursor], object],
            effect: Effect, op: str, call_args: dict,
            refused_again_is_unknown: Callable[[Exception], bool] | None = None) -> object:
        """Run one statement and return ``fetch(cursor)``, riding through lost connections as the module says.

        ``refused_again_is_unknown(exc)``: for a ``REPEATABLE`` statement, an
        error of the second run that would not have been the first one's answer
        (``advance``: "time can't go backwards" once another client moved the
        clock); it is raised as ``OutcomeUnknown`` instead.

        Raises:
            OutcomeUnknown: an ``ONCE`` statement's answer was lost, or a
                ``REPEATABLE`` one's and no reconnect could ask again.
            psycopg.OperationalError: no statement was sent, or only reads,
                and reconnecting gave up (one line naming the dsn).
            psycopg.Error: any other server error, as raised (the caller maps its own).
        """
        if self.closed:
            raise psycopg.OperationalError("the connection is closed")
        sent = False  # a statement that may have changed something was sent and its answer lost
        # answers lost so far; a statement is asked again at most reconnect.attempts times, or, with
        # patience, for as long as reconnecting goes on (each loss waits for a new connection first)
        # and, given the patience's limit, until the answers have been lost for that long: every
        # loss starts a new replace(), whose clock alone would never reach the limit
        losses = 0
        first_loss = 0.0  # time.monotonic() of the first lost answer
        while True:
            conn = self.conn
            if conn is None or self._dead(conn):
                try:
                    self.replace("the server closed it" if conn is not None else "it was lost earlier")
                except psycopg.OperationalError as exc:
                    if sent:
                        raise OutcomeUnknown(op, call_args, str(exc)) from None
                    raise
                conn = self.conn
            cur = self._attach(conn)[2]  # before the watchdog: a failure here sent nothing
            ticket = _WATCHDOG.arm(conn, self._cut_after) if self._cut_after is not None else None
            try:
                cur.execute(query, args)
                return fetch(cur)
            except psycopg.Error as exc:
                if not _lost(conn, exc):
                    if sent and refused_again_is_unknown is not None and refused_again_is_unknown(exc):
                        raise OutcomeUnknown(op, call_args, f"asked again after a lost answer: {_one_line(exc)}") from None
                    raise
                timed_out = ticket is not None and _WATCHDOG.disarm(ticket)
                why = (f"no answer within call_timeout={self.call_timeout} s (the connection was cut)" if timed_out
                       else f"connection lost: {_one_line(exc)}")
                self.conn = None  # replaced before the next statement
                _close_quietly(conn)
                if effect is Effect.ONCE:
                    raise OutcomeUnknown(op, call_args, why) from None
                sent = sent or effect is Effect.REPEATABLE
                losses += 1
                if losses == 1:
                    first_loss = time.monotonic()
                patience, lost_for = self.patience, time.monotonic() - first_loss
                said = None
                if losses > self.reconnect.attempts and (patience is None or self.reconnect.attempts == 0):
                    said = ("reconnecting is off" if self.reconnect.attempts == 0
                            else f"gave up after {losses} lost answers in a row")
                elif patience is not None and patience.limit is not None and lost_for >= patience.limit:
                    said = (f"gave up waiting for the database after {losses} lost answers in a row in {lost_for:.1f} s, "
                            f"its outage limit being {patience.limit} s")
                if said is not None:
                    if sent:
                        raise OutcomeUnknown(op, call_args, f"{why}; {said}") from None
                    raise psycopg.OperationalError(f"lost the connection to {self.where} ({why}); {said}") from None
            finally:
                if ticket is not None:
                    _WATCHDOG.disarm(ticket)

    def connection(self) -> psycopg.Connection:
        """The live connection, replaced first if it is dead: for a caller's own statements."""
        if self.closed:
            raise psycopg.OperationalError("the connection is closed")
        if self.conn is None or self._dead(self.conn):
            self.replace("the server closed it" if self.conn is not None else "it was lost earlier")
        return self.conn

    def close(self) -> None:
        """Close the connection; every later ``run`` raises ``OperationalError`` (no reconnect). Idempotent."""
        self.closed = True
        self._attached = None  # its connection may serve another session now
        if self.conn is not None:
            _close_quietly(self.conn)


class OutlastsOutages:
    """``outlast`` and ``outage`` for an object that makes its calls through one ``Session`` (its ``_session``).

    A ``Runner`` calls them on its scheduler, payload store and clock when they offer them.
    """

    _session: Session

    def outlast(self, patience: Patience | None) -> None:
        """Wait for the database through an outage as ``patience`` says; None: count reconnect tries again."""
        if patience is not None and not isinstance(patience, Patience):
            raise ValueError(f"patience must be None or a fencepost.impl.kit.outages.Patience: {patience!r}")
        self._session.patience = patience

    def outage(self) -> str | None:
        """One line saying what a call is waiting for while the database is unreachable, else None.

        Takes no lock: it answers while a call waits (``Outage.describe``).
        """
        outage = self._session.outage
        return None if outage is None else outage.describe()


def _lost(conn: psycopg.Connection, exc: Exception) -> bool:
    """Is ``exc`` the connection's (or the server's) fault rather than the statement's?"""
    if not isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
        return False
    if conn.closed or conn.broken or isinstance(exc, psycopg.InterfaceError):
        return True
    state = getattr(exc, "sqlstate", None) or ""
    # 08 connection exception, 57 operator intervention (admin/crash shutdown, statement timeout, cannot connect now)
    return state[:2] in ("08", "57")


def _close_quietly(conn: psycopg.Connection) -> None:
    try:
        conn.close()
    except Exception:  # noqa: BLE001 - a dead connection may fail to close
        pass


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else type(exc).__name__


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0].strip()}" if lines else type(exc).__name__
