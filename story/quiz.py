"""Predict, then reveal: the answers a reader gave to a scenario's questions, and the score.

A step may carry a ``Question`` (``spec.formats.scenario``). Until the reader
answers it (or skips it, which reveals the result unscored), the TUI shows the
step's call but not its result. ``Quiz`` is the state behind that: plain data,
no Textual, one per scenario so a walkthrough keeps its score while another is
open.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fencepost.spec.formats.scenario import Question, Scenario

#: The answer recorded for a question revealed without an answer (→ at a question).
SKIPPED = 0


@dataclass
class Quiz:
    """The reader's answers to ``scenario``'s questions, by step number (1-based, as frames count)."""

    scenario: Scenario
    answers: dict[int, int] = field(default_factory=dict)  # step -> choice picked (1-based), or SKIPPED
    late: dict[int, int] = field(default_factory=dict)  # step -> choice picked after its answer was revealed

    def question(self, index: int) -> Question | None:
        """The question at step ``index`` (0 is before the first step: never one). O(1)."""
        if 1 <= index <= len(self.scenario.steps):
            return self.scenario.steps[index - 1].question
        return None

    def open(self, index: int) -> Question | None:
        """The question at step ``index`` if it is still waiting for an answer, else None."""
        question = self.question(index)
        return question if question is not None and index not in self.answers else None

    def answer(self, index: int, choice: int) -> bool:
        """Record ``choice`` (1-based) for the open question at ``index``; True if it is right.

        Raises:
            ValueError: no open question at ``index``, or ``choice`` is not one of its choices.
        """
        question = self.open(index)
        if question is None:
            raise ValueError(f"index: no open question at step {index}")
        if not 1 <= choice <= len(question.choices):
            raise ValueError(f"choice: expected 1 to {len(question.choices)}, got {choice}")
        self.answers[index] = choice
        return choice == question.answer

    def reveal(self, index: int) -> None:
        """Show the result at ``index`` without an answer; it does not count towards the score."""
        if self.open(index) is not None:
            self.answers[index] = SKIPPED

    def pick_late(self, index: int, choice: int) -> bool:
        """Record ``choice`` for the question at ``index`` whose answer was revealed before an
        answer; True if it is right. It never counts towards the score (the answer was shown), but
        the reader who comes back to it is told whether it was right, not met with silence.

        Raises:
            ValueError: no revealed question at ``index``, or ``choice`` is not one of its choices.
        """
        question = self.question(index)
        if question is None or self.answers.get(index) != SKIPPED:
            raise ValueError(f"index: no question revealed unanswered at step {index}")
        if not 1 <= choice <= len(question.choices):
            raise ValueError(f"choice: expected 1 to {len(question.choices)}, got {choice}")
        self.late[index] = choice
        return choice == question.answer

    @property
    def total(self) -> int:
        """How many questions the scenario asks. O(steps)."""
        return sum(1 for step in self.scenario.steps if step.question is not None)

    @property
    def right(self) -> int:
        """How many answers were right."""
        return sum(1 for index, choice in self.answers.items() if choice == self.question(index).answer)

    @property
    def answered(self) -> int:
        """How many questions were answered (skipped ones are not)."""
        return sum(1 for choice in self.answers.values() if choice != SKIPPED)
