"""Properties of the linearizability checker over random sequential histories from the model.

A sequential history (no two calls overlap) has exactly one order consistent
with real time, so the checker must accept it as recorded, and must reject it
once any one result is changed to one the model does not give there.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from fencepost.spec import model
from fencepost.spec.checkers.linearize_states import canonical, prune_bounds
from fencepost.spec.checkers.linearize import check_history
from fencepost.spec.formats.history import loads_history
from fencepost.spec.formats.values import same_result, to_json

PROCESSES = ("c1", "c2", "c3")
WORKERS = ("w1", "w2")

small = st.integers(min_value=0, max_value=6)
#: The prunes' ``before`` arguments: fewer than the times, so that the checker's states keep when
#: tasks ended only as far as these tell apart (``prune_bounds``).
BEFORES = (2, 5)
calls = st.one_of(
    st.builds(lambda w, c: ("add_worker", {"worker": w, "capacity": c}), st.sampled_from(WORKERS), st.integers(0, 2)),
    st.builds(lambda p, d, k: ("submit", {"priority": p, "max_attempts": d, "key": k}),
              st.integers(0, 2), st.sampled_from([None, 1, 2]), st.sampled_from([None, None, "a", "b"])),
    st.builds(lambda w, n, d: ("dispatch", {"worker": w, "now": n, "duration": d}), st.sampled_from(WORKERS), small, st.integers(1, 3)),
    st.builds(lambda op, t, k, n: (op, {"task_id": t, "token": k, "now": n}),
              st.sampled_from(["complete", "fail"]), st.integers(1, 3), st.integers(1, 4), small),
    st.builds(lambda t, k, n, d: ("renew", {"task_id": t, "token": k, "now": n, "duration": d}),
              st.integers(1, 3), st.integers(1, 4), small, st.integers(1, 3)),
    st.builds(lambda t, n: ("cancel", {"task_id": t, "now": n}), st.integers(1, 3), small),
    st.builds(lambda n: ("advance", {"now": n}), small),
    st.builds(lambda b, n: ("prune", {"before": b, "now": n}), st.sampled_from(BEFORES), small),
)


@st.composite
def sequential_histories(draw):
    """(events as JSON objects, one (invoke index, completion index) per call) of a run of the model."""
    state = model.initial()
    events, spans = [], []
    for op, args in draw(st.lists(calls, max_size=25)):
        process = draw(st.sampled_from(PROCESSES))
        events.append({"process": process, "type": "invoke", "op": op, "args": args})
        try:
            state, value = model.apply(state, op, args)
            events.append({"process": process, "type": "ok", "result": to_json(op, value)})
        except ValueError:
            events.append({"process": process, "type": "ok", "error": "ValueError"})
        spans.append((len(events) - 2, len(events) - 1))
    return events, spans


def checked(events):
    return check_history(loads_history("".join(json.dumps(e) + "\n" for e in events)))


def corrupt(invoke: dict, completion: dict) -> dict:
    """A completion the model cannot have given: each change alters what the checker compares."""
    op = invoke["op"]
    if "error" in completion:  # the model raised: any answer at all is wrong
        plausible = {"submit": 1, "dispatch": None, "add_worker": None, "advance": None, "prune": 0}.get(op, {"accepted": True})
        return {"process": completion["process"], "type": "ok", "result": plausible}
    result = completion["result"]
    if op in ("submit", "prune"):
        changed = result + 1
    elif op == "dispatch":
        changed = None if result else {"task_id": 1, "worker": invoke["args"]["worker"], "token": 1,
                                       "started_at": 0, "expires_at": 1}
    elif op in ("add_worker", "advance"):
        return {"process": completion["process"], "type": "ok", "error": "ValueError"}
    else:
        changed = {"accepted": not result["accepted"]}
    return {"process": completion["process"], "type": "ok", "result": changed}


@given(sequential_histories())
def test_a_sequential_run_of_the_model_is_linearizable_in_its_own_order(run):
    events, spans = run
    verdict = checked(events)
    assert verdict.linearizable
    assert verdict.order == tuple(range(len(spans)))


@given(sequential_histories(), st.data())
def test_changing_any_one_result_of_a_sequential_run_is_caught(run, data):
    events, spans = run
    if not spans:
        return
    invoked, completed = data.draw(st.sampled_from(spans))
    events = list(events)
    events[completed] = corrupt(events[invoked], events[completed])
    verdict = checked(events)
    assert verdict.linearizable is False
    assert verdict.failure.end == completed


@given(sequential_histories(), st.data())
def test_a_result_forgotten_as_info_keeps_a_run_linearizable(run, data):
    events, spans = run
    if not spans:
        return
    _, completed = data.draw(st.sampled_from(spans))
    events = list(events)
    events[completed] = {"process": events[completed]["process"], "type": "info"}
    assert checked(events).linearizable


@given(st.lists(calls, max_size=40))
def test_a_canonical_state_answers_every_call_as_the_full_state_does(run):
    bounds = prune_bounds(args["before"] for op, args in run if op == "prune")
    full = kept = model.initial()
    for op, args in run:
        try:
            full, want = model.apply(full, op, args)
        except ValueError:
            with pytest.raises(ValueError):
                model.apply(kept, op, args)
            continue
        kept, have = model.apply(kept, op, args)
        kept = canonical(kept, bounds)
        assert same_result(op, have, want)
        assert canonical(full, bounds) == kept
