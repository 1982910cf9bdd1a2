"""The rows added to the in-memory index since the last merge (see :mod:`._merge`).

Each table chains the buffered rows by bucket key in two int32 arrays: ``newest[slot]``,
the newest row of the slot (-1: none), and ``older[row]``, the row before it in the same
slot. A slot is a bucket key's low :func:`head_bits` bits: a probe walks the slot of each
bucket it visits and keeps the rows within the distance, so rows of another bucket that
share the slot cost a look, never a wrong answer. The C probe (:mod:`._scan`) reads and
writes these arrays in place: a check and an insert at 10M rows made ~50 Python ints and
dict look-ups, and appended to ``array`` objects through their Python methods (~7 and 4 µs).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from . import _buckets
from ._slices import SliceLayout
from ._tables import TableDesign

#: Slots a table of a buffer has at most and at least (as bits): 256 KB and 16 KB a table.
MAX_HEAD_BITS = 16
MIN_HEAD_BITS = 12
_FIRST_CAPACITY = 1024


def head_bits(design: TableDesign, first_row: int) -> int:
    """Slot bits of a buffer that starts at *first_row*: about one row a slot at the
    index's default bound (``first_row / 64`` rows), within the bucket key's width."""
    wanted = max(MIN_HEAD_BITS, min(MAX_HEAD_BITS, (first_row // 64).bit_length()))
    return min(wanted, design.prefix_bits)


class WriteBuffer:
    """Rows ``first_row ...`` added since the last merge, chained per table (module doc)."""

    def __init__(self, design: TableDesign, first_row: int) -> None:
        self.first_row = first_row
        self._design = design
        tables = len(design.tables)
        self._slot_mask = (1 << head_bits(design, first_row)) - 1
        self._newest = np.full((tables, self._slot_mask + 1), -1, dtype=np.int32)
        self._older = np.empty((tables, _FIRST_CAPACITY), dtype=np.int32)
        self._fingerprints = np.empty(_FIRST_CAPACITY, dtype=np.uint64)
        self._count = 0
        self._layout = SliceLayout.of(design).packed()

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        """Allocated bytes (the slots, and room for rows to come)."""
        return int(self._newest.nbytes + self._older.nbytes + self._fingerprints.nbytes)

    def add(self, row: int, fingerprint: int) -> int:
        """Buffer *row*; its table-0 bucket key."""
        if row != self.first_row + self._count:
            raise AssertionError("write buffer rows must be consecutive")
        if self._count == len(self._fingerprints):
            self._grow()
        if _buckets._scan is not None:
            key = _buckets._scan.buffer_add(self._layout, self._newest, self._older, self._fingerprints,
                                            self._count, fingerprint)
        else:
            key = self._add_in_python(fingerprint)
        self._count += 1
        return key

    def _add_in_python(self, fingerprint: int) -> int:
        """The twin of the C ``buffer_add``: row ``len(self)`` at the head of its slots."""
        at, keys = self._count, self._design.bucket_keys(fingerprint)
        self._fingerprints[at] = fingerprint
        for table, key in enumerate(keys):
            slot = key & self._slot_mask
            self._older[table, at] = self._newest[table, slot]
            self._newest[table, slot] = at
        return keys[0]

    def _grow(self) -> None:
        """Twice the room for rows (at most ~3 MB copied, at the 131,072 rows of 10M's bound)."""
        capacity = 2 * len(self._fingerprints)
        older = np.empty((len(self._older), capacity), dtype=np.int32)
        older[:, : self._count] = self._older[:, : self._count]
        fingerprints = np.empty(capacity, dtype=np.uint64)
        fingerprints[: self._count] = self._fingerprints[: self._count]
        self._older, self._fingerprints = older, fingerprints

    def fingerprint_of(self, row: int) -> int:
        return int(self._fingerprints[row - self.first_row])

    @property
    def fingerprints(self) -> npt.NDArray[np.uint64]:
        """The buffered rows' fingerprints (a copy)."""
        return self._fingerprints[: self._count].copy()

    def matches(self, fingerprint: int, max_distance: int, wildcard: int = 0) -> dict[int, int]:
        """``{row: fingerprint}`` of the buffered rows within *max_distance* off *wildcard*."""
        if _buckets._scan is not None:  # (switched as the sorted part's probe)
            return _buckets._scan.buffer_matches(self._layout, self._newest, self._older, self._fingerprints,
                                                 self._count, self.first_row, fingerprint, wildcard, max_distance)
        found: dict[int, int] = {}
        counted = ~wildcard
        for newest, older, keys in zip(self._newest, self._older, self._design.probe_keys(fingerprint, wildcard)):
            heads = newest[np.array(keys, dtype=np.int64) & self._slot_mask]  # (one NumPy call a table)
            for at in heads[heads >= 0].tolist():
                while at >= 0:
                    stored = int(self._fingerprints[at])
                    if ((fingerprint ^ stored) & counted).bit_count() <= max_distance:
                        found[self.first_row + at] = stored
                    at = int(older[at])
        return found
