"""The sketches of a column of rows (:class:`SketchStore`), a short page's shingles
packed apart (:class:`ShingleColumn`).

A sketch is 32 bytes (:mod:`scrapy_simhash.core.sketch`), and a short page's carries its
16-bit shingles after them: up to 400 bytes, for most pages of a documentation site. Held
as a ``bytes`` object each in a dict they cost ~120 bytes of Python overhead apiece; a
:class:`ShingleColumn` holds them in one buffer, with the rows that have some (sorted:
rows are only ever appended) and where each one's bytes end, 16 bytes a short page.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from ..core.sketch import SKETCH_BYTES, Confirmation, check_sketch, common_shingles, is_exact, shingles_of
from ._storage import GrowableArray

_LITTLE_ENDIAN = sys.byteorder == "little"


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


class SketchStore:
    """The sketch of every row (:mod:`scrapy_simhash.core.sketch`): its 32 bytes as four
    uint64 words a row, and a short page's 16-bit shingles after them, by row.

    A row stored without a sketch holds zeros and reads back as ``None``
    (:func:`~scrapy_simhash.core.sketch.check_sketch`).
    """

    WORDS = SKETCH_BYTES // 8

    def __init__(self, words: npt.NDArray[np.uint64] | None = None, shingles: ShingleColumn | None = None) -> None:
        """*words*: four a row, flat or as ``(rows, 4)`` (a column of a disk store's records);
        *shingles*: the bytes after the first 32 of the short pages' sketches."""
        self._words = GrowableArray(np.uint64, words)
        self._shingles = shingles if shingles is not None else ShingleColumn()

    @classmethod
    def from_sketches(cls, sketches: Iterable[bytes | None]) -> SketchStore:
        """Checked sketches (:func:`~scrapy_simhash.core.sketch.check_sketch`), in one copy."""
        empty, checked = bytes(SKETCH_BYTES), list(map(check_sketch, sketches))
        data = b"".join(sketch[:SKETCH_BYTES] if sketch else empty for sketch in checked)
        shingles = ShingleColumn()
        for row, sketch in enumerate(checked):
            if sketch is not None and is_exact(sketch):
                shingles.append(row, sketch[SKETCH_BYTES:])
        return cls(np.frombuffer(data, dtype="<u8").astype(np.uint64), shingles)

    @classmethod
    def empty(cls, rows: int) -> SketchStore:
        return cls(np.zeros(rows * cls.WORDS, dtype=np.uint64))

    def __len__(self) -> int:
        return len(self._words) // self.WORDS

    @property
    def nbytes(self) -> int:
        return self._words.nbytes + self._shingles.nbytes

    @property
    def rows(self) -> npt.NDArray[np.uint64]:
        """The sketches' first 32 bytes as an ``(n, 4)`` array (a view: valid until the next append)."""
        return self._words.values.reshape(-1, self.WORDS)

    def shingles(self, row: int) -> bytes:
        """The bytes after the first 32 of *row*'s sketch (empty unless a short page's)."""
        return self._shingles.get(row)

    def append(self, sketch: bytes | None) -> None:
        """Append a row's sketch, checked before (:func:`~scrapy_simhash.core.sketch.check_sketch`:
        the index's calls check theirs first)."""
        if sketch is None:
            self._words.extend(_NO_SKETCH)
            return
        if is_exact(sketch):
            self._shingles.append(len(self), sketch[SKETCH_BYTES:])
        if _LITTLE_ENDIAN:  # (the words' bytes as stored: no NumPy array of them)
            self._words.extend_bytes(sketch[:SKETCH_BYTES])
        else:
            self._words.extend(_sketch_words(sketch))

    def extend_from(self, other: SketchStore) -> None:
        self._shingles.extend_from(other._shingles, len(self))
        self._words.extend(other._words.values)

    def __getitem__(self, row: int) -> bytes | None:
        words = self.rows[row]
        return words.tobytes() + self.shingles(row) if words.any() else None

    def distances(self, rows: npt.NDArray[np.intp], sketch: bytes) -> npt.NDArray[np.int64]:
        """Bits in which each row's sketch differs from *sketch*; -1 for rows without one."""
        stored = self.rows[rows]
        differing = np.bitwise_count(stored ^ _sketch_words(sketch)).sum(axis=1, dtype=np.int64)
        differing[~stored.any(axis=1)] = -1
        return differing

    def confirm(
        self, rows: npt.NDArray[np.intp], sketch: bytes, confirmation: Confirmation
    ) -> list[tuple[bool, float | None]]:
        """Whether each row's sketch confirms a match with *sketch*, and the similarity:
        ``(True, None)`` for rows stored without one (:meth:`SimhashIndex.confirm`)."""
        query_shingles = shingles_of(sketch) if is_exact(sketch) else None
        verdicts: list[tuple[bool, float | None]] = []
        for row, differing in zip(rows.tolist(), self.distances(rows, sketch).tolist()):
            if differing < 0:  # stored without a sketch: the fingerprints alone decide
                verdicts.append((True, None))
                continue
            stored = self._shingles.get(row) if query_shingles is not None else b""
            if stored and query_shingles is not None:  # two short pages
                stored_shingles = np.frombuffer(stored, dtype="<u2")
                similarity = confirmation.by_shingles(*common_shingles(query_shingles, stored_shingles))
            else:  # (the distance computed above, for all the rows at once)
                similarity = confirmation.by_distance(differing)
            verdicts.append((similarity is not None, similarity))
        return verdicts

    def compress(self, keep: npt.NDArray[np.bool_]) -> SketchStore:
        return SketchStore(self.rows[keep].reshape(-1), self._shingles.compress(keep))


_NO_SKETCH = np.zeros(SketchStore.WORDS, dtype=np.uint64)
_NO_SKETCH.flags.writeable = False


def _sketch_words(sketch: bytes | None) -> npt.NDArray[np.uint64]:
    """A sketch's first 32 bytes as four words (a read-only view of them, no copy where the
    machine is little-endian, as the stored words are)."""
    if sketch is None:
        return _NO_SKETCH
    return np.frombuffer(sketch, dtype="<u8", count=SketchStore.WORDS).astype(np.uint64, copy=False)
