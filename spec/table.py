"""The model's task table: tasks by id, persistent, so a transition never copies the whole table.

``State.tasks`` was a tuple, and each transition rebuilt it to change one
task: a trace of T submits copied about T^2/2 references. A ``TaskTable`` is
a sequence of ``Task`` indexed by ``id - 1``, as the tuple was, kept in a
persistent vector (``pyrsistent``'s, written in C): ``put`` and ``append``
return a new table sharing all but O(log T) of the old one, which stays
valid, so states stay plain immutable values that a search may keep and
compare.

Beside the tasks it keeps two indexes, since the rules that read them run
on every timed call: the ids of the running tasks (expiry, a worker's load:
``running()`` costs O(leases held), not O(T)), and the waiting tasks
(``pending`` or ``retry_wait``) in the dispatch order the table was made
with, in a persistent treap that knows each subtree's earliest due time, so
``first_waiting(due_by)`` -- the task a dispatch picks -- is O(log T). A table
built from a plain sequence builds each index when first asked, and one of
fewer than ``INDEXED_FROM`` tasks keeps none: it scans. Everything else reads the table as it read
the tuple: ``len``, ``table[i]``, iteration in id order, ``in``; a slice is a
tuple. Two tables are equal when they hold equal tasks in the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, overload

from pyrsistent import PVector, pvector

from fencepost.spec.protocol import DISPATCHABLE_STATUSES, Status

#: A ``spec.model.Task`` (not imported: the model imports this module, and imports point one way).
Task = Any


#: A dispatch-order key: the least key among the eligible tasks is dispatched first (``model.order_key``).
OrderKey = Callable[[Task], tuple]

#: Statuses a dispatch may pick from (``protocol.DISPATCHABLE_STATUSES``): the waiting index holds these.
_WAITING = DISPATCHABLE_STATUSES

#: ``_waiting``'s value until the index is built (None is the empty tree).
_UNBUILT = object()

#: Below this many tasks the queries scan the table and no index is built or kept: a scan of a few
#: dozen tasks costs less than keeping the indexes on every change (``explore``'s states have a
#: handful of tasks, and it was 20% slower keeping them).
INDEXED_FROM = 64


class TaskTable(Sequence):
    """Tasks in id order (``table[id - 1]``); immutable, and ``put``/``append`` share structure.

    Invariants (``check`` asserts them): ``_running``, once built, is exactly
    the ids of the running tasks; ``_waiting``, once built, holds exactly the
    waiting tasks, each under ``order(task)`` with its due time.
    """

    __slots__ = ("_tasks", "order", "_running", "_waiting")

    def __init__(self, tasks: Iterable[Task] = (), order: OrderKey | None = None) -> None:
        self._tasks: PVector = tasks if isinstance(tasks, PVector) else pvector(tasks)
        self.order = order  # the dispatch order of first_waiting; None: no dispatch asks this table
        self._running: frozenset[int] | None = None
        self._waiting: object = _UNBUILT

    @classmethod
    def _made(cls, tasks: PVector, order: OrderKey | None, running: frozenset[int] | None, waiting: object) -> TaskTable:
        table = cls.__new__(cls)
        table._tasks, table.order, table._running, table._waiting = tasks, order, running, waiting
        return table

    @classmethod
    def of(cls, tasks: Iterable[Task]) -> TaskTable:
        """``tasks`` itself if it is a table, else a table of its tasks."""
        return tasks if isinstance(tasks, TaskTable) else cls(tasks)

    def ordered_by(self, order: OrderKey) -> TaskTable:
        """The same tasks, whose ``first_waiting`` follows ``order``."""
        return self if order is self.order else TaskTable._made(self._tasks, order, self._running, _UNBUILT)

    # ---------------------------------------------------------------- changes (a new table)

    def put(self, task: Task) -> TaskTable:
        """This table with ``task`` in place of the task of the same id. O(log T), plus O(leases held)
        when the task starts or stops running and the running index is built (a frozenset, copied)."""
        old = self._tasks[task.id - 1]
        running, waiting = self._running, self._waiting
        if running is not None and (old.status is Status.RUNNING) != (task.status is Status.RUNNING):
            running = running | {task.id} if task.status is Status.RUNNING else running - {task.id}
        if waiting is not _UNBUILT:
            waiting = self._wait(self._unwait(waiting, old), task)
        return TaskTable._made(self._tasks.set(task.id - 1, task), self.order, running, waiting)

    def append(self, task: Task) -> TaskTable:
        """This table with ``task`` added last (its id must be ``len(self) + 1``). O(log T), plus
        O(leases held) for a running task once the running index is built.

        Raises:
            ValueError: ``task.id`` is not ``len(self) + 1``.
        """
        if task.id != len(self._tasks) + 1:
            raise ValueError(f"task id {task.id} is not the next id {len(self._tasks) + 1}")
        running, waiting = self._running, self._waiting
        if running is not None and task.status is Status.RUNNING:
            running = running | {task.id}
        if waiting is not _UNBUILT:
            waiting = self._wait(waiting, task)
        return TaskTable._made(self._tasks.append(task), self.order, running, waiting)

    def _wait(self, waiting: tuple | None, task: Task) -> tuple | None:
        """``waiting`` with ``task`` in it if it is waiting (its id not in ``waiting``)."""
        if task.status not in _WAITING:
            return waiting
        return _insert(waiting, self.order(task), (task.id * _SCATTER) & 0xFFFFFFFF, task.due_at)

    def _unwait(self, waiting: tuple | None, old: Task) -> tuple | None:
        """``waiting`` without ``old``'s entry, if it is waiting (then it is in ``waiting``)."""
        if old.status not in _WAITING:
            return waiting
        return _remove(waiting, self.order(old))

    # ---------------------------------------------------------------- queries

    def running(self) -> list[Task]:
        """The running tasks in id order: O(leases held) once the index is built (a scan below
        ``INDEXED_FROM`` tasks, and the first time for a table built from a plain sequence)."""
        if self._running is None:
            if len(self._tasks) < INDEXED_FROM:
                return [t for t in self._tasks if t.status is Status.RUNNING]
            self._running = frozenset(t.id for t in self._tasks if t.status is Status.RUNNING)
        tasks = self._tasks
        return [tasks[i - 1] for i in sorted(self._running)]

    def first_waiting(self, due_by: int) -> Task | None:
        """The least waiting task under ``order`` among those due at ``due_by`` or before, or None.

        O(log T) once the index is built (a scan below ``INDEXED_FROM`` tasks; O(T log T) the first
        time for a table built from a plain sequence).
        """
        if self._waiting is _UNBUILT:
            if self.order is None:
                raise ValueError("this task table was made without a dispatch order (see ordered_by)")
            if len(self._tasks) < INDEXED_FROM:
                due = [t for t in self._tasks if t.status in _WAITING and t.due_at <= due_by]
                return min(due, key=self.order) if due else None
            waiting = None
            for t in self._tasks:
                waiting = self._wait(waiting, t)
            self._waiting = waiting
        key = _first_due(self._waiting, due_by)
        return None if key is None else self._tasks[key[-1] - 1]

    def check(self) -> None:
        """Assert the indexes agree with the tasks (for tests after every change)."""
        if self._running is not None:
            assert self._running == {t.id for t in self._tasks if t.status is Status.RUNNING}, "running ids"
        if self._waiting is not _UNBUILT:
            nodes = list(_walk(self._waiting))
            waiting = [t for t in self._tasks if t.status in _WAITING]
            assert [n[_KEY] for n in nodes] == sorted(map(self.order, waiting)), "waiting keys"
            assert all(n[_DUE] == self._tasks[n[_KEY][-1] - 1].due_at for n in nodes), "waiting due times"
            for n in nodes:
                below = [c for c in (n[_LEFT], n[_RIGHT]) if c is not None]
                assert all(c[_HEAP] <= n[_HEAP] for c in below), "treap heap order"
                assert n[_EARLIEST] == min([n[_DUE], *(c[_EARLIEST] for c in below)]), "earliest due"

    def __len__(self) -> int:
        return len(self._tasks)

    @overload
    def __getitem__(self, index: int) -> Task: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Task, ...]: ...
    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self._tasks[index])
        return self._tasks[index]

    def __iter__(self) -> Iterator[Task]:
        return iter(self._tasks)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TaskTable):
            return self._tasks == other._tasks
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._tasks)

    def __reduce__(self) -> tuple:
        # the tasks and the order alone: the indexes are rebuilt when first asked (``_UNBUILT`` is
        # this process's own object, which a pickled copy would not be)
        return TaskTable, (self._tasks, self.order)

    def __repr__(self) -> str:
        return f"TaskTable({list(self._tasks)!r})"


# ---------------------------------------------------------------- the waiting index: a persistent treap
#
# A node is a tuple (key, heap, due, earliest, left, right): ``key`` the task's dispatch-order key
# (unique: it ends with the id), ``heap`` a pseudo-random number fixed by the id that keeps the tree
# balanced (a max-heap on it), ``due`` the task's due time and ``earliest`` the least due time in the
# subtree. Changing one task rebuilds only the nodes on its path: O(log T) new tuples, expected.

_KEY, _HEAP, _DUE, _EARLIEST, _LEFT, _RIGHT = range(6)

#: Knuth's multiplicative hash constant: scatters consecutive ids over 32 bits for the treap's heap order.
_SCATTER = 2654435761


def _node(key: tuple, heap: int, due: int, left: tuple | None, right: tuple | None) -> tuple:
    earliest = due
    if left is not None and left[_EARLIEST] < earliest:
        earliest = left[_EARLIEST]
    if right is not None and right[_EARLIEST] < earliest:
        earliest = right[_EARLIEST]
    return (key, heap, due, earliest, left, right)


def _split(node: tuple | None, key: tuple) -> tuple[tuple | None, tuple | None]:
    """The nodes with keys below ``key`` and those above it (``key`` itself is not in the tree)."""
    if node is None:
        return None, None
    if node[_KEY] < key:
        low, high = _split(node[_RIGHT], key)
        return _node(node[_KEY], node[_HEAP], node[_DUE], node[_LEFT], low), high
    low, high = _split(node[_LEFT], key)
    return low, _node(node[_KEY], node[_HEAP], node[_DUE], high, node[_RIGHT])


def _join(low: tuple | None, high: tuple | None) -> tuple | None:
    """One tree of ``low`` and ``high``, every key of ``low`` below every key of ``high``."""
    if low is None:
        return high
    if high is None:
        return low
    if low[_HEAP] > high[_HEAP]:
        return _node(low[_KEY], low[_HEAP], low[_DUE], low[_LEFT], _join(low[_RIGHT], high))
    return _node(high[_KEY], high[_HEAP], high[_DUE], _join(low, high[_LEFT]), high[_RIGHT])


def _insert(node: tuple | None, key: tuple, heap: int, due: int) -> tuple:
    if node is None or heap > node[_HEAP]:
        low, high = _split(node, key)
        return _node(key, heap, due, low, high)
    if key < node[_KEY]:
        return _node(node[_KEY], node[_HEAP], node[_DUE], _insert(node[_LEFT], key, heap, due), node[_RIGHT])
    return _node(node[_KEY], node[_HEAP], node[_DUE], node[_LEFT], _insert(node[_RIGHT], key, heap, due))


def _remove(node: tuple | None, key: tuple) -> tuple | None:
    if node is None:
        raise KeyError(key)
    if key == node[_KEY]:
        return _join(node[_LEFT], node[_RIGHT])
    if key < node[_KEY]:
        return _node(node[_KEY], node[_HEAP], node[_DUE], _remove(node[_LEFT], key), node[_RIGHT])
    return _node(node[_KEY], node[_HEAP], node[_DUE], node[_LEFT], _remove(node[_RIGHT], key))


def _first_due(node: tuple | None, due_by: int) -> tuple | None:
    """The least key whose due time is ``<= due_by``, or None: O(depth), since ``earliest`` says
    which subtree holds one."""
    while node is not None:
        left = node[_LEFT]
        if left is not None and left[_EARLIEST] <= due_by:
            node = left
        elif node[_DUE] <= due_by:
            return node[_KEY]
        elif node[_RIGHT] is not None and node[_RIGHT][_EARLIEST] <= due_by:
            node = node[_RIGHT]
        else:
            return None
    return None


def _walk(node: tuple | None) -> Iterator[tuple]:
    """Every node in key order (for ``check``)."""
    if node is not None:
        yield from _walk(node[_LEFT])
        yield node
        yield from _walk(node[_RIGHT])
