"""The batch operations as the fold of the single calls, for the schedulers that keep their state in-process.

``submit_many``, ``dispatch_many``, ``complete_many`` and ``fail_many`` mean
exactly the single calls they stand for, in order, as one call that is all or
nothing on an invalid argument (``spec.model`` defines them so). A scheduler
whose single calls are cheap in memory (``SimpleScheduler``,
``IndexedScheduler``) gets them by checking the whole batch first and then
making the single calls. The schedulers that store their state
(``DurableScheduler``, ``PostgresScheduler``) write their batches set-based,
a few statements per batch in one transaction, and do not use this mixin.

The host class provides ``now``, ``submit``, ``dispatch``, ``complete``,
``fail``, ``advance``, ``task``, its ``_keys`` and ``_capacity``, and the
hooks below. Costs: the single calls' costs,
summed, plus O(size of the batch) to check it first.
"""

from __future__ import annotations

from collections.abc import Callable

from fencepost.impl import kit as v
from fencepost.spec.protocol import Lease, Outcome


class FoldedBatches:
    """The four batch operations on top of a scheduler's single calls (a mixin)."""

    # -------------------------------------------------------------- hooks

    def _issued_ids(self) -> int:
        """How many task ids have been issued."""
        return len(self._tasks)

    def _check_dispatch_arguments(self, worker: object, now: object, duration: object) -> None:
        """``dispatch``'s argument checks, in the contract's order."""
        v.check_dispatch(worker, now, duration, current=self.now, workers=self._capacity)

    def _check_fail(self, task_id: int, token: int, now: int) -> bool:
        """Whether ``fail(task_id, token, now)``, its arguments checked, is accepted; raise before any
        change if its retry time would be after the latest time (``kit.check_retry_time``)."""
        raise NotImplementedError

    # -------------------------------------------------------------- the batches

    def submit_many(self, tasks: list[dict]) -> list[int]:
        """``submit(**entry)`` for each entry of ``tasks`` in order, all or nothing; returns the ids.

        Raises:
            ValueError: ``tasks`` is not a list of dicts of ``submit``'s
                keyword arguments, or any entry is an invalid submit (named by
                its index); nothing is submitted and no id is consumed.
        """
        entries = v.check_submit_entries(tasks, self._keys, self._issued_ids() + 1)
        return _fold("tasks", [lambda e=e: self.submit(**e) for e in entries])

    def dispatch_many(self, worker: str, now: int, duration: int, limit: int) -> list[Lease]:
        """Up to ``limit`` ``dispatch(worker, now, duration)`` calls, stopping at the first None.

        Returns the leases (possibly none) in the order they were handed out.

        Raises:
            ValueError: a bad worker, time or duration (as ``dispatch``), or
                ``limit`` not an int >= 1; nothing changes.
        """
        self._check_dispatch_arguments(worker, now, duration)
        v.check_min("limit", limit, 1)
        leases: list[Lease] = []
        for _ in range(limit):
            lease = self.dispatch(worker, now, duration)
            if lease is None:
                break
            leases.append(lease)
        return leases

    def complete_many(self, reports: list, now: int) -> list[Outcome]:
        """``complete(task_id, token, now)`` for each ``(task_id, token)`` pair in order; the outcomes.

        Raises:
            ValueError: ``reports`` is not a list of pairs, any pair has an
                unknown id or a non-int token, or ``now`` is bad; nothing changes.
        """
        return self._reports_batch(self.complete, reports, now)

    def fail_many(self, reports: list, now: int) -> list[Outcome]:
        """``fail(task_id, token, now)`` for each ``(task_id, token)`` pair in order; the outcomes.

        Raises: as ``complete_many``.
        """
        return self._reports_batch(self.fail, reports, now)

    def _reports_batch(self, single: Callable[[int, int, int], Outcome], reports: object, now: object) -> list[Outcome]:
        pairs = v.check_reports(reports, self._issued_ids())
        v.check_time(self.now, now)
        for number, (task_id, _) in enumerate(pairs):
            try:
                self.task(task_id)  # a forgotten id makes the whole batch invalid, before any change
            except ValueError as exc:
                raise v.entry_error("reports", number, exc) from None
        if not pairs:
            self.advance(now)  # a timed call even when empty: due leases expire
            return []
        if single == self.fail:  # a retry time after the latest makes the batch invalid, before any change
            accepted: set[int] = set()  # a task's first accepted fail ends its lease: later ones are refused
            for number, (task_id, token) in enumerate(pairs):
                try:
                    if task_id not in accepted and self._check_fail(task_id, token, now):
                        accepted.add(task_id)
                except ValueError as exc:
                    raise v.entry_error("reports", number, exc) from None
        return _fold("reports", [lambda p=p: single(p[0], p[1], now) for p in pairs])


def _fold(name: str, calls: list[Callable[[], object]]) -> list:
    """Make ``calls`` in order; one that raises names its entry (the batch was checked first, so none
    should; the calls before it stand)."""
    results = []
    for number, call in enumerate(calls):
        try:
            results.append(call())
        except ValueError as exc:
            raise v.entry_error(name, number, exc) from None
    return results
