"""Files are data: what a file records as code (``meta.impl``, ``meta.exec``) is shown, never run.

The import-time side effect tests put a module beside the scenario, in the
current folder, and name it in ``meta.impl``; opening the file must leave the
module unimported (its marker file unwritten). The TUI half is in
``tests/tui/test_tui_launch.py``.
"""

from __future__ import annotations

import sys

import pytest

from fencepost.cli import load_factory, main
from fencepost.spec.formats.recorded import MAX_SHOWN, suggestions

#: A module name no other test or package uses, so its import is ours to see.
MODULE = "fencepost_test_sched_with_side_effect"

SIDE_EFFECT_MODULE = '''
from pathlib import Path
from fencepost.impl import Scheduler
Path(__file__).with_name("imported.marker").write_text("the module ran")

class Sched(Scheduler):
    def __init__(self):
        Path(__file__).with_name("called.marker").write_text("the factory ran")
        super().__init__()
'''

SCENARIO = f'''title = "Recorded elsewhere"

[meta]
impl = "{MODULE}:Sched"
exec = "./my-adapter --serve"

[[steps]]
op = "submit"
expect = {{ task_id = 1 }}
'''


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A downloaded folder: a scenario and the module its meta names; we run inside it."""
    (tmp_path / f"{MODULE}.py").write_text(SIDE_EFFECT_MODULE)
    (tmp_path / "cx.toml").write_text(SCENARIO)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    yield tmp_path
    sys.modules.pop(MODULE, None)


def test_replay_never_imports_the_module_a_file_names_and_says_how_to_run_it(folder, capsys):
    path_before = list(sys.path)
    assert main(["replay", "cx.toml"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert not (folder / "imported.marker").exists() and MODULE not in sys.modules
    assert out[0] == "replay cx.toml against impl:Scheduler: Recorded elsewhere (1 step)"
    assert out[1] == f"note: recorded against `{MODULE}:Sched`; open it with `--impl {MODULE}:Sched` to run it there"
    assert out[2] == "note: recorded against `./my-adapter --serve`; open it with `--exec './my-adapter --serve'` to run it there"
    assert sys.path == path_before  # the current folder was never left on the path


def test_the_command_line_still_runs_a_module_of_the_current_folder_and_only_while_importing_it(folder, capsys):
    path_before = list(sys.path)
    assert main(["replay", "cx.toml", "--impl", f"{MODULE}:Sched"]) == 0
    assert (folder / "imported.marker").exists() and (folder / "called.marker").exists()
    assert "note: recorded against `./my-adapter" in capsys.readouterr().out  # the impl matches; exec still differs
    assert sys.path == path_before


def test_fencepost_s_own_modules_never_search_the_current_folder(tmp_path, monkeypatch):
    # A downloaded folder holding a module named like fencepost's short alias.
    (tmp_path / "impl.py").write_text("raise SystemExit('the folder\\'s impl.py ran')\n")
    monkeypatch.chdir(tmp_path)
    seen = []
    monkeypatch.setattr(sys, "path", list(sys.path))
    original = __import__("importlib").import_module

    def spy(name, *args):
        seen.append(("" in sys.path, name))
        return original(name, *args)

    monkeypatch.setattr("importlib.import_module", spy)
    assert load_factory("impl:Scheduler").__name__ == "IndexedScheduler"
    assert seen == [(False, "fencepost.impl")]


def test_suggestions_quote_for_the_shell_and_skip_what_already_runs():
    meta = {"impl": "sched:Sched", "exec": "adapter; rm -rf ~", "seed": 3}
    assert suggestions(meta, {"impl": "sched:Sched"}) == [
        "recorded against `adapter; rm -rf ~`; open it with `--exec 'adapter; rm -rf ~'` to run it there"
    ]
    assert suggestions({"impl": "os.system('x'):y"}) == ["recorded against \"os.system('x'):y\" (meta.impl); it is not run"]
    long = "m" * (MAX_SHOWN + 1) + ":S"
    (line,) = suggestions({"impl": long})
    assert "it is not run" in line and len(line) < MAX_SHOWN + 60
    assert suggestions({"impl": 7, "exec": ""}) == []
