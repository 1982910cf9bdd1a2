"""An append-only NumPy column that grows without copying itself at once.

:class:`GrowableArray` grows by 1/8 and moves to its larger copy a slice per append (see
below): the in-memory index's per-row columns, its keys' bytes and their ends, the
sketches and the short pages' shingles.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ._pages import PageToucher, take_turn
from ._release import release_later

# GrowableArray grows by 1/8 (slack, hence memory, stays small: at most ~9.6 bytes a
# fingerprint for 8) and moves to its larger copy a slice per append, starting when
# 1/16 of its room is left: no append copies the whole array (0.24 s for a 10M-row
# index's columns), and the copy is done when a quarter of that room is used. Both copies
# are allocated meanwhile, as in any copy: for n / 63 appends (160k at 10M rows). (256
# values a value, the copy of a row's sketch was 8 KB an insert: at 100M rows, read and
# written into fresh pages, it took an insert 10.6 us to append its row, 4.7 at 10M.) An
# append that would write into a fresh 2 MB page of the copy only faults it in (see
# _pages: 7-9 ms a page on the VM measured, the longest checks left at 10M).
GROWTH = 1.125
_MIN_CAPACITY = 1024
_COPY_PER_VALUE = 64  # values copied per value appended while moving: 512 bytes of uint64
_ROW_BYTES = 4096  # what a row appends at most (a sketch's words, a key's bytes)


def capacity_for(size: int) -> int:
    """The values a new column of *size* values has room for, before it grows."""
    return max(_MIN_CAPACITY, size + size // 16)


class GrowableArray:
    """An append-only 1-D NumPy array."""

    def __init__(self, dtype: npt.DTypeLike, values: npt.ArrayLike | None = None) -> None:
        initial = np.asarray(values if values is not None else [], dtype=dtype)
        self._size = initial.size
        self._data = np.empty(capacity_for(self._size), dtype=dtype)
        self._data[: self._size].reshape(initial.shape)[...] = initial  # (a strided column: one copy)
        self._next: npt.NDArray[Any] | None = None  # the larger copy being filled
        self._next_pages: PageToucher | None = None  # _next's pages, faulted in one by one
        self._view: memoryview | None = None  # _data's bytes, for extend_bytes
        self._copied = 0  # values of _data already in _next

    @classmethod
    def adopting(cls, data: npt.NDArray[Any], size: int) -> GrowableArray:
        """The column of the first *size* values of *data*, the rest its room (no copy)."""
        column = cls(data.dtype)
        column._data, column._size = data, size
        return column

    def __len__(self) -> int:
        return self._size

    @property
    def values(self) -> npt.NDArray[Any]:
        """The stored values (a view: valid until the next append)."""
        return self._data[: self._size]

    @property
    def nbytes(self) -> int:
        """Allocated bytes, slack (and a larger copy being filled) included."""
        return int(self._data.nbytes + (self._next.nbytes if self._next is not None else 0))

    def append(self, value: int) -> None:
        if self._size == len(self._data):
            self._reserve(self._size + 1)
        self._data[self._size] = value
        self._size += 1
        self._move(1)

    def extend(self, values: npt.ArrayLike) -> None:
        values = np.asarray(values, dtype=self._data.dtype)
        end = self._size + len(values)
        if end > len(self._data):
            self._reserve(end)
        self._data[self._size : end] = values
        self._size = end
        self._move(len(values))

    def extend_bytes(self, data: bytes) -> None:
        """:meth:`extend` with values given as their bytes in the machine's order (a
        memoryview's copy: ~0.1 us, where a NumPy array of them and its copy take ~1)."""
        itemsize = self._data.itemsize
        end = self._size + len(data) // itemsize
        if end > len(self._data):
            self._reserve(end)
        if self._view is None:
            self._view = self._data.data.cast("B")
        self._view[self._size * itemsize : end * itemsize] = data
        appended, self._size = end - self._size, end
        self._move(appended)

    def _move(self, appended: int) -> None:
        """Copy a slice into the larger array (starting one when 1/16 of the room is left)."""
        if self._next is None:
            if len(self._data) - self._size > len(self._data) // 16:
                return
            self._next = np.empty(int(len(self._data) * GROWTH) + 1, dtype=self._data.dtype)
            self._next_pages, self._copied = PageToucher(self._next), 0
        stop = min(self._copied + appended * _COPY_PER_VALUE, self._size)
        if self._next_pages is not None:
            if appended * self._data.itemsize <= _ROW_BYTES and self._next_pages.needs_touch(stop):
                if take_turn():  # (else in a later call: see _pages.one_call)
                    self._next_pages.touch_next(stop)
                return  # (a fresh page of the copy: faulted in by a row's append alone)
            self._next_pages.filled_until(stop)  # (a bulk one copies, its pages faulted in as it writes)
        self._next[self._copied : stop] = self._data[self._copied : stop]
        self._copied = stop
        if stop == self._size:
            release_later(self._data)
            self._data, self._next, self._view, self._next_pages = self._next, None, None, None

    def _reserve(self, needed: int) -> None:
        """Room for *needed* values at once (a bulk extend, or appends outrunning the move)."""
        capacity = max(needed, int(len(self._data) * GROWTH) + 1)
        grown = np.empty(capacity, dtype=self._data.dtype)
        grown[: self._size] = self._data[: self._size]
        self._data, self._next, self._view, self._next_pages = grown, None, None, None
