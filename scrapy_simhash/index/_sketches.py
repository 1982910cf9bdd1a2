"""The sketches of a column of rows (:class:`SketchStore`), a short page's shingles
packed apart (:class:`ShingleColumn`).

A sketch is 32 bytes (:mod:`scrapy_simhash.core.sketch`), and a short page's carries its
16-bit shingles after them: up to 400 bytes, for most pages of a documentation site. Held
as a ``bytes`` object each in a dict they cost ~120 bytes of Python overhead apiece; a
:class:`ShingleColumn` holds them in one column of bytes, with the rows that have some
(sorted: rows are only ever appended) and where each one's bytes end, 16 bytes a short page.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterable

import numpy as np
import numpy.typing as npt

from ..core.sketch import SKETCH_BYTES, Confirmation, check_sketch, common_shingles, is_exact, shingles_of
from ._column_steps import kept_spans_steps, kept_values_steps, room_for
from ._growable import GrowableArray
from ._pages import PageToucher
from ._renumbering import Renumbering

_LITTLE_ENDIAN = sys.byteorder == "little"
#: Up to this many rows, :meth:`SketchStore.distances` counts bits in Python's ints.
_FEW_ROWS = 16


class ShingleColumn:
    """The bytes after the first 32 of the short pages' sketches, by row."""

    def __init__(
        self,
        rows: npt.ArrayLike | None = None,
        ends: npt.ArrayLike | None = None,
        data: bytes | bytearray | npt.NDArray[np.uint8] = b"",
    ) -> None:
        """*rows*: increasing row numbers; *ends*: where each row's bytes end in *data*."""
        self._rows = GrowableArray(np.int64, rows)
        self._ends = GrowableArray(np.uint64, ends)
        self._data = GrowableArray(np.uint8, np.frombuffer(data, dtype=np.uint8))
        if len(self._rows) != len(self._ends):
            raise ValueError(f"{len(self._rows)} rows but {len(self._ends)} ends")

    @classmethod
    def adopting(cls, rows: GrowableArray, ends: GrowableArray, data: GrowableArray) -> ShingleColumn:
        """The column of these arrays, as they are (no copy, nothing checked)."""
        column = cls()
        column._rows, column._ends, column._data = rows, ends, data
        return column

    def __len__(self) -> int:
        """How many rows have shingles."""
        return len(self._rows)

    @property
    def nbytes(self) -> int:
        return self._data.nbytes + self._rows.nbytes + self._ends.nbytes

    def get(self, row: int) -> bytes:
        """*row*'s bytes (empty when it has none)."""
        rows = self._rows.values
        at = int(rows.searchsorted(row))
        if at == len(rows) or rows[at] != row:
            return b""
        ends = self._ends.values
        return self._data.values[(int(ends[at - 1]) if at else 0) : int(ends[at])].tobytes()

    def append(self, row: int, shingles: bytes) -> None:
        """Give *row* (past every row that has some) its *shingles* (non-empty)."""
        if len(self._rows) and row <= self._rows.values[-1]:
            raise ValueError(f"row {row} comes before row {self._rows.values[-1]}")
        self._data.extend_bytes(shingles)
        self._rows.append(row)
        self._ends.append(len(self._data))

    def extend_from(self, other: ShingleColumn, first_row: int) -> None:
        """Append *other*'s rows, renumbered from *first_row*."""
        self._ends.extend(np.uint64(len(self._data)) + other._ends.values)
        self._rows.extend(other._rows.values + first_row)
        self._data.extend(other._data.values)

    def rows_from(self, first: int) -> ShingleColumn:
        """The bytes of rows ``first ...``, renumbered from 0, in a new column."""
        rows, ends = self._rows.values, self._ends.values
        at = int(rows.searchsorted(first))
        start = int(ends[at - 1]) if at else 0
        return ShingleColumn(rows[at:] - first, ends[at:] - np.uint64(start), self._data.values[start:])

    def compaction_steps(self, renumbering: Renumbering, step: int) -> Generator[None, None, ShingleColumn]:
        """The bytes of the rows *renumbering* keeps, renumbered, in a new column."""
        entries = int(self._rows.values.searchsorted(renumbering.rows))  # (the rows before it began)
        data, ends = yield from kept_spans_steps(lambda: (self._ends.values, self._data.values),
                                                 lambda part: renumbering.keep[self._rows.values[part]], entries, step)
        rows = np.empty(len(ends) + room_for(len(ends)), dtype=np.int64)
        pages, at = PageToucher(rows), 0
        for start in range(0, entries, step):
            old = self._rows.values[start : min(start + step, entries)]
            new = renumbering.new_rows(old[renumbering.keep[old]])
            yield from pages.steps_until(at + len(new))
            rows[at : at + len(new)] = new
            at += len(new)
            yield
        return ShingleColumn.adopting(GrowableArray.adopting(rows, at), ends, data)


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
    def adopting(cls, words: GrowableArray, shingles: ShingleColumn) -> SketchStore:
        """The store of these columns, as they are (no copy, nothing checked)."""
        store = cls()
        store._words, store._shingles = words, shingles
        return store

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

    def distances(self, rows: npt.NDArray[np.intp], sketch: bytes) -> list[int]:
        """Bits in which each row's sketch differs from *sketch*; -1 for rows without one."""
        if len(rows) > _FEW_ROWS:
            return self._distance_array(rows, sketch).tolist()  # type: ignore[no-any-return]
        # A check's handful of rows: in Python's ints, 256 bits each, where NumPy's calls cost
        # more than the rows.
        stored = self.rows[rows]
        query = int.from_bytes(sketch[:SKETCH_BYTES], "little")
        data = stored.astype("<u8", copy=False).tobytes()
        starts = range(0, len(data), SKETCH_BYTES)
        found = (int.from_bytes(data[start : start + SKETCH_BYTES], "little") for start in starts)
        return [(words ^ query).bit_count() if words else -1 for words in found]

    def confirm(
        self, rows: npt.NDArray[np.intp], sketch: bytes, confirmation: Confirmation
    ) -> list[tuple[int, float | None]]:
        """The rows whose sketch confirms a match with *sketch*, as (their place in *rows*,
        the similarity): ``None`` for rows stored without one (:meth:`SimhashIndex.confirm`)."""
        query_shingles = shingles_of(sketch) if is_exact(sketch) else None
        if query_shingles is None and len(rows) > _FEW_ROWS:
            return self._confirm_many(rows, sketch, confirmation)
        confirmed: list[tuple[int, float | None]] = []
        for at, (row, differing) in enumerate(zip(rows.tolist(), self.distances(rows, sketch))):
            if differing < 0:  # stored without a sketch: the fingerprints alone decide
                confirmed.append((at, None))
                continue
            stored = self._shingles.get(row) if query_shingles is not None else b""
            if stored and query_shingles is not None:  # two short pages
                stored_shingles = np.frombuffer(stored, dtype="<u2")
                similarity = confirmation.by_shingles(*common_shingles(query_shingles, stored_shingles))
            else:  # (the distance computed above, for all the rows at once)
                similarity = confirmation.by_distance(differing)
            if similarity is not None:
                confirmed.append((at, similarity))
        return confirmed

    def _confirm_many(
        self, rows: npt.NDArray[np.intp], sketch: bytes, confirmation: Confirmation
    ) -> list[tuple[int, float | None]]:
        """:meth:`confirm` of a long page's *sketch* (no shingles of its own to compare) with
        many rows, in NumPy: a site of near-identical pages that their sketches tell apart
        puts them all among a check's candidates (30,000 of them: 14.4 ms a check, a row a
        step in Python)."""
        differing = self._distance_array(rows, sketch)  # (-1: stored without a sketch, the fingerprints decide)
        alike = np.flatnonzero(differing <= confirmation.max_distance).tolist()
        return [(at, None if differing[at] < 0 else confirmation.by_distance(int(differing[at]))) for at in alike]

    def _distance_array(self, rows: npt.NDArray[np.intp], sketch: bytes) -> npt.NDArray[np.int64]:
        """:meth:`distances` in NumPy, for many rows."""
        stored = self.rows[rows]
        differing = np.bitwise_count(stored ^ _sketch_words(sketch)).sum(axis=1, dtype=np.int64)
        differing[~stored.any(axis=1)] = -1
        return differing

    def rows_from(self, first: int) -> SketchStore:
        """The sketches of rows ``first ...``, in a new store."""
        return SketchStore(self._words.values[first * self.WORDS :], self._shingles.rows_from(first))

    def compaction_steps(self, renumbering: Renumbering, step: int) -> Generator[None, None, SketchStore]:
        """The sketches of the rows *renumbering* keeps, in a new store, *step* rows a step."""
        words = yield from kept_values_steps(lambda: self._words.values, renumbering, step, self.WORDS)
        shingles = yield from self._shingles.compaction_steps(renumbering, step)
        store = SketchStore(shingles=shingles)
        store._words = words
        return store


_NO_SKETCH = np.zeros(SketchStore.WORDS, dtype=np.uint64)
_NO_SKETCH.flags.writeable = False


def _sketch_words(sketch: bytes | None) -> npt.NDArray[np.uint64]:
    """A sketch's first 32 bytes as four words (a read-only view of them, no copy where the
    machine is little-endian, as the stored words are)."""
    if sketch is None:
        return _NO_SKETCH
    return np.frombuffer(sketch, dtype="<u8", count=SketchStore.WORDS).astype(np.uint64, copy=False)
