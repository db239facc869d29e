"""Fenced, idempotent effects: a destination-side ledger that a task's effects go through.

The seed's warning: "If a worker performs an effect and crashes before
recording success, retrying can repeat that effect. Leases and heartbeats
help detect abandoned ownership; they do not by themselves create
exactly-once external effects." A lease token checked by the scheduler
cannot stop a worker whose lease has ended from acting on another system.
The destination has to check it. ``EffectLedger`` is that check, kept where
the effects land (one SQLite file):

* **Fencing.** ``apply(key, token, effect)`` refuses a token lower than the
  highest token already recorded for ``key``: a zombie from an earlier lease
  cannot act once a later lease has acted (``Outcome(False,
  "stale_token")``, effect not run).
* **Idempotency.** Otherwise the call is accepted, and ``effect()`` runs only
  if ``key`` was never applied: a repeat, or a retry under a higher token,
  is accepted without running it again (``Outcome(True,
  "already_applied")``). The record (key, highest token, the token it was
  applied under) is committed before ``apply`` returns.

What this makes *effectively once*, and what it does not: ``effect()`` runs
inside the ledger's transaction (``BEGIN IMMEDIATE``, which also serializes
concurrent callers, in any process). When the effect's own writes go to the
ledger's database -- through ``ledger.connection``, during the call -- they
commit together with the record or not at all, so a crash at any instant
leaves either both or neither, and a retry cannot repeat the effect. When
the effect reaches some other system (an HTTP call, another database), a
crash after it and before the commit leaves it done but unrecorded, and a
retry repeats it: that destination must then check the key and token
itself, as this ledger does. Exactly-once is not promised.

The scheduler-side counterpart is ``DurableScheduler.complete(...,
effect=...)``: an effect recorded in the same transaction as the completion
that ends the attempt.

Limits: fencing knows only the tokens this ledger has seen, so a zombie that
acts *before* the later lease does is accepted (and the later lease's effect
is then deduplicated): the effect still happens once. Tokens are SQLite's
64-bit integers.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from fencepost.impl import kit as v
from fencepost.impl.durable import BUSY_TIMEOUT_S, INT64_MAX, INT64_MIN, SYNCHRONOUS_SETTINGS
from fencepost.spec.protocol import ACCEPTED, Outcome, Reason

#: ``Outcome.reason`` of an accepted call whose effect had already been applied.
ALREADY_APPLIED = "already_applied"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS fencepost_effects (
    key           TEXT PRIMARY KEY,  -- the effect's idempotency key
    highest_token INTEGER NOT NULL,  -- the highest lease token seen for it: lower ones are fenced off
    applied_token INTEGER NOT NULL   -- the token whose call ran the effect
) WITHOUT ROWID
"""


class EffectLedger:
    """Fenced, idempotent application of effects, recorded in the SQLite file at ``path``.

    Several ledgers (in several processes) may share one file: each
    ``apply`` is one serialized transaction. The file may hold the
    application's own tables too; the ledger's is ``fencepost_effects``.

    Args:
        path: the database file (created if missing).
        synchronous: ``"FULL"`` (default: a record survives power loss) or
            ``"NORMAL"`` (it survives a process crash), as for ``DurableScheduler``.
    """

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "FULL") -> None:
        if synchronous not in SYNCHRONOUS_SETTINGS:
            raise ValueError(f"synchronous must be one of {', '.join(SYNCHRONOUS_SETTINGS)}: {synchronous!r}")
        self._path = Path(path)
        try:
            self._conn = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(f"PRAGMA synchronous = {synchronous}")
            self._conn.execute(_SCHEMA)
        except sqlite3.Error as exc:
            raise ValueError(f"path {str(path)!r} cannot be used as an effect ledger: {exc}") from None

    @property
    def connection(self) -> sqlite3.Connection:
        """The ledger's connection. During ``apply``, what an effect executes on it commits with the record."""
        return self._conn

    def close(self) -> None:
        """Release the file. Idempotent."""
        self._conn.close()

    def __enter__(self) -> EffectLedger:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def apply(self, key: str, token: int, effect: Callable[[], object]) -> Outcome:
        """Run ``effect()`` once per ``key``, fenced by lease ``token``.

        Returns:
            ``Outcome(False, "stale_token")`` when a higher token was already
            recorded for ``key`` (the effect is not run); ``Outcome(True,
            "already_applied")`` when ``key`` was applied before (the effect is
            not run again; a higher token is recorded); otherwise
            ``Outcome(True)`` after ``effect()`` ran and was recorded.

        Raises:
            ValueError: ``key`` is not a non-empty str, ``token`` not a 64-bit
                int (bool excluded), or ``effect`` not callable; nothing is recorded.
            Exception: whatever ``effect()`` raises; the transaction is rolled
                back (the effect's writes to ``connection`` too) and nothing is recorded.

        Complexity: one indexed lookup and one write, in one transaction.
        """
        if not isinstance(key, str) or not key:
            raise ValueError(f"key must be a non-empty str, not {type(key).__name__}: {key!r}")
        v.check_int("token", token)
        if not INT64_MIN <= token <= INT64_MAX:
            raise ValueError(f"token must fit in a 64-bit signed integer (SQLite's INTEGER): {token!r}")
        if not callable(effect):
            raise ValueError(f"effect must be callable, not {type(effect).__name__}: {effect!r}")
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")  # the write lock: the check and the record cannot be split
        try:
            row = conn.execute("SELECT highest_token FROM fencepost_effects WHERE key = ?", (key,)).fetchone()
            if row is not None and token < row[0]:
                outcome = Outcome(False, Reason.STALE_TOKEN)
            elif row is not None:
                conn.execute("UPDATE fencepost_effects SET highest_token = ? WHERE key = ?", (token, key))
                outcome = Outcome(True, ALREADY_APPLIED)
            else:
                effect()
                conn.execute("INSERT INTO fencepost_effects VALUES (?, ?, ?)", (key, token, token))
                outcome = ACCEPTED
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return outcome

    def record(self, key: str) -> tuple[int, int] | None:
        """``(highest token seen, token it was applied under)`` for ``key``, or None if never applied."""
        row = self._conn.execute(
            "SELECT highest_token, applied_token FROM fencepost_effects WHERE key = ?", (key,)
        ).fetchone()
        return None if row is None else (row[0], row[1])
