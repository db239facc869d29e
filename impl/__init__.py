"""Scheduler implementations checked by the spec.

``Scheduler`` is the default: the indexed implementation, O(log n) per
operation. ``impl.simple.SimpleScheduler`` is the direct O(T) scan.
"""

from fencepost.impl.indexed import IndexedScheduler
from fencepost.impl.simple import SimpleScheduler

Scheduler = IndexedScheduler

__all__ = ["IndexedScheduler", "Scheduler", "SimpleScheduler"]
