"""Adapters that put real, third-party queues behind fencepost's protocol.

One module per queue, each offering zero-argument factories that
``fencepost check``, ``replay`` and ``linearize`` accept as ``MODULE:FACTORY``:

* ``fencepost.impl.peers.sqs:standard`` and ``:fifo``: Amazon SQS as moto
  (the AWS mock) serves it, driven with boto3;
* ``fencepost.impl.peers.litequeue:queue``: litequeue (SQLite);
* ``fencepost.impl.peers.pgqueuer:queue``: pgqueuer (PostgreSQL).

Each factory carries ``fencepost_variants``: the contract variants the queue
declares (``spec.variants``; docs/contract.md says which rule each replaces),
so a check judges the queue by what it promises. The queues' packages are the
``peers`` extra (``pip install 'fencepost[peers]'``); this package imports
none of them until a factory is called, so it always imports.
"""

from __future__ import annotations

from collections.abc import Callable

#: Where a peers adapter's logical time 0 lands on the queue's own clock, in
#: Unix seconds (2023-11-14). Not 0: litequeue's uuid7 gives every message the
#: same all-zero id at nanosecond 0, and a real epoch keeps the queues' own
#: timestamp arithmetic (retention, SQL timestamps) in its normal range.
EPOCH_SECONDS = 1_700_000_000


def declare(variants: dict[str, str]) -> Callable[[Callable[[], object]], Callable[[], object]]:
    """Decorator: set ``fencepost_variants`` on a factory (the attribute the checkers read)."""

    def mark(factory: Callable[[], object]) -> Callable[[], object]:
        factory.fencepost_variants = dict(variants)
        return factory

    return mark
