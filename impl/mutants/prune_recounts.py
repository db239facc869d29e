"""Pitfall: after a prune, ids and tokens are counted again from the tasks that remain.

Seed 000 ("A failed dispatch must not consume an identifier or token";
"Reassigning the same task ... requires a fresh lease token. Otherwise a
delayed completion could finish the replacement attempt"): ids and tokens
are counters, never reused. This prune drops the forgotten tasks' slots from
the end of the registry and recounts the last token from the leases left, as
a table whose next id is ``max(id) + 1`` does (SQLite's rowid without
AUTOINCREMENT): once the newest tasks are pruned, a new task gets a forgotten
task's id, and a new lease a token already handed out.
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler


class Scheduler(SimpleScheduler):
    def prune(self, before: int, now: int) -> int:
        forgotten = super().prune(before, now)
        while self._tasks and self._tasks[-1] is None:  # the bug: the next id is the largest left + 1
            self._tasks.pop()
        tokens = [t.token for t in self._tasks if t is not None and t.token is not None]
        self._last_token = max(tokens, default=0)  # the bug: the next token is the largest held + 1
        return forgotten
