"""``story.sorted_rows.SortedRows``: removing a row that is not in the column is refused and changes nothing."""

from __future__ import annotations

import operator

import pytest

from fencepost.story.rows import Row
from fencepost.story.sorted_rows import SortedRows

_BY_ID = operator.attrgetter("id")


def row(task_id: int, status: str = "pending") -> Row:
    return Row(task_id, status, 0, 0, 0, None, None, None, False, None, 0, (0, 0, task_id))


@pytest.mark.parametrize("block", [2, 512], ids=["small-blocks", "one-block"])
@pytest.mark.parametrize(("present", "absent"), [
    ([1, 2, 3, 4, 5], row(6)),  # past the last key
    ([1, 3, 5], row(2)),  # between two keys: the next row's place
    ([1, 2, 3], row(2, "running")),  # the same key, another row
    ([], row(1)),  # an empty column
], ids=["past-the-end", "between", "same-key", "empty"])
def test_removing_a_row_that_is_not_in_the_column_is_refused_and_changes_nothing(monkeypatch, block, present, absent):
    monkeypatch.setattr(SortedRows, "BLOCK", block)
    rows = SortedRows(_BY_ID, [row(i) for i in present])
    with pytest.raises(ValueError, match=rf"^removing a row that is not in the column: task {absent.id}'s"):
        rows.remove(absent)
    assert list(rows) == [row(i) for i in present] and len(rows) == len(present)
    for i in present:  # and the rows that are there still go
        rows.remove(row(i))
    assert list(rows) == [] and len(rows) == 0
