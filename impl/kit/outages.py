"""Waiting through an outage of a scheduler's storage: the ``Patience`` a long-lived client gives it.

A scheduler over a server (``PostgresScheduler``, its ``PostgresPayloads``
and ``DatabaseClock``) replaces a lost connection with a bounded number of
tries, so that a single call never hangs for ever. A ``Runner`` is not a
single call: it should outlast an outage of any length, as the workers of
the queues people run do. It hands each object it works through that offers
``outlast(patience)`` a ``Patience``: reconnecting then goes on, with the same
capped backoff, until the server is back, until ``limit`` seconds have passed
(a bound the user sets; None: no bound), or until ``stopping`` is set (the
runner stops), when the waiting call raises an error that is also a
``WaitStopped``. Such an object's ``outage()`` says, in one line and without
taking any lock, what a call of it is waiting for, or None.

No driver is imported here: the runner uses it without the PostgreSQL extra, and an adapter
over a server of its own may offer ``outlast`` and ``outage`` too.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Patience:
    """How long calls wait for their database through one outage, and how to end every wait at once.

    ``limit``: real seconds one outage may last before the waiting call gives
    up (None: no bound). ``stopping``: set it to end every wait at once.

    Raises:
        ValueError: ``limit`` not None nor a number of seconds > 0.
    """

    limit: float | None = None
    stopping: threading.Event = field(default_factory=threading.Event, compare=False)

    def __post_init__(self) -> None:
        limit = self.limit
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 < limit < float("inf")):
            raise ValueError(f"outage limit must be None or a number of seconds > 0: {limit!r}")


class WaitStopped(Exception):
    """Mixed into the error a call raises when its wait for the database was ended by ``Patience.stopping``."""
