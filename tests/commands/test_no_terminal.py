"""Plain ``fencepost`` with no terminal (piped, CI) exits 2 at once with one line on stderr (issue 30).

Before, it started the TUI, wrote escape codes into the pipe and waited for keys.
"""

from __future__ import annotations

import subprocess
import sys

#: A bound on the wait, not a measurement: the command must return long before it.
BOUND_SECONDS = 60


def test_plain_fencepost_without_a_terminal_exits_2_with_one_line():
    done = subprocess.run([sys.executable, "-m", "fencepost"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=BOUND_SECONDS)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fencepost: error: ") and "terminal" in lines[0]
