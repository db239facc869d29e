"""The quiz behind predict-then-reveal: which questions are open, answers, skips and the score."""

from __future__ import annotations

import pytest

from fencepost.spec.formats.scenario import Question, Scenario, Step
from fencepost.story.quiz import SKIPPED, Quiz

Q1 = Question("First?", ("a", "b"), 1, "Because.")
Q3 = Question("Third?", ("a", "b", "c"), 3, "Because.")
SCENARIO = Scenario("q", (Step("advance", {"now": 1}, question=Q1), Step("advance", {"now": 2}),
                          Step("advance", {"now": 3}, question=Q3)))


def test_questions_are_open_until_answered_or_revealed() -> None:
    quiz = Quiz(SCENARIO)
    assert (quiz.question(0), quiz.question(1), quiz.question(2), quiz.question(3), quiz.question(4)) == (
        None, Q1, None, Q3, None)
    assert quiz.open(1) is Q1 and quiz.open(3) is Q3 and quiz.total == 2
    assert quiz.answer(1, 2) is False
    assert quiz.open(1) is None
    quiz.reveal(3)
    assert quiz.open(3) is None and quiz.answers == {1: 2, 3: SKIPPED}
    assert (quiz.right, quiz.answered) == (0, 1)


def test_the_score_counts_right_answers_and_not_skips() -> None:
    quiz = Quiz(SCENARIO)
    assert quiz.answer(3, 3) is True
    quiz.reveal(1)
    quiz.reveal(1)  # revealing twice changes nothing
    assert (quiz.right, quiz.answered, quiz.total) == (1, 1, 2)


@pytest.mark.parametrize(("index", "choice", "message"), [
    (2, 1, "index: no open question at step 2"),
    (1, 3, "choice: expected 1 to 2, got 3"),
    (1, 0, "choice: expected 1 to 2, got 0"),
])
def test_an_answer_that_cannot_be_given_is_refused_and_changes_nothing(index, choice, message) -> None:
    quiz = Quiz(SCENARIO)
    with pytest.raises(ValueError, match=message):
        quiz.answer(index, choice)
    assert quiz.answers == {}


def test_an_answered_question_cannot_be_answered_again() -> None:
    quiz = Quiz(SCENARIO)
    quiz.answer(1, 1)
    with pytest.raises(ValueError, match="no open question at step 1"):
        quiz.answer(1, 2)
    assert quiz.answers == {1: 1}


def test_a_pick_after_a_reveal_is_judged_and_never_scored() -> None:
    quiz = Quiz(SCENARIO)
    quiz.reveal(3)
    assert quiz.pick_late(3, 3) is True and quiz.late == {3: 3}
    assert (quiz.right, quiz.answered) == (0, 0)
    with pytest.raises(ValueError, match="index: no question revealed unanswered at step 1"):
        quiz.pick_late(1, 1)  # still open: answered, not picked late
    quiz.answer(1, 1)
    with pytest.raises(ValueError, match="index: no question revealed unanswered at step 1"):
        quiz.pick_late(1, 2)  # answered: the answer stands
    quiz.reveal(3)
    with pytest.raises(ValueError, match="choice: expected 1 to 3, got 4"):
        quiz.pick_late(3, 4)
