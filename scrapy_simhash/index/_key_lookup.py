"""Finding an index's records by key: the older versions of a page fetched again.

Each record's key is looked up through a 32-bit CRC of its stored bytes (the same in
every process, unlike ``hash()``): a :class:`CrcTable` holds the rows sorted by CRC
(8 bytes a row: CRC and row id) plus a dict of the rows added since its last merge,
merged in once they are ``max(4096, n / 64)`` (as the tables' write buffer in
:mod:`.memory`). A CRC only narrows the search: the keys of the rows it names are then
compared (:class:`KeyLookup` here; the check script for a Redis worker's mirror).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ._storage import KeyStore, encode_key

_MIN_RECENT = 4096
_EMPTY = np.empty(0, dtype=np.uint32)


def key_crc(stored_key: bytes | bytearray) -> int:
    """The 32-bit CRC a key is looked up by, of its bytes as stored."""
    return zlib.crc32(stored_key)


class CrcTable:
    """Rows ``0, 1, ...`` by their CRC, for a column that only grows at the end."""

    def __init__(self) -> None:
        self._crcs: npt.NDArray[np.uint32] = _EMPTY  # sorted
        self._rows: npt.NDArray[np.uint32] = _EMPTY  # the row of each CRC above
        self._recent: dict[int, list[int]] = {}
        self.rows = 0  # rows added so far

    def extend(self, crcs: Sequence[int] | npt.NDArray[np.uint32]) -> None:
        """Add the next rows, with these CRCs."""
        if len(crcs) >= _MIN_RECENT:  # in bulk (a mirror reading the log): sorted in at once
            self._merge()
            rows = np.arange(self.rows, self.rows + len(crcs), dtype=np.uint32)
            self._sort_in(np.asarray(crcs, dtype=np.uint32), rows)
            self.rows += len(crcs)
            return
        for crc in crcs.tolist() if isinstance(crcs, np.ndarray) else crcs:
            self._recent.setdefault(crc, []).append(self.rows)
            self.rows += 1
        if self.rows - len(self._crcs) >= max(_MIN_RECENT, len(self._crcs) // 64):
            self._merge()

    def rows_with(self, crc: int) -> list[int]:
        """The rows with this CRC, in the order added."""
        value = np.uint32(crc)  # of the array's type: a Python int would convert the whole array
        start = int(np.searchsorted(self._crcs, value, side="left"))
        stop = int(np.searchsorted(self._crcs, value, side="right"))
        return [*self._rows[start:stop].tolist(), *self._recent.get(crc, ())]

    def without_rows_before(self, first: int) -> CrcTable:
        """A table of rows ``first ...`` only, renumbered from 0."""
        self._merge()
        kept = self._rows >= first
        table = CrcTable()
        table._crcs, table._rows = self._crcs[kept], self._rows[kept] - np.uint32(first)
        table.rows = max(self.rows - first, 0)
        return table

    @property
    def nbytes(self) -> int:
        return int(self._crcs.nbytes + self._rows.nbytes)

    def _merge(self) -> None:
        """Sort the recent rows in (stable: the rows of a CRC stay in the order added)."""
        if not self._recent:
            return
        pairs = sorted((row, crc) for crc, rows in self._recent.items() for row in rows)
        new_rows = np.fromiter((row for row, _ in pairs), dtype=np.uint32, count=len(pairs))
        new_crcs = np.fromiter((crc for _, crc in pairs), dtype=np.uint32, count=len(pairs))
        self._recent = {}
        self._sort_in(new_crcs, new_rows)

    def _sort_in(self, crcs: npt.NDArray[np.uint32], rows: npt.NDArray[np.uint32]) -> None:
        """Add rows (all after those in the arrays, in order) to the sorted arrays: sorted
        apart, then inserted in one linear pass (not a sort of the whole)."""
        order = np.argsort(crcs, kind="stable")
        at = np.searchsorted(self._crcs, crcs[order], side="right")  # after the older rows of a CRC
        self._crcs = np.insert(self._crcs, at, crcs[order])
        self._rows = np.insert(self._rows, at, rows[order])


class KeyLookup:
    """The rows of a :class:`KeyStore` (which only grows) that hold a key."""

    def __init__(self) -> None:
        self._table = CrcTable()

    def rows_of(self, key: str, keys: KeyStore) -> list[int]:
        """The rows of *keys* that hold *key*, oldest first."""
        self._table.extend([key_crc(keys.encoded(row)) for row in range(self._table.rows, len(keys))])
        encoded = encode_key(key)
        return [row for row in self._table.rows_with(key_crc(encoded)) if keys.encoded(row) == encoded]

    @property
    def nbytes(self) -> int:
        return self._table.nbytes
