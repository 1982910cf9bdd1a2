"""Rows by a 32-bit CRC, for a column that only grows at the end (:class:`CrcTable`): the
key lookup of the in-memory index (:mod:`._key_lookup`) and of a Redis worker's mirror.

A :class:`CrcTable` holds the rows sorted by CRC (8 bytes a row: CRC and row id) plus the
rows added since its last merge, chained by CRC in plain ints (as the tables' write buffer
in :mod:`.memory`: nothing for the garbage collector to walk), merged in once they are
``max(4096, n / 64)``, a slice per row added (:func:`._merge.interleave`: no call does the
O(n) merge at once). A compaction of the index renumbers it a slice a step
(:meth:`CrcTable.compaction_steps`).
"""

from __future__ import annotations

from array import array
from collections.abc import Generator, Iterator, Sequence

import numpy as np
import numpy.typing as npt

from . import _merge
from ._pages import PageToucher, take_turn
from ._release import release_later
from ._renumbering import Renumbering

_MIN_RECENT = 4096
_EMPTY = np.empty(0, dtype=np.uint32)
# CRCs of a merge placed per step: random reads into the sorted CRCs, ~1 ms at 10M rows.
_SEARCHED_PER_STEP = 8192


class _Recent:
    """Rows ``first ...`` and their CRCs: ``crc -> newest row``, and per row the one
    before it with the same CRC (-1: none), all as offsets from *first* (so that a
    compaction renumbers them by moving *first*)."""

    def __init__(self, first: int) -> None:
        self.first = first
        self.crcs = array("I")  # (4 bytes, as np.uint32)
        self._newest: dict[int, int] = {}
        self._older = array("q")

    def add(self, crc: int) -> None:
        at = len(self.crcs)
        self.crcs.append(crc)
        self._older.append(self._newest.get(crc, -1))
        self._newest[crc] = at

    def rows_with(self, crc: int, since: int = 0) -> list[int]:
        rows, at = [], self._newest.get(crc, -1)
        while at >= 0 and self.first + at >= since:
            rows.append(self.first + at)
            at = self._older[at]
        return rows[::-1]


class CrcTable:
    """Rows ``0, 1, ...`` by their CRC, for a column that only grows at the end."""

    def __init__(self) -> None:
        self._crcs: npt.NDArray[np.uint32] = _EMPTY  # sorted
        self._rows: npt.NDArray[np.uint32] = _EMPTY  # the row of each CRC above
        self._recent = _Recent(0)
        self._frozen: _Recent | None = None  # being merged by _merging
        self._merging: Iterator[None] | None = None
        self.rows = 0  # rows added so far
        self._holding = False  # a compaction is under way: no merge starts (compaction_steps)

    def extend(self, crcs: Sequence[int] | npt.NDArray[np.uint32]) -> None:
        """Add the next rows, with these CRCs."""
        if len(crcs) >= _MIN_RECENT and not self._holding:  # in bulk (a mirror reading the log): sorted in at once
            self._merge()
            self._recent = _Recent(self.rows)
            self._recent.crcs.frombytes(np.asarray(crcs, dtype=np.uint32).tobytes())
            self.rows += len(crcs)
            self._merge()
            return
        for crc in crcs.tolist() if isinstance(crcs, np.ndarray) else crcs:
            self._recent.add(crc)
            self.rows += 1
            if self._merging is not None and take_turn():
                next(self._merging, None)
        if len(self._recent.crcs) >= max(_MIN_RECENT, len(self._crcs) // 64) and not self._holding:
            self._start_merge()

    @property
    def merging(self) -> bool:
        """Whether a merge is under way."""
        return self._merging is not None

    def merge_step(self) -> None:
        """Run a step of the merge under way."""
        if self._merging is not None:
            next(self._merging, None)

    def rows_with(self, crc: int, since: int = 0) -> list[int]:
        """The rows with this CRC, in the order added; those from row *since* on only."""
        value = np.uint32(crc)  # of the array's type: a Python int would convert the whole array
        start = int(self._crcs.searchsorted(value))
        if start < len(self._crcs) and self._crcs[start] == value:  # (a new page's key: seldom)
            stop = int(self._crcs.searchsorted(value, side="right"))
            found = self._rows[start:stop]
            rows = (found[found >= since] if since else found).tolist()
        else:
            rows = []
        if self._frozen is not None:
            rows += self._frozen.rows_with(crc, since)
        return rows + self._recent.rows_with(crc, since)

    @classmethod
    def of_sorted(cls, arrays: KeyArrays) -> CrcTable:
        """The table of rows ``0 ... len(crcs) - 1`` from their sorted CRCs and rows (:meth:`settled`)."""
        table = cls()
        (table._crcs, table._rows), table.rows = arrays, len(arrays[0])
        table._recent = _Recent(table.rows)
        return table

    def settled(self) -> KeyArrays:
        """Every row sorted in (now): the sorted CRCs and the row of each."""
        self._merge()
        return self._crcs, self._rows

    def without_rows_before(self, first: int) -> CrcTable:
        """A table of rows ``first ...`` only, renumbered from 0."""
        self._merge()
        kept = self._rows >= first
        table = CrcTable.of_sorted((self._crcs[kept], self._rows[kept] - np.uint32(first)))
        table.rows = max(self.rows - first, 0)
        table._recent = _Recent(table.rows)
        return table

    @property
    def nbytes(self) -> int:
        return int(self._crcs.nbytes + self._rows.nbytes)

    def compaction_steps(self, renumbering: Renumbering) -> Generator[None, None, CrcTable]:
        """Steps that build the table of the rows *renumbering* keeps, renumbered; this
        table has every row before the compaction (``renumbering.rows``) and no merge under
        way. It answers meanwhile; rows added from now on wait in its recent rows, no merge
        starting, for :meth:`adopt_recent`."""
        frozen, self._recent, self._holding = self._recent, _Recent(self.rows), True
        self._frozen = frozen  # (answered from, as a merge's)
        return self._compacted(frozen, renumbering)

    def _compacted(self, frozen: _Recent, renumbering: Renumbering) -> Generator[None, None, CrcTable]:
        compacted = CrcTable()
        compacted._crcs, compacted._rows = yield from _kept_sorted_steps(self._crcs, self._rows, renumbering)
        kept = renumbering.keep[frozen.first : renumbering.rows]
        recent = _Recent(renumbering.kept_before(frozen.first))
        recent.crcs.frombytes(np.frombuffer(frozen.crcs, dtype=np.uint32)[kept].tobytes())
        compacted.rows = renumbering.kept
        yield from compacted._merge_steps(recent)
        return compacted

    def frozen_dicts(self) -> list[dict[int, int]]:
        """The dict of the rows it holds apart from its sorted arrays and its recent rows
        (those being merged or compacted): what :mod:`._release` empties once it is dropped."""
        return [] if self._frozen is None else [self._frozen._newest]

    def adopt_recent(self, old: CrcTable, dropped: int) -> None:
        """Take the rows *old* held during the compaction that built this table (which
        dropped *dropped* rows), renumbered (an offset moved)."""
        self._recent, self.rows = old._recent, old.rows - dropped
        self._recent.first -= dropped

    def _merge(self) -> None:
        """Sort every row in now."""
        if len(self._recent.crcs):
            self._start_merge()
        self._finish_merge()

    def _start_merge(self) -> None:
        self._finish_merge()  # (at the default bound, long done by now)
        self._frozen, self._recent = self._recent, _Recent(self.rows)
        self._merging = self._merge_steps(self._frozen)

    def _finish_merge(self) -> None:
        """Run the merge under way, if any, to its end."""
        for _ in self._merging or ():
            pass

    def _merge_steps(self, frozen: _Recent) -> Iterator[None]:
        """Sort *frozen*'s rows in (stable: the rows of a CRC stay in the order added), a
        slice of the merged arrays a step; the table answers from the old ones meanwhile."""
        crcs = np.frombuffer(frozen.crcs, dtype=np.uint32) if len(frozen.crcs) else _EMPTY
        order = np.argsort(crcs.astype(np.uint16), kind="stable")  # two 16-bit radix passes: ~1 ms
        yield  # (each, for 131k rows)
        order = order[np.argsort((crcs[order] >> 16).astype(np.uint16), kind="stable")]
        new_crcs, new_rows = crcs[order], (order + frozen.first).astype(np.uint32)
        # after the older rows of a CRC: their places in the merged arrays (a slice a step)
        targets = np.empty(len(order), dtype=np.int64)
        for start in range(0, len(order), _SEARCHED_PER_STEP):
            yield
            part = slice(start, start + _SEARCHED_PER_STEP)
            targets[part] = np.searchsorted(self._crcs, new_crcs[part], side="right")
        targets += np.arange(len(order))
        size = len(self._crcs) + len(order)
        merged_crcs, merged_rows = np.empty(size, dtype=np.uint32), np.empty(size, dtype=np.uint32)
        pages = [PageToucher(merged_crcs), PageToucher(merged_rows)]
        for low in range(0, size, _merge.STEP_ENTRIES):
            yield
            high = min(low + _merge.STEP_ENTRIES, size)
            for toucher in pages:  # (a step a fresh page: see _pages)
                yield from toucher.steps_until(high)
            first, last = np.searchsorted(targets, [low, high])
            old = slice(low - first, high - last)  # the old entries between
            _merge.interleave(merged_crcs, low, self._crcs[old], targets[first:last], new_crcs[first:last])
            _merge.interleave(merged_rows, low, self._rows[old], targets[first:last], new_rows[first:last])
        release_later((self._crcs, self._rows))
        self._crcs, self._rows, self._frozen, self._merging = merged_crcs, merged_rows, None, None


#: A key lookup settled: its CRCs, sorted, and the row of each (a disk store's snapshot).
KeyArrays = tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]


def _kept_sorted_steps(
    crcs: npt.NDArray[np.uint32], rows: npt.NDArray[np.uint32], renumbering: Renumbering
) -> Generator[None, None, KeyArrays]:
    """The entries of sorted *crcs* and their *rows* (rows ``0 ... len(rows) - 1``) whose
    rows *renumbering* keeps, renumbered, in new arrays, a slice a step."""
    size, step = renumbering.kept_before(len(rows)), max(1, _merge.STEP_ENTRIES // 2)  # (~1 ms at 10M)
    kept_crcs, kept_rows = np.empty(size, dtype=np.uint32), np.empty(size, dtype=np.uint32)
    pages, at = [PageToucher(kept_crcs), PageToucher(kept_rows)], 0
    for start in range(0, len(rows), step):
        part = rows[start : start + step]
        keep = renumbering.keep[part]
        count = int(np.count_nonzero(keep))
        for toucher in pages:
            yield from toucher.steps_until(at + count)
        kept_crcs[at : at + count] = crcs[start : start + step][keep]
        kept_rows[at : at + count] = renumbering.before[part[keep]]
        at += count
        yield
    return kept_crcs, kept_rows
