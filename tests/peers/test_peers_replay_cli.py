"""``fencepost replay FILE --impl FACTORY`` reproduces every shipped finding against the real queue.

The command a maintainer is told to run (docs/findings.md): the file's
recorded variants are used, its tokens renamed to the queue's own. A bug
exits 1 with its first mismatch at ``meta.diverging_step``; a documented
choice or boundary convention exits 0.
"""

from __future__ import annotations

import pytest

from fencepost.cli import main
from peers_env import adapter_of, require
from test_peers_scenarios import FILES, KINDS, meta_of


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_fencepost_replay_reproduces_the_finding(path, capsys) -> None:
    meta = meta_of(path)
    assert meta["kind"] in KINDS
    require(adapter_of(meta["impl"]))
    status = main(["replay", str(path), "--impl", meta["impl"]])
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    if meta["kind"] == "bug":
        assert status == 1, out
        assert f"the first is step {meta['diverging_step']}:" in last, out
    else:
        assert "diverging_step" not in meta
        assert status == 0, out
        assert last.startswith("ok:"), out


