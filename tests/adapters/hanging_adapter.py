"""An adapter program whose scheduler hangs: ``cancel`` of a running task never answers.

    python hanging_adapter.py

Everything else is ``SimpleScheduler``, served honestly; the shortest
sequence of calls that reaches the hang is add_worker, submit, dispatch,
cancel. fencepost must kill the program at the call timeout and report
that sequence.
"""

from __future__ import annotations

import json
import sys
import threading

from fencepost import SimpleScheduler

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from misbehaving import honest  # a sibling file, not a package: found through the path above


def main() -> None:
    scheduler = SimpleScheduler()
    for raw in sys.stdin:
        request = json.loads(raw)
        op, args = request["op"], request["args"]
        if op == "hello":
            answer = {"id": request["id"], "result": {"protocol": 1, "capabilities": []}}
        elif op == "reset":
            scheduler, answer = SimpleScheduler(), {"id": request["id"], "result": None}
        else:
            if op == "cancel" and type(args.get("task_id")) is int and 1 <= args["task_id"] <= len(scheduler._tasks):
                if scheduler.task(args["task_id"]).status == "running":
                    threading.Event().wait()  # the bug: a deadlock, as if waiting on a lock it already holds
            answer = honest(scheduler, request)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
