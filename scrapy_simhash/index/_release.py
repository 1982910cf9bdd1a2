"""Freeing what upkeep drops a part a step: a compaction's old columns (:mod:`._dropping`),
and the memory of any large array, a slice a call (:func:`release_later`).

Freed at once when a compaction ends, the old columns of a 10M-row index (~1.3 GB of NumPy
arrays on huge pages, ~1 ms a GB) and the key lookup's rows added since its last merge (a
``dict`` of up to ``n / 64`` CRCs: 3.6 ms for 156k) held that call 3.7 ms more.
:func:`release_steps` drops one part a step, and empties a dict :data:`DICT_ENTRIES` a step.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from ._pages import DONT_NEED, HUGE_PAGE, advise, advises_pages, in_call, take_release_turn

#: Entries of a dict dropped a step (~0.7 ms).
DICT_ENTRIES = 1 << 15


def release_steps(parts: list[object]) -> Iterator[None]:
    """Steps that free *parts* (which nothing else holds any more), one a step; their large
    arrays' memory goes a slice a call after (:func:`release_later`)."""
    while parts:
        part = parts.pop()
        while isinstance(part, dict) and part:
            for _ in range(min(DICT_ENTRIES, len(part))):
                part.popitem()
            yield
        release_later(part)
        del part
        yield


#: What :func:`release_step` hands back to the kernel at most a call: on 4 KB pages freeing
#: took ~0.08 ms a MB (256 MB: 18.5-24.9 ms of CPU time, against 0.8-1.1 on huge pages).
RELEASED_PER_STEP = 16 << 20
#: Arrays whose memory is handed back a slice per call, and how far each got.
_released: deque[list[Any]] = deque()
_releasing = threading.Lock()


def release_later(holder: object) -> None:
    """Hand the memory of *holder*'s large arrays (itself, or those its attributes hold, three
    levels down) back to the kernel a slice per :func:`release_step`, when no one else holds
    them. Freed at once where it dropped them, an array :class:`._pages.PageToucher` faulted in 4 KB
    pages (before ``khugepaged`` collapsed them) held that call ~0.08 ms a MB: 26 ms for a
    10M-row index's keys at a compaction's end. Only inside an index's call (:func:`one_call`),
    whose upkeep frees a slice a call: a bulk load's or a lookup's arrays go at once, as they
    may come faster than calls free them."""
    if not advises_pages() or _OWN_REFERENCES is None or not in_call():
        return
    for array in _large_arrays(holder, 3):
        _released.append([array, 0])


def release_step() -> None:
    """Hand back :data:`RELEASED_PER_STEP` of the first array :func:`release_later` was given;
    its last slice done, or someone else holding it (a view), let it go. Once a call
    (:func:`one_call`), besides its turn of upkeep: at most ~1.3 ms."""
    if not _released or not take_release_turn():
        return
    if not _releasing.acquire(blocking=False):  # (another thread's call is at it)
        return
    try:
        _release_slice()
    finally:
        _releasing.release()


def release_all() -> None:
    """Hand back every array :func:`release_later` was given, now (an index closing)."""
    with _releasing:
        while _released and _OWN_REFERENCES is not None:
            _release_slice()


def _release_slice() -> None:
    """Hand back a slice of the first array waiting that no one else holds (under the lock)."""
    while _released and _OWN_REFERENCES is not None:
        entry = _released[0]
        if _references(entry) > _OWN_REFERENCES or entry[1] >= entry[0].nbytes:  # (someone reads it, or done)
            _released.popleft()
            continue
        array, done = entry
        base = array.ctypes.data
        start = base + done
        end = (start + RELEASED_PER_STEP) // HUGE_PAGE * HUGE_PAGE  # (whole huge pages: none split)
        end = min(end if end > start else start + RELEASED_PER_STEP, base + array.nbytes)
        advise(start, end - start, DONT_NEED)  # (the pages' memory goes; the array, unread, with its owner)
        entry[1] = end - base
        return


def _references(entry: list[Any]) -> int:
    """The references to the array of a :data:`_released` entry, this count's own included."""
    return sys.getrefcount(entry[0])


#: What :func:`_references` counts when only the entry holds the array (2 on CPython 3.11;
#: measured, not assumed: interpreters differ). ``None`` where references are not counted.
_OWN_REFERENCES = _references([np.empty(0), 0]) if hasattr(sys, "getrefcount") else None


def _large_arrays(holder: object, depth: int) -> Iterator[npt.NDArray[Any]]:
    """The arrays of at least 2 :data:`RELEASED_PER_STEP` that own their memory, *holder*
    itself or held by its attributes, *depth* levels down."""
    if isinstance(holder, np.ndarray):
        if holder.flags.owndata and holder.nbytes >= 2 * RELEASED_PER_STEP:
            yield holder
    elif depth and hasattr(holder, "__dict__") and not isinstance(holder, type):
        for value in vars(holder).values():
            yield from _large_arrays(value, depth - 1)
    elif depth and isinstance(holder, (list, tuple)):
        for value in holder:
            yield from _large_arrays(value, depth - 1)
