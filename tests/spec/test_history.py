"""The history format (``spec/formats/history.py``): reading hostile input, writing, recording, merging."""

from __future__ import annotations

import json
import threading

import pytest

from fencepost.impl import Scheduler
from fencepost.spec.formats import history as fmt
from fencepost.spec.formats.history import HistoryError, HistoryLog, load_history, loads_history, merge_histories, write_history
from fencepost.spec.protocol import Lease, Outcome
from histories import history, lease, lines

#: Real seconds a thread here waits for another: a safety net, never reached when all is well.
WAIT_S = 30

INVOKE = '{"process": "c1", "type": "invoke", "op": "submit", "args": {}}'
OK_1 = '{"process": "c1", "type": "ok", "result": 1}'


def test_events_pair_into_calls_in_invocation_order():
    h = history(
        ("c1", "invoke", "add_worker", {"worker": "w1", "capacity": 1}),
        ("c2", "invoke", "submit"),
        ("c1", "ok", None),
        ("c2", "ok", 1),
        ("c1", "invoke", "dispatch", {"worker": "w1", "now": 5, "duration": 5}),
        ("c2", "invoke", "complete", {"task_id": 1, "token": 1, "now": 6}),
        ("c2", "info"),
        ("c1", "ok", lease(1, "w1", 1, 5, 10)),
        ("c2", "invoke", "advance", {"now": 4}),
        ("c2", "error"),
        ("c3", "invoke", "submit", {"priority": 2}),
    )
    assert [(c.process, c.op, c.kind) for c in h.calls] == [
        ("c1", "add_worker", "ok"), ("c2", "submit", "ok"), ("c1", "dispatch", "ok"),
        ("c2", "complete", "info"), ("c2", "advance", "error"), ("c3", "submit", "info"),
    ]
    assert h.calls[2].result == Lease(1, "w1", 1, 5, 10)
    assert (h.calls[2].invoked, h.calls[2].completed) == (4, 7)
    assert h.calls[3].completed is None and h.calls[3].ended == 6
    assert h.calls[5].ended is None  # still open at the end: unknown, like info
    assert h.calls[0].precedes(h.calls[2]) and not h.calls[2].precedes(h.calls[3])
    assert h.processes == ("c1", "c2", "c3")


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ('{"process": "c1", "type": "ok", "result": 1}', "line 1: an ok event for process 'c1', which has no call open"),
        (INVOKE + "\n" + INVOKE, "line 2: process 'c1' invokes submit while its call from line 1 is still open"),
        ('{"process": "c1", "type": "invoke", "op": "reboot", "args": {}}', "line 1: field 'op' must be one of add_worker"),
        ('{"process": "c1", "type": "invoke", "op": "submit", "args": {"prio": 1}}', "line 1: args.prio: not an argument of submit"),
        ('{"process": "c1", "type": "invoke", "op": "advance", "args": {}}', "line 1: args.now: missing (advance needs now)"),
        ('{"process": "c1", "type": "invoke", "op": "advance", "args": {"now": true}}', "line 1: args.now: must be an int, got True"),
        ('{"process": "c1", "type": "invoke", "op": "advance", "args": {"now": 1.0}}', "line 1: args.now: must be an int, got 1.0"),
        ('{"process": "c1", "type": "invoke", "op": "submit", "args": []}', "line 1: field 'args' must be an object"),
        ('{"process": "", "type": "info"}', "line 1: field 'process' must be a non-empty string"),
        ('{"process": "c1", "type": "done"}', "line 1: field 'type' must be one of invoke, ok, info"),
        ('{"process": "c1", "type": "info", "when": 3}', "line 1: field 'when': unknown in an info event"),
        ('{"process": "c1", "type": "info", "time": -1}', "line 1: field 'time' must be an int >= 0"),
        (INVOKE + "\n" + '{"process": "c1", "type": "ok"}', "line 2: an ok event has exactly one of 'result' and 'error'"),
        (INVOKE + "\n" + '{"process": "c1", "type": "ok", "error": "no way"}', "line 2: field 'error' must be an exception class name"),
        (INVOKE + "\n" + '{"process": "c1", "type": "ok", "result": true}', "line 2: result of submit (line 1): submit answers a task id"),
        (INVOKE + "\n" + '{"process": "c1", "type": "ok", "result": 1' + "0" * 40 + "}", "line 2: an integer of 41 digits; at most 20"),
        ('{"process": "c1", "type": "info", "type": "info"}', "line 1: duplicate key 'type'"),
        ('{"process": "c1", "type": "info", "time": NaN}', "line 1: NaN is not JSON"),
        ("[" * 100_000 + "]" * 100_000, "line 1: 200,000 bytes long; a line may have at most 65,536"),
        ("[" * 1000 + "]" * 1000, "line 1: JSON nested deeper than 8 levels"),
        ('{"process": "c1", "type": "info", "x": "' + "[" * 50 + '"}', "line 1: field 'x': unknown in an info event"),
        ("\n\n" + INVOKE + "\n{", "line 4: not valid JSON"),
        ("3", "line 1: expected a JSON object (an event), got 3"),
    ],
)
def test_every_malformed_line_is_one_error_naming_file_line_and_rule(text, rule):
    with pytest.raises(HistoryError) as caught:
        loads_history(text, "h.jsonl")
    message = str(caught.value)
    assert message.startswith("h.jsonl: ") and "\n" not in message
    assert rule in message


def test_invalid_utf8_is_named_by_line():
    with pytest.raises(HistoryError, match=r"^h.jsonl: line 2: not UTF-8 text: invalid start byte at byte 32$"):
        loads_history((INVOKE + "\n").encode() + b'{"process": "c1", "type": "ok", \xff}', "h.jsonl")


def test_a_huge_file_is_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "big.jsonl"
    path.write_text(INVOKE + "\n" + OK_1 + "\n")
    monkeypatch.setattr(fmt, "MAX_HISTORY_BYTES", 50)
    with pytest.raises(HistoryError, match=r"big.jsonl: 1\d\d bytes; a history may have at most 50$"):
        load_history(path)


@pytest.mark.parametrize(("name", "rule"), [("missing.jsonl", "no such file"), (".", "is a folder")])
def test_a_path_that_is_not_a_history_file(tmp_path, name, rule):
    with pytest.raises(HistoryError, match=rule):
        load_history(tmp_path / name)


def test_write_then_read_gives_the_same_events(tmp_path):
    text = lines(
        ("c1", "invoke", "dispatch", {"worker": "w1", "now": 5, "duration": 5}),
        ("c2", "invoke", "renew", {"task_id": 1, "token": 1, "now": 6, "duration": 2}),
        ("c1", "ok", lease(1, "w1", 1, 5, 10)),
        ("c2", "ok", {"accepted": False, "reason": "stale_token"}),
    )
    original = loads_history(text)
    write_history(tmp_path / "h.jsonl", original.events)
    again = load_history(tmp_path / "h.jsonl")
    assert [e.__dict__ | {"line": 0} for e in again.events] == [e.__dict__ | {"line": 0} for e in original.events]
    assert again.calls[1].result == Outcome(False, "stale_token")


PRUNE = '{"process": "c1", "type": "invoke", "op": "prune", "args": '


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (PRUNE + '{"before": "3", "now": 5}}', "line 1: args.before: must be an int, got '3'"),
        (PRUNE + '{"before": 3, "now": 5.0}}', "line 1: args.now: must be an int, got 5.0"),
        (PRUNE + '{"before": 3}}', "line 1: args.now: missing (prune needs before, now)"),
        (PRUNE + '{"before": 3, "now": 5, "keep": 1}}', "line 1: args.keep: not an argument of prune (it takes before, now)"),
        (PRUNE + '{"before": 3, "now": 5}}\n{"process": "c1", "type": "ok", "result": {"forgotten": 1}}',
         "line 2: result of prune (line 1): prune answers how many tasks it forgot (an int), got {'forgotten': 1}"),
        (PRUNE + '{"before": 3, "now": 5}}\n{"process": "c1", "type": "ok", "result": false}',
         "line 2: result of prune (line 1): prune answers how many tasks it forgot (an int), got False"),
        ('{"process": "c1", "type": "invoke", "op": "purge", "args": {}}',
         "line 1: field 'op' must be one of add_worker, submit, dispatch, complete, fail, cancel, renew, advance "
         "(or an optional one: prune, submit_many, dispatch_many, complete_many, fail_many), got 'purge'"),
    ],
)
def test_a_bad_prune_line_is_one_error_naming_line_field_and_value(text, rule):
    with pytest.raises(HistoryError) as caught:
        loads_history(text, "h.jsonl")
    assert str(caught.value) == f"h.jsonl: {rule}"  # the whole message: one line, naming line, field and value


def test_a_prune_call_reads_and_writes_like_the_other_timed_calls(tmp_path):
    text = lines(
        ("c1", "invoke", "prune", {"before": 3, "now": 5}),
        ("c2", "invoke", "prune", {"before": 9, "now": 8}),
        ("c3", "invoke", "prune", {"before": 0, "now": 8}),
        ("c1", "ok", 2), ("c2", "error"), ("c3", "info"),
    )
    original = loads_history(text)
    assert [(c.op, c.args, c.kind, c.result) for c in original.calls] == [
        ("prune", {"before": 3, "now": 5}, "ok", 2), ("prune", {"before": 9, "now": 8}, "error", None),
        ("prune", {"before": 0, "now": 8}, "info", None),
    ]
    write_history(tmp_path / "h.jsonl", original.events)
    again = load_history(tmp_path / "h.jsonl")
    assert [e.__dict__ | {"line": 0} for e in again.events] == [e.__dict__ | {"line": 0} for e in original.events]
    assert (tmp_path / "h.jsonl").read_text().splitlines()[0] == (
        '{"process": "c1", "type": "invoke", "op": "prune", "args": {"before": 3, "now": 5}}')


def test_the_recorder_records_prune_when_the_scheduler_offers_it():
    log = HistoryLog(clock=iter(range(100, 200)).__next__)
    scheduler = Scheduler()
    me = log.recorder(scheduler, "c1")
    me.add_worker("w1", 1)
    task_id = me.submit(key="k")
    me.cancel(task_id, 2)
    assert me.prune(3, now=4) == 1
    with pytest.raises(ValueError, match="before must be >= 0 and <= now"):
        me.prune(before=9, now=8)
    assert [json.loads(fmt.dumps_event(e)) for e in log.events][-4:] == [
        {"process": "c1", "type": "invoke", "op": "prune", "args": {"before": 3, "now": 4}, "time": 106},
        {"process": "c1", "type": "ok", "result": 1, "time": 107},
        {"process": "c1", "type": "invoke", "op": "prune", "args": {"before": 9, "now": 8}, "time": 108},
        {"process": "c1", "type": "ok", "error": "ValueError", "time": 109},
    ]

    class NoPrune:  # a scheduler without the optional operation: none is recorded, as none is offered
        def advance(self, now):
            return None

    bare = log.recorder(NoPrune(), "c2")
    with pytest.raises(AttributeError):
        bare.prune(0, 0)
    assert not hasattr(bare, "prune")
    assert log.events[-1].process == "c1"


def test_the_recorder_records_each_call_with_its_process_and_reraises_errors():
    log = HistoryLog(clock=iter(range(100, 200)).__next__)
    scheduler = Scheduler()
    c1, c2 = log.recorder(scheduler, "c1"), log.recorder(scheduler, "c2")
    c1.add_worker("w1", 1)
    task_id = c2.submit(priority=2)
    got = c1.dispatch("w1", 5, duration=5)
    with pytest.raises(ValueError, match="time can't go backwards"):
        c2.complete(task_id, got.token, 4)
    assert c2.complete(task_id, got.token, 6).accepted
    assert c1.task(task_id).status == "succeeded"  # other attributes pass through unrecorded
    assert [json.loads(fmt.dumps_event(e)) for e in log.events] == [
        {"process": "c1", "type": "invoke", "op": "add_worker", "args": {"worker": "w1", "capacity": 1}, "time": 100},
        {"process": "c1", "type": "ok", "result": None, "time": 101},
        {"process": "c2", "type": "invoke", "op": "submit", "args": {"priority": 2}, "time": 102},
        {"process": "c2", "type": "ok", "result": 1, "time": 103},
        {"process": "c1", "type": "invoke", "op": "dispatch", "args": {"worker": "w1", "now": 5, "duration": 5}, "time": 104},
        {"process": "c1", "type": "ok", "result": lease(1, "w1", 1, 5, 10), "time": 105},
        {"process": "c2", "type": "invoke", "op": "complete", "args": {"task_id": 1, "token": 1, "now": 4}, "time": 106},
        {"process": "c2", "type": "ok", "error": "ValueError", "time": 107},
        {"process": "c2", "type": "invoke", "op": "complete", "args": {"task_id": 1, "token": 1, "now": 6}, "time": 108},
        {"process": "c2", "type": "ok", "result": {"accepted": True}, "time": 109},
    ]


def test_the_log_keeps_times_strictly_increasing_when_the_clock_stalls():
    log = HistoryLog(clock=lambda: 7)
    log.recorder(Scheduler(), "c1").advance(1)
    assert [e.time for e in log.events] == [7, 8]


def test_one_process_cannot_have_two_calls_open():
    log = HistoryLog()
    entered, release = threading.Event(), threading.Event()

    class Blocking:
        def advance(self, now):
            entered.set()
            assert release.wait(WAIT_S), "the test never released the first call"

    recorder = log.recorder(Blocking(), "c1")
    first = threading.Thread(target=recorder.advance, args=(1,))
    first.start()
    assert entered.wait(WAIT_S)
    with pytest.raises(RuntimeError, match="process 'c1' already has a call open"):
        recorder.advance(2)
    release.set()
    first.join(WAIT_S)
    assert not first.is_alive()


def test_recordings_from_several_os_processes_merge_by_time_invocations_first_on_ties():
    one = loads_history(
        '{"process": "a", "type": "invoke", "op": "submit", "args": {}, "time": 10}\n'
        '{"process": "a", "type": "ok", "result": 1, "time": 20}\n', "a.jsonl")
    two = loads_history(
        '{"process": "b", "type": "invoke", "op": "submit", "args": {}, "time": 20}\n'
        '{"process": "b", "type": "ok", "result": 2, "time": 30}\n', "b.jsonl")
    merged = merge_histories([one, two])
    assert [(e.process, e.type) for e in merged] == [("a", "invoke"), ("b", "invoke"), ("a", "ok"), ("b", "ok")]


def test_merging_needs_increasing_times_in_each_input():
    stalled = loads_history(
        '{"process": "a", "type": "invoke", "op": "submit", "args": {}, "time": 10}\n'
        '{"process": "a", "type": "ok", "result": 1, "time": 10}\n', "a.jsonl")
    with pytest.raises(HistoryError, match=r"^a.jsonl: line 2: time 10 is not after the line before \(10\)$"):
        merge_histories([stalled])
    with pytest.raises(HistoryError, match="line 1: no 'time'"):
        merge_histories([loads_history(INVOKE, "b.jsonl")])


def test_a_result_that_is_not_a_protocol_value_is_recorded_as_an_error_no_model_matches():
    class SaysOne:
        def complete(self, task_id, token, now):
            return Outcome(1)

    log = HistoryLog()
    assert log.recorder(SaysOne(), "c1").complete(1, 1, 0) == Outcome(1)
    assert log.events[-1].error == fmt.NOT_A_PROTOCOL_VALUE
