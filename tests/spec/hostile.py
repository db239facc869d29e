"""Hostile input for the reader fuzz tests: attack fragments and mutations of real files."""

from __future__ import annotations

from hypothesis import strategies as st

from pathlib import Path

from fencepost.spec.formats.limits import FORBIDDEN_CHARACTERS, MAX_INT_DIGITS

#: Fragments an attacker would splice in.
ATTACKS = [
    b"[" * 40, b"{" * 40, b"[" * 5000, b'{"a":' * 3000, b"a." * 3000, b"9" * (MAX_INT_DIGITS + 1), b"9" * 4301,
    b"-" + b"9" * 5000, b"\x00", b"\x1b[2J", b"\r", b"\x7f", b"\xc2\x9b", b"\xed\xa0\x80", b"\xff\xfe",
    b"\xef\xbb\xbf", b"\\u0000", b"\\ud800", b"\\u001b", b"\\u202e", b"[bold red]x[/]", b"[@click=app.quit]",
    b"NaN", b"Infinity", b"1e999", b'"""', b"'''", b'\\"', b"\n[[steps]]\n", b"\n[meta]\n", b"inf", b"nan",
    b'"op": "dispatch"', b"op = 'submit'", b"expect = 'error'", b", ", b"true", b"null", b"1979-05-27T07:32:00Z",
]


@st.composite
def mutations(draw, data: bytes) -> bytes:
    """``data`` with 1 to 4 random edits: replace, insert, delete, duplicate, cut or splice in one of ``ATTACKS``."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        edit = draw(st.sampled_from(["replace", "insert", "delete", "duplicate", "cut", "attack"]))
        if edit == "replace" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif edit == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif edit == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif edit == "duplicate":
            data[at:at] = data[at : at + draw(st.integers(1, 200))] * draw(st.integers(1, 50))
        elif edit == "cut":
            del data[at:]
        else:
            data[at:at] = draw(st.sampled_from(ATTACKS))
    return bytes(data)


def assert_one_line_refusal(exc: Exception, path: Path) -> None:
    """``exc`` reads as the command line prints it: one short line naming ``path``, nothing a terminal acts on."""
    message = str(exc)
    assert message.startswith(f"{path}: ") and message.splitlines() == [message]
    assert not FORBIDDEN_CHARACTERS.search(message)
    assert len(message) < 1_000, "one line, and a short one"
