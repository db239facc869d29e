"""The PostgreSQL scheduler and its parts.

``PostgresScheduler`` (``scheduler.py``) keeps the contract in PostgreSQL for
many processes and machines; ``sql.py`` holds its statements, ``session.py``
its reconnects and unknown outcomes, ``payloads.py`` what shared runners
store beside a task, ``forks.py`` the guard that keeps a forked child off its
parent's connections, and ``broken.py`` deliberately broken variants for the
tests. The names users type (``impl.postgres:temporary``,
``fencepost.impl.postgres.PostgresScheduler``) are re-exported here.
"""

from fencepost.impl.postgres.scheduler import (
    DSN_VARIABLE,
    DatabaseClock,
    PostgresScheduler,
    dsn_from_environment,
    opener,
    temporary,
    temporary_scheduler,
)

__all__ = [
    "DSN_VARIABLE",
    "DatabaseClock",
    "PostgresScheduler",
    "dsn_from_environment",
    "opener",
    "temporary",
    "temporary_scheduler",
]
