"""The adapter kit: its checks raise the contract's exact errors, its tokens and book do what they say.

The model (``spec.model``) keeps its own copy of the argument rules on purpose;
these tests hold the kit's words to the model's, so an adapter built on the
kit refuses every invalid call exactly as the contract words it.
"""

from __future__ import annotations

import pytest

from fencepost.impl import kit
from fencepost.spec import model
from fencepost.spec.variants import Variants


def _error(call) -> str | None:
    try:
        call()
    except ValueError as exc:
        return str(exc)
    return None


def _model_state(opaque: bool = False) -> model.State:
    variants = Variants.from_declared({"tokens": "opaque"} if opaque else {})
    state, _ = model.add_worker(model.initial(variants), "w1", 2)
    state, _ = model.submit(state)
    state, _ = model.advance(state, 7)
    return state


#: Invalid dispatch arguments, each bad in one or several places (the first in the contract's order wins).
DISPATCHES = [
    (3, 7, 1), ("", 7, 1), ("nobody", 7, 1), ("w1", "7", 1), ("w1", True, 1), ("w1", -1, 1), ("w1", 6, 1),
    ("w1", 7, 0), ("w1", 7, 1.5), ("nobody", 6, 0), (None, -1, "x"), ("w1", 6, 0), ("w1", 7, None),
]


@pytest.mark.parametrize(("worker", "now", "duration"), DISPATCHES)
def test_check_dispatch_raises_the_models_error_word_for_word(worker, now, duration) -> None:
    state = _model_state()
    want = _error(lambda: model.dispatch(state, worker, now, duration))
    assert want is not None
    got = _error(lambda: kit.check_dispatch(worker, now, duration, current=7, workers={"w1": 2}))
    assert got == want


def test_check_dispatch_returns_the_capacity_and_checks_nothing_it_is_not_given() -> None:
    assert kit.check_dispatch("w1", 7, 1, current=7, workers={"w1": 2}) == 2
    # a server keeps the workers and the clock: no unknown worker, no "backwards" here
    assert kit.check_dispatch("anyone", 0, 1, current=None) is None
    assert "must be a str" in _error(lambda: kit.check_dispatch(1, 0, 1, current=None))
    seen = []

    def fits(name: str, value: int) -> int:
        seen.append(name)
        if value > 99:
            raise ValueError(f"{name} must fit: {value}")
        return value

    assert kit.check_dispatch("w", 5, 3, current=None, fits=fits) is None
    assert seen == ["now", "duration"]
    assert _error(lambda: kit.check_dispatch("w", 100, 0, current=None, fits=fits)) == "now must fit: 100"


@pytest.mark.parametrize("opaque", [False, True])
@pytest.mark.parametrize("token", [None, "", "abc", 1.0, True, [1], 5])
def test_check_token_is_the_models_rule_under_both_token_variants(opaque: bool, token: object) -> None:
    state = _model_state(opaque)
    want = _error(lambda: model.require_token(state, token))
    assert _error(lambda: kit.check_token(token, opaque)) == want


@pytest.mark.parametrize(("task_id", "token", "now"), [(0, 1, 7), (2, 1, 7), ("1", 1, 7), (1, "x", 7), (1, 1, 6), (1, None, -1)])
def test_check_report_raises_completes_error_word_for_word(task_id, token, now) -> None:
    state = _model_state()
    want = _error(lambda: model.complete(state, task_id, token, now))
    assert want is not None
    assert _error(lambda: kit.check_report(task_id, token, now, issued=1, current=7)) == want


def test_not_offered_words_the_error_the_way_the_shipped_adapters_do() -> None:
    assert str(kit.not_offered("max_attempts", 3, "SQS", "a budget is a queue's RedrivePolicy")) == (
        "max_attempts is not offered by SQS (a budget is a queue's RedrivePolicy): 3")
    assert str(kit.not_offered("due_at", 4, "litequeue")) == "due_at is not offered by litequeue: 4"


def test_a_composite_token_makes_and_parses_its_parts() -> None:
    shape = kit.CompositeToken("entry", "consumer", "delivered")
    token = shape.make(entry="1700000000000-0", consumer="w1", delivered=2)
    assert token == "1700000000000-0/w1/2"
    assert shape.parse(token) == {"entry": "1700000000000-0", "consumer": "w1", "delivered": "2"}
    for junk in ("1700000000000-0/w1", "a//b", "", 7, None, "a/b/c/d"):
        assert shape.parse(junk) is None


@pytest.mark.parametrize("parts", [
    {"entry": "1", "consumer": "w/1", "delivered": 1}, {"entry": "", "consumer": "w", "delivered": 1},
    {"entry": "1", "consumer": "w"}, {"entry": "1", "consumer": "w", "delivered": True},
    {"entry": "1", "consumer": "w", "delivered": 1, "more": 2},
])
def test_a_composite_token_refuses_parts_it_could_not_read_back(parts: dict) -> None:
    with pytest.raises(ValueError, match="token"):
        kit.CompositeToken("entry", "consumer", "delivered").make(**parts)


@pytest.mark.parametrize("fields", [("one",), ("a", "a"), ("a", "")])
def test_a_composite_token_needs_two_distinct_named_fields(fields: tuple) -> None:
    with pytest.raises(ValueError, match="two or more distinct"):
        kit.CompositeToken(*fields)


def test_the_book_keeps_clock_workers_ids_and_tokens_with_the_contracts_checks() -> None:
    book = kit.Book()
    book.add_worker("w1", 1)
    assert _error(lambda: book.add_worker("w1", 1)) == "worker 'w1' already exists"
    assert book.add_task("job-a") == 1 and book.add_task("job-b") == 2
    assert book.job(2) == "job-b" and book.task_of("job-a") == 1 and book.task_of("nope") is None
    assert _error(lambda: book.job(3)) == "task_id 3 is unknown: ids issued so far are 1..2"
    assert book.check_dispatch("w1", 4, 5) == 1 and book.now == 0  # checking moves nothing
    assert book.move_to(4) == 4
    assert _error(lambda: book.move_to(3)) == "time can't go backwards: now=3 < current time 4"
    assert _error(lambda: book.check_dispatch("w2", 4, 5)) == "worker 'w2' is unknown: add it with add_worker first"
    book.handed_out("tok", 1)
    assert book.owner("tok") == 1 and book.owner(["unhashable"]) is None
    assert book.other_task(2, "tok") and not book.other_task(1, "tok") and not book.other_task(2, "never")
    assert book.check_report(1, "tok", 4) == "job-a"
    assert _error(lambda: book.check_report(1, "", 4)) == "token must be a non-empty str or an int, not the empty str"
    assert _error(lambda: book.check_report(1, "tok", 4, duration=0)) == "duration must be >= 1: 0"


def test_guard_and_read_back_decide_from_what_the_queue_shows() -> None:
    assert kit.guard(lambda: {"holder": "w1"}, lambda row: row["holder"] == "w1", "not_held") is None
    assert kit.guard(lambda: {"holder": "w2"}, lambda row: row["holder"] == "w1", "not_held") == kit.Outcome(False, "not_held")
    assert kit.read_back(lambda: None, lambda row: row is None, "still_there") == kit.ACCEPTED
    assert kit.read_back(lambda: {"id": 1}, lambda row: row is None, "still_there") == kit.Outcome(False, "still_there")


def test_declare_checks_the_variants_when_the_module_is_imported() -> None:
    @kit.declare({"order": "fifo", "without": "cancel"})
    def factory() -> object:
        return object()

    assert factory.fencepost_variants == {"order": "fifo", "without": "cancel"}
    with pytest.raises(ValueError, match="unknown variant 'ordr'"):
        kit.declare({"ordr": "fifo"})
