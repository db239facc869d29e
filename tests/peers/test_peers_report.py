"""``fencepost report`` names the first problem ``fencepost replay`` names, on every shipped finding.

Both judge a step the same way under the file's variants (``views=none``:
no task view is compared; ``tokens=opaque``: a step's token N is the N-th
token the queue handed out). Before that agreed, report compared the queue's
unreadable views and its raw tokens with the model's and named an earlier
step (``litequeue_zombie_done.toml``: 3 against 5).
"""

from __future__ import annotations

import re

import pytest

from fencepost.cli import main
from peers_env import adapter_of, require
from peers_env import FILES, meta_of

REPLAY_FIRST = re.compile(r"the first is step (\d+):")
REPORT_FIRST = re.compile(r"first problem at step (\d+)")


def first_step(pattern: re.Pattern[str], out: str) -> int | None:
    found = pattern.search(out)
    return int(found.group(1)) if found else None


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_report_names_the_first_problem_replay_names(path, tmp_path, capsys) -> None:
    meta = meta_of(path)
    require(adapter_of(meta["impl"]))
    main(["replay", str(path), "--impl", meta["impl"]])
    replayed = capsys.readouterr().out
    assert main(["report", str(path), "--impl", meta["impl"], "-o", str(tmp_path / "page.html")]) == 0
    reported = capsys.readouterr().out
    first = first_step(REPLAY_FIRST, replayed)
    assert first == meta.get("diverging_step"), replayed
    assert first_step(REPORT_FIRST, reported) == first, reported
    if first is None:
        assert "no problem" in reported, reported
