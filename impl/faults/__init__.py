"""Server faults: a throw-away PostgreSQL cluster and what a scheduler survives on it.

``cluster.py`` makes and breaks the cluster (initdb, pg_ctl, terminate,
crash, refuse, pause); ``inject.py`` drives clients through the faults and
judges what held; ``command.py`` is ``fencepost faults``.
"""

from fencepost.impl.faults.inject import postgres_factory, run_faults

__all__ = ["postgres_factory", "run_faults"]
