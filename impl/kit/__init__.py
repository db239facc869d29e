"""The adapter kit: everything an adapter needs to put a queue behind fencepost's protocol.

An adapter is a small Python module that turns the protocol's calls
(``submit``, ``dispatch``, ``complete``...) into the queue's own calls, and a
zero-argument factory that ``fencepost check MODULE:FACTORY`` can call. It
imports only this module (and the queue's client): every name below is
public and stays. The docs page "Write an adapter" (docs/adapter.md) walks
through one; ``fencepost.impl.kit.template`` is a complete adapter to copy.

What is here:

* **The contract's argument checks, with its exact errors** (``checks``):
  ``check_dispatch``, ``check_submit``, ``check_report``, ``check_time``...
  An invalid call raises ``ValueError`` naming the argument, the value and the
  rule, and changes nothing; every shipped scheduler uses these same checks,
  so an adapter's errors are the contract's word for word. ``not_offered``
  words the error for what the queue does not offer.
* **Tokens** (``tokens``): ``check_token`` and ``CompositeToken`` for tokens
  made of the queue's own parts (``1700000000000-0/w1/2``); the module's
  docstring says what to choose as a token.
* **The adapter's own records** (``book``): ``Book`` keeps the clock, the
  workers, task ids and the tokens handed out; ``guard`` and ``read_back``
  decide a call the queue answers nothing to from the queue's state read back,
  never from its silence; the module's docstring says why, and what to do
  about views under ``views=none``.
* **The tick** (``tick``), for a queue on a server's clock: ``tick_ms()``,
  ``require_tick`` and ``real_clock`` (``fencepost check --clock real``).
* **A forked child's copies** (``inherited``): a finalizer that frees a
  queue's connection asks ``inherited(made_in, *objects)`` first, and in a
  forked child (not the process ``made_in`` that opened them) keeps the copies
  and frees nothing, so the child never ends its parent's session.
* **Declaring what the queue promises**: ``declare`` sets a factory's
  ``fencepost_variants`` (the documented choices, docs/contract.md); the
  values a lease or a report answers with (``Lease``, ``Outcome``,
  ``ACCEPTED``, ``Reason``) and ``EPOCH_SECONDS``, where logical time 0
  lands on a queue's own clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from fencepost.impl.kit.book import Book, guard, read_back
from fencepost.impl.kit.checks import (
    KEYED_ARGUMENTS,
    SUBMIT_ARGUMENTS,
    check_dispatch,
    check_fits,
    check_int,
    check_key,
    check_lease_end,
    check_list,
    check_min,
    check_new_worker,
    check_prune,
    check_report,
    check_reports,
    check_retry_time,
    check_submit,
    check_submit_entries,
    check_task_id,
    check_text,
    check_time,
    check_token,
    check_worker_name,
    entry_error,
    forgotten_task,
    keyed_task,
    not_offered,
    unknown_worker,
)
from fencepost.impl.kit.tick import TICK_ENV, real_clock, require_tick, tick_ms
from fencepost.impl.kit.forks import inherited
from fencepost.impl.kit.tokens import SEPARATOR, CompositeToken
from fencepost.spec.protocol import ACCEPTED, Lease, Outcome, OutcomeUnknown, Reason, Status, TaskView

#: Where an adapter's logical time 0 lands on a queue's own clock, in Unix
#: seconds (2023-11-14). Not 0: litequeue's uuid7 gives every message the
#: same all-zero id at nanosecond 0, and a real epoch keeps a queue's own
#: timestamp arithmetic (retention, SQL timestamps) in its normal range.
EPOCH_SECONDS = 1_700_000_000


def declare(variants: Mapping[str, object]) -> Callable[[Callable[[], object]], Callable[[], object]]:
    """Decorator: declare the contract variants a factory's queue follows (its ``fencepost_variants``).

    ``@declare({"order": "fifo", "tokens": "opaque", "without": "cancel,fail"})``
    on a zero-argument factory. The names and values are docs/contract.md's
    (``fencepost.spec.variants``); every checker reads them, checks each
    choice as declared and the safety core always. ``--variant`` on the
    command line overrides a declared name for one run.

    Raises:
        ValueError: ``variants`` names an unknown variant or value (checked now,
            so a typo fails at import, not at the first check).
    """
    from fencepost.spec.variants import Variants

    Variants.from_declared(variants, "fencepost_variants")

    def mark(factory: Callable[[], object]) -> Callable[[], object]:
        factory.fencepost_variants = dict(variants)
        return factory

    return mark


__all__ = [
    "ACCEPTED", "EPOCH_SECONDS", "KEYED_ARGUMENTS", "SEPARATOR", "SUBMIT_ARGUMENTS",
    "Book", "CompositeToken", "Lease", "Outcome", "OutcomeUnknown", "Reason", "Status", "TaskView",
    "check_dispatch", "check_int", "check_key", "check_lease_end", "check_list", "check_min", "check_new_worker", "check_prune",
    "check_fits", "check_report", "check_reports", "check_retry_time", "check_submit", "check_submit_entries", "check_task_id", "check_text", "check_time",
    "check_token", "check_worker_name", "declare", "entry_error", "forgotten_task", "guard", "inherited", "keyed_task",
    "not_offered", "read_back", "unknown_worker",
    "TICK_ENV", "real_clock", "require_tick", "tick_ms",
]
