"""The short pages' shingles of a column of sketches, packed (:class:`ShingleColumn`).

A short page's sketch carries its 16-bit shingles after its first 32 bytes
(:mod:`scrapy_simhash.core.sketch`): up to 400 bytes, for most pages of a documentation
site. Held as a ``bytes`` object each in a dict they cost ~120 bytes of Python overhead
apiece; here they are one buffer, with the rows that have some (sorted: rows are only
ever appended) and where each one's bytes end, 16 bytes a short page.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left

import numpy as np
import numpy.typing as npt


class ShingleColumn:
    """The bytes after the first 32 of the short pages' sketches, by row."""

    def __init__(
        self,
        rows: npt.ArrayLike | None = None,
        ends: npt.ArrayLike | None = None,
        data: bytes | bytearray = b"",
    ) -> None:
        """*rows*: increasing row numbers; *ends*: where each row's bytes end in *data*."""
        # (arrays of the array module: compact, and appended to one at a time)
        self._rows = array("q", np.asarray(rows if rows is not None else [], dtype=np.int64).tobytes())
        self._ends = array("Q", np.asarray(ends if ends is not None else [], dtype=np.uint64).tobytes())
        self._data = data if isinstance(data, bytearray) else bytearray(data)
        if len(self._rows) != len(self._ends):
            raise ValueError(f"{len(self._rows)} rows but {len(self._ends)} ends")

    def __len__(self) -> int:
        """How many rows have shingles."""
        return len(self._rows)

    @property
    def nbytes(self) -> int:
        return len(self._data) + len(self._rows) * 16

    def get(self, row: int) -> bytes:
        """*row*'s bytes (empty when it has none)."""
        at = bisect_left(self._rows, row)
        if at == len(self._rows) or self._rows[at] != row:
            return b""
        return bytes(self._data[(self._ends[at - 1] if at else 0) : self._ends[at]])

    def append(self, row: int, shingles: bytes) -> None:
        """Give *row* (past every row that has some) its *shingles* (non-empty)."""
        if self._rows and row <= self._rows[-1]:
            raise ValueError(f"row {row} comes before row {self._rows[-1]}")
        self._data += shingles
        self._rows.append(row)
        self._ends.append(len(self._data))

    def extend_from(self, other: ShingleColumn, first_row: int) -> None:
        """Append *other*'s rows, renumbered from *first_row*."""
        if not len(other):
            return
        start = len(self._data)
        self._data += other._data
        self._rows.extend(array("q", (np.frombuffer(other._rows, dtype=np.int64) + first_row).tobytes()))
        self._ends.extend(array("Q", (np.frombuffer(other._ends, dtype=np.uint64) + np.uint64(start)).tobytes()))

    def compress(self, keep: npt.NDArray[np.bool_]) -> ShingleColumn:
        """The rows *keep* keeps (a mask over all rows), renumbered."""
        rows, ends = np.frombuffer(self._rows, dtype=np.int64), np.frombuffer(self._ends, dtype=np.uint64)
        starts = np.concatenate(([0], ends[:-1])).astype(np.uint64)
        kept = keep[rows]
        new_rows = (np.cumsum(keep) - 1)[rows[kept]]
        data = b"".join(self._data[int(a) : int(b)] for a, b in zip(starts[kept], ends[kept]))
        lengths = (ends - starts)[kept]
        return ShingleColumn(new_rows, np.cumsum(lengths, dtype=np.uint64), data)
