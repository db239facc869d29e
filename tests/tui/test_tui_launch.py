"""``fencepost tui``: listing, choosing the scheduler, and bad input as one line, exit 2."""

from __future__ import annotations

import inspect
import sys

import pytest

from fencepost.impl.simple import SimpleScheduler
from fencepost.cli import main
from fencepost.spec.arguments import DEFAULT_IMPL, load_factory
from fencepost.spec.formats.scenario import Scenario
from fencepost.story.walkthroughs import builtin_names, curriculum
from fencepost.commands import tui as launch
from fencepost.tui.app import FencepostApp
from tui_helpers import SIZE


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


def test_plain_fencepost_opens_the_onboarding_walkthrough(started, monkeypatch):
    # as on a terminal: without one plain fencepost exits 2 (tests/commands/test_no_terminal.py)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    assert main([]) == 0
    assert started[0].timeline.scenario.title.startswith("A first tour")
    assert started[0].timeline.model_done and not started[0]._start_interactive


def test_new_opens_an_empty_interactive_session(started):
    assert main(["tui", "--new"]) == 0
    assert started[0].timeline.last == 0 and started[0]._start_interactive


#: A module name no other test or package uses, so its import is ours to see.
SIDE_EFFECT_MODULE = "fencepost_test_tui_sched_with_side_effect"


@pytest.fixture
def downloaded(tmp_path, monkeypatch):
    """A folder holding a scenario and a module with an import-time side effect that its meta.impl names."""
    (tmp_path / f"{SIDE_EFFECT_MODULE}.py").write_text(
        "from pathlib import Path\nPath(__file__).with_name('imported.marker').write_text('ran')\n"
        "def Sched():\n    raise SystemExit('the factory ran')\n"
    )
    (tmp_path / "cx.toml").write_text(
        f'title = "t"\n[meta]\nimpl = "{SIDE_EFFECT_MODULE}:Sched"\n[[steps]]\nop = "submit"\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, SIDE_EFFECT_MODULE, raising=False)
    yield tmp_path
    sys.modules.pop(SIDE_EFFECT_MODULE, None)


async def test_opening_a_file_never_imports_its_meta_impl_and_the_screen_says_how_to_run_it(downloaded, started):
    path_before = list(sys.path)
    assert main(["tui", "cx.toml"]) == 0
    (app,) = started
    assert not (downloaded / "imported.marker").exists() and SIDE_EFFECT_MODULE not in sys.modules
    assert sys.path == path_before  # nothing imported later (Textual included) can come from this folder
    # (inspect.unwrap: the TUI runs the factory under the call deadline's watch)
    assert app.impl_name is None and inspect.unwrap(app.timeline.factory) is load_factory(DEFAULT_IMPL)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert [n.message for n in app._notifications] == [
            f"recorded against `{SIDE_EFFECT_MODULE}:Sched`; open it with `--impl {SIDE_EFFECT_MODULE}:Sched` to run it there"
        ]


def test_impl_on_the_command_line_is_the_only_code_that_runs():
    scenario = Scenario("t", (), meta={"impl": "impl.simple:SimpleScheduler"})
    assert launch.choose_factory(scenario, "impl.simple:SimpleScheduler") == (SimpleScheduler, "impl.simple:SimpleScheduler", None)
    factory, name, notice = launch.choose_factory(scenario, None)
    assert (name, factory.__name__) == (launch.DEFAULT_IMPL, "IndexedScheduler")
    assert notice == "recorded against `impl.simple:SimpleScheduler`; open it with `--impl impl.simple:SimpleScheduler` to run it there"
    assert launch.choose_factory(Scenario("t", (), meta={"impl": "os:abort"}), None)[0].__name__ == "IndexedScheduler"


def _hang_scenario() -> Scenario:
    from fencepost.spec.formats.scenario import Step

    steps = (
        Step("add_worker", {"worker": "w1", "capacity": 1}),
        Step("submit", {}),
        Step("dispatch", {"worker": "w1", "now": 0, "duration": 5}),
        Step("cancel", {"task_id": 1, "now": 1}),
    )
    return Scenario("A cancel that hangs", steps, None, {})


def test_a_scheduler_that_hangs_while_the_screen_is_prepared_is_one_line_and_exit_2(capsys, monkeypatch):
    monkeypatch.setattr(FencepostApp, "run", lambda self: pytest.fail("the app must not start"))
    monkeypatch.setattr(launch, "load_scenario", lambda path: _hang_scenario())
    argv = ["tui", "onboarding", "--impl", "tests.spec.schedulers:DeadlocksOnCancel", "--call-timeout", "0.3"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cancel(task_id=1, now=1) did not return within 0.3 s" in err


def test_exec_runs_the_steps_in_the_program(capsys, monkeypatch):
    import shlex
    import sys
    from pathlib import Path

    shown = {}
    monkeypatch.setattr(FencepostApp, "run", lambda self: shown.setdefault("app", self))
    adapter = Path(__file__).resolve().parents[1] / "adapters" / "python_adapter.py"
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(adapter))}"
    assert main(["tui", "onboarding", "--exec", command]) == 0
    app = shown["app"]
    assert app.impl_name == f"--exec {command!r}"
    assert app.timeline.last > 10 and not app.timeline.mismatches  # every expectation held in the program
