"""A task column's rows in order, changed in place and read as snapshots.

``SortedRows`` keeps rows sorted by a key in blocks, so adding or removing
a row at 100,000 rows copies one block; ``RowsView`` is what a board holds:
the blocks as they were when it was made. ``story.timeline``'s columns are
built from them.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Sequence

from fencepost.story.rows import Row


class RowsView(Sequence[Row]):
    """A column's rows at one frame, read-only: the blocks of a ``SortedRows`` as they
    were when the board was made (a block is never changed in place, so this costs one
    reference per block, not one per row)."""

    __slots__ = ("_blocks", "_starts", "_len")

    def __init__(self, blocks: Iterable[list[Row]] = ()) -> None:
        self._blocks = tuple(block for block in blocks if block)
        self._starts: list[int] | None = None  # _starts[b]: the position of block b's first row (made when indexed)
        self._len = sum(map(len, self._blocks))

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, index):  # type: ignore[override]  # int -> Row, slice -> list[Row]
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(f"row {index} of a column of {self._len}")
        if self._starts is None:
            self._starts = list(itertools.accumulate(map(len, self._blocks), initial=0))
        block = bisect.bisect_right(self._starts, index) - 1
        return self._blocks[block][index - self._starts[block]]

    def __iter__(self):
        return itertools.chain.from_iterable(self._blocks)

    def __eq__(self, other: object) -> bool:  # row by row, as lists of rows compare
        if not isinstance(other, (RowsView, list)):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # a list's equality, so a list's hash: none

    def __repr__(self) -> str:
        return f"RowsView({list(self)!r})"


class SortedRows:
    """Rows kept in ``key`` order, in blocks of at most ``2 * BLOCK`` with their keys
    beside them for bisection (sortedcontainers' layout): adding or removing a row
    copies one block, never the column, so a column of 100,000 rows takes a change
    in microseconds. A block is replaced, never changed in place, so ``view`` hands
    the blocks out as they are.

    Invariant: ``_keys[b]`` are the keys of ``_blocks[b]``, ascending; ``_maxes[b]``
    is ``_keys[b][-1]``; no block is empty; ``_len`` is the number of rows.
    """

    #: Rows a block is made with; it is split in two past twice this.
    BLOCK = 512

    def __init__(self, key: Callable[[Row], tuple], rows: Iterable[Row] = ()) -> None:
        self.key = key
        ordered = sorted(rows, key=key)
        size = self.BLOCK
        self._blocks = [ordered[at : at + size] for at in range(0, len(ordered), size)]
        self._keys = [[key(row) for row in block] for block in self._blocks]
        self._maxes = [keys[-1] for keys in self._keys]
        self._len = len(ordered)

    def __len__(self) -> int:
        return self._len

    def __iter__(self):
        return itertools.chain.from_iterable(self._blocks)

    def add(self, row: Row) -> None:
        key = self.key(row)
        self._len += 1
        if not self._blocks:
            self._blocks.append([row])
            self._keys.append([key])
            self._maxes.append(key)
            return
        b = min(bisect.bisect_left(self._maxes, key), len(self._maxes) - 1)
        keys, block = self._keys[b], self._blocks[b]
        at = bisect.bisect_left(keys, key)
        keys.insert(at, key)  # the keys are this column's own: changed in place
        self._blocks[b] = block = block[:at] + [row] + block[at:]  # a new block: a view keeps the old one
        self._maxes[b] = keys[-1]
        if len(keys) > 2 * self.BLOCK:
            half = len(keys) // 2
            self._blocks[b : b + 1] = [block[:half], block[half:]]
            self._keys[b : b + 1] = [keys[:half], keys[half:]]
            self._maxes[b : b + 1] = [keys[half - 1], keys[-1]]

    def remove(self, row: Row) -> None:
        """Take ``row`` out of the column (it is found by its key, and must equal the row there).

        Raises:
            ValueError: ``row`` is not in the column; nothing changed. (Under
                ``python -O`` an assert would let the row with the next key go instead.)
        """
        key = self.key(row)
        b = min(bisect.bisect_left(self._maxes, key), len(self._maxes) - 1)
        keys, block = (self._keys[b], self._blocks[b]) if b >= 0 else ([], [])
        at = bisect.bisect_left(keys, key)
        if at == len(keys) or block[at] != row:
            raise ValueError(f"removing a row that is not in the column: task {row.id}'s, key {key!r}")
        self._len -= 1
        del keys[at]
        if keys:
            self._blocks[b] = block[:at] + block[at + 1 :]
            self._maxes[b] = keys[-1]
        else:
            del self._blocks[b], self._keys[b], self._maxes[b]

    def between(self, low: tuple, high: tuple) -> list[Row]:
        """The rows whose key is above ``low`` and at most ``high``, in order."""
        found: list[Row] = []
        b = bisect.bisect_right(self._maxes, low)
        while b < len(self._blocks):
            keys, block = self._keys[b], self._blocks[b]
            first, end = bisect.bisect_right(keys, low), bisect.bisect_right(keys, high)
            found.extend(block[first:end])
            if end < len(keys):
                break
            b += 1
        return found

    def view(self, above: tuple | None = None) -> RowsView:
        """The rows (whose key is above ``above``, if given), as they are now."""
        if above is None:
            return RowsView(self._blocks)
        b = bisect.bisect_right(self._maxes, above)
        if b == len(self._blocks):
            return RowsView()
        head = self._blocks[b][bisect.bisect_right(self._keys[b], above) :]
        return RowsView([head, *self._blocks[b + 1 :]])
