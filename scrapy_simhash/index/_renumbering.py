"""Which rows a compaction of the in-memory index keeps, and their new numbers.

A compaction (:mod:`._dropping`) drops the removed rows among rows ``0 ... rows - 1`` and
numbers the others from 0 in the same order: a kept row's new number is how many kept
rows come before it. :class:`Renumbering` holds that as two arrays, filled a slice a
step (at 10M rows, 10 MB and 40 MB: filled at once, with their fresh pages, they would
hold a check for ~30 ms): ``keep`` (a byte a row) and ``before`` (a uint32 a row).
Rows added after the compaction began (``rows ...``) all stay: each moves down by the
number of rows dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from ._pages import PageToucher
from ._tombstones import Tombstones

#: Rows a step fills (bytes of ``keep``, words of ``before``).
FILL_ROWS = 1 << 18


class Renumbering:
    """Rows ``0 ... rows - 1`` less the *dropped* ones, numbered again from 0."""

    def __init__(self, rows: int, dropped: int) -> None:
        self.rows = rows
        self.dropped = dropped
        self.kept = rows - dropped
        self.keep = np.empty(rows, dtype=bool)  # (pages touched a step each, as they are filled)
        self.before = np.empty(rows + 1, dtype=np.uint32)  # kept rows before each row

    @property
    def nbytes(self) -> int:
        return int(self.keep.nbytes + self.before.nbytes)

    def steps(self, dropped: Tombstones) -> Iterator[None]:
        """Fill :attr:`keep` and :attr:`before` from the *dropped* rows (tombstones no one
        changes meanwhile)."""
        keep_pages, before_pages = PageToucher(self.keep), PageToucher(self.before)
        yield from before_pages.steps_until(1)  # (a page is touched before anything is written in it)
        self.before[0] = 0
        for start in range(0, self.rows, FILL_ROWS):
            stop = min(start + FILL_ROWS, self.rows)
            yield from keep_pages.steps_until(stop)
            yield from before_pages.steps_until(stop + 1)
            np.invert(dropped.removed_between(start, stop), out=self.keep[start:stop])
            np.cumsum(self.keep[start:stop], dtype=np.uint32, out=self.before[start + 1 : stop + 1])
            self.before[start + 1 : stop + 1] += self.before[start]
            yield

    def kept_before(self, row: int) -> int:
        """How many kept rows come before *row* (``0 ... rows``): its new number if kept."""
        return int(self.before[row])

    def new_rows(self, rows: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """The new numbers of these kept rows, those added since (``rows ...``) included."""
        rows = np.asarray(rows, dtype=np.int64)
        inside = rows < self.rows
        return np.where(inside, self.before[np.where(inside, rows, 0)], rows - self.dropped)

    def slices(self, step: int, stop: int | None = None) -> Iterator[tuple[slice, slice, npt.NDArray[np.bool_]]]:
        """``(old rows, their kept rows' new numbers, which are kept)`` for each *step* rows
        of rows ``0 ... stop - 1`` (all of them by default)."""
        stop = self.rows if stop is None else stop
        for start in range(0, stop, step):
            end = min(start + step, stop)
            new = slice(int(self.before[start]), int(self.before[end]))
            yield slice(start, end), new, self.keep[start:end]
