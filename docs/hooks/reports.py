"""MkDocs hook: before the site is built, write the report of every shipped counterexample.

Each ``tests/regressions/NAME.toml`` was found on the mutant ``impl.mutants.NAME``; its
page on that mutant (``fencepost report``) goes to ``docs/reports/NAME.html``, which
``docs/report.md`` links to. The pages are made here, not kept in git (``docs/reports/``
is ignored), so they always show what the current code says.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from fencepost.cli import main

#: The repository's root: this file is docs/hooks/reports.py.
ROOT = Path(__file__).resolve().parents[2]


def on_pre_build(config, **kwargs) -> None:  # unannotated and partly unused: MkDocs' hook signature
    out = ROOT / "docs" / "reports"
    out.mkdir(exist_ok=True)
    for path in sorted((ROOT / "tests" / "regressions").glob("*.toml")):
        with contextlib.chdir(ROOT):  # so each page names its file as the repository does
            status = main(["report", str(path.relative_to(ROOT)), "-o", str(out / f"{path.stem}.html"),
                           "--impl", f"impl.mutants.{path.stem}:Scheduler"])
        if status != 0:
            raise SystemExit(f"fencepost report {path.name} exited {status}")
