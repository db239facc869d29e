"""What a forked child inherited from its parent: objects it must neither use nor free.

A process forked from another holds copies of its parent's connections, on the parent's own
sockets. When the child's garbage collector frees such a copy, the finalizer that frees it
runs in the child too; acting there (closing the connection, giving a session back to a pool,
deleting the parent's rows) would end or share the parent's session. Finalizers therefore
record the process that made their object and, in any other, only keep the copy referenced
here for the life of the child.
"""

from __future__ import annotations

import os

#: The copies forked children inherited and keep, never used and never closed (see above).
INHERITED: list[object] = []


def inherited(made_in: int, *kept: object) -> bool:
    """True, keeping ``kept`` referenced (never used, never closed), when this process is not
    ``made_in``, the one that made them: a forked child's copy of its parent's objects. O(1)."""
    if os.getpid() == made_in:
        return False
    INHERITED.append(kept)
    return True
