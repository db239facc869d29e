"""The page around a report: one HTML document that fetches nothing and shows data as text.

``render_page(title, body, data)`` wraps an already-escaped ``body`` in the
document: the stylesheet (``report.css``) and the script (``report.js``)
inlined, a Content-Security-Policy that allows exactly those two by their
SHA-256 hashes and nothing else (no fetch, image, font, frame, form or base
URL), and ``data`` as a JSON data block that no browser executes.

Every value a report shows comes from a file someone else wrote, so it goes
through ``text`` (``html.escape``, quotes included) or ``prose`` (escaped
first, then a few Markdown marks turned into tags of our own); ``json_block``
escapes ``<``, ``>`` and ``&`` so no string can close the block. No JavaScript
is ever built from data: the script reads the data block and attributes.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from functools import cache
from pathlib import Path

#: The stylesheet and the script, inlined into every page (package data beside this module).
STYLESHEET = Path(__file__).with_name("report.css")
SCRIPT = Path(__file__).with_name("report.js")

#: The ``id`` of the JSON data block the script reads.
DATA_ID = "report-data"


def text(value: object) -> str:
    """``value`` as HTML text or an attribute value: ``str(value)`` with ``& < > " '`` escaped."""
    return html.escape(str(value), quote=True)


#: Inline Markdown a note may use: `code`, **strong**, *emphasis* (matched on escaped text).
_CODE = re.compile(r"`([^`\n]+)`")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EMPHASIS = re.compile(r"(?<![*\w])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![*\w])")


def prose(markdown: str) -> str:
    """A note or description as HTML: escaped, then blank-line-separated paragraphs, ``#`` headings
    (as ``<h3>``), ``-`` or ``*`` lists (an item may wrap onto indented lines, and may follow a
    paragraph's lines in the same block), and inline code, strong and emphasis. O(len(markdown)).

    Everything else (links, images, raw HTML) is shown as the characters it
    is written with: a report never links anywhere a file chose.
    """
    out = []
    for block in re.split(r"\n\s*\n", markdown):
        lines = [line.strip() for line in block.strip().splitlines() if line.strip()]
        while lines and lines[0].startswith("#"):
            out.append(f"<h3>{_inline(lines.pop(0).lstrip('#').strip())}</h3>")
        first_item = next((n for n, line in enumerate(lines) if _ITEM.match(line)), len(lines))
        if first_item:
            out.append(f"<p>{_inline(' '.join(lines[:first_item]))}</p>")
        items: list[list[str]] = []
        for line in lines[first_item:]:  # a line without a marker continues the item above it (a wrapped item)
            if _ITEM.match(line):
                items.append([_ITEM.sub("", line)])
            else:
                items[-1].append(line)
        if items:
            out.append("<ul>" + "".join(f"<li>{_inline(' '.join(item))}</li>" for item in items) + "</ul>")
    return "".join(out)


#: A list item's marker at the start of a line.
_ITEM = re.compile(r"^[-*]\s+")


def _inline(line: str) -> str:
    """One line escaped, with inline code, strong and emphasis as tags (no emphasis inside code)."""
    pieces = _CODE.split(text(" ".join(line.split())))  # odd pieces are code spans
    for i in range(0, len(pieces), 2):
        pieces[i] = _EMPHASIS.sub(r"<em>\1</em>", _STRONG.sub(r"<strong>\1</strong>", pieces[i]))
    for i in range(1, len(pieces), 2):
        pieces[i] = f"<code>{pieces[i]}</code>"
    return "".join(pieces)


def json_block(data: object) -> str:
    """``data`` as JSON that cannot end its ``<script type="application/json">`` early:
    ``<``, ``>`` and ``&`` are written as ``\\u`` escapes, which JSON reads back unchanged."""
    encoded = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return encoded.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _digest(source: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii")


@cache
def _assets() -> tuple[str, str]:
    return STYLESHEET.read_text(encoding="utf-8"), SCRIPT.read_text(encoding="utf-8")


def policy(style: str, script: str) -> str:
    """The Content-Security-Policy: nothing may load; only this style and this script, by hash, may run."""
    return (
        f"default-src 'none'; style-src '{_digest(style)}'; script-src '{_digest(script)}'; "
        "img-src 'none'; font-src 'none'; connect-src 'none'; frame-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )


def render_page(title: str, body: str, data: dict) -> str:
    """The whole document. ``title`` is escaped here; ``body`` must be escaped markup already.

    Raises:
        ValueError: ``data`` holds a NaN or an infinity (JSON has none).
    """
    style, script = _assets()
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{text(policy(style, script))}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{text(title)}</title><style>{style}</style></head>\n"
        f"<body>{body}\n"
        f'<script type="application/json" id="{DATA_ID}">{json_block(data)}</script>'
        f"<script>{script}</script></body></html>\n"
    )



#: Rows per table section: a full section after the first may be left unlaid-out until it scrolls near.
ROWS_PER_SECTION = 250


def table_sections(rows: list[str]) -> str:
    """``rows`` as ``<tbody>`` sections of ``ROWS_PER_SECTION``. Every full section after the first
    is ``.section``, which the browser may skip laying out until it scrolls near (the stylesheet),
    so a 10^4-row table opens quickly; the first and the last, whose height the stylesheet cannot
    guess, are always laid out. O(len(rows))."""
    parts = []
    for start in range(0, len(rows), ROWS_PER_SECTION):
        chunk = rows[start:start + ROWS_PER_SECTION]
        skippable = start > 0 and len(chunk) == ROWS_PER_SECTION
        parts.append(('<tbody class="section">' if skippable else "<tbody>") + "".join(chunk) + "</tbody>")
    return "".join(parts)
