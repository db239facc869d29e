"""One task as the timeline shows it at one frame, for the frame store and its narration alike.

Plain data, no Textual: ``story.timeline`` records these rows frame by frame,
``story.narration`` words what changed between two of them.
"""

from __future__ import annotations

from typing import NamedTuple


class Row(NamedTuple):
    """One task as a side (implementation or model) shows it at one frame.

    The first nine fields are the protocol's ``TaskView`` (status as its
    string); ``started_at`` and ``since`` are derived here: when the current
    lease began, and the frame at which the task entered its current status.
    """

    id: int
    status: str
    priority: int
    due_at: int
    attempts: int
    worker: str | None
    token: int | None
    expires_at: int | None
    cancel_requested: bool
    started_at: int | None
    since: int
    rank: tuple[int, int, int]  # the dispatch order key: (-priority, due_at, id)

    @property
    def view(self) -> tuple:
        """The protocol fields only: what implementation and model must agree on."""
        return self[:9]


#: One task's row at a frame: (task id, the row before, or None for a new task, the row after,
#: or None for a task ``prune`` forgot: its row leaves the board).
Change = tuple[int, "Row | None", "Row | None"]


def same_lease(before: Row, after: Row) -> bool:
    """Both rows are running under one lease. A dispatch always counts an attempt,
    so a re-lease is seen even by an implementation that wrongly reuses the token."""
    return (
        before.status == after.status == "running"
        and (before.token, before.worker, before.attempts) == (after.token, after.worker, after.attempts)
    )
