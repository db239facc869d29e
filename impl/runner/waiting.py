"""A runner through an outage of its database: it waits, says so, and resumes (issue 34).

A runner lives as long as its process; its scheduler's calls do not each get
a few seconds of reconnecting and then an error that ends the pool. At
``start`` the runner hands a ``Patience`` to every object it works through
that offers ``outlast`` (a ``PostgresScheduler``, its ``PostgresPayloads``, a
``DatabaseClock``): while the database is unreachable their calls keep
reconnecting with capped backoff, for as long as the runner runs or until
``outage_limit`` seconds (the user's bound), logging "waiting for the
database" (logger ``fencepost.impl.postgres.session``). ``Runner.status()``
says the same without taking the runner's lock (a call waiting for the
database holds it). ``stop`` ends every wait at once; a pool thread whose
wait ended so stops quietly. Once the database is back, the work goes on: the
reports that waited are made, leases that expired meanwhile hand their tasks
back to the scheduler (to any shared runner, for a task a lost runner left).
"""

from __future__ import annotations

from dataclasses import dataclass

from fencepost.impl.kit.outages import Patience, WaitStopped

#: ``RunnerStatus.state`` values, in the order of a runner's life.
STATES = ("not started", "running", "waiting for the database", "stopping", "stopped", "broken")


@dataclass(frozen=True)
class RunnerStatus:
    """What a runner is doing, read without its lock (``Runner.status``).

    ``state``: one of ``STATES``. ``waiting``: one line per call waiting for its
    database (``waiting for the database: PostgreSQL at dsn='...' unreachable
    for 12.3 s (14 tries so far; last: ...)``), empty when none waits.
    ``running``: attempts whose user function is running or whose report is
    still to be made.
    """

    state: str
    waiting: tuple[str, ...]
    running: int


class Outlasting:
    """The runner's side of outages: its ``Patience``, handed to every participant that offers ``outlast``.

    Raises:
        ValueError: ``limit`` not None nor a number of real seconds > 0 (named ``outage_limit``).
    """

    def __init__(self, limit: float | None, *participants: object) -> None:
        try:
            self.patience = Patience(limit)
        except ValueError:
            raise ValueError(f"outage_limit must be None or a number of real seconds > 0, got {limit!r}") from None
        seen: dict[int, object] = {}
        for thing in participants:
            if thing is not None and callable(getattr(thing, "outlast", None)):
                seen.setdefault(id(thing), thing)
        self._participants = tuple(seen.values())

    def begin(self) -> None:
        """Make every participant wait through outages (at ``start``)."""
        for thing in self._participants:
            thing.outlast(self.patience)

    def interrupt(self) -> None:
        """End every wait at once, and every later one (at ``stop``, before it takes the runner's lock)."""
        self.patience.stopping.set()

    def end(self) -> None:
        """Give the participants back their own reconnect policy (after ``stop``: the runner no longer waits)."""
        for thing in self._participants:
            thing.outlast(None)

    def ended_by_stop(self, exc: BaseException) -> bool:
        """Whether ``exc`` (raised in a pool thread) is a wait for the database that ``stop`` ended."""
        if not self.patience.stopping.is_set():
            return False
        while exc is not None:  # a lost answer's OutcomeUnknown may carry the stopped wait as its cause
            if isinstance(exc, WaitStopped):
                return True
            exc = exc.__cause__ or exc.__context__
        return False

    def status(self, life: str, running: int) -> RunnerStatus:
        """The runner's status, its ``life`` (a state of ``STATES`` other than waiting) read by the runner.

        A running runner one of whose calls waits for its database is ``"waiting for the database"``,
        and ``waiting`` says for what, since when, and the last error. Takes no lock.
        """
        waiting = self.waiting()
        return RunnerStatus("waiting for the database" if life == "running" and waiting else life, waiting, running)

    def waiting(self) -> tuple[str, ...]:
        """One line per participant waiting for its database now. Takes no lock."""
        lines = []
        for thing in self._participants:
            outage = getattr(thing, "outage", None)
            line = outage() if callable(outage) else None
            if line:
                lines.append(line)
        return tuple(lines)
