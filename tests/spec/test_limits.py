"""``spec.formats.limits``: each limit refuses just past its bound, in one line naming source, place and rule."""

from __future__ import annotations

import os
import threading

import pytest

from fencepost.spec.formats import limits
from fencepost.spec.formats.limits import (
    MAX_INT_DIGITS,
    MAX_NESTING,
    MAX_STRING_CHARS,
    FormatError,
    LimitError,
    check_line,
    check_tree,
    parse_json,
    parse_toml,
    read_bounded,
)


def refused(call, *args, **kwargs) -> LimitError:
    with pytest.raises(LimitError) as info:
        call(*args, **kwargs)
    assert "\n" not in str(info.value) and str(info.value).startswith(f"{args[1] if len(args) > 1 else 'src'}")
    return info.value


def nested(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


def test_nesting_up_to_the_limit_passes_and_one_more_is_refused():
    check_tree(nested(MAX_NESTING), "src")
    error = refused(check_tree, nested(MAX_NESTING + 1), "src")
    assert error.rule == f"nested deeper than the limit of {MAX_NESTING} arrays and tables"
    assert error.path == (0,) * MAX_NESTING


def test_integers_up_to_the_digit_limit_pass_and_one_digit_more_is_refused():
    biggest = int("9" * MAX_INT_DIGITS)
    check_tree({"a": [biggest, -biggest]}, "src")
    error = refused(check_tree, {"a": [0, -(biggest + 1)]}, "src")
    assert str(error) == f"src: a[1]: an integer is longer than the limit of {MAX_INT_DIGITS} digits"


def test_strings_and_keys_are_bounded_and_refuse_control_characters_by_code_point():
    check_tree({"ok": "tab\there\nnewline é ✓ [red]markup is text[/]" + "x" * 100}, "src")
    assert refused(check_tree, {"s": "x" * (MAX_STRING_CHARS + 1)}, "src").rule.startswith(
        f"a string of {MAX_STRING_CHARS + 1:,} characters is longer than the limit"
    )
    for bad in ("\x00", "\x1b[2J", "\r", "\x7f", "\x9b", "\ud800", "\u202e"):
        error = refused(check_tree, {"steps": [{"note": f"ab{bad}"}]}, "src")
        assert f"U+{ord(bad[0]):04X} at character 3" in error.rule and bad not in str(error)
        assert error.path == ("steps", 0, "note")
    assert refused(check_tree, {"k\x00": 1}, "src").rule.startswith("the key holds the character U+0000")


def test_the_quick_pass_and_the_careful_pass_agree_on_the_first_problem_in_document_order():
    data = {"a": ["fine", "bad\x00"], "b": 10**MAX_INT_DIGITS}
    assert refused(check_tree, data, "src").path == ("a", 1)


def test_per_path_item_limits():
    check_tree({"steps": [0] * 3, "other": [0] * 5}, "src", {("steps",): 3})
    assert refused(check_tree, {"steps": [0] * 4}, "src", {("steps",): 3}).rule == "4 elements is more than the limit of 3"


def test_parsers_turn_recursion_and_integer_conversion_into_one_line():
    assert refused(parse_json, "[" * 100_000 + "]" * 100_000, "x.json").rule.startswith("nested deeper")
    assert refused(parse_toml, "a = " + "[" * 50_000 + "]" * 50_000, "x.toml").rule.startswith("nested deeper")
    assert refused(parse_json, '{"a": ' + "7" * 5000 + "}", "x.json").rule == (
        f"an integer of 5000 digits is longer than the limit of {MAX_INT_DIGITS} digits"
    )
    assert refused(parse_toml, "a = " + "7" * 5000, "x.toml").rule.startswith("an integer of 5000 digits")
    assert parse_json('{"a": -' + "7" * MAX_INT_DIGITS + "}", "x.json") == {"a": -int("7" * MAX_INT_DIGITS)}
    with pytest.raises(FormatError, match=r"^x\.json: invalid JSON: Expecting"):
        parse_json("{", "x.json")
    with pytest.raises(FormatError, match=r"^x\.toml: invalid TOML: "):
        parse_toml("a = ", "x.toml")


def test_read_bounded_refuses_before_reading_what_is_too_big_or_not_a_file(tmp_path):
    path = tmp_path / "f.toml"
    path.write_bytes(b"\xef\xbb\xbftitle = 1\n")
    assert read_bounded(path) == "title = 1\n"  # a byte-order mark is dropped
    assert refused(read_bounded, path, "src", max_bytes=5).rule == "13 bytes is larger than the limit of 5 bytes"
    path.write_bytes(b"ok\nok\n\xff")
    assert refused(read_bounded, path, "src").rule == "not UTF-8 text: invalid start byte at byte 6 (line 3)"
    assert refused(read_bounded, tmp_path, "src").rule == "is a folder, not a file"
    assert refused(read_bounded, tmp_path / "gone", "src").rule == "no such file"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    outcome: list = []
    reader = threading.Thread(target=lambda: outcome.append(_refusal(read_bounded, fifo)), daemon=True)
    reader.start()
    reader.join(timeout=30)  # a safety net: a loaded machine may start the thread late
    if reader.is_alive():  # blocked in open(), waiting for a writer: let it go, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail("read_bounded blocked on a FIFO")
    assert "not a regular file" in outcome[0]


def _refusal(call, *args) -> str:
    try:
        call(*args)
    except LimitError as exc:
        return str(exc)
    return "no error"


def test_check_line():
    check_line("x" * 10, "adapter", 3, max_bytes=10)
    assert str(refused(check_line, "x" * 11, "adapter", 3, max_bytes=10)) == "adapter: line 3: longer than the limit of 10 bytes"


def test_marks_are_counted_before_parsing():
    limits.check_marks("," * limits.MAX_MARKS, "src")
    limits.check_marks("." * (limits.MAX_MARKS // limits.DOT_WEIGHT), "src")
    refused(limits.check_marks, "." * (limits.MAX_MARKS // limits.DOT_WEIGHT + 1), "src")
    error = refused(limits.check_marks, "{" * (limits.MAX_MARKS + 1), "src")
    assert error.rule.startswith(f"{limits.MAX_MARKS + 1:,} marks (commas, equals signs, brackets, and dots x3) is more than the limit")


def test_a_toml_dotted_key_longer_than_the_limit_is_refused_before_tomllib_sees_it():
    parts = limits.MAX_KEY_PARTS
    assert parse_toml("a" + ".a" * (parts - 1) + " = 1", "x.toml")
    assert parse_toml('note = "' + "a." * 100 + '"', "x.toml")  # dots in a string are not a key
    for text in ["a" + ".a" * parts + " = 1", 'x = 1\n[t]\n"a" . b.c . \'d\' . e = 1', "[a" + ".a" * parts + "]", "x = {k = 1, a" + ".a" * parts + " = 2}"]:
        error = refused(parse_toml, text, "x.toml")
        assert error.rule == f"a dotted key of more than the limit of {parts} parts" and error.place.startswith("line ")
    assert refused(parse_toml, "x = 1\n\n" + "a." * 8000 + "a = 1", "x.toml").place == "line 3"
