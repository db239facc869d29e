"""The ends of every value's range, for ``fencepost check``: the largest valid, the smallest invalid.

The conformance machine draws small ints and short names, where every
storage agrees; a scheduler that keeps ints in 53 bits (a double), caps keys
at 255 bytes, or accepts ``2**63`` where the contract refuses it, is met only
at the ends of the ranges ``spec.protocol`` states (``INT_MIN``, ``INT_MAX``,
``MAX_TEXT_BYTES``, ``FORBIDDEN_TEXT``). Each probe here is a few calls on a
fresh scheduler, in lockstep with the model (``lockstep.run_calls``): every
int argument at its largest valid value and one past it (the smallest at
``INT_MIN`` too), a lease ending at ``INT_MAX`` and one past, a retry time at
``INT_MAX`` and one past, worker names and keys of exactly ``MAX_TEXT_BYTES``
bytes and one byte more, and a forbidden character in each. A scheduler
narrower than the contract refuses a valid call there, a wider one answers
an invalid one: either is a counterexample of a few steps.

The probes are fixed, not drawn, so they change no Hypothesis draw of the
machine; they run once per check, under the contract's rules
(``variants == DEFAULT``; a queue declaring variants is checked by the
machine alone). Keys are probed only where ``submit`` takes them.
"""

from __future__ import annotations

from collections.abc import Callable

from fencepost.spec.checkers.capabilities import Capabilities
from fencepost.spec.checkers.lockstep import run_calls
from fencepost.spec.formats.trace import TraceStep
from fencepost.spec.protocol import INT_MAX, INT_MIN, MAX_TEXT_BYTES

#: A text of exactly ``MAX_TEXT_BYTES`` bytes of UTF-8, in 4-byte characters (so a storage counting
#: characters, or UTF-16 units, differs from one counting bytes), and one a byte longer.
TEXT_AT_LIMIT = "\U0001d11e" * (MAX_TEXT_BYTES // 4)
TEXT_PAST_LIMIT = "\u00e9" * (MAX_TEXT_BYTES // 2) + "a"
#: Texts the contract refuses for a character: NUL, a lone surrogate, a direction override.
BAD_TEXTS = ("w\x00", "w\ud800", "w\u202e")
#: Half of ``INT_MAX + 1``: a retry delay whose first backoff, from a time as large, ends just past the range.
HALF = 2**62

Call = tuple[str, dict]


def _leased(now: int, duration: int = 1, **submit: object) -> list[Call]:
    """One worker, one task (``submit``'s arguments) and its lease at ``now``."""
    return [("add_worker", {"worker": "w1", "capacity": 1}), ("submit", dict(submit)),
            ("dispatch", {"worker": "w1", "now": now, "duration": duration})]


def probes(capabilities: Capabilities) -> list[list[Call]]:
    """The boundary probes, each a list of calls for a fresh scheduler (see the module docstring)."""
    worker = [("add_worker", {"worker": "w1", "capacity": 1})]
    found: list[list[Call]] = [
        # ints: the largest valid value of each argument, then the smallest invalid
        [("add_worker", {"worker": "w1", "capacity": INT_MAX})],
        [("add_worker", {"worker": "w1", "capacity": INT_MAX + 1})],
        [*worker, ("submit", {"priority": INT_MIN}), ("submit", {"priority": INT_MAX}),
         ("dispatch", {"worker": "w1", "now": 0, "duration": 1})],  # INT_MAX first
        [("submit", {"priority": INT_MAX + 1})],
        [("submit", {"priority": INT_MIN - 1})],
        [("submit", {"due_at": INT_MAX}), ("submit", {"due_at": INT_MAX + 1})],
        [("submit", {"max_attempts": INT_MAX}), ("submit", {"max_attempts": INT_MAX + 1})],
        [("submit", {"retry_delay": INT_MAX}), ("submit", {"retry_delay": INT_MAX + 1})],
        [("advance", {"now": INT_MAX - 1}), ("advance", {"now": INT_MAX})],
        [("advance", {"now": INT_MAX + 1})],
        [*_leased(0, 5), ("complete", {"task_id": 1, "token": INT_MAX + 1, "now": 1}),
         ("complete", {"task_id": INT_MAX + 1, "token": 1, "now": 1}), ("cancel", {"task_id": INT_MAX + 1, "now": 1})],
        # a lease ending at the latest time, and one past it
        [*_leased(INT_MAX - 2, 2), ("advance", {"now": INT_MAX})],
        [*worker, ("submit", {}), ("dispatch", {"worker": "w1", "now": INT_MAX - 2, "duration": 3})],
        [*_leased(0, 5), ("renew", {"task_id": 1, "token": 1, "now": 1, "duration": INT_MAX - 1})],
        [*_leased(0, 5), ("renew", {"task_id": 1, "token": 1, "now": 1, "duration": INT_MAX})],
        # a retry time at the latest time, and one past it
        [*_leased(HALF - 1, 5, retry_delay=HALF), ("fail", {"task_id": 1, "token": 1, "now": HALF - 1})],
        [*_leased(HALF, 5, retry_delay=HALF), ("fail", {"task_id": 1, "token": 1, "now": HALF})],
        # worker names: exactly the longest, one byte longer, a forbidden character
        [("add_worker", {"worker": TEXT_AT_LIMIT, "capacity": 1}), ("submit", {}),
         ("dispatch", {"worker": TEXT_AT_LIMIT, "now": 0, "duration": 1})],
        [("add_worker", {"worker": TEXT_PAST_LIMIT, "capacity": 1})],
        *[[("add_worker", {"worker": text, "capacity": 1})] for text in BAD_TEXTS],
        [*worker, ("dispatch", {"worker": BAD_TEXTS[0], "now": 0, "duration": 1})],
    ]
    if capabilities.keys:
        found += [
            [("submit", {"key": TEXT_AT_LIMIT}), ("submit", {"key": TEXT_AT_LIMIT})],  # the same task twice
            [("submit", {"key": TEXT_PAST_LIMIT})],
            *[[("submit", {"key": text})] for text in BAD_TEXTS],
        ]
    return found


def check_boundaries(factory: Callable[[], object], capabilities: Capabilities,
                     call_timeout: float | None = None) -> list[TraceStep] | None:
    """Run every probe on a fresh scheduler; the trace of the first that diverges from the model, or None.

    Cost: about 60 calls on 25 fresh schedulers.
    """
    for calls in probes(capabilities):
        trace = run_calls(factory, calls, call_timeout)
        if trace is not None:
            return trace
    return None
