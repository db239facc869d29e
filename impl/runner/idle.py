"""The runner's idle proof: when a dispatch now would find nothing, without making it.

A free slot whose dispatch at time p found nothing leaves a proof (the
version then, p). It stands while nothing was submitted or expired since
(every such change bumps ``version``) and no due time the runner knows of
(submits due later, retries) lies in (p, now]. A standing proof spares every
other free slot its dispatch; ``wait_idle`` returns on it when nothing runs.
"""

from __future__ import annotations

import heapq


class IdleProof:
    """The version of what may be eligible, the proof in hand, and the heap of known due times."""

    __slots__ = ("version", "proof", "hints")

    def __init__(self) -> None:
        self.version = 0  # bumped whenever work may have become eligible (submit, expiry)
        self.proof: tuple[int, int] | None = None  # (version, time) at which a free slot's dispatch found nothing
        self.hints: list[int] = []  # heap of due times, so a real clock's idle slots wake when work falls due

    def found_nothing(self, now: int) -> None:
        """A free slot's dispatch at ``now`` found nothing eligible."""
        self.proof = (self.version, now)

    def hint(self, due_at: int) -> None:
        """Work falls due at ``due_at`` (a submit, a retry, a lease a lost dispatch may hold)."""
        heapq.heappush(self.hints, due_at)

    def proven(self, clock: object) -> bool:
        """True when a dispatch now would find nothing eligible.

        O(log n) amortized: due times up to the proof's are dropped as they
        surface. ``clock.now`` is read only when a due time is left to compare
        (a shared clock's ``now`` may be a round trip).
        """
        proof = self.proof
        if proof is None or proof[0] != self.version:
            return False
        hints = self.hints
        while hints and hints[0] <= proof[1]:
            heapq.heappop(hints)  # the dispatch at p saw these
        return not hints or hints[0] > clock.now

    def past_due(self, now: int) -> None:
        """After a dispatch at ``now`` leased something: drop the due times up to ``now`` (some are).

        Every due time up to now is behind every later dispatch, so no later
        proof needs it; dropping them here keeps the heap to the tasks not yet
        due while the pool is busy. The proof in hand, if any, was made before
        them: it no longer stands.
        """
        hints = self.hints
        self.proof = None
        while hints and hints[0] <= now:
            heapq.heappop(hints)

    def seconds_to_next_due(self, clock: object) -> float | None:
        """Real seconds until the next known due time on ``clock`` (None: wait to be notified).

        Called after a dispatch found nothing (or was proven to), when every
        known due time up to now has been dropped.
        """
        return clock.seconds_until(self.hints[0]) if self.hints else None

    def check_invariants(self) -> None:
        """Assert the due times are a heap and the proof was made at a version there has been."""
        hints = self.hints
        assert all(hints[(i - 1) // 2] <= hints[i] for i in range(1, len(hints))), "the due times are not a heap"
        assert self.proof is None or 0 <= self.proof[0] <= self.version, (self.proof, self.version)
