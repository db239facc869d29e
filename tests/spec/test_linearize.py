"""``fencepost linearize`` on handwritten histories: the real-time rule, unknown outcomes, windows, exits."""

from __future__ import annotations

import pytest

from fencepost.spec.checkers.linearize_command import EXIT_UNDECIDED, report
from fencepost.spec.checkers.linearize import check_history, quiescent_windows
from fencepost.cli import main
from histories import ACCEPTED, REJECTED, history, lease, lines

SETUP = (("c0", "invoke", "add_worker", {"worker": "w1", "capacity": 1}), ("c0", "ok", None))


def submits(first: int, second: int, overlap: bool) -> tuple:
    """c1 and c2 each submit a task and are answered ``first`` and ``second``."""
    if overlap:
        return (("c1", "invoke", "submit"), ("c2", "invoke", "submit"), ("c1", "ok", first), ("c2", "ok", second))
    return (("c1", "invoke", "submit"), ("c1", "ok", first), ("c2", "invoke", "submit"), ("c2", "ok", second))


# ---------------------------------------------------------------- real-time order


def test_a_call_that_completed_before_another_began_comes_first():
    assert check_history(history(*submits(1, 2, overlap=False))).linearizable
    assert not check_history(history(*submits(2, 1, overlap=False))).linearizable


def test_overlapping_calls_may_take_effect_in_either_order():
    verdict = check_history(history(*submits(2, 1, overlap=True)))
    assert verdict.linearizable
    assert verdict.order == (1, 0)  # c2's submit took effect first


def test_real_time_order_is_transitive_through_other_processes():
    # c1's submit ends before c3 starts, c3 ends before c2 starts: c2 cannot have got id 1.
    h = history(
        ("c1", "invoke", "submit"), ("c1", "ok", 2),
        ("c3", "invoke", "advance", {"now": 1}), ("c3", "ok", None),
        ("c2", "invoke", "submit"), ("c2", "ok", 1),
    )
    assert not check_history(h).linearizable


# ---------------------------------------------------------------- unknown outcomes (info)

CANCEL_INFO = (
    *SETUP,
    ("c1", "invoke", "submit"), ("c1", "ok", 1),
    ("c1", "invoke", "cancel", {"task_id": 1, "now": 0}), ("c1", "info"),
)


def test_an_info_call_that_must_have_taken_effect():
    # Nothing was eligible: only the cancel, whose client died, explains it.
    nothing = (("c2", "invoke", "dispatch", {"worker": "w1", "now": 0, "duration": 5}), ("c2", "ok", None))
    verdict = check_history(history(*CANCEL_INFO, *nothing))
    assert verdict.linearizable and 3 in verdict.order
    without_the_cancel = (*SETUP, ("c1", "invoke", "submit"), ("c1", "ok", 1), *nothing)
    assert not check_history(history(*without_the_cancel)).linearizable


def test_an_info_call_that_must_not_have_taken_effect():
    # The task was leased and renewed: a cancel before either would forbid both.
    leased = (
        ("c2", "invoke", "dispatch", {"worker": "w1", "now": 0, "duration": 5}), ("c2", "ok", lease(1, "w1", 1, 0, 5)),
        ("c2", "invoke", "renew", {"task_id": 1, "token": 1, "now": 1, "duration": 5}), ("c2", "ok", ACCEPTED),
    )
    verdict = check_history(history(*CANCEL_INFO, *leased))
    assert verdict.linearizable
    cancel, renew = 2, 4
    assert cancel not in verdict.order or verdict.order.index(cancel) > verdict.order.index(renew)
    as_if_it_had_answered = lines(*CANCEL_INFO[:-1], ("c1", "ok", ACCEPTED), *leased)
    assert not check_history(history_from(as_if_it_had_answered)).linearizable


def test_an_info_call_may_go_either_way():
    for second in (1, 2):
        h = history(("c1", "invoke", "submit"), ("c1", "info"), ("c2", "invoke", "submit"), ("c2", "ok", second))
        assert check_history(h).linearizable, second
    h = history(("c1", "invoke", "submit"), ("c1", "info"), ("c2", "invoke", "submit"), ("c2", "ok", 3))
    assert not check_history(h).linearizable


def test_an_info_call_takes_effect_only_after_its_invocation():
    h = history(("c2", "invoke", "submit"), ("c2", "ok", 2), ("c1", "invoke", "submit"), ("c1", "info"))
    assert not check_history(h).linearizable


def test_a_call_still_open_at_the_end_counts_as_unknown():
    h = history(("c1", "invoke", "submit"), ("c2", "invoke", "submit"), ("c2", "ok", 2))
    assert check_history(h).linearizable


def test_an_info_call_is_carried_into_later_windows():
    h = history(("c1", "invoke", "submit"), ("c1", "info"), ("c2", "invoke", "advance", {"now": 3}), ("c2", "ok", None),
                ("c2", "invoke", "submit"), ("c2", "ok", 2))
    assert len(quiescent_windows(h)) == 3
    assert check_history(h).linearizable


# ---------------------------------------------------------------- errors


def test_a_recorded_error_must_be_one_the_model_raises_and_changes_nothing():
    unknown_worker = (("c1", "invoke", "dispatch", {"worker": "w9", "now": 0, "duration": 1}), ("c1", "error"))
    then = (("c1", "invoke", "submit"), ("c1", "ok", 1))
    assert check_history(history(*SETUP, *unknown_worker, *then)).linearizable
    wrongly_refused = (("c1", "invoke", "submit"), ("c1", "error"))
    assert not check_history(history(*wrongly_refused)).linearizable


def test_an_error_other_than_value_error_matches_nothing():
    h = history_from('{"process": "c1", "type": "invoke", "op": "advance", "args": {"now": -1}}\n'
                     '{"process": "c1", "type": "ok", "error": "TypeError"}\n')
    assert not check_history(h).linearizable


# ---------------------------------------------------------------- windows


def test_a_window_carries_every_state_it_may_end_in():
    # Window 2 ends with task 2 due at 0 or at 5, depending on which of c1 and c2 went first;
    # only "due at 0" explains window 3, and the search tries the advance first.
    h = history(
        *SETUP,
        ("c0", "invoke", "submit", {"due_at": 3}), ("c0", "ok", 1),
        ("c1", "invoke", "advance", {"now": 5}), ("c2", "invoke", "submit"), ("c1", "ok", None), ("c2", "ok", 2),
        ("c0", "invoke", "dispatch", {"worker": "w1", "now": 5, "duration": 5}), ("c0", "ok", lease(2, "w1", 1, 5, 10)),
    )
    assert len(quiescent_windows(h)) == 4
    verdict = check_history(h)
    assert verdict.linearizable
    assert verdict.order == (0, 1, 3, 2, 4)


# ---------------------------------------------------------------- the report

ZOMBIE = (
    *SETUP,
    ("c1", "invoke", "submit"), ("c1", "ok", 1),
    ("c1", "invoke", "dispatch", {"worker": "w1", "now": 0, "duration": 5}), ("c1", "ok", lease(1, "w1", 1, 0, 5)),
    ("c2", "invoke", "dispatch", {"worker": "w1", "now": 5, "duration": 5}),
    ("c1", "invoke", "complete", {"task_id": 1, "token": 1, "now": 6}),
    ("c2", "ok", lease(1, "w1", 2, 5, 10)),
    ("c1", "ok", ACCEPTED),
)


def test_the_failure_is_the_shortest_stretch_with_the_models_answer():
    h = history(*ZOMBIE)
    verdict = check_history(h)
    assert verdict.linearizable is False
    failure = verdict.failure
    assert (h.events[failure.start].line, h.events[failure.end].line) == (7, 10)
    assert failure.call == 4 and failure.involved == (3, 4)
    assert {str(a.value) for a in failure.answers} == {"Outcome(accepted=False, reason='stale_token')",
                                                       "Outcome(accepted=False, reason='lease_expired')"}
    text = "\n".join(report(h, verdict))
    assert "no order of the calls from line 7 to line 10 gives the recorded results:" in text
    assert "\n  c2  lines 7-9   dispatch(worker='w1', now=5, duration=5) -> lease task 1 to w1, token 2, [5, 10)\n" in text
    assert "\n  c1  lines 8-10  complete(task_id=1, token=1, now=6)      -> accepted   <-- no order explains this result\n" in text
    assert "  rejected (stale_token)   (after dispatch(worker='w1', now=5, duration=5) by c2)" in text
    assert "  rejected (lease_expired)   (after nothing else)" in text


def test_the_stretch_ends_at_the_first_result_no_order_explains():
    h = history(*ZOMBIE, ("c2", "invoke", "complete", {"task_id": 1, "token": 2, "now": 7}), ("c2", "ok", REJECTED))
    failure = check_history(h).failure
    assert h.events[failure.end].line == 10


# ---------------------------------------------------------------- the command line


def write(tmp_path, text: str):
    path = tmp_path / "h.jsonl"
    path.write_text(text)
    return str(path)


def test_exit_0_for_a_linearizable_history(tmp_path, capsys):
    assert main(["linearize", write(tmp_path, lines(*submits(2, 1, overlap=True))), "--order"]) == 0
    out = capsys.readouterr().out
    assert "h.jsonl: linearizable (2 calls by 2 processes; 1 windows, 2 states explored)" in out
    assert "   1. line     2  c2  submit() -> task 1" in out


def test_exit_1_for_a_history_that_is_not(tmp_path, capsys):
    assert main(["linearize", write(tmp_path, lines(*ZOMBIE))]) == 1
    assert "NOT linearizable" in capsys.readouterr().out


def test_exit_2_and_one_line_for_a_bad_file(tmp_path, capsys):
    assert main(["linearize", write(tmp_path, '{"process": "c1", "type": "ok", "result": 1}\n')]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "h.jsonl: line 1: an ok event for process 'c1', which has no call open" in err


def test_exit_2_for_a_bad_budget(tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["linearize", write(tmp_path, ""), "--max-states", "0"])
    assert caught.value.code == 2
    assert "--max-states: must be a whole number >= 1, got '0'" in capsys.readouterr().err


def test_exit_3_when_the_budget_runs_out_before_a_decision(tmp_path, capsys):
    assert main(["linearize", write(tmp_path, lines(*submits(2, 1, overlap=True))), "--max-states", "1"]) == EXIT_UNDECIDED
    assert "undecided (2 calls by 2 processes): the search explored --max-states=1 states" in capsys.readouterr().out


def history_from(text: str):
    from fencepost.spec.formats.history import loads_history

    return loads_history(text, "test.jsonl")


# ---------------------------------------------------------------- the call blamed (issue 29)

#: Task 1 leased to w1 under token 1 for [0, 5), then, expired, to w2 under token 2 for [6, 11).
RELEASED = (
    ("c0", "invoke", "add_worker", {"worker": "w1", "capacity": 1}), ("c0", "ok", None),
    ("c0", "invoke", "add_worker", {"worker": "w2", "capacity": 1}), ("c0", "ok", None),
    ("c0", "invoke", "submit"), ("c0", "ok", 1),
    ("c1", "invoke", "dispatch", {"worker": "w1", "now": 0, "duration": 5}), ("c1", "ok", lease(1, "w1", 1, 0, 5)),
    ("c2", "invoke", "dispatch", {"worker": "w2", "now": 6, "duration": 5}), ("c2", "ok", lease(1, "w2", 2, 6, 11)),
)

#: A recorded Redis Streams zombie race (issue 29): the expired holder's XACK went first and was
#: accepted, so the renewal by the current holder claimed nothing and its completion was refused;
#: the renewal's answer came back first, the zombie's next.
ZOMBIE_RACE = (
    *RELEASED,
    ("c1", "invoke", "complete", {"task_id": 1, "token": 1, "now": 7}),
    ("c2", "invoke", "complete", {"task_id": 1, "token": 2, "now": 7}),
    ("c3", "invoke", "renew", {"task_id": 1, "token": 2, "now": 7, "duration": 5}),
    ("c3", "ok", REJECTED),
    ("c1", "ok", ACCEPTED),
    ("c2", "ok", REJECTED),
)


def test_a_call_completed_after_the_cut_counts_as_unknown_so_the_zombie_is_blamed():
    # Up to the renewal's answer the history is linearizable: the holder's completion, still
    # open there, may have been accepted first. No order explains the zombie's accepted completion.
    h = history(*ZOMBIE_RACE)
    verdict = check_history(h)
    assert verdict.linearizable is False
    assert h.calls[verdict.failure.call].process == "c1"
    assert h.events[verdict.failure.end].line == 15
    rows = {line.split()[0]: " ".join(line.split()[3:]) for line in report(h, verdict)[2:5]}
    assert rows == {
        "c1": "complete(task_id=1, token=1, now=7) -> accepted <-- no order explains this result",
        "c2": "complete(task_id=1, token=2, now=7) -> not yet known",
        "c3": "renew(task_id=1, token=2, now=7, duration=5) -> rejected",
    }
    assert check_history(history(*ZOMBIE_RACE[:-2], ("c1", "info"), ("c2", "info"))).linearizable
