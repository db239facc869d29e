"""The durable scheduler's SQLite transactions: one per call, a savepoint inside a batch, rolled back whole.

``DurableScheduler._write()`` returns a ``Transaction``: ``BEGIN IMMEDIATE``
... ``COMMIT`` (through the scheduler's ``_commit``) around one call, or
``SAVEPOINT`` ... ``RELEASE`` inside ``batch()``. A call that raises rolls
its transaction back and, when it had touched the scheduler's in-memory
caches, reloads them from the file; a write the file refuses (full,
read-only, an I/O error) becomes one ``StorageError`` line naming the file.
The scheduler's own docstring (``impl/durable.py``) states what each call
guarantees; this is how the transaction keeps it.
"""

from __future__ import annotations

import sqlite3


class StorageError(sqlite3.OperationalError):
    """The file could not be written (full, read-only, an I/O error); the call changed nothing."""


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run ``script``'s statements in the open transaction (``executescript()`` would COMMIT it)."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


class Transaction:
    """``DurableScheduler._write()``'s context manager (a class: cheaper than a generator on every call)."""

    __slots__ = ("scheduler", "nested")

    def __init__(self, scheduler: object) -> None:
        self.scheduler = scheduler
        self.nested = scheduler._batch_depth > 0

    def __enter__(self) -> sqlite3.Connection:
        conn = self.scheduler._conn
        conn.execute("SAVEPOINT call" if self.nested else "BEGIN IMMEDIATE")
        return conn

    def __exit__(self, kind: type | None, error: BaseException | None, trace: object) -> None:
        scheduler = self.scheduler
        conn = scheduler._conn
        try:
            if kind is None:
                try:
                    conn.execute("RELEASE call") if self.nested else scheduler._commit(conn)
                    return
                except sqlite3.OperationalError as exc:
                    self._roll_back(conn)
                    raise self._refused(exc) from None
                except BaseException:
                    self._roll_back(conn)
                    raise
            self._roll_back(conn)
            if isinstance(error, sqlite3.OperationalError) and not isinstance(error, StorageError):
                raise self._refused(error) from None
        finally:
            if self.nested:
                scheduler._batch_touched = scheduler._batch_touched or scheduler._touched
            else:
                scheduler._batch_touched = False
            scheduler._touched = False

    def _refused(self, exc: sqlite3.OperationalError) -> StorageError:
        """The one-line error of a write the file refused (the transaction is rolled back by now)."""
        return StorageError(f"cannot write {str(self.scheduler._path)!r}: {exc}; the call changed nothing "
                            "(make it again once the file is writable and has room)")

    def _roll_back(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK TO call" if self.nested else "ROLLBACK")
            if self.nested:
                conn.execute("RELEASE call")
        if self.scheduler._touched or (not self.nested and self.scheduler._batch_touched):
            self.scheduler._load()
