"""pytest wiring for the TUI tests: async tests without a plugin, and a scratch folder."""

from __future__ import annotations

import asyncio
import inspect

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def`` tests in a fresh event loop (Pilot tests need one; no plugin needed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(pyfuncitem.obj(**arguments))
    return True


@pytest.fixture
def in_tmp_cwd(tmp_path, monkeypatch):
    """Run in an empty folder, so files the app writes land there."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
