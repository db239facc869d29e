"""Pitfall: a batch is not all or nothing: the entries before a bad one are kept.

Seed 000 ("Invalid time or duration arguments are rejected before that
transition"; "A failed dispatch must not consume an identifier or token or
assign any task"): a batch is one call, so an invalid entry anywhere must
leave the scheduler as it was. This ``submit_many`` submits each entry in
turn and stops at the first invalid one, raising ``ValueError`` as it should
but keeping the tasks (and the ids) of the entries before it.
"""

from __future__ import annotations

from fencepost.impl.simple import SimpleScheduler


class Scheduler(SimpleScheduler):
    def submit_many(self, tasks: list[dict]) -> list[int]:
        if not isinstance(tasks, (list, tuple)):
            return super().submit_many(tasks)
        ids = []
        for entry in tasks:
            if not isinstance(entry, dict):
                return super().submit_many(tasks)  # raises, naming the entry
            try:
                ids.append(self.submit(**entry))  # the bug: no check of the whole batch first
            except TypeError:
                return super().submit_many(tasks)  # an unknown argument: raises as the contract says
        return ids
