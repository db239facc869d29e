"""The documentation site builds strictly, and the README stays a front door.

``mkdocs build --strict`` fails on a broken link or anchor, a page left out of
the navigation, or a figure include that names no file (see ``mkdocs.yml``).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: The README is read top to bottom by a newcomer: at most this many lines.
README_MAX_LINES = 300


def test_the_site_builds_strictly(tmp_path: Path):
    pytest.importorskip("mkdocs", reason="mkdocs is in the test extra: pip install -e '.[test]'")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()


def test_the_readme_is_short_and_its_links_lead_somewhere():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        assert (REPO / target).exists(), f"README links to {target}, which is not in the repository"


def test_every_page_is_in_the_navigation():
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")
             if "figures" not in p.parts]
    missing = [p for p in pages if f": {p}" not in nav]
    assert not missing, f"pages not in mkdocs.yml's nav: {missing}"


def test_the_site_publishes_pages_not_the_builds_own_code():
    """``docs/hooks/reports.py`` sat in the docs directory and was published at ``/hooks/reports.py``."""
    pytest.importorskip("mkdocs", reason="mkdocs is in the test extra: pip install -e '.[test]'")
    from mkdocs.config import load_config
    from mkdocs.structure.files import InclusionLevel, get_files

    with contextlib.chdir(REPO):
        files = get_files(load_config("mkdocs.yml"))
    published = [f.src_uri for f in files if f.inclusion is InclusionLevel.INCLUDED]
    assert not [uri for uri in published if uri.endswith(".py")], published
    assert all(uri.endswith(".md") or uri.startswith("reports/") for uri in published), published
