"""Run a command in a pseudo-terminal, as a person's shell would, and drive it with keys.

``fencepost demo`` only opens the TUI when its output is a terminal, so a
test with piped output never sees what a person sees; these helpers give the
program a real terminal (``os.openpty``) of a fixed size, read everything it
draws, type keys once a given text is on the screen, and wait for it to end,
every wait bounded.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass
from pathlib import Path

#: Seconds a command may take in all before it is killed and the test fails (the machine is shared).
DEFAULT_TIMEOUT = 120

#: Seconds one wait for output may block before the loop looks at the clock again.
POLL_SECONDS = 0.5

#: The terminal's escape sequences, taken out of what it drew before the text is searched.
_ESCAPES = re.compile(rb"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>NOPM78c])")


@dataclass(frozen=True)
class PtyRun:
    """How a command ended in a pseudo-terminal: its exit status, and all it drew (escapes taken out)."""

    status: int
    text: str


def fencepost_command() -> list[str]:
    """The installed ``fencepost`` command, as the README runs it (else ``python -m fencepost``)."""
    script = Path(sys.executable).with_name("fencepost")
    return [str(script)] if script.exists() else [sys.executable, "-m", "fencepost"]


def run_in_pty(
    argv: list[str],
    keys: list[tuple[str, bytes]] = (),
    *,
    size: tuple[int, int] = (80, 24),
    cwd: str | Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> PtyRun:
    """Run ``argv`` with a terminal of ``size`` (columns, rows) as stdin, stdout and stderr.

    ``keys``: (text, bytes) pairs: once ``text`` has appeared on the screen
    (after the previous pair's keys were typed), ``bytes`` are typed. Returns
    when the command has ended and its output is read to the end.

    Raises:
        AssertionError: the command did not end within ``timeout`` seconds (it is killed first),
            or a text it was to show never appeared.
    """
    controller, terminal = os.openpty()
    columns, rows = size
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TEXTUAL", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    process = subprocess.Popen(
        argv, stdin=terminal, stdout=terminal, stderr=terminal, cwd=cwd, env=env,
        close_fds=True, start_new_session=True,
    )
    os.close(terminal)
    drawn = bytearray()
    pending = list(keys)
    searched = 0  # where the next awaited text is looked for: after the keys before it were typed
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                waiting = f"; still waiting to see {pending[0][0]!r}" if pending else ""
                raise AssertionError(f"{argv} did not end within {timeout} s{waiting}:\n{_plain(drawn)[-2000:]}")
            ready, _, _ = select.select([controller], [], [], POLL_SECONDS)
            if ready:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # EIO: the command ended and closed the terminal
                    chunk = b""
                if not chunk:
                    break
                drawn += chunk
            while pending and pending[0][0] in _plain(drawn[searched:]):
                searched = len(drawn)
                os.write(controller, pending.pop(0)[1])
        status = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(controller)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if pending:
        raise AssertionError(f"{argv} ended before showing {pending[0][0]!r}:\n{_plain(drawn)[-2000:]}")
    return PtyRun(status, _plain(drawn))


def _plain(drawn: bytes) -> str:
    return _ESCAPES.sub(b"", bytes(drawn)).decode("utf-8", "replace")
