"""The rows removed from the in-memory index, until a compaction drops them (:mod:`._dropping`).

A bit a row, in chunks of :data:`CHUNK_ROWS` rows allocated as removals reach them: at most
0.125 bytes a row of the index. A ``set`` of row numbers took ~57 bytes a removed row:
~140 MB for the 2.5M a 10M-row index holds before its compaction is due (14 bytes a row of
the index), and ~100 ms to free at once when it ends.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

#: Rows a chunk of bits covers (64 KB of bits).
CHUNK_ROWS = 1 << 19


class Tombstones:
    """A set of row numbers, as bits; *listed*: also each row in the order removed (a
    compaction renumbers those removed while it ran, :meth:`rows`)."""

    def __init__(self, listed: bool = False) -> None:
        self._chunks: list[bytearray | None] = []
        self._count = 0
        self._listed = array("q") if listed else None

    @classmethod
    def of_rows(cls, rows: npt.NDArray[np.int64]) -> Tombstones:
        """The tombstones of *rows* (distinct), set a chunk at a time."""
        made, rows = cls(), np.sort(rows)
        chunks = rows // CHUNK_ROWS
        bounds = np.flatnonzero(np.diff(chunks)) + 1
        for part in np.split(rows, bounds) if len(rows) else ():
            index = int(part[0]) // CHUNK_ROWS
            at = part - index * CHUNK_ROWS
            bits = np.zeros(CHUNK_ROWS // 8, dtype=np.uint8)
            np.bitwise_or.at(bits, at >> 3, np.left_shift(1, at & 7).astype(np.uint8))
            made._chunk(index)[:] = bits.data
        made._count = len(rows)
        return made

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        listed = self._listed.itemsize * len(self._listed) if self._listed is not None else 0
        return sum(len(chunk) for chunk in self._chunks if chunk is not None) + listed

    def __contains__(self, row: int) -> bool:
        index, at = divmod(row, CHUNK_ROWS)
        chunk = self._chunks[index] if index < len(self._chunks) else None
        return chunk is not None and bool(chunk[at >> 3] >> (at & 7) & 1)

    def add(self, rows: Iterable[int]) -> None:
        for row in rows:
            index, at = divmod(row, CHUNK_ROWS)
            chunk = self._chunk(index)
            if not chunk[at >> 3] >> (at & 7) & 1:
                chunk[at >> 3] |= 1 << (at & 7)
                self._count += 1
                if self._listed is not None:
                    self._listed.append(row)

    def _chunk(self, index: int) -> bytearray:
        if index >= len(self._chunks):
            self._chunks.extend([None] * (index + 1 - len(self._chunks)))
        chunk = self._chunks[index]
        if chunk is None:
            chunk = self._chunks[index] = bytearray(CHUNK_ROWS // 8)
        return chunk

    def drop_from(self, found: dict[int, int]) -> None:
        """Delete the removed rows from *found* (``{row: ...}``)."""
        for row in [row for row in found if row in self]:
            del found[row]

    def removed_between(self, start: int, stop: int) -> npt.NDArray[np.bool_]:
        """Whether each row ``start ... stop - 1`` was removed."""
        removed = np.zeros(stop - start, dtype=bool)
        for index in range(start // CHUNK_ROWS, -(-stop // CHUNK_ROWS)):
            chunk = self._chunks[index] if index < len(self._chunks) else None
            if chunk is None:
                continue
            low, high = max(start, index * CHUNK_ROWS), min(stop, (index + 1) * CHUNK_ROWS)
            first = low - index * CHUNK_ROWS
            data = np.frombuffer(chunk, dtype=np.uint8, count=-(-(high - low + first % 8) // 8), offset=first // 8)
            removed[low - start : high - start] = np.unpackbits(data, bitorder="little")[first % 8 :][: high - low]
        return removed

    def rows(self) -> npt.NDArray[np.int64]:
        """The rows, in the order removed (*listed* only)."""
        if self._listed is None:
            raise ValueError("these tombstones keep no list of their rows")
        return np.array(self._listed, dtype=np.int64)
