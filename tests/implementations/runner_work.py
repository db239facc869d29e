"""User work for process isolation: module-level functions, so a spawned child can import them."""

from __future__ import annotations

import threading


def signal_then_block(started, ctx) -> None:
    """Say the attempt started, then block for good (until the process is terminated)."""
    started.set()
    threading.Event().wait()


def block_on_first_attempt(started, ctx) -> str:
    """The first attempt stalls past any lease; a later one returns at once."""
    if ctx.attempt == 1:
        signal_then_block(started, ctx)
    return f"attempt {ctx.attempt}"


def constant(value, ctx) -> object:
    return value


def uses_its_context(ctx) -> dict:
    """Every context call, made from the child."""
    from functools import partial

    child = ctx.submit(partial(constant, "from the child"), priority=2)
    return {
        "task_id": ctx.task_id, "attempt": ctx.attempt, "now": ctx.now, "heartbeat": ctx.heartbeat(),
        "cancel_requested": ctx.cancel_requested, "child": child,
    }


def raises(ctx) -> None:
    raise KeyError(f"task {ctx.task_id}")
