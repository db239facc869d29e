"""``python -m fencepost.bench.pg_single``: its turns alternate and every figure is reported.

Nothing here asserts how fast anything is: only that each side runs the
cycles it is told to, in alternating turns, and that the table has a row per
side; and that bad arguments are refused in one line.
"""

from __future__ import annotations

import sys

import pytest

import pg_server
from fencepost.bench import pg_single
from fencepost.cli import main


def test_two_sides_take_turns_and_each_has_a_row(capsys) -> None:
    dsn = pg_server.require_server()
    said: list[str] = []
    turns = pg_single.measure(dsn, [("this", sys.executable), ("again", sys.executable)], cycles=3, turns=2,
                              synchronous=False, progress=said.append)
    assert [len(t) for t in turns.values()] == [2, 2]
    assert [line.split(":")[1].strip() for line in said] == ["this", "again", "again", "this"]  # the order flips
    assert all(wall > 0 for t in turns.values() for wall, _, _ in t)
    table = pg_single.format_table(turns, 3)
    assert [row.split()[0] for row in table[1:3]] == ["this", "again"]
    assert table[1].split()[-1] == "1.000"  # the first side against itself


@pytest.mark.parametrize("argv, said", [
    (["--cycles", "0"], "argument --cycles: must be a whole number >= 1, got '0'"),
    (["--dsn", "postgresql://nobody@127.0.0.1/none", "--against", "/nonexistent/python"],
     "--against must name a Python interpreter that can run: '/nonexistent/python'"),
])
def test_bad_arguments_are_refused_in_one_line(capsys, argv: list[str], said: str) -> None:
    try:
        status = main(["bench", "pg-single", *argv])
    except SystemExit as exc:  # argparse's own refusal
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err, err
