"""The runner: executes Python functions under leases on a thread pool.

``Runner`` (``core.py``) drives any scheduler of the protocol; ``attempts.py``
holds its per-attempt records, ``clocks.py`` the clocks it reads ``now``
from, ``isolation.py`` the child process an attempt may run in,
``shared.py`` the mode where runners in several processes share one
PostgreSQL scheduler, ``effects.py`` the effect ledger that makes a retried
write apply once, and ``demo.py`` the workload ``fencepost demo`` runs.
"""

from fencepost.impl.runner.attempts import Cancelled, TaskContext
from fencepost.impl.runner.clocks import ManualClock, MonotonicClock, SchedulerClock
from fencepost.impl.runner.core import Runner

__all__ = ["Cancelled", "ManualClock", "MonotonicClock", "Runner", "SchedulerClock", "TaskContext"]
