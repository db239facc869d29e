"""A FIFO queue without due times that conforms passes ``fencepost check`` at default settings (issue 29).

Under ``order=fifo`` with no ``due_at`` some coverage cannot happen (a task
with id >= 10 handed out while a lower id waits needs a due time or a retry
wait to pass it); the check must not require it, or no such queue could ever
pass. ``fifo_queue.FifoQueue`` is such a queue.
"""

from __future__ import annotations

from fencepost.cli import main
from fencepost.spec.checkers.coverage import required_boundaries
from fencepost.spec.variants import Variants


def test_a_conforming_fifo_queue_without_due_times_passes_check_at_default_settings(capsys) -> None:
    status = main(["check", "fifo_queue:FifoQueue"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "fifo_queue:FifoQueue conforms" in out and "every declared outcome and boundary reached" in out, out
    assert "declared variants in force: order=fifo, without=due_at" in out, out


def test_fifo_without_due_times_or_retry_waits_requires_no_id_past_9() -> None:
    """What makes ids_past_9 required under fifo: due times (a retry wait reaches it too rarely to require)."""
    assert "ids_past_9" not in required_boundaries(Variants.parse(["order=fifo", "without=due_at,fail"]))
    assert "ids_past_9" not in required_boundaries(Variants.parse(["order=fifo", "without=due_at"]))
    assert "ids_past_9" in required_boundaries(Variants.parse(["order=fifo", "without=fail"]))
