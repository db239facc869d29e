"""What a file says it was recorded against: shown to the user, never run.

A counterexample records the scheduler it was found on (``meta.impl``, a
``MODULE:NAME``), and a file may record an adapter command (``meta.exec``).
Opening a file must not run code the file names: a downloaded folder could
hold the file and a module of that name, and any installed module's
zero-argument callable can be named. So fencepost only words these records as
a suggestion, with the option that would run them, quoted for a POSIX shell
so that a pasted suggestion is one argument whatever the file holds. Only the
command line names code to run (see the README's Security section).
"""

from __future__ import annotations

import re
import shlex

#: The ``meta`` keys that record code, and the command-line option that would run each.
RECORDED_CODE = {"impl": "--impl", "exec": "--exec"}

#: Longest recorded value shown in full; longer ones are cut (a suggestion is one line).
MAX_SHOWN = 200

#: What a ``MODULE:NAME`` looks like: dotted identifiers, a colon, a dotted name.
_FACTORY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def suggestions(meta: dict, running: dict[str, str | None] | None = None) -> list[str]:
    """One line per code record in ``meta`` that differs from what runs now.

    ``running`` maps a ``RECORDED_CODE`` key to what the command line chose
    for it (``{"impl": "impl:Scheduler"}``); a record equal to it needs no
    suggestion. Records that are not strings are ignored; a value past
    ``MAX_SHOWN`` characters is cut and then offers no command to paste.

    Returns: lines such as ``recorded against `sched:Sched`; open it with
    `--impl sched:Sched` to run it there``, in ``RECORDED_CODE`` order.
    """
    running = running or {}
    lines = []
    for key, option in RECORDED_CODE.items():
        value = meta.get(key)
        if not isinstance(value, str) or not value or value == running.get(key):
            continue
        shown = value if len(value) <= MAX_SHOWN else value[: MAX_SHOWN - 1] + "…"
        shown = " ".join(shown.split())
        if len(value) > MAX_SHOWN or (key == "impl" and not _FACTORY.fullmatch(value)):
            lines.append(f"recorded against {shown!r} (meta.{key}); it is not run")
        else:
            lines.append(f"recorded against `{shown}`; open it with `{option} {shlex.quote(value)}` to run it there")
    return lines
