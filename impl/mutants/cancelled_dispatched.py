"""Pitfall: dispatch's candidate scan does not exclude cancelled tasks, so a cancelled task starts.

Seed 001 ("A task is claimed by at most one worker at a time. A cancelled
pending task cannot subsequently start."): the mutant is
``SimpleScheduler.dispatch``'s own code run against a set of dispatchable
statuses that also holds ``cancelled`` -- the one-token change a deny-list
filter ("not running, not succeeded, not failed") makes by accident.
"""

from __future__ import annotations

from types import FunctionType

import fencepost.impl.simple
from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.protocol import DISPATCHABLE_STATUSES, Status

_scan = SimpleScheduler.dispatch
# The bug: the same code, reading a status set that lets cancelled tasks through.
_globals = {**vars(fencepost.impl.simple), "DISPATCHABLE_STATUSES": DISPATCHABLE_STATUSES | {Status.CANCELLED}}


class Scheduler(SimpleScheduler):
    dispatch = FunctionType(_scan.__code__, _globals, _scan.__name__, _scan.__defaults__, _scan.__closure__)
