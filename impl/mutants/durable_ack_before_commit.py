"""Pitfall: a durable scheduler acknowledges a call before committing it.

Seed 001 ("A durable queue needs a claim mechanism, recovery for abandoned
work, and idempotent effects"): this ``DurableScheduler`` returns from every
call with its transaction still open and commits it only when the next call
begins, so a process killed between two calls loses the last call it
acknowledged: a dispatch whose lease the worker holds, a completion the
worker was told was accepted. In one process every read sees the open
transaction, so nothing looks wrong until the process dies;
``fencepost crash`` is the check that catches it.
"""

from __future__ import annotations

import sqlite3

from fencepost.impl.durable import DurableScheduler
from fencepost.impl.durable import temporary as _temporary


class Scheduler(DurableScheduler):
    def _commit(self, conn: sqlite3.Connection) -> None:
        # The bug: leave the transaction open; the next call's BEGIN commits it first.
        pass

    def _write(self):  # unannotated: the parent's context manager
        if self._conn.in_transaction and not self._batch_depth:
            self._conn.execute("COMMIT")  # the previous call's, acknowledged long ago
        return super()._write()


def temporary() -> Scheduler:
    """The mutant over a fresh temporary file: a zero-argument factory, for ``fencepost replay --impl``."""
    return _temporary(Scheduler)
