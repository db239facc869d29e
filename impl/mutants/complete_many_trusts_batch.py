"""Pitfall: ``complete_many`` accepts a stale token once an earlier report in the batch was accepted.

Seed 000 ("Completion must match the current assignment, not just the task
or worker identity"; "A stale token and an exactly expired lease both
fail"): every report in a batch is judged as its own ``complete``. This one
checks tokens only until one report is accepted, and then takes the batch as
coming from a worker it trusts: every later report of a running task is
accepted whatever its token.
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import ACCEPTED, Outcome, Status


class Scheduler(SimpleScheduler):
    def complete_many(self, reports: list, now: int) -> list[Outcome]:
        outcomes = super().complete_many(reports, now)  # checks the batch, judges each report
        if True not in (o.accepted for o in outcomes):
            return outcomes
        first = [o.accepted for o in outcomes].index(True)
        for number in range(first + 1, len(outcomes)):
            t = self._get(reports[number][0])
            if not outcomes[number].accepted and t.status is Status.RUNNING:
                t.release(Status.SUCCEEDED, now)  # the bug: trusted without its token
                outcomes[number] = ACCEPTED
        return outcomes
