"""``fencepost bench --tricks``: every trick can still be taken out, and taking it out changes no answer.

A trick is speed or memory only, so the scheduler without it must conform as
the shipped one does; a trick's rewrite that no longer matches
``impl/indexed.py`` fails here, so the table in docs/design.md cannot go on
describing a trick that changed or went. Nothing here asserts a speed.
"""

from __future__ import annotations

import pytest

from fencepost.cli import main
from fencepost.bench.tricks import TRICKS, Trick, TrickGone, without
from fencepost.impl.indexed import IndexedScheduler
from fencepost.spec.checkers.check import check_factory, report_failure

#: Runs per conformance batch for each variant: enough to compare every operation's answers, kept short.
VARIANT_EXAMPLES = 10


@pytest.mark.parametrize("trick", TRICKS, ids=[trick.name for trick in TRICKS])
def test_the_scheduler_without_a_trick_still_conforms(trick: Trick) -> None:
    variant = without(trick)
    assert variant is not IndexedScheduler and variant.__module__.endswith(trick.name.replace("-", "_"))
    result = check_factory(variant, max_examples=VARIANT_EXAMPLES)
    assert result.passed, report_failure(result)


def test_a_trick_whose_code_is_gone_is_an_error_naming_it() -> None:
    gone = Trick("vanished", "code that is not there", (("def no_such_function():", "pass"),))
    with pytest.raises(TrickGone, match=r"trick 'vanished': its code is in impl/indexed.py 0 times, not once"):
        without(gone)


def test_the_table_has_a_row_per_trick_and_says_what_each_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--tricks", "--sizes", "300", "--cycles", "10", "--repeats", "2"]) == 0
    out = capsys.readouterr().out
    rows = [line.split()[0] for line in out.splitlines() if line.split() and line.split()[0] in
            {trick.name for trick in TRICKS}]
    assert rows == [trick.name for trick in TRICKS]
    assert "(none: as shipped)" in out
    for trick in TRICKS:
        assert f"{trick.name}: {trick.what}" in out


def test_tricks_is_a_separate_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--tricks", "--runner"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--tricks is a separate run" in err

