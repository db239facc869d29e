"""Helpers for the report tests: write inputs, make pages, read them back as a parser sees them."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from fencepost.cli import main

#: Histories shipped beside these tests (JSON lines, as ``fencepost linearize`` reads them).
HISTORIES = Path(__file__).with_name("histories")

#: A zombie's late completion accepted: not linearizable (call 4, by c1, is the one no order explains).
ZOMBIE = HISTORIES / "zombie.jsonl"
ZOMBIE_FAILING_CALL = 4

#: A task completed, forgotten by a prune that overlapped the complete, then cancelled and
#: answered as a known final task would be: not linearizable (the model refuses a forgotten id).
FORGOTTEN = HISTORIES / "forgotten.jsonl"
FORGOTTEN_FAILING_CALL = 5

#: Overlapping submits answered out of invocation order, and a client that died mid-call: linearizable.
OVERLAPS = HISTORIES / "overlaps.jsonl"

#: What a hostile file puts where a page shows text.
HOSTILE_NAME = '"><img src=x onerror=alert(1)>'
HOSTILE_NOTE = "<script>alert('note')</script> and </script><script>alert(2)</script>"


def write_history(path: Path, events: list[tuple]) -> Path:
    def obj(process, kind, *rest):
        if kind == "invoke":
            return {"process": process, "type": kind, "op": rest[0], "args": rest[1]}
        if kind == "ok":
            return {"process": process, "type": kind, "result": rest[0]}
        return {"process": process, "type": kind}

    path.write_text("".join(json.dumps(obj(*e)) + "\n" for e in events), encoding="utf-8")
    return path


def write_hostile_scenario(path: Path) -> Path:
    """A scenario whose title, description, note and worker name are all markup."""
    worker = json.dumps(HOSTILE_NAME)
    note = json.dumps(HOSTILE_NOTE)
    path.write_text(
        f"title = {json.dumps('<script>alert(0)</script> title')}\n"
        f"description = {note}\n\n"
        f"[[steps]]\nop = \"add_worker\"\nworker = {worker}\ncapacity = 1\nnote = {note}\n\n"
        "[[steps]]\nop = \"submit\"\n\n"
        f"[[steps]]\nop = \"dispatch\"\nworker = {worker}\nnow = 0\nduration = 5\n\n"
        "[[steps]]\nop = \"complete\"\ntask_id = 1\ntoken = 7\nnow = 3\n",
        encoding="utf-8",
    )
    return path


def hostile_history(path: Path) -> Path:
    """A history whose client and worker names are markup."""
    lease = {"task_id": 1, "worker": HOSTILE_NAME, "token": 1, "started_at": 0, "expires_at": 5}
    return write_history(path, [
        (HOSTILE_NAME, "invoke", "add_worker", {"worker": HOSTILE_NAME, "capacity": 1}), (HOSTILE_NAME, "ok", None),
        ("</script>", "invoke", "submit", {}), ("</script>", "ok", 1),
        (HOSTILE_NAME, "invoke", "dispatch", {"worker": HOSTILE_NAME, "now": 0, "duration": 5}), (HOSTILE_NAME, "ok", lease),
    ])


def make_page(source: Path | str, out: Path, *options: str) -> Path:
    """Run ``fencepost report SOURCE -o OUT OPTIONS...``; the page's path. Fails the test unless it exits 0."""
    status = main(["report", str(source), "-o", str(out), *options])
    assert status == 0, f"fencepost report {source} exited {status}"
    return out


class Tags(HTMLParser):
    """Every start tag of a page, with its attributes, and the text of each ``<script>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):  # unannotated: HTMLParser's signature
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data

    def named(self, tag: str) -> list[dict]:
        return [attrs for name, attrs in self.tags if name == tag]

    def with_id(self, value: str) -> dict | None:
        return next((attrs for _, attrs in self.tags if attrs.get("id") == value), None)


def parse(page: Path) -> Tags:
    tags = Tags()
    tags.feed(page.read_text(encoding="utf-8"))
    tags.close()
    return tags
