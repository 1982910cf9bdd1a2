"""Faulting fresh memory in a huge page per step, ahead of the merge steps that fill it.

A merge (:mod:`._merge`, and the key lookup's in :mod:`._crc_table`) writes its new
arrays into fresh allocations, for which NumPy asks the kernel for transparent huge pages
(2 MB). The first write into each such page faults it in whole: the kernel zeroes 2 MB, and
on the VM these figures come from, whose host backs its memory when first touched, it took
4.6 ms on average and up to 9.6 ms, against 0.19 ms for memory touched before (a C loop
writing a byte per 2 MB of 1 GB, 512 faults each way). Merge steps of 2**18 entries wrote 1
to 3 MB each: at 10M rows the longest check took 11.9-14.3 ms of CPU time, nearly all of it
in the kernel, and 12-19 checks over 10 ms. So each page an array is about to be filled in
is touched first, in a step of its own: no step faults more than one.

Nor does a call of the index do more than one such unit of upkeep (a merge's or a
compaction's step, or a fresh page of a growing column): :func:`one_call` spans a call,
:func:`take_turn` gives its one turn. A crawl's check of a changed page is a removal then an
insert; with a compaction's step at the removal and a column's fresh page at the insert,
a call took 10.2 ms at 10M rows.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

#: The transparent huge page of x86-64 (and of most arm64 kernels).
HUGE_PAGE = 2 << 20

_call = threading.local()  # depth: calls open in this thread; spent: their turn was taken


class _OneCall:
    """The context of :func:`one_call`: a class, not a generator (a check opens two or three)."""

    __slots__ = ()

    def __enter__(self) -> None:
        depth = getattr(_call, "depth", 0)
        if not depth:
            _call.spent = False
        _call.depth = depth + 1

    def __exit__(self, *exc_info: object) -> None:
        _call.depth -= 1


_ONE_CALL = _OneCall()


def one_call() -> _OneCall:
    """Mark the index's work inside as one call (nested calls join the outer one)."""
    return _ONE_CALL


def take_turn() -> bool:
    """Whether a unit of upkeep may run now: the first asked in a call, and any outside one."""
    if not getattr(_call, "depth", 0):
        return True
    if _call.spent:
        return False
    _call.spent = True
    return True


class PageToucher:
    """Touches the pages of a fresh array in order, a page per step."""

    def __init__(self, array: npt.NDArray[Any]) -> None:
        self._bytes = array.reshape(-1).view(np.uint8)  # (a view: the array must be contiguous)
        self._itemsize = array.itemsize
        self._next = 0  # the first byte whose page may not be faulted in yet
        self._first_page = -array.ctypes.data % HUGE_PAGE  # where the first whole page begins

    def steps_until(self, stop: int) -> Iterator[None]:
        """Touch every page before value *stop* (an index of the array), a step each."""
        while self.touch_next(stop):
            yield

    def needs_touch(self, stop: int) -> bool:
        """Whether a page not touched yet begins before value *stop*."""
        return self._next < min(stop * self._itemsize, len(self._bytes))

    def filled_until(self, stop: int) -> None:
        """Values before *stop* were written without this toucher (a bulk copy faulted their
        pages in itself): never touch those pages again, the touch would overwrite a value."""
        end = stop * self._itemsize
        if end <= self._next:
            return
        if end <= self._first_page:
            self._next = self._first_page
        else:
            self._next = self._first_page + -(-(end - self._first_page) // HUGE_PAGE) * HUGE_PAGE

    def touch_next(self, stop: int) -> bool:
        """Touch the first page not touched yet if it begins before value *stop*: whether
        there was one."""
        if not self.needs_touch(stop):
            return False
        self._bytes[self._next] = 0  # (a value the step that fills it overwrites)
        self._next = self._first_page if self._next < self._first_page else self._next + HUGE_PAGE
        return True
