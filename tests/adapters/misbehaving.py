"""An adapter program that breaks the --exec protocol in one chosen way, for the adapter's tests.

    python misbehaving.py MODE [OP]

It serves ``SimpleScheduler`` correctly until the first request for ``OP``
(default ``submit``), and answers that one according to ``MODE``; the
modes named ``hello_*`` spoil the ``hello`` instead. Each mode is one way a
program in any language can go wrong, and fencepost must turn each into a
clear finding or a one-line error, never a hang or a traceback.
"""

from __future__ import annotations

import json
import sys
import threading

from fencepost import SimpleScheduler

METHODS = ("add_worker", "submit", "dispatch", "complete", "fail", "cancel", "renew", "advance", "task")


def encode(op: str, value: object) -> object:
    if op == "dispatch" and value is not None:
        return {name: getattr(value, name) for name in ("task_id", "worker", "token", "started_at", "expires_at")}
    if op in ("complete", "fail", "cancel", "renew"):
        return {"accepted": value.accepted, "reason": value.reason}
    if op == "task":
        fields = ("id", "priority", "due_at", "attempts", "worker", "token", "expires_at", "cancel_requested")
        return {"status": value.status.value, **{name: getattr(value, name) for name in fields}}
    return value


def honest(scheduler: SimpleScheduler, request: dict) -> dict:
    request_id, op, args = request["id"], request["op"], request["args"]
    try:
        if op == "now":
            return {"id": request_id, "result": scheduler.now}
        return {"id": request_id, "result": encode(op, getattr(scheduler, op)(**args))}
    except ValueError as exc:
        return {"id": request_id, "error": "ValueError", "message": str(exc)}


def spoiled(mode: str, answer: dict) -> bytes:
    """The bytes written instead of ``answer``."""
    line = lambda obj: (json.dumps(obj) + "\n").encode()  # noqa: E731
    request_id = answer["id"]
    if mode == "malformed":
        return b"this is not JSON\n"
    if mode == "wrong_id":
        return line({**answer, "id": request_id + 1})
    if mode == "missing_result":
        return line({"id": request_id})
    if mode == "wrong_type":
        return line({"id": request_id, "result": str(answer.get("result"))})
    if mode == "not_object":
        return line([request_id, answer.get("result")])
    if mode == "non_utf8":
        return b'{"id": ' + str(request_id).encode() + b', "result": "\xff\xfe"}\n'
    if mode == "huge_line":
        return b'{"id": ' + str(request_id).encode() + b', "result": "' + b"x" * (3 << 20) + b'"}\n'
    if mode == "deep":
        return b'{"id": ' + str(request_id).encode() + b', "result": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    if mode == "huge_int":
        return b'{"id": ' + str(request_id).encode() + b', "result": 1' + b"0" * 5000 + b"}\n"
    if mode == "other_error":
        return line({"id": request_id, "error": "TypeError", "message": "unsupported operand"})
    if mode == "extra_line":
        return line({"id": request_id - 1, "result": None}) + line(answer)
    raise SystemExit(f"unknown mode {mode!r}")


def main(argv: list[str]) -> None:
    mode = argv[0]
    target = argv[1] if len(argv) > 1 else "submit"
    out = sys.stdout.buffer
    scheduler = SimpleScheduler()
    for raw in sys.stdin.buffer:
        request = json.loads(raw)
        op = request["op"]
        if op == "hello":
            if mode == "hello_exit":
                sys.stderr.write("adapter: cannot open the scheduler's database\n")
                sys.exit(3)
            if mode == "hello_silent":
                threading.Event().wait()
            version = 2 if mode == "hello_protocol_2" else 1
            out.write((json.dumps({"id": request["id"], "result": {"protocol": version, "capabilities": []}}) + "\n").encode())
        elif op == "reset":
            scheduler = SimpleScheduler()
            out.write((json.dumps({"id": request["id"], "result": None}) + "\n").encode())
        elif op == target and not mode.startswith("hello_"):
            if mode == "exit":
                sys.stderr.write("adapter: Traceback ... IndexError: list index out of range\n")
                sys.stderr.flush()
                sys.exit(4)
            if mode == "hang":
                out.flush()
                threading.Event().wait()
            out.write(spoiled(mode, honest(scheduler, request)))
        else:
            out.write((json.dumps(honest(scheduler, request)) + "\n").encode())
        out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
