"""The model's task table (spec/table.py) answers as the plain tuple it replaced, scanned in full."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fencepost.spec import model
from fencepost.spec.protocol import DISPATCHABLE_STATUSES, Status
from fencepost.spec import table as table_module
from fencepost.spec.table import TaskTable
from fencepost.spec.variants import DEFAULT

ORDERS = (model.dispatch_order, model.priority_id_order, model.fifo_order)

#: One change to the table: append a task, or put a task (by position among those made) with new fields.
changes = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(0, 3), st.integers(0, 9)),
    st.tuples(st.just("put"), st.integers(0, 40), st.sampled_from(list(Status)), st.integers(0, 3), st.integers(0, 9)),
), max_size=40)


def scanned_best(tasks: tuple[model.Task, ...], order, due_by: int) -> model.Task | None:
    """The rule as the model used to read it: a scan of every task."""
    ready = [t for t in tasks if t.status in DISPATCHABLE_STATUSES and t.due_at <= due_by]
    return min(ready, key=order, default=None)


@settings(max_examples=300, deadline=None)
@given(changes, st.sampled_from(ORDERS), st.integers(-1, 10), st.booleans(), st.sampled_from([0, 5, 64]))
def test_every_change_keeps_the_indexes_and_answers_as_a_scan(steps, order, due_by, built_late, indexed_from):
    kept = table_module.INDEXED_FROM
    table_module.INDEXED_FROM = indexed_from  # 0: indexed from the start; 5: past a few tasks; 64: never here
    try:
        _change_and_compare(steps, order, due_by, built_late)
    finally:
        table_module.INDEXED_FROM = kept


def _change_and_compare(steps, order, due_by, built_late):
    table = TaskTable(order=order)
    if not built_late:
        table.first_waiting(0)
        table.running()
    plain: tuple[model.Task, ...] = ()
    for step in steps:
        older = table
        if step[0] == "append":
            task = model.Task(id=len(plain) + 1, priority=step[1], due_at=step[2], max_attempts=None, retry_delay=1)
            table, plain = table.append(task), plain + (task,)
        elif plain:
            _, at, status, priority, due_at = step
            task = replace(plain[at % len(plain)], status=status, priority=priority, due_at=due_at)
            table, plain = table.put(task), plain[: task.id - 1] + (task,) + plain[task.id:]
        assert older is not table or not plain
        table.check()
        assert tuple(table) == plain and len(table) == len(plain)
        assert table.first_waiting(due_by) == scanned_best(plain, order, due_by)
        assert table.running() == [t for t in plain if t.status is Status.RUNNING]
        table.check()
    # a table made from the same tasks builds its indexes when asked, and equals this one
    again = TaskTable(plain, order)
    assert again == table and hash(again) == hash(table)
    assert again.first_waiting(due_by) == scanned_best(plain, order, due_by)


def test_an_old_table_is_unchanged_by_a_new_one(monkeypatch):
    monkeypatch.setattr(table_module, "INDEXED_FROM", 0)
    first = TaskTable(order=model.dispatch_order).append(model.Task(1, 0, 0, None, 1))
    first.first_waiting(0)
    second = first.put(replace(first[0], status=Status.RUNNING))
    assert first[0].status is Status.PENDING and first.first_waiting(0) == first[0] and first.running() == []
    assert second.first_waiting(0) is None and second.running() == [second[0]]


def test_a_slice_is_a_tuple_and_a_tuple_is_taken_as_a_table_by_the_state():
    state, _ = model.submit(model.initial(), priority=1)
    assert state.tasks[:1] == (state.tasks[0],)
    rebuilt = model.State(tasks=tuple(state.tasks), variants=DEFAULT)
    assert isinstance(rebuilt.tasks, TaskTable) and rebuilt.tasks == state.tasks
    assert model.dispatch(model.add_worker(rebuilt, "w", 1)[0], "w", 0, 5)[1].task_id == 1


def test_a_pickled_table_answers_as_the_original(monkeypatch):
    import pickle

    monkeypatch.setattr(table_module, "INDEXED_FROM", 0)
    table = TaskTable(order=model.dispatch_order).append(model.Task(1, 0, 0, None, 1)).append(model.Task(2, 3, 0, None, 1))
    table.first_waiting(0)
    table.running()
    again = pickle.loads(pickle.dumps(table))
    assert again == table and again.first_waiting(0) == table[1] and again.running() == []
    again.check()


def test_append_refuses_an_id_out_of_turn():
    with pytest.raises(ValueError, match="task id 3 is not the next id 1"):
        TaskTable().append(model.Task(3, 0, 0, None, 1))
