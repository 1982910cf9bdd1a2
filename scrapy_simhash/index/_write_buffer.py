"""The rows added to the in-memory index since the last merge (see :mod:`._merge`)."""

from __future__ import annotations

from array import array

import numpy as np
import numpy.typing as npt

from . import _buckets
from ._slices import SliceLayout
from ._tables import TableDesign


class WriteBuffer:
    """Rows added since the last merge, chained per table: ``bucket key -> newest row``, and
    for each row the one before it in its bucket (-1: none).

    Ints in dicts and arrays, where a list per bucket made a crawl's buffer thousands of
    lists for each full garbage collection to walk (it never visits these).
    """

    def __init__(self, design: TableDesign, first_row: int) -> None:
        self.first_row = first_row
        self._design = design
        self._newest: tuple[dict[int, int], ...] = tuple({} for _ in design.tables)
        self._older: tuple[array[int], ...] = tuple(array("q") for _ in design.tables)
        self._fingerprints = array("Q")
        self._layout = SliceLayout.of(design).packed()

    def __len__(self) -> int:
        return len(self._fingerprints)

    def add(self, row: int, fingerprint: int) -> int:
        """Buffer *row*; its table-0 bucket key."""
        if row != self.first_row + len(self._fingerprints):
            raise AssertionError("write buffer rows must be consecutive")
        if _buckets._scan is not None:
            return _buckets._scan.buffer_add(self._layout, self._newest, self._older, self._fingerprints, row, fingerprint)
        keys = self._design.bucket_keys(fingerprint)
        self._fingerprints.append(fingerprint)
        for newest, older, key in zip(self._newest, self._older, keys):
            older.append(newest.get(key, -1))
            newest[key] = row
        return keys[0]

    def fingerprint_of(self, row: int) -> int:
        return self._fingerprints[row - self.first_row]

    @property
    def fingerprints(self) -> npt.NDArray[np.uint64]:
        """The buffered rows' fingerprints (a copy)."""
        return np.array(self._fingerprints, dtype=np.uint64)

    def matches(self, fingerprint: int, max_distance: int, wildcard: int = 0) -> dict[int, int]:
        """``{row: fingerprint}`` of the buffered rows within *max_distance* off *wildcard*."""
        if _buckets._scan is not None:  # (switched as the sorted part's probe)
            return _buckets._scan.buffer_matches(self._layout, self._newest, self._older, self._fingerprints,
                                        self.first_row, fingerprint, wildcard, max_distance)
        found: dict[int, int] = {}
        counted = ~wildcard
        key_sets = self._design.probe_keys(fingerprint, wildcard)
        first = self.first_row
        for newest, older, keys in zip(self._newest, self._older, key_sets):
            for key in keys:
                row = newest.get(key, -1)
                while row >= 0:
                    stored = self._fingerprints[row - first]
                    if ((fingerprint ^ stored) & counted).bit_count() <= max_distance:
                        found[row] = stored
                    row = older[row - first]
        return found
