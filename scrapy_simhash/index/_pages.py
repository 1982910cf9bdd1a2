"""Faulting fresh memory in 2 MB per step, ahead of the merge steps that fill it.

A merge (:mod:`._merge`, and the key lookup's in :mod:`._crc_table`) writes its new
arrays into fresh allocations. The first write into each page faults it in: the kernel
zeroes it, and on the VM these figures come from, whose host backs its memory when first
touched, a 2 MB huge page took 4.6 ms on average and up to 9.6 ms, against 0.19 ms for
memory touched before (a C loop writing a byte per 2 MB of 1 GB, 512 faults each way).
Merge steps of 2**18 entries wrote 1 to 3 MB each: at 10M rows the longest check took
11.9-14.3 ms of CPU time, nearly all of it in the kernel, and 12-19 checks over 10 ms. So
the pages an array is about to be filled in are touched first, 2 MB in a step of its own,
and in 4 KB pages (:class:`PageToucher`): no step faults in more than 2 MB, nor a huge page.

Nor does a call of the index do more than one such unit of upkeep (a merge's or a
compaction's step, or a fresh page of a growing column): :func:`one_call` spans a call,
:func:`take_turn` gives its one turn. A crawl's check of a changed page is a removal then an
insert; with a compaction's step at the removal and a column's fresh page at the insert,
a call took 10.2 ms at 10M rows.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

#: The transparent huge page of x86-64 (and of most arm64 kernels).
HUGE_PAGE = 2 << 20
#: The base page: what a fresh array's touch faults in at a time (see PageToucher).
SMALL_PAGE = mmap.PAGESIZE

_call = threading.local()  # depth: calls open in this thread; spent: their turn was taken; released: a slice


class _OneCall:
    """The context of :func:`one_call`: a class, not a generator (a check opens two or three)."""

    __slots__ = ()

    def __enter__(self) -> None:
        depth = getattr(_call, "depth", 0)
        if not depth:
            _call.spent = _call.released = False
        _call.depth = depth + 1

    def __exit__(self, *exc_info: object) -> None:
        _call.depth -= 1


_ONE_CALL = _OneCall()


def one_call() -> _OneCall:
    """Mark the index's work inside as one call (nested calls join the outer one)."""
    return _ONE_CALL


def in_call() -> bool:
    """Whether this thread is inside an index's call (:func:`one_call`)."""
    return getattr(_call, "depth", 0) > 0


def take_release_turn() -> bool:
    """Whether a slice of dropped memory may be handed back now (:mod:`._release`): once a
    call, besides its turn of upkeep; any time outside one."""
    return _first_in_call("released")


def take_turn() -> bool:
    """Whether a unit of upkeep may run now: the first asked in a call, and any outside one."""
    return _first_in_call("spent")


def _first_in_call(turn: str) -> bool:
    """Whether this call has not taken its *turn* yet (and takes it now); True outside a call."""
    if not in_call():
        return True
    if getattr(_call, turn):
        return False
    setattr(_call, turn, True)
    return True


class PageToucher:
    """Touches the pages of a fresh array in order, 2 MB per step, in 4 KB pages.

    The array is taken off transparent huge pages (``MADV_NOHUGEPAGE``) until touched: where
    a host backs its guest's memory on first touch and takes back what the guest frees (this
    VM: free page reporting at 2 MB), a fresh huge page took 4.5-5.0 ms to fault in and up to
    14 ms, against 1.1-1.3 ms for the same 2 MB in 4 KB pages, at most 0.5-2.8 ms a page (a C
    loop over 1 GiB freed and reported before; 0.23-0.26 ms in either kind of page where the
    memory was touched before). Each 2 MB touched is then given back to huge pages
    (``MADV_HUGEPAGE``), which the kernel's ``khugepaged`` collapses it into in the background,
    off this thread: the tables, which merges fill whole, get their huge pages back (at 10M
    rows a check's probe took 8.6 us on huge pages, 9.9 on 4 KB ones); a column's room past
    its rows stays on 4 KB pages, faulted in by the appends that fill it.
    """

    def __init__(self, array: npt.NDArray[Any]) -> None:
        self._bytes = array.reshape(-1).view(np.uint8)  # (a view: the array must be contiguous)
        self._itemsize = array.itemsize
        self._next = 0  # the first byte whose page may not be faulted in yet
        self._address = array.ctypes.data
        self._first_page = -self._address % HUGE_PAGE  # where the first whole page begins
        if len(self._bytes) > self._first_page + HUGE_PAGE:  # (holds a whole huge page)
            advise(self._address, len(self._bytes), _NO_HUGE_PAGES)

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
        start, self._next = self._next, self._page_at_or_after(end)
        self._to_huge_pages(start)

    def touch_next(self, stop: int) -> bool:
        """Touch the first 2 MB not touched yet (its 4 KB pages) if it begins before value
        *stop*: whether there was one."""
        if not self.needs_touch(stop):
            return False
        start, self._next = self._next, self._page_at_or_after(self._next + 1)
        self._bytes[start : self._next : SMALL_PAGE] = 0  # (values the steps that fill them overwrite)
        self._to_huge_pages(start)
        return True

    def _page_at_or_after(self, offset: int) -> int:
        """Where the first huge page that begins at byte *offset* or after it begins."""
        if offset <= self._first_page:
            return self._first_page
        return self._first_page + -(-(offset - self._first_page) // HUGE_PAGE) * HUGE_PAGE

    def _to_huge_pages(self, start: int) -> None:
        """Give the whole huge pages from byte *start* to :attr:`_next` (filled or touched now)
        back to huge pages."""
        start = max(start, self._first_page)
        end = min(self._next, self._first_page + (len(self._bytes) - self._first_page) // HUGE_PAGE * HUGE_PAGE)
        if end > start:
            advise(self._address + start, end - start, _HUGE_PAGES)


_HUGE_PAGES = getattr(mmap, "MADV_HUGEPAGE", None)
_NO_HUGE_PAGES = getattr(mmap, "MADV_NOHUGEPAGE", None)
DONT_NEED = getattr(mmap, "MADV_DONTNEED", None)


def _libc_madvise() -> Any:
    """libc's ``madvise`` (Linux), or ``None``: ``mmap.madvise`` advises only an ``mmap``'s
    own memory, and NumPy allocates its arrays itself."""
    if not sys.platform.startswith("linux") or _HUGE_PAGES is None:
        return None
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes, madvise.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
    return madvise


_madvise = _libc_madvise()


def advises_pages() -> bool:
    """Whether fresh arrays are taken off huge pages until touched (Linux)."""
    return _madvise is not None


def advise(address: int, length: int, advice: int | None) -> None:
    """``madvise`` the whole 4 KB pages of ``[address, address + length)``, where it can; a
    refusal (a kernel without transparent huge pages) changes nothing but speed."""
    start = -(-address // SMALL_PAGE) * SMALL_PAGE
    end = (address + length) // SMALL_PAGE * SMALL_PAGE
    if _madvise is not None and advice is not None and end > start:
        _madvise(start, end - start, advice)
