"""Helpers for history tests: write a history as compact tuples instead of JSON lines."""

from __future__ import annotations

import json

from fencepost.spec.formats.history import History, loads_history


def lines(*events: tuple) -> str:
    """JSON lines from ``(process, "invoke", op, args)``, ``(process, "ok", result)``,
    ``(process, "error")`` (raised ValueError) and ``(process, "info")`` tuples."""
    out = []
    for event in events:
        process, kind, *rest = event
        if kind == "invoke":
            obj = {"process": process, "type": "invoke", "op": rest[0], "args": rest[1] if len(rest) > 1 else {}}
        elif kind == "ok":
            obj = {"process": process, "type": "ok", "result": rest[0]}
        elif kind == "error":
            obj = {"process": process, "type": "ok", "error": "ValueError"}
        else:
            obj = {"process": process, "type": "info"}
        out.append(json.dumps(obj))
    return "\n".join(out) + "\n"


def history(*events: tuple) -> History:
    """A parsed history from compact tuples (see ``lines``)."""
    return loads_history(lines(*events), "test.jsonl")


def lease(task_id: int, worker: str, token: int, started_at: int, expires_at: int) -> dict:
    """A Lease in its JSON form."""
    return {"task_id": task_id, "worker": worker, "token": token, "started_at": started_at, "expires_at": expires_at}


ACCEPTED = {"accepted": True}
REJECTED = {"accepted": False}
