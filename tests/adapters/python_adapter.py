"""A small Python program speaking fencepost's --exec adapter protocol.

    fencepost check --exec "python tests/adapters/python_adapter.py"

It serves ``fencepost.Scheduler`` (or, with ``--simple``, ``SimpleScheduler``)
over JSON lines on stdin/stdout, with its own encoding of the results, as a
program in another language would have: it does not use fencepost's codec.
Comparing its check with the in-process check of the same scheduler measures
what crossing a process boundary costs.

It offers the ``batch`` capability (``submit_many`` and the other batches;
report pairs arrive as JSON arrays) unless given ``--no-batch``.
``--restart`` also offers the ``restart`` capability: the scheduler is
replaced by a deep copy of itself, standing in for one recovered from
storage (this scheduler keeps everything in memory, so a real restart would
lose it all). ``--prune`` offers the ``prune`` capability (the scheduler's own
``prune``); without it the program answers no ``prune``.

``--declare NAME=VALUE`` (repeatable) declares a contract variant in the
``hello`` answer, as a queue that differs from the contract on purpose would.
"""

from __future__ import annotations

import copy
import inspect
import json
import sys

from fencepost import Scheduler, SimpleScheduler

METHODS = ("add_worker", "submit", "dispatch", "complete", "fail", "cancel", "renew", "advance", "task")
#: The batch operations and the single call each entry of their result is.
BATCHES = {"submit_many": "submit", "dispatch_many": "dispatch", "complete_many": "complete", "fail_many": "fail"}


def encode(op: str, value: object) -> object:
    """The JSON form of ``op``'s result."""
    if op in BATCHES:
        return [encode(BATCHES[op], item) for item in value]
    if op == "dispatch" and value is not None:
        return {name: getattr(value, name) for name in ("task_id", "worker", "token", "started_at", "expires_at")}
    if op in ("complete", "fail", "cancel", "renew"):
        return {"accepted": value.accepted, "reason": value.reason}
    if op == "task":
        fields = ("id", "status", "priority", "due_at", "attempts", "worker", "token", "expires_at", "cancel_requested")
        form = {name: getattr(value, name) for name in fields}
        form["status"] = value.status.value
        return form
    return value


def main(argv: list[str]) -> None:
    make = SimpleScheduler if "--simple" in argv else Scheduler
    capabilities = []
    if "key" in inspect.signature(make.submit).parameters:
        capabilities.append("key")
    if "--restart" in argv:
        capabilities.append("restart")
    if "--prune" in argv:
        capabilities.append("prune")
    if all(callable(getattr(make, op, None)) for op in BATCHES) and "--no-batch" not in argv:
        capabilities.append("batch")
    declared = dict(a.partition("=")[::2] for a, flag in zip(argv[1:], argv) if flag == "--declare")
    scheduler = make()
    for line in sys.stdin:
        request = json.loads(line)
        request_id, op, args = request["id"], request["op"], request["args"]
        try:
            if op == "hello":
                result = {"protocol": 1, "capabilities": capabilities}
                if declared:
                    result["variants"] = declared
            elif op == "reset":
                scheduler, result = make(), None
            elif op == "restart" and "restart" in capabilities:
                scheduler, result = copy.deepcopy(scheduler), None
            elif op == "now":
                result = scheduler.now
            elif op in METHODS or (op == "prune" and "prune" in capabilities) or (op in BATCHES and "batch" in capabilities):
                result = encode(op, getattr(scheduler, op)(**args))
            else:
                raise LookupError(f"unknown op {op!r}")
            answer = {"id": request_id, "result": result}
        except ValueError as exc:
            answer = {"id": request_id, "error": "ValueError", "message": str(exc)}
        except Exception as exc:  # noqa: BLE001 - reported to fencepost, which counts it as a finding
            answer = {"id": request_id, "error": type(exc).__name__, "message": str(exc)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
