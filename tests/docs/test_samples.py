"""Every sample output in the README and the docs is what its command prints today.

A sample is a fenced block marked ``console``: lines starting with ``$ ``
are commands, the lines after each are what it must print (stdout and
stderr together), and an optional last line ``[exit N]`` is its exit status.
In an expected line ``...`` stands for any text (timings, paths); a line that
is only ``...`` stands for any number of lines. Commands run from a
temporary folder in which ``tests`` and ``docs`` point at the repository's,
with ``fencepost`` meaning this interpreter's ``python -m fencepost`` and
``python`` this interpreter.

A fenced block with no language is refused outside a short list of
illustrations (protocol exchanges, file layouts), so an output pasted into
the docs without a command that checks it fails here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])

#: Seconds one sample command may take: the slowest is a check that finds a counterexample.
SAMPLE_TIMEOUT = 300

_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


@dataclass
class Sample:
    page: Path
    line: int
    command: str
    expected: list[str]
    status: int | None


def blocks(page: Path) -> list[tuple[int, str, list[str]]]:
    """``(line number, language, lines)`` of every fenced block of ``page``."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m:
            indent = len(m.group(1))
            j = i + 1
            while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
                j += 1
            found.append((i + 1, m.group(2), [line[indent:] for line in lines[i + 1:j]]))
            i = j + 1
        else:
            i += 1
    return found


def samples() -> list[Sample]:
    out = []
    for page in PAGES:
        for start, language, lines in blocks(page):
            if language != "console":
                continue
            current: Sample | None = None
            for offset, line in enumerate(lines, 1):
                if line.startswith("$ "):
                    current = Sample(page, start + offset, line[2:], [], None)
                    out.append(current)
                elif current is not None:
                    m = re.fullmatch(r"\[exit (\d+)\]", line.strip())
                    if m:
                        current.status = int(m.group(1))
                    else:
                        current.expected.append(line)
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` lines fit ``expected``, with ``...`` as described in the module docstring."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head.strip() == "...":
        return any(matches(rest, actual[k:]) for k in range(len(actual) + 1))
    if not actual:
        return False
    pattern = ".*".join(re.escape(part) for part in head.rstrip().split("..."))
    return re.fullmatch(pattern, actual[0].rstrip()) is not None and matches(rest, actual[1:])


def test_the_docs_have_samples_to_check():
    assert len(samples()) >= 5


@pytest.mark.parametrize("sample", samples(), ids=lambda s: f"{s.page.name}:{s.line}")
def test_a_sample_prints_what_the_page_shows(sample: Sample, tmp_path: Path):
    for name in ("tests", "docs"):
        (tmp_path / name).symlink_to(REPO / name)
    words = shlex.split(sample.command)
    assert words[0] == "fencepost", f"{sample.page.name}:{sample.line}: a sample runs fencepost, not {words[0]!r}"
    # ``python`` in a sample (``--exec "python tests/adapters/..."``) is this interpreter
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([sys.executable, "-m", "fencepost", *words[1:]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=SAMPLE_TIMEOUT, stdin=subprocess.DEVNULL)
    actual = (done.stdout + done.stderr).rstrip("\n").split("\n")
    shown = "\n".join(actual)
    assert matches(sample.expected, actual), (
        f"{sample.page.relative_to(REPO)}:{sample.line}: `{sample.command}` printed\n{shown}\n"
        f"but the page shows\n" + "\n".join(sample.expected))
    if sample.status is not None:
        assert done.returncode == sample.status, f"`{sample.command}` exited {done.returncode}, the page says {sample.status}"


#: Blocks with no language that are illustrations, not output: (page, first line of the block).
ILLUSTRATIONS = {
    ("adapter-protocol.md", '-> {"id": 1, "op": "hello", "args": {}}'),
}


def test_no_unchecked_output_block():
    written = [page for page in PAGES if "figures" not in page.parts]  # figures are commands' own output
    unchecked = [f"{page.relative_to(REPO)}:{start}" for page in written for start, language, lines in blocks(page)
                 if language in ("", "text") and (page.name, (lines or [""])[0]) not in ILLUSTRATIONS]
    assert not unchecked, ("blocks with no language (output nobody checks): make each a `console` sample "
                           "with its command, a generated figure, or an illustration: " + ", ".join(unchecked))


def test_the_matcher_can_fail():
    assert matches(["a ... c", "...", "z"], ["a b c", "x", "y", "z"])
    assert not matches(["a ... c"], ["a b d"])
    assert not matches(["a"], ["a", "b"])
    assert not matches(["...", "z"], ["a", "b"])
