"""Declared variants in the files and protocols that carry them: scenarios, histories, the exec hello.

And ``fencepost linearize`` under a history's declared variants: it follows
a dispatch the variants allow, says which were in force, compares opaque
tokens, and refuses what it cannot judge exactly.
"""

from __future__ import annotations

import json

import pytest

from fencepost.cli import main
from fencepost.spec.formats.adapter import ProtocolError, parse_hello
from fencepost.spec.formats.history import HistoryError, loads_history
from fencepost.spec.formats.scenario import Scenario, ScenarioError, Step, dumps_scenario, loads_scenario, scenario_variants


def lines(*events: dict) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


HEADER_ANY = {"type": "header", "variants": {"order": "any"}}


def setup(process: str = "c0") -> list[dict]:
    """A worker of capacity 2 and two tasks, task 1 of higher priority."""
    return [
        {"process": process, "type": "invoke", "op": "add_worker", "args": {"worker": "w1", "capacity": 2}},
        {"process": process, "type": "ok", "result": None},
        {"process": process, "type": "invoke", "op": "submit", "args": {"priority": 5}},
        {"process": process, "type": "ok", "result": 1},
        {"process": process, "type": "invoke", "op": "submit", "args": {}},
        {"process": process, "type": "ok", "result": 2},
    ]


def dispatch(process: str, task_id: int, token: object, now: int = 0) -> list[dict]:
    return [
        {"process": process, "type": "invoke", "op": "dispatch", "args": {"worker": "w1", "now": now, "duration": 5}},
        {"process": process, "type": "ok", "result": {"task_id": task_id, "worker": "w1", "token": token,
                                                      "started_at": now, "expires_at": now + 5}},
    ]


def complete(process: str, task_id: int, token: object, accepted: bool, now: int = 1) -> list[dict]:
    return [
        {"process": process, "type": "invoke", "op": "complete", "args": {"task_id": task_id, "token": token, "now": now}},
        {"process": process, "type": "ok", "result": {"accepted": accepted}},
    ]


def test_the_hello_may_declare_variants() -> None:
    hello = parse_hello({"protocol": 1, "capabilities": ["key"], "variants": {"order": "any"}})
    assert hello == frozenset({"key"})
    assert hello.variants == {"order": "any"}
    assert parse_hello({"protocol": 1, "capabilities": []}).variants is None
    with pytest.raises(ProtocolError, match="order must be one of"):
        parse_hello({"protocol": 1, "capabilities": [], "variants": {"order": "sideways"}})


def test_a_scenario_records_its_variants_as_a_table() -> None:
    scenario = Scenario("t", (Step("add_worker", {"worker": "w1", "capacity": 1}),), None,
                        {"impl": "x:y", "variants": {"order": "any", "without": ["cancel", "fail"]}})
    text = dumps_scenario(scenario)
    assert '\n[meta.variants]\norder = "any"\nwithout = [\n    "cancel",\n    "fail",\n]\n' in text
    assert scenario_variants(loads_scenario(text)) == {"order": "any", "without": ["cancel", "fail"]}
    with pytest.raises(ScenarioError, match="meta.variants.*tokens must be one of"):
        loads_scenario('title = "t"\nsteps = []\n[meta]\nvariants = { tokens = "words" }\n')


def test_a_history_header_names_its_variants_first_only() -> None:
    history = loads_history(lines(HEADER_ANY, *setup()))
    assert history.variants == {"order": "any"} and len(history.calls) == 3
    with pytest.raises(HistoryError, match="line 3: a header is allowed only as the first line"):
        loads_history(lines(*setup()[:2], HEADER_ANY))
    with pytest.raises(HistoryError, match="line 1: .*order must be one of"):
        loads_history(lines({"type": "header", "variants": {"order": "up"}}))


def test_a_str_token_is_a_token_only_under_tokens_opaque() -> None:
    events = [*setup(), *dispatch("c1", 1, "abc"), *complete("c1", 1, "abc", True)]
    with pytest.raises(HistoryError, match="token"):
        loads_history(lines(*events))
    history = loads_history(lines({"type": "header", "variants": {"tokens": "opaque"}}, *events))
    assert history.calls[-1].args["token"] == "abc"


def linearize(tmp_path, capsys, events: list[dict], *flags: str) -> tuple[int, str, str]:
    path = tmp_path / "h.jsonl"
    path.write_text(lines(*events))
    status = main(["linearize", str(path), *flags])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_order_any_follows_a_dispatch_the_contract_refuses(tmp_path, capsys) -> None:
    """Task 2 handed out before task 1 (priority 5): not linearizable under the contract, allowed under order=any."""
    events = [*setup(), *dispatch("c1", 2, 1), *complete("c1", 2, 1, True)]
    status, out, _ = linearize(tmp_path, capsys, events)
    assert status == 1 and "NOT linearizable" in out
    status, out, _ = linearize(tmp_path, capsys, [HEADER_ANY, *events])
    assert status == 0, out
    assert "processes, under order=any;" in out.splitlines()[0], out
    status, out, _ = linearize(tmp_path, capsys, events, "--variant", "order=any")
    assert status == 0, out
    status, _, err = linearize(tmp_path, capsys, [HEADER_ANY, *events], "--variant", "order=fifo")
    assert status == 2 and err.count("\n") == 1 and "the history's header" in err


def test_a_reused_opaque_token_is_pointed_at_with_why(tmp_path, capsys) -> None:
    header = {"type": "header", "variants": {"tokens": "opaque", "order": "any"}}
    handle = "q" * 185  # as long as an SQS receipt handle
    ok = [header, *setup(), *dispatch("c1", 1, handle), *complete("c1", 1, handle, True)]
    status, out, _ = linearize(tmp_path, capsys, ok)
    assert status == 0, out
    reused = [header, *setup(), *dispatch("c1", 1, handle), *dispatch("c2", 2, handle)]
    status, out, _ = linearize(tmp_path, capsys, reused)
    assert status == 1, out
    marked = [line for line in out.splitlines() if "no order explains" in line]
    assert marked and "c2" in marked[0] and "'qqqqqqqq…'" in marked[0], out
    assert "was issued before (for task 1)" in out
    assert handle not in out  # cut short everywhere


HEADER_OPAQUE_ANY = {"type": "header", "variants": {"order": "any", "tokens": "opaque"}}
LOST = [{"process": "c1", "type": "invoke", "op": "dispatch", "args": {"worker": "w1", "now": 0, "duration": 5}},
        {"process": "c1", "type": "info"}]


@pytest.mark.parametrize("header", [HEADER_ANY, HEADER_OPAQUE_ANY, {"type": "header", "variants": {"tokens": "opaque"}}],
                         ids=["order=any", "order=any,tokens=opaque", "tokens=opaque"])
def test_a_dispatch_whose_answer_was_lost_is_judged_not_refused(tmp_path, capsys, header) -> None:
    """c1's dispatch timed out (info): it took some task under a token nobody saw, or nothing. c2's lease of
    task 2 and its completion are explained (c1 took task 1); a second lease of task 1 while the first is live is not."""
    b, c = ("b", "c") if header["variants"].get("tokens") == "opaque" else (2, 3)  # int tokens: c1 took token 1
    fine = [header, *setup(), *LOST, *dispatch("c2", 2, b), *complete("c2", 2, b, True)]
    status, out, err = linearize(tmp_path, capsys, fine)
    assert status == 0 and err == "", (out, err)
    twice = [header, *setup(), *LOST, *dispatch("c2", 1, b), *dispatch("c3", 1, c, now=1)]
    status, out, err = linearize(tmp_path, capsys, twice)
    assert status == 1 and err == "", (out, err)
    marked = [line for line in out.splitlines() if "no order explains" in line]
    assert marked and marked[0].lstrip().startswith("c3"), out


def test_a_history_cut_short_during_a_dispatch_is_judged(tmp_path, capsys) -> None:
    """The recorder stopped while c1's dispatch was open (no completion at all): judged as unknown."""
    cut = [HEADER_OPAQUE_ANY, *setup(), *dispatch("c2", 2, "b"), LOST[0]]
    status, out, err = linearize(tmp_path, capsys, cut)
    assert status == 0 and err == "", (out, err)


ADAPTER = "tests/adapters/python_adapter.py"


def test_an_exec_program_declares_its_variants_in_hello(capsys) -> None:
    import shlex
    import sys

    command = f"{shlex.quote(sys.executable)} {ADAPTER} --declare order=any"
    status = main(["check", "--exec", command, "--max-examples", "3", "--steps", "10"])
    out = capsys.readouterr().out
    assert "declared variants in force: order=any" in out, out
    assert status in (0, 1)  # three short runs may leave a boundary unreached: the declaration is the point
    # the command line overrides the program's declaration, name by name, and says so
    main(["check", "--exec", command, "--variant", "order=fifo", "--max-examples", "3", "--steps", "10"])
    out = capsys.readouterr().out
    assert "--variant overrides the program's hello: order=fifo (declared any)" in out, out
    assert "declared variants in force: order=fifo" in out, out
