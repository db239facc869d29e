"""The tick, for an adapter whose queue keeps time on a server nobody can set.

Under ``fencepost check --clock real --tick-ms N`` the harness maps logical
ticks onto the wall clock: it waits until a call's tick has started, then
calls. The adapter never waits or sleeps; it only turns durations into the
server's units: a lease of ``D`` ticks is ``D * tick_ms()`` milliseconds.

* ``tick_ms()``: the tick in force, in milliseconds, while the harness makes
  or calls a scheduler; None under logical time.
* ``require_tick(who)``: the same, or a ``ValueError`` telling the user to
  run with ``--clock real``; call it in the factory.
* ``real_clock(factory)``: declare that the factory's clock cannot be set
  (``fencepost_clock = "real"``), so ``fencepost check`` runs it on the real
  clock unasked and refuses ``--clock logical``.

A program behind ``--exec`` gets the tick as ``FENCEPOST_TICK_MS`` in its
environment and as ``hello``'s ``tick_ms`` argument. The harness and the
judge are ``fencepost.spec.realclock`` and ``fencepost.spec.checkers.realtime``;
docs/real-clock.md says when to use the real clock and what it cannot see.
"""

from __future__ import annotations

from collections.abc import Callable

from fencepost.spec.realclock import require_tick, tick_ms, TICK_ENV


def real_clock(factory: Callable[[], object]) -> Callable[[], object]:
    """Decorator: mark ``factory`` as one whose queue runs on its server's clock (``fencepost_clock = "real"``)."""
    factory.fencepost_clock = "real"
    return factory


__all__ = ["TICK_ENV", "real_clock", "require_tick", "tick_ms"]
