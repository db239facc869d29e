"""What the peers tests need, found or skipped visibly.

The real queues are the ``peers`` extra (``pip install 'fencepost[peers]'``,
which ``.ci/run`` installs). Without a queue's package its tests skip, saying
which package and how to install it (``pytest -ra`` prints the reason); an
import error in fencepost's own code is never a skip: the adapters import
their queue only when a factory is called, so ``fencepost.impl.peers.*``
always imports. pgqueuer and procrastinate also need the PostgreSQL server named by
``FENCEPOST_PG_DSN``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import tomllib
from pathlib import Path

import pytest

#: The shipped findings.
SCENARIOS = Path(__file__).parent / "scenarios"
HISTORIES = Path(__file__).parent / "histories"

#: The packages each adapter module drives.
PACKAGES = {
    "sqs": ("moto", "boto3"),
    "litequeue": ("litequeue",),
    "pgqueuer": ("pgqueuer", "psycopg"),
    "procrastinate": ("procrastinate", "psycopg"),
    "redis_streams": ("redis",),
    "rq": ("rq", "redis"),
}
#: ``fencepost check``'s budget (``--max-examples``) where a queue's first finding needs more runs than the
#: peers' usual 25 (procrastinate's zombie needs a lease to lapse and the job fetched again before the stale
#: finish). The check stops at the finding, so the budget costs nothing then: it took 89 runs
#: derandomized, 114 with --seed 1 and 241 with --seed 2 (2026-12-06), and a derandomized run moves with
#: what the process imported before (docs/setup.md), so 200 was too close.
BUDGETS = {"fencepost.impl.peers.procrastinate:queue": "1000"}
#: Runs the fixed procrastinate functions must pass (tests/peers/test_procrastinate_fix.py): more than
#: the unfixed queue's derandomized finding needs (89), without the 1000 that would take 15 minutes.
FIXED_BUDGET = "200"

#: Seconds to wait for the PostgreSQL server before deciding it is not there.
CONNECT_TIMEOUT = 3

#: ``--call-timeout`` for a check or replay of a queue whose every call is a round trip to a server:
#: the default 5 s is for finding hangs, and on a loaded machine (load 10 to 16 on 2 cores) a
#: PostgreSQL call took longer (as tests/implementations/pg_server.py's ``SERVER_CALL_TIMEOUT`` says).
SERVER_CALL_TIMEOUT = "60"


def adapter_of(impl: str) -> str:
    """``fencepost.impl.peers.sqs:standard`` -> ``sqs``."""
    return impl.partition(":")[0].rsplit(".", 1)[-1]


def require(adapter: str) -> None:
    """Skip the calling test unless ``adapter``'s queue (and for a PostgreSQL queue its server) is there."""
    for package in PACKAGES[adapter]:
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed: pip install 'fencepost[peers]'")
    if adapter in ("pgqueuer", "procrastinate"):
        problem = _server_problem()
        if problem:
            pytest.skip(problem)
    if adapter in ("redis_streams", "rq"):
        problem = _redis_problem()
        if problem:
            pytest.skip(problem)


@functools.cache
def _redis_problem() -> str:
    import redis

    from fencepost.impl.peers.redis_streams import DEFAULT_URL

    url = os.environ.get("FENCEPOST_REDIS_URL", DEFAULT_URL)
    try:
        redis.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT).ping()
    except redis.RedisError as exc:
        return f"no Redis server answers at {url}: {type(exc).__name__}"
    return ""


@functools.cache
def _server_problem() -> str:
    dsn = os.environ.get("FENCEPOST_PG_DSN")
    if not dsn:
        return "FENCEPOST_PG_DSN is not set: no PostgreSQL server for pgqueuer or procrastinate"
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"no PostgreSQL server answers at FENCEPOST_PG_DSN: {type(exc).__name__}"
    return ""


def replay_on_queue(scenario: dict) -> list[tuple[int, str]]:
    """Run a scenario's steps on a fresh scheduler from its ``meta.impl``; the steps whose ``expect`` fails.

    Tokens are compared up to renaming, as ``tokens=opaque`` asks: the file's
    ``token = N`` is the N-th distinct token the scheduler handed out (the
    model's numbering), an expected lease's token N must be fresh when N is new,
    and a report's ``token = N`` is sent as that observed token. Returns
    ``(step number, "expected ..., got ...")`` per failing step, in order.
    """
    from fencepost.spec.arguments import load_factory

    scheduler = load_factory(scenario["meta"]["impl"])()
    observed: dict[int, object] = {}  # the file's token number -> the scheduler's token
    failures: list[tuple[int, str]] = []
    try:
        for number, step in enumerate(scenario["steps"], start=1):
            op = step["op"]
            args = {k: v for k, v in step.items() if k not in ("op", "expect", "note")}
            if "token" in args:
                args["token"] = observed.get(args["token"], f"never-issued-{args['token']}")
            try:
                result = getattr(scheduler, op)(**args)
            except ValueError as exc:
                result = exc
            got = _as_expect(op, result, observed)
            want = step.get("expect")
            if want is not None and got != want:
                failures.append((number, f"expected {want}, got {got}"))
    finally:
        clear = getattr(scheduler, "clear", None)
        if clear:
            clear()
        scheduler.close()
    return failures


def _as_expect(op: str, result: object, observed: dict[int, object]) -> object:
    """A result in a scenario's ``expect`` form, a fresh token numbered next, a reused one by its first number."""
    if isinstance(result, ValueError):
        return "error"
    if op == "dispatch":
        if result is None:
            return "none"
        number = next((n for n, t in observed.items() if t == result.token), None)
        if number is None:
            number = len(observed) + 1
            observed[number] = result.token
        return {"task_id": result.task_id, "worker": result.worker, "token": number,
                "started_at": result.started_at, "expires_at": result.expires_at}
    if op in ("complete", "renew", "fail", "cancel"):
        return {"accepted": result.accepted}
    if op == "submit":
        return {"task_id": result}
    return None


def scenario_and_calls(path: Path) -> tuple[dict, list[tuple[str, dict]]]:
    """A scenario file, and its steps as ``(op, args)`` calls (without ``expect`` and ``note``)."""
    with path.open("rb") as handle:
        scenario = tomllib.load(handle)
    return scenario, [(step["op"], _args(step)) for step in scenario["steps"]]


def model_disagreements(scenario: dict) -> list[int]:
    """The steps whose ``expect`` is not the model's answer under the file's declared variants (none: it agrees)."""
    from fencepost.spec import model
    from fencepost.spec.variants import Variants

    state = model.initial(Variants.from_declared(scenario["meta"]["variants"]))
    disagreeing = []
    for number, step in enumerate(scenario["steps"], start=1):
        state, result = model.apply(state, step["op"], _args(step))
        got = None if step["op"] == "advance" else _as_expect(step["op"], result, {})
        if step["op"] == "dispatch" and result is not None:
            got["token"] = result.token  # the model's own numbering, which the file uses
        if got != step.get("expect"):
            disagreeing.append(number)
    return disagreeing


def _args(step: dict) -> dict:
    return {k: v for k, v in step.items() if k not in ("op", "expect", "note")}


FILES = sorted(SCENARIOS.glob("*.toml"))


KINDS = ("bug", "documented choice", "boundary convention")


def meta_of(path) -> dict:
    with path.open("rb") as handle:
        return tomllib.load(handle)["meta"]
