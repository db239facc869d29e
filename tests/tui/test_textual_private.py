"""The Textual and Rich internals the app relies on (``tui/textual_private.py``) are what it expects.

Run on every release ``textual_private.CHECKED`` names, this is what makes
the dependency range in ``pyproject.toml`` true; on the installed release it
fails as soon as one name or signature moves, before a screen test would
show only a slower step or a notice left on screen.
"""

from __future__ import annotations

import inspect
from importlib.metadata import version
from pathlib import Path

import tomllib

from textual._styles_cache import StylesCache
from textual.app import App
from textual.notifications import Notification, Notify
from textual.widget import Widget

from fencepost.tui import textual_private


def test_the_installed_releases_are_within_the_checked_ones() -> None:
    def key(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split(".")[:3])

    for package, (low, high) in textual_private.CHECKED.items():
        assert key(low) <= key(version(package)) <= key(high), package


def test_the_dependency_range_is_the_checked_one() -> None:
    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    wanted = {dep.split(">")[0].strip(): dep for dep in project["dependencies"]}
    for package, (low, high) in textual_private.CHECKED.items():
        major, minor = high.split(".")[:2]
        # the releases checked, and their patch releases: up to the next minor release
        assert wanted[package] == f"{package}>={low},<{major}.{int(minor) + 1}", package


def test_the_private_names_are_there_with_the_expected_signatures() -> None:
    assert list(inspect.signature(textual_private.divide_line).parameters) == ["text", "width", "fold"]
    assert textual_private.divide_line("ab cd", 2) == [3]
    cache = StylesCache()
    assert isinstance(cache._width, int) and isinstance(cache._cache, dict) and isinstance(cache._dirty_lines, set)
    parameters = inspect.signature(Widget._size_updated).parameters
    assert list(parameters) == ["self", "size", "virtual_size", "container_size", "layout"]
    assert list(inspect.signature(App._unnotify).parameters)[:2] == ["self", "notification"]
    assert "_notifications" in inspect.getsource(App.__init__)


async def test_a_notice_taken_back_is_gone_and_a_second_take_back_says_so() -> None:
    app = App()
    async with app.run_test() as pilot:
        notice = Notification("hello", timeout=60)
        app.post_message(Notify(notice))
        await pilot.pause()
        assert notice in app._notifications
        assert textual_private.take_back_notice(app, notice) is True
        assert notice not in app._notifications
        assert textual_private.take_back_notice(app, notice) is False
