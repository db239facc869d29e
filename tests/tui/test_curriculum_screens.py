"""The curriculum on screen: predict-then-reveal, the next walkthrough, and every step fitting its panel."""

from __future__ import annotations


from fencepost.spec.formats.scenario import Question, Scenario, Step
from fencepost.story.walkthroughs import curriculum
from fencepost.tui.app import FencepostApp
from fencepost.tui.widgets import EventLog, Narration, QuestionPanel, SidePanel, StatusBar, StepSummary, TaskColumn
from tui_helpers import SIZE, app_for, settle, text_of

#: The smaller size a new user tried.
SMALL = (80, 24)

ASK = Question("What does this dispatch return?", ("none", "a lease of task 1", "an error"), 2, "Task 1 is due and w1 is idle.")

#: A worker, a task, and a dispatch that asks first.
ASKING = Scenario("Predict a dispatch", (
    Step("add_worker", {"worker": "w1", "capacity": 1}, note="One worker."),
    Step("submit", {}, note="One task.", expect={"task_id": 1}),
    Step("dispatch", {"worker": "w1", "now": 3, "duration": 5}, note="**w1 takes task 1.**",
         expect={"task_id": 1}, question=ASK),
    Step("advance", {"now": 9}, note="Time moves on."),
))


def running_titles(app: FencepostApp) -> list[str]:
    return [column.border_title for column in app.query(TaskColumn)]


async def test_a_question_hides_the_result_until_answered_then_says_right_and_why():
    app = app_for(ASKING)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("right", "right", "right")
        assert app.step == 3
        # The call is shown, its result is not: the board, clock and log are as before the step.
        summary = text_of(app.query_one(StepSummary))
        assert "dispatch(worker='w1', now=3, duration=5)" in summary and "lease task 1" not in summary
        assert running_titles(app) == ["Pending 1", "Running 0", "Done 0"]
        status = text_of(app.query_one(StatusBar))
        assert "t=0" in status and "score" not in status  # the score appears once a question is met
        assert not app.query_one(Narration).has_class("-shown")  # the note would tell
        assert app.query_one(EventLog).border_subtitle == "step 2"
        panel = text_of(app.query_one(QuestionPanel))
        assert "What does this dispatch return?" in panel and "a lease of task 1" in panel and "Press 1-3" in panel
        assert app.check_action("answer", (3,)) and not app.check_action("answer", (4,))
        await pilot.press("2")
        await pilot.pause()  # the panel grows: let the layout settle before reading it
        panel = text_of(app.query_one(QuestionPanel))
        assert "Right." in panel and "Task 1 is due and w1 is idle." in panel and "1 of 1 right so far." in panel
        assert "lease task 1 to w1, token 1, [3, 8)" in text_of(app.query_one(StepSummary))
        assert running_titles(app) == ["Pending 0", "Running 1", "Done 0"]
        assert "score 1/1" in text_of(app.query_one(StatusBar)) and "t=3" in text_of(app.query_one(StatusBar))
        assert app.query_one(Narration).has_class("-shown")
        await pilot.press("1")  # answered: another key changes nothing
        assert app.quiz.answers == {3: 2}
        await pilot.press("right")
        assert app.step == 4


async def test_a_wrong_answer_is_marked_with_the_right_one_and_why():
    app = app_for(ASKING)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("right", "right", "right", "1")
        await pilot.pause()
        panel = text_of(app.query_one(QuestionPanel))
        assert "Not quite: the answer is 2." in panel and "none ← yours" in panel and "a lease of task 1" in panel
        assert "an error" not in panel  # once answered, only the right choice and the reader's remain
        assert "Task 1 is due and w1 is idle." in panel
        assert "score 0/1" in text_of(app.query_one(StatusBar))
        # Stepping away and back shows the answer given, not the question again.
        await pilot.press("left", "right")
        await pilot.pause()
        assert "Not quite" in text_of(app.query_one(QuestionPanel))


async def test_right_arrow_at_a_question_reveals_it_unscored_and_autoplay_stops_there():
    app = app_for(ASKING)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("right", "right")
        app.playing = True
        app.action_next()  # what the autoplay timer calls
        await pilot.pause()
        assert app.step == 3 and not app.playing and app.quiz.open(3) is not None
        await pilot.press("right")
        await pilot.pause()
        assert app.step == 3 and "Skipped: the answer is 2." in text_of(app.query_one(QuestionPanel))
        assert "score 0/0" in text_of(app.query_one(StatusBar))
        # Back at it, a pick is told right or not, and never scored; then the key is done.
        assert app.check_action("answer", (1,)) is True
        await pilot.press("2")
        await pilot.pause()
        panel = text_of(app.query_one(QuestionPanel))
        assert "You picked 2 after → showed the answer: right, not scored." in panel and "← yours" in panel
        assert "score 0/0" in text_of(app.query_one(StatusBar)) and app.quiz.right == 0
        assert app.check_action("answer", (1,)) is False


async def test_the_last_step_names_the_next_walkthrough_and_o_opens_it():
    first, second = curriculum()[:2]
    app = app_for(first, walkthrough=first)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("end")
        note = text_of(app.query_one(Narration))
        assert f"fencepost tui {second}" in note and "Predictions: 0 of" in note
        await pilot.press("o")
        assert app.walkthrough == second and app.step == 0
        assert app.timeline.scenario.title.startswith("Capacity one")


async def test_a_walkthrough_keeps_its_answers_while_another_is_open():
    app = app_for("capacity-one", walkthrough="capacity-one")
    async with app.run_test(size=SIZE) as pilot:
        asked = next(n for n, step in enumerate(app.timeline.scenario.steps, 1) if step.question)
        app.step = asked
        await pilot.pause()
        await pilot.press(str(app.quiz.question(asked).answer))
        assert (app.quiz.right, app.quiz.answered) == (1, 1)
        app.load("onboarding")
        await pilot.pause()
        assert app.quiz.answers == {}
        app.load("capacity-one")
        await pilot.pause()
        assert (app.quiz.right, app.quiz.answered) == (1, 1) and app.quiz.open(asked) is None


async def test_a_scenario_outside_the_curriculum_has_no_next():
    app = app_for(ASKING)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("end")
        assert app.check_action("open_next", ()) is False
        assert "Next" not in text_of(app.query_one(Narration))


def wrong(question: Question) -> int:
    """A wrong choice: its reveal is the longest (the right choice and the reader's both stay)."""
    return 1 if question.answer != 1 else 2


async def panel_at(app: FencepostApp, pilot, index: int) -> SidePanel:
    """Step ``index`` on screen, its question (if any) answered wrongly first."""
    question = app.quiz.open(index)
    if question is not None:
        app.quiz.answer(index, wrong(question))
    app.step = index
    # one pause may return before the layout the step asked for, and before taking down the last
    # step's notices refreshes the screen once more: wait until nothing is left to do
    await settle(app, pilot)
    return app.query_one(SidePanel)


async def test_every_step_of_every_walkthrough_fits_its_panel_at_120x40():
    """No note, description or answered question needs scrolling at 120x40 (one app, every walkthrough).

    Each walkthrough on the scheduler the launcher would choose for it (a restart needs a durable
    one): on the default one durability's restart step is an error, longer than any lesson's text.
    """
    from fencepost.commands.tui import choose_factory

    app = app_for(curriculum()[0], walkthrough=curriculum()[0], opener=lambda later: choose_factory(later, None))
    overflowing = []
    async with app.run_test(size=SIZE) as pilot:
        for name in curriculum():
            app.load(name)
            for index in range(app.timeline.last + 1):
                if lines := (await panel_at(app, pilot, index)).max_scroll_y:
                    overflowing.append((name, index, lines))
    assert overflowing == [], f"(walkthrough, step, lines to scroll): {overflowing}"


async def test_at_80x24_each_steps_key_sentence_is_on_screen():
    """At 80x24 the panel may scroll, but without scrolling a note's first lines are in view,
    or at a question, the verdict and why (the note's key sentence comes first; the why says it too)."""
    app = app_for(curriculum()[0], walkthrough=curriculum()[0])
    hidden = []
    async with app.run_test(size=SMALL) as pilot:
        for name in curriculum():
            app.load(name)
            for index in range(1, app.timeline.last + 1):
                side = await panel_at(app, pilot, index)
                key = app.query_one(QuestionPanel if app.quiz.question(index) else Narration)
                if key.region.y + 2 > side.content_region.bottom:
                    hidden.append((name, index))
    assert hidden == [], f"(walkthrough, step) whose key sentence starts below the fold: {hidden}"
