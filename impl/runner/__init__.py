"""The runner: executes Python functions under leases on a thread pool.

``Runner`` (``core.py``) drives any scheduler of the protocol, with helpers
that each own their state and check it (``Runner.check_invariants`` calls
them all): ``submits.py`` the submits queued without the lock, ``idle.py``
the idle proof, ``retention.py`` the retention window, ``expiry.py`` lease
expiry, ``pooled.py`` and ``reports.py`` a pooled runner's claims and report
queue, ``trace.py`` the trace, ``wakeups.py`` its condition variables;
``unknown.py`` is how it rides through lost answers. ``attempts.py``
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
