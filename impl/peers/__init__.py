"""Adapters that put real, third-party queues behind fencepost's protocol.

One module per queue, each offering zero-argument factories that
``fencepost check``, ``replay`` and ``linearize`` accept as ``MODULE:FACTORY``:

* ``fencepost.impl.peers.sqs:standard`` and ``:fifo``: Amazon SQS as moto
  (the AWS mock) serves it, driven with boto3;
* ``fencepost.impl.peers.litequeue:queue``: litequeue (SQLite);
* ``fencepost.impl.peers.pgqueuer:queue``: pgqueuer (PostgreSQL);
* ``fencepost.impl.peers.redis_streams:group`` and ``:fenced``: Redis Streams
  consumer groups, on the Redis server's own clock (``--clock real``);
* ``fencepost.impl.peers.celery_redis:queue``: Celery's Redis broker (kombu's
  Redis transport), on the consumers' clock (``--clock real``);
* ``fencepost.impl.peers.rq:queue``: RQ, the Redis Queue, driven through its
  worker's own methods, on the workers' clock in whole seconds
  (``--clock real --tick-ms 1000``).

Each factory carries ``fencepost_variants``: the contract variants the queue
declares (``spec.variants``; docs/contract.md says which rule each replaces),
so a check judges the queue by what it promises. The queues' packages are the
``peers`` extra (``pip install 'fencepost[peers]'``); this package imports
none of them until a factory is called, so it always imports.

Every adapter here is built from the public adapter kit (``fencepost.impl.kit``)
alone, as a user's would be: none imports a private name of fencepost
(``tests/peers/test_peers_kit.py`` checks it).
"""

from __future__ import annotations

from fencepost.impl.kit import EPOCH_SECONDS, declare

__all__ = ["EPOCH_SECONDS", "declare"]
