"""A check's batch as shards: fixed seeds, run on forked processes, merged in order.

``fencepost check --jobs J`` splits each batch of N runs into
``ceil(N / SHARD_EXAMPLES)`` shards, each one Hypothesis run with a seed of
its own fixed by the check's seed, the batch and the shard's number, never
by J. The shards run on J forked processes (in this one when J is 1) and
are merged in shard order: the verdict is the earliest failing shard's (its
counterexample, shrunk in that shard's process), coverage and run counts are
summed over that shard and those before it, or over all of them when every
shard passes. So the output is the same for any J; only the time differs.

A worker that dies in a shard (the scheduler ended its process: ``os._exit``,
a crash, the out-of-memory killer) would leave that shard unanswered for ever
(``multiprocessing.Pool`` replaces the worker and forgets its task): the wait
looks every ``WORKER_POLL_S`` seconds, and a dead worker ends the check with
``ShardWorkerDied``.

Ctrl-C: the workers ignore SIGINT, so only this process answers it; leaving
the ``ShardPool`` (by the ``KeyboardInterrupt`` too) terminates and reaps
every worker, so nothing is left running.
"""

from __future__ import annotations

import gc
import multiprocessing
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Most runs in one shard. The default 200 runs make 8 shards, so 2 or 4
#: processes stay busy to the end of a batch although shards differ in length;
#: a shard has enough runs that Hypothesis's own start (its simplest examples
#: first) is a small part of it.
SHARD_EXAMPLES = 25

#: Seconds between looks, while waiting for a shard, at whether a worker died: only a death that
#: is otherwise never answered is found this way, so the look may be rare.
WORKER_POLL_S = 1.0


class ShardWorkerDied(RuntimeError):
    """A forked worker ended in the middle of a shard, so the check has no verdict (one line, naming how)."""


def shard_sizes(examples: int) -> list[int]:
    """The runs of each shard of a batch of ``examples`` runs: near-equal, at most ``SHARD_EXAMPLES``."""
    count = max(1, -(-examples // SHARD_EXAMPLES))
    return [examples // count + (1 if number < examples % count else 0) for number in range(count)]


def shard_seed(seed: int | None, batch: int, shard: int) -> int | str | None:
    """The Hypothesis seed of one shard. The first shard of a batch has the batch's unsharded seed
    (None, derandomized, for a check without a seed's first batch; else ``seed + batch``), so a
    one-shard check runs as it did unsharded; another has the three in a str (a seed
    ``random.Random`` takes whole), ``"-"`` standing for no seed."""
    if shard == 0:
        return None if seed is None and batch == 0 else (seed or 0) + batch
    return f"{'-' if seed is None else seed}:{batch}:{shard}"


@dataclass
class ShardOutcome:
    """A batch's merged outcome: ``result`` is ``(passed, trace, failure, runs)``, as ``_run_batch``'s."""

    result: tuple[bool, list, str | None, int]
    coverage: Any


#: (run a shard, make an empty coverage), for the forked workers: set just before forking.
_RUNNER: tuple[Callable, Callable] | None = None


def _work(task: tuple[int | str | None, int]) -> tuple[tuple, Any]:
    run, new_coverage = _RUNNER
    coverage = new_coverage()
    return run(*task, coverage), coverage


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent alone answers it
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked by the parent while it forked


class ShardPool:
    """Runs shards with ``run(seed, size, coverage) -> (passed, trace, failure, runs)`` on ``jobs``
    processes, forked on first need; a context manager that ends them all on leaving."""

    def __init__(self, run: Callable, new_coverage: Callable, jobs: int) -> None:
        self.run_shard, self.new_coverage, self.jobs = run, new_coverage, jobs
        self._pool = None
        self._workers: list = []  # the pool's processes as forked: the pool replaces a dead one unseen
        self._done = False  # every shard of the last plan answered: no worker is busy

    def __enter__(self) -> ShardPool:
        return self

    def __exit__(self, kind: type | None, *_: object) -> None:
        global _RUNNER
        if self._pool is not None:
            if kind is None and self._done:
                # every shard answered and the workers are idle: they leave their loop and exit as
                # processes do, running their exit hooks (``multiprocessing.util.Finalize``: the
                # temporary PostgreSQL schemas a factory made are dropped)
                self._pool.close()
            else:
                # a failure or Ctrl-C: SIGTERM every worker, even one in the middle of a shard;
                # its exit hooks do not run (a temporary schema it made stays on the server)
                self._pool.terminate()
            self._pool.join()  # and reap them
            self._pool = _RUNNER = None

    def run(self, plan: list[tuple[int | str | None, int]]) -> ShardOutcome:
        """Run the shards of ``plan`` (seed, runs) and merge them in order, stopping at the first that fails."""
        coverage = self.new_coverage()
        runs = 0
        self._done = False
        for (passed, trace, failure, shard_runs), shard_coverage in self._results(plan):
            coverage.merge(shard_coverage)
            runs += shard_runs
            if not passed:
                return ShardOutcome((False, trace, failure, runs), coverage)
        self._done = True
        return ShardOutcome((True, [], None, runs), coverage)

    def _results(self, plan: list[tuple[int | str | None, int]]):
        if self.jobs <= 1 or len(plan) <= 1:
            for seed, size in plan:
                coverage = self.new_coverage()
                yield self.run_shard(seed, size, coverage), coverage
            return
        if self._pool is None:
            global _RUNNER
            _RUNNER = (self.run_shard, self.new_coverage)  # kept while the pool lives: a worker forks from it
            self._pool = forked_pool(self.jobs)
            self._workers = list(self._pool._pool)  # Pool has no public view of its processes
        # in order, one shard at a time to each free worker; a failure ends the check, and the
        # shards still running are terminated with the pool
        results = self._pool.imap(_work, plan, chunksize=1)
        while True:
            try:
                answer = while_alive(results.next, self._workers)
            except StopIteration:
                return
            yield answer


def forked_pool(jobs: int) -> multiprocessing.pool.Pool:
    """A ``multiprocessing.Pool`` of ``jobs`` processes forked from this one that ignore Ctrl-C, with
    every object this process holds frozen out of their garbage collector (``gc.freeze``).

    Ctrl-C reaches the whole process group, so only this process answers it (the caller ends the pool
    on ``KeyboardInterrupt``); it is held back while forking, so that no worker takes it before it
    ignores it, nor this process before it holds the pool it must end (a pending one arrives just after).

    A forked worker shares this process's memory until it writes to it, and a
    collection in the worker writes to the header of every object it
    traverses, so each page the parent's objects sit on would be copied into
    every worker (measured: ``explore --jobs 2`` at its default scope takes
    0.987x the time with them frozen, median of five alternating pairs, every
    pair faster; a quarter fewer page faults in the workers). This process
    unfreezes at once; the workers keep their copy frozen. O(1) beyond the forks.
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    gc.freeze()
    try:
        return multiprocessing.get_context("fork").Pool(jobs, initializer=_ignore_interrupts)
    finally:
        gc.unfreeze()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def while_alive(get: Callable[[float], Any], workers: list) -> Any:
    """``get(timeout)``'s answer (an ``IMapIterator.next``, an ``AsyncResult.get`` of a pool), waited for
    as long as it takes, unless one of the pool's forked ``workers`` ends first (they end only with the
    pool): then ``ShardWorkerDied``, since the pool would replace it and never answer its task."""
    while True:
        try:
            return get(WORKER_POLL_S)
        except multiprocessing.TimeoutError:
            for worker in workers:
                code = worker.exitcode
                if code is not None:
                    how = f"exit status {code}" if code >= 0 else f"signal {-code}"
                    raise ShardWorkerDied(f"a check process (pid {worker.pid}) ended with {how} in the middle of its "
                                          "work: the scheduler ended its process (os._exit, a crash, out of memory); "
                                          "no verdict") from None
