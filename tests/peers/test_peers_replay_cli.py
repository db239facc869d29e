"""``fencepost replay FILE --impl FACTORY`` reproduces every shipped finding against the real queue.

The command a maintainer is told to run (docs/findings.md): the file's
recorded variants are used, its tokens renamed to the queue's own. A bug
exits 1 with its first mismatch at ``meta.diverging_step``; a documented
choice or boundary convention exits 0.
"""

from __future__ import annotations

import pytest

from fencepost.cli import main
from peers_env import SERVER_CALL_TIMEOUT, adapter_of, require
from peers_env import FILES, KINDS, meta_of


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_fencepost_replay_reproduces_the_finding(path, capsys) -> None:
    meta = meta_of(path)
    assert meta["kind"] in KINDS
    require(adapter_of(meta["impl"]))
    status = main(["replay", str(path), "--impl", meta["impl"], "--call-timeout", SERVER_CALL_TIMEOUT])
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    if meta["kind"] == "bug":
        assert status == 1, out
        assert f"the first is step {meta['diverging_step']}:" in last, out
    else:
        assert "diverging_step" not in meta
        assert status == 0, out
        assert last.startswith("ok:"), out




# ---------------------------------------------------------------- on the real clock

REAL_CLOCK = FILES[0].parent / "real_clock"
CLAIMED_RENEW = REAL_CLOCK / "redis_streams_group_renews_a_claimed_entry.toml"


def test_a_real_clock_counterexample_replays_on_the_real_clock_and_diverges_where_the_check_said(capsys) -> None:
    """The replay ``check --clock real --trace-out`` suggests: on Redis's own clock, judged by the timing."""
    require("redis_streams")
    meta = meta_of(CLAIMED_RENEW)
    status = main(["replay", str(CLAIMED_RENEW), "--impl", "fencepost.impl.peers.redis_streams:group"])
    out = capsys.readouterr().out
    assert status == 1, out
    assert "on the real clock" in out.splitlines()[0] and "real clock: tick 50 ms" in out, out
    assert out.strip().splitlines()[-1] == f"step {meta['diverging_step']} diverges whatever the timing", out
    diverging = [line for line in out.splitlines() if line.endswith("<-- diverges")]
    assert len(diverging) == 1 and diverging[0].lstrip().startswith(f"{meta['diverging_step']}. renew("), out


def test_the_fixed_queue_replays_the_same_steps_with_no_divergence(capsys) -> None:
    require("redis_streams")
    status = main(["replay", str(CLAIMED_RENEW), "--impl", "fencepost.impl.peers.redis_streams:fenced"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert out.strip().splitlines()[-1] == "ok: no step diverges whatever the timing (6 steps)", out


def test_a_real_clock_replay_of_a_scenario_with_a_restart_is_one_line_exit_2(tmp_path, capsys) -> None:
    path = tmp_path / "restart.toml"
    path.write_text('title = "r"\n[[steps]]\nop = "add_worker"\nworker = "w1"\ncapacity = 1\n'
                    '[[steps]]\nop = "restart"\n')
    status = main(["replay", str(path), "--impl", "fencepost:Scheduler", "--clock", "real"])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.err.strip().splitlines() == [
        f"fencepost replay: error: {path}: a scenario with a restart cannot be replayed on the real clock"], captured.err


def test_a_tick_without_the_real_clock_is_refused_by_replay_too(capsys) -> None:
    status = main(["replay", "onboarding", "--tick-ms", "20"])
    err = capsys.readouterr().err
    assert status == 2 and "--tick-ms 20: a tick lasts a set time only on the real clock; add --clock real" in err, err
