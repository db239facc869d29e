"""What the indexed scheduler's fast Lease builder buys: 100,000 submit + dispatch + complete cycles.

    python tests/implementations/lease_builder_cost.py builder   # as shipped
    python tests/implementations/lease_builder_cost.py plain     # the Lease constructor instead

Prints the seconds the cycles took. A benchmark, not a test: compare the two
as whole processes over several alternating runs (docs/design.md).
"""

import sys, time
import fencepost.impl.indexed as ix
from fencepost.spec.protocol import Lease
if sys.argv[1] == "plain":
    ix._new_lease = Lease
s = ix.IndexedScheduler(); s.add_worker("w", 1)
for _ in range(1000): s.submit()
t = time.perf_counter()
for i in range(100000):
    s.submit(); l = s.dispatch("w", 0, 10); s.complete(l.task_id, l.token, 0)
print(time.perf_counter() - t)
