"""``fencepost tui``: listing, choosing the scheduler, and bad input as one line, exit 2."""

from __future__ import annotations

import pytest

from fencepost.impl.simple import SimpleScheduler
from fencepost.spec.cli import main
from fencepost.spec.formats.scenario import Scenario, builtin_names, curriculum
from fencepost.tui import launch
from fencepost.tui.app import FencepostApp


def test_list_prints_the_curriculum_in_order_one_line_each_with_what_it_teaches(capsys):
    assert main(["tui", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == builtin_names() == curriculum()
    assert [line.split()[0] for line in lines] == [f"{n}." for n in range(1, len(lines) + 1)]
    assert lines[0].split()[1] == "onboarding"
    assert all(" you will learn " in line for line in lines)


@pytest.mark.parametrize(
    "argv, words",
    [
        (["tui", "no-such-walkthrough"], "no such scenario file or built-in walkthrough"),
        (["tui", "--impl", "no_such_module:Factory"], "cannot import module 'no_such_module'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err


def test_a_bad_scenario_file_is_refused_before_the_screen_opens(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(FencepostApp, "run", lambda self: pytest.fail("the app must not start"))
    path = tmp_path / "bad.toml"
    path.write_text('title = "t"\n[[steps]]\nop = "dispatch"\nworker = "w1"\n')
    assert main(["tui", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "step 1" in err and "now" in err


@pytest.fixture
def started(monkeypatch) -> list[FencepostApp]:
    """The apps ``fencepost tui`` would have run, instead of running them."""
    apps: list[FencepostApp] = []
    monkeypatch.setattr(FencepostApp, "run", lambda self: apps.append(self))
    return apps


def test_plain_fencepost_opens_the_onboarding_walkthrough(started):
    assert main([]) == 0
    assert started[0].timeline.scenario.title.startswith("A first tour")
    assert started[0].timeline.model_done and not started[0]._start_interactive


def test_new_opens_an_empty_interactive_session(started):
    assert main(["tui", "--new"]) == 0
    assert started[0].timeline.last == 0 and started[0]._start_interactive


def test_a_scenarios_meta_impl_is_used_and_an_unimportable_one_falls_back_with_a_notice():
    scenario = Scenario("t", (), meta={"impl": "impl.simple:SimpleScheduler"})
    assert launch.choose_factory(scenario, None) == (SimpleScheduler, "impl.simple:SimpleScheduler", None)
    factory, name, notice = launch.choose_factory(Scenario("t", (), meta={"impl": "gone.module:S"}), None)
    assert name == launch.DEFAULT_IMPL and "could not be loaded" in notice and "gone.module" in notice
    assert launch.choose_factory(scenario, "impl.indexed:IndexedScheduler")[1] == "impl.indexed:IndexedScheduler"
