"""A clean install: the built wheel, in a fresh virtual environment, beside a project with its own ``spec`` and ``impl``.

fencepost claims one top-level import name. This test builds the wheel
(``pip wheel``, as a user or a CI would), installs it with its dependencies
from the package index into a new venv, and from inside a project whose own
packages are called ``spec`` and ``impl`` runs:

* ``fencepost check theirs:Factory`` -- the project's scheduler, which imports
  the project's own ``spec`` and ``impl``, conforms;
* ``pytest`` on a file using ``fencepost.conformance_test`` -- the helper works
  in the project's suite (on a deliberately broken scheduler, so the run is
  short and shows a counterexample);
* ``python -m fencepost --help``, ``fencepost replay onboarding`` (a built-in
  walkthrough, package data) and the TUI's stylesheet being installed.

Every subprocess has a bound in real seconds. It runs in CI like every other
test; it needs the package index (a local mirror here) and about half a minute.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Seconds any one step (build, install, a command) may take before the test fails instead of hanging.
STEP_BOUND = 300

PROJECT = {
    # The user's own packages, named like fencepost's folders on purpose.
    "spec/__init__.py": "",
    "spec/rules.py": "FIRST_PRIORITY = 0  # the project's own spec module\n",
    "impl/__init__.py": textwrap.dedent('''
        from fencepost import SimpleScheduler
        from spec.rules import FIRST_PRIORITY


        class Scheduler(SimpleScheduler):
            """The project's scheduler: fencepost's simple one, under the project's own names."""

            origin = "the project's impl package"
        '''),
    "theirs.py": textwrap.dedent('''
        import impl

        Factory = impl.Scheduler
        assert Factory.origin == "the project's impl package"
        '''),
    "test_their_scheduler.py": textwrap.dedent('''
        import fencepost
        import impl


        class Broken(impl.Scheduler):
            """A lease alive at exactly expires_at: the closed interval the seeds warn about."""

            def _expire(self, now):
                for task in self._tasks:
                    if task.expires_at is not None and task.expires_at == now:
                        task.expires_at += 1
                super()._expire(now)


        TestBrokenConforms = fencepost.conformance_test(Broken)
        '''),
}


def run(argv: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=STEP_BOUND)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    """(the venv's bin folder, the project folder, an environment without this checkout on any path)."""
    root = tmp_path_factory.mktemp("clean-install")
    built = run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w", str(root / "dist")], cwd=root)
    assert built.returncode == 0, built.stderr
    wheel = next((root / "dist").glob("fencepost-*.whl"))
    venv.create(root / "venv", with_pip=True)
    bin_dir = root / "venv" / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "HYPOTHESIS_PROFILE")}
    installed = run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel), "pytest"], cwd=root, env=env)
    assert installed.returncode == 0, installed.stderr
    project = root / "project"
    for name, text in PROJECT.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    return bin_dir, project, env


def test_check_runs_the_projects_own_factory_beside_its_own_spec_and_impl(installed):
    bin_dir, project, env = installed
    checked = run([str(bin_dir / "fencepost"), "check", "theirs:Factory"], cwd=project, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "theirs:Factory conforms to the fencepost spec" in checked.stdout


def test_the_pytest_helper_works_in_the_projects_suite(installed):
    bin_dir, project, env = installed
    tested = run([str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_their_scheduler.py"], cwd=project, env=env)
    assert tested.returncode == 1, tested.stdout + tested.stderr  # the broken scheduler's test fails...
    assert "counterexample" in tested.stdout and "<-- diverges" in tested.stdout  # ...with its counterexample
    assert "1 failed" in tested.stdout


def test_python_m_fencepost_and_the_package_data(installed):
    bin_dir, project, env = installed
    python = str(bin_dir / "python")
    helped = run([python, "-m", "fencepost", "--help"], cwd=project, env=env)
    assert helped.returncode == 0 and "usage: fencepost" in helped.stdout
    replayed = run([str(bin_dir / "fencepost"), "replay", "onboarding"], cwd=project, env=env)
    assert replayed.returncode == 0 and replayed.stdout.strip().splitlines()[-1].startswith("ok:"), replayed.stdout
    where = run([python, "-c", "import fencepost, fencepost.tui.app as app; print(fencepost.__file__); print(app.FencepostApp.CSS_PATH.is_file())"], cwd=project, env=env)
    origin, stylesheet = where.stdout.split()
    assert Path(origin).is_relative_to(bin_dir.parent) and stylesheet == "True"  # the wheel's copy, not this checkout


def test_the_wheel_writes_a_report_with_its_stylesheet_and_script(installed):
    bin_dir, project, env = installed
    out = project / "onboarding.html"
    written = run([str(bin_dir / "fencepost"), "report", "onboarding", "-o", str(out)], cwd=project, env=env)
    assert written.returncode == 0, written.stdout + written.stderr
    page = out.read_text(encoding="utf-8")
    assert "@media print" in page and "classList.add(\"js\")" in page  # report.css and report.js: the wheel's package data
