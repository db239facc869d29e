"""Two broken PostgreSQL schedulers, for the concurrency tests and ``fencepost linearize``.

Each is ``PostgresScheduler`` with one call rewritten the way PostgreSQL job
queues have got it wrong in public bug reports. They exist so the tests can
show that the checks catch them; never use them.

* ``StatusFencedScheduler``: ``complete`` is fenced by ``status = 'running'``
  instead of by the token. A zombie whose lease expired and was re-leased
  completes the new attempt's task: the stale-job reclaimer and the
  still-alive handler both "finish" the same row. ``before`` and ``after``
  (test hooks) run around each ``complete`` and ``fail``, given the verb, the
  task and the token, so a test can make the zombie's completion land first every time.
* ``UnlockedClaimScheduler``: ``dispatch`` reads the best task with a plain
  ``SELECT`` and then leases it with an ``UPDATE`` by id, no ``FOR UPDATE``
  and no re-check: two clients that read before either writes lease the same
  task, and two current leases exist at once. ``between`` (a test hook) runs
  between the read and the write, so a test can make that interleaving happen
  every time instead of hoping for it.

Compare the statements with the real ones in ``impl/postgres/sql.py``.
"""

from __future__ import annotations

from collections.abc import Callable

from psycopg import sql

from fencepost.impl import kit as v
from fencepost.impl.postgres.scheduler import PostgresScheduler, _fits, temporary_scheduler
from fencepost.spec.protocol import Lease, Outcome


class StatusFencedScheduler(PostgresScheduler):
    """``complete`` accepts any token while the task is running (the token is not in the WHERE)."""

    def __init__(self, dsn: str, *, schema: str = "fencepost",
                 before: Callable[[str, int, int], None] | None = None,
                 after: Callable[[str, int, int], None] | None = None, **private: object) -> None:
        super().__init__(dsn, schema=schema, **private)
        self.before = before
        self.after = after

    def complete(self, task_id: int, token: int, now: int) -> Outcome:
        if self.before is not None:
            self.before("complete", task_id, token)
        try:
            return self._complete(task_id, token, now)
        finally:
            if self.after is not None:
                self.after("complete", task_id, token)

    def fail(self, task_id: int, token: int, now: int) -> Outcome:
        if self.before is not None:
            self.before("fail", task_id, token)
        try:
            return super().fail(task_id, token, now)
        finally:
            if self.after is not None:
                self.after("fail", task_id, token)

    def _complete(self, task_id: int, token: int, now: int) -> Outcome:
        args = (self._task_id(task_id), self._token(token), self._time(now))
        schema = sql.Identifier(self.schema)
        with self._invalid_as_value_error("complete", args), self._conn.transaction():
            self._conn.execute(sql.SQL("SELECT {}.fp_begin_task(%s, %s)").format(schema), (args[0], args[2]))
            done = self._conn.execute(
                sql.SQL(
                    "UPDATE {}.tasks SET status = 'succeeded', ended_at = %s, worker = NULL, token = NULL,"
                    " started_at = NULL, expires_at = NULL, cancel_requested = false"
                    " WHERE id = %s AND status = 'running'"  # <-- the bug: no "AND token = %s AND expires_at > %s"
                ).format(schema),
                (args[2], args[0]),
            ).rowcount
        return Outcome(True) if done else Outcome(False, "not_running")

    def reopen(self) -> StatusFencedScheduler:
        return StatusFencedScheduler(self.dsn, schema=self.schema, _owner=self._owner,
                                     before=self.before, after=self.after)


class UnlockedClaimScheduler(PostgresScheduler):
    """``dispatch`` reads the best task, then writes it by id: a read-then-write with no lock."""

    def __init__(self, dsn: str, *, schema: str = "fencepost", between: Callable[[], None] | None = None,
                 **private: object) -> None:
        super().__init__(dsn, schema=schema, **private)
        self.between = between

    def dispatch(self, worker: str, now: int, duration: int) -> Lease | None:
        v.check_dispatch(worker, now, duration, current=None, fits=_fits)  # the server keeps the clock and the workers
        schema = sql.Identifier(self.schema)
        with self._invalid_as_value_error("dispatch", (worker, now, duration)), self._conn.transaction():
            # the bug: a plain SELECT (no FOR UPDATE, no SKIP LOCKED, before any lock is taken) ...
            row = self._conn.execute(
                sql.SQL(
                    "SELECT id FROM {}.tasks WHERE status IN ('pending', 'retry_wait') AND due_at <= %s"
                    " ORDER BY priority DESC, due_at, id LIMIT 1"
                ).format(schema),
                (now,),
            ).fetchone()
            if self.between is not None:
                self.between()
            self._conn.execute(sql.SQL("SELECT {}.fp_begin(%s)").format(schema), (now,))
            capacity = self._conn.execute(
                sql.SQL("SELECT capacity FROM {}.workers WHERE name = %s").format(schema), (worker,)
            ).fetchone()
            if capacity is None:
                raise v.unknown_worker(worker)
            load = self._conn.execute(
                sql.SQL("SELECT count(*) FROM {}.tasks WHERE status = 'running' AND worker = %s").format(schema),
                (worker,),
            ).fetchone()[0]
            if row is None or load >= capacity[0]:
                return None
            token = self._conn.execute(
                sql.SQL("SELECT nextval('{}.tokens')").format(schema)
            ).fetchone()[0]
            # ... then an UPDATE by id alone: whoever read the same row leases it too.
            self._conn.execute(
                sql.SQL(
                    "UPDATE {}.tasks SET status = 'running', attempts = attempts + 1, worker = %s, token = %s,"
                    " started_at = %s, expires_at = %s, expired_token = NULL WHERE id = %s"
                ).format(schema),
                (worker, token, now, now + duration, row[0]),
            )
        return Lease(row[0], worker, token, now, now + duration)

    def reopen(self) -> UnlockedClaimScheduler:
        return UnlockedClaimScheduler(self.dsn, schema=self.schema, _owner=self._owner, between=self.between)


def status_fenced() -> StatusFencedScheduler:
    """A ``StatusFencedScheduler`` over a fresh temporary schema on ``$FENCEPOST_PG_DSN``."""
    return temporary_scheduler(StatusFencedScheduler, "fp_broken")


def unlocked_claim() -> UnlockedClaimScheduler:
    """An ``UnlockedClaimScheduler`` over a fresh temporary schema on ``$FENCEPOST_PG_DSN``."""
    return temporary_scheduler(UnlockedClaimScheduler, "fp_broken")
