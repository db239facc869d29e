"""One breadth-first level of ``explore``, cut into parts that forked processes expand.

``expand_level`` cuts a level's frontier into parts (``bounds``: guided
self-scheduling, large parts first and small ones last), hands them to
``jobs`` forked workers as they free up, and returns every part's result in
part order. The caller merges them in that order, keeping a state's first
discovery, which gives what one process expanding the whole level gives: a
part stops early only when an earlier part found a violation, and then only
the earliest violation counts.

This module knows nothing of the model: what a part is expanded with is the
``expand`` callable the caller passes (``explore._expand_all``), read by the
workers from memory they share with the caller by forking, never pickled.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any

from fencepost.spec.checkers.shards import forked_pool, while_alive

#: Below this many states a level is expanded in the caller's process: forking
#: a pool and merging its results costs more than it saves on smaller levels
#: (measured at the default scope on 2 cores: a level of 332 states took 0.42 s
#: on 2 jobs and 0.68 s on 1; one of 159 states, 0.34 s and 0.27 s).
PARALLEL_MIN = 300

#: States differ in cost (a state with more tasks has more calls), so halves of
#: a level finish far apart: a level is cut into parts that the jobs take as
#: they free up, each part a ``1 / (SHARE_OF_REST * jobs)`` share of the
#: states not yet cut (guided self-scheduling). The first parts are large, so
#: few states are found by two workers and sent back twice; the last are
#: small, so the jobs finish a level close together (measured at the default
#: scope on 2 cores: 8 equal parts a job left one job idle up to 0.66 s at
#: the end of a level of 4,130 states; these parts, under 0.02 s; and
#: ``explore --jobs 2`` took 0.92x the time, six alternating pairs).
SHARE_OF_REST = 2

#: The fewest states in a part, but for a level's last: below this a part costs
#: more to hand out and merge than it evens out.
LEAST_PART = 8

#: ``expand(part, superseded, sent)``: expands a slice of the frontier; ``superseded()`` says an earlier
#: part found a violation, ``sent`` holds the keys of new states earlier parts of this worker reported
#: (to be left out, and to gain this part's). Its result has a ``violation`` attribute.
Expand = Callable[[list, Callable[[], bool], set], Any]

# The level being expanded, for forked workers to read (set just before forking):
# (frontier, expand, where the parts are cut, the lowest part index that found a violation,
# this process's record of what it already sent back: see _expand_part).
_SHARED: tuple | None = None


def bounds(states: int, jobs: int) -> list[int]:
    """Where the parts of a level of ``states`` (at least 1) are cut, from 0 to ``states``: each part
    ``SHARE_OF_REST * jobs`` times smaller than what is left, and at least ``LEAST_PART`` states.
    O(jobs log states) parts."""
    cuts = [0]
    while cuts[-1] < states:
        rest = states - cuts[-1]
        cuts.append(cuts[-1] + min(rest, max(LEAST_PART, -(-rest // (SHARE_OF_REST * jobs)))))
    return cuts


def _expand_part(index: int) -> Any:
    """Expand part ``index`` of the shared level, in a forked worker.

    A worker sends back only the new states no earlier part of its own
    reported: the merge takes parts in index order and keeps a state's first
    discovery, so a copy found again by a later part would be pickled, sent
    and unpickled for nothing (measured: 16 parts of a level of the default
    scope sent 7,421 states where one process makes 4,130). The record holds
    only parts with lower indices than the one at hand: the pool hands parts
    out in order, and should a worker ever get a lower index than its last,
    the record starts again empty.
    """
    frontier, expand, cuts, first_violation, sent = _SHARED
    if index < sent["last"]:
        sent["keys"] = set()
    sent["last"] = index
    level = expand(frontier[cuts[index] : cuts[index + 1]], lambda: first_violation.value < index, sent["keys"])
    if level.violation is not None:
        with first_violation.get_lock():
            first_violation.value = min(first_violation.value, index)
    return level


def expand_level(frontier: list, expand: Expand, jobs: int) -> list:
    """``expand``'s result for each part of ``frontier``, in part order, the parts expanded by ``jobs``
    forked processes as they free up.

    Raises ``ShardWorkerDied`` (``spec.checkers.shards``) when a worker ends in the middle of a part.
    """
    global _SHARED
    cuts = bounds(len(frontier), jobs)
    parts = len(cuts) - 1
    # Each forked worker gets its own copy of the record of what it sent back; this process's stays empty.
    record = {"last": -1, "keys": set()}
    _SHARED = (frontier, expand, cuts, multiprocessing.get_context("fork").Value("i", parts), record)
    try:
        with forked_pool(jobs) as pool:
            workers = list(pool._pool)  # Pool has no public view of its processes
            return while_alive(pool.map_async(_expand_part, range(parts), chunksize=1).get, workers)
    finally:
        _SHARED = None
