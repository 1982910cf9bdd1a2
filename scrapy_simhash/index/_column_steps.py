"""A compaction's copies of the in-memory index's row columns, a slice a step.

Each step copies the kept rows of a slice of the old column into a new array (whose fresh
2 MB pages are faulted in a step each, :mod:`._pages`); the old column keeps growing
meanwhile (the rows added since the compaction began, copied after it at its end, see
:mod:`._dropping`). No view of an old column is held across a step: a step reads it
again, as an append may have moved it (a :class:`~._growable.GrowableArray`) or a
``bytearray`` cannot grow while a view of it is held.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import numpy.typing as npt

from ._pages import PageToucher
from ._renumbering import Renumbering
from ._growable import GROWTH, GrowableArray
from ._storage import KeyStore

#: Key bytes a step copies at most (~0.7 ms at 10M rows, the faults of its fresh 4 KB pages included).
KEY_BYTES_PER_STEP = 1 << 19


def room_for(rows: int) -> int:
    """Rows of room a new column gets past its *rows*: a column grown by :data:`GROWTH`
    (so that appends after the compaction do not start moving it to a larger copy at once)."""
    return int(rows * (GROWTH - 1)) + 1024


def kept_values_steps(
    read: Callable[[], npt.NDArray[Any]], renumbering: Renumbering, step: int, width: int = 1
) -> Generator[None, None, GrowableArray]:
    """The kept rows of the column *read* gives (*width* values a row), in a new growable
    column with room past them (:func:`room_for`), as many bytes a step as a merge step
    moves in a table (*step* 4-byte values: a step of 2**16 rows of sketches, 2 MB, took
    ~1 ms, and ~5 ms where the fresh memory came in 4 KB pages)."""
    sample = read()
    out = np.empty((renumbering.kept + room_for(renumbering.kept)) * width, dtype=sample.dtype)
    rows_per_step = max(1, step * 4 // (sample.itemsize * width))
    del sample
    pages = PageToucher(out)
    for old, new, keep in renumbering.slices(rows_per_step):
        yield from pages.steps_until(new.stop * width)
        rows = read().reshape(-1, width)[old]
        out.reshape(-1, width)[new] = rows[keep]
        yield
    return GrowableArray.adopting(out, renumbering.kept * width)


def key_steps(keys: KeyStore, renumbering: Renumbering, step: int) -> Generator[None, None, KeyStore]:
    """The kept rows' keys, in a new store."""
    data, ends = yield from kept_spans_steps(lambda: (keys.ends, keys.buffer), renumbering.keep.__getitem__,
                                             renumbering.rows, step)
    return KeyStore.adopting(data, ends)


def kept_spans_steps(
    read: Callable[[], tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint8]]],
    keep_of: Callable[[slice], npt.NDArray[np.bool_]],
    count: int,
    step: int,
) -> Generator[None, None, tuple[GrowableArray, GrowableArray]]:
    """The byte spans of the entries *keep_of* keeps among entries ``0 ... count - 1``
    (entry ``i``: ``data[ends[i - 1] : ends[i]]``, of the ``(ends, data)`` *read* gives),
    in a new column of bytes and one of their ends: a pass that counts their bytes, *step*
    entries a step, then one that copies them, :data:`KEY_BYTES_PER_STEP` at most a step."""
    total = entries = 0
    for part in _slices(count, 4 * step):
        lengths, keep = _lengths(read()[0], part), keep_of(part)
        total, entries = total + int(lengths[keep].sum()), entries + int(np.count_nonzero(keep))
        yield
    data_out = np.empty(total + int(total * (GROWTH - 1)) + (1 << 16), dtype=np.uint8)
    ends_out = np.empty(entries + room_for(entries), dtype=np.uint64)
    pages, start, at, written = [PageToucher(data_out), PageToucher(ends_out)], 0, 0, 0
    while start < count:
        part = slice(start, min(_bytes_stop(read()[0], start, count), start + step))
        lengths, keep = _lengths(read()[0], part), keep_of(part)
        size, kept = int(lengths[keep].sum()), int(np.count_nonzero(keep))
        for toucher, stop in zip(pages, (written + size, at + kept)):
            yield from toucher.steps_until(stop)
        ends, data = read()  # (again: appends may have moved them)
        first = int(ends[start - 1]) if start else 0
        data_out[written : written + size] = data[first : int(ends[part.stop - 1])][np.repeat(keep, lengths)]
        ends_out[at : at + kept] = written + np.cumsum(lengths[keep], dtype=np.uint64)
        start, at, written = part.stop, at + kept, written + size
        yield
    return GrowableArray.adopting(data_out, total), GrowableArray.adopting(ends_out, entries)


def _slices(count: int, step: int) -> list[slice]:
    return [slice(start, min(start + step, count)) for start in range(0, count, step)]


def _lengths(ends: npt.NDArray[np.uint64], part: slice) -> npt.NDArray[np.int64]:
    """The lengths of spans *part* (their *ends* less those of the spans before each)."""
    stops = ends[part].astype(np.int64)
    starts = np.concatenate((np.array([int(ends[part.start - 1]) if part.start else 0]), stops[:-1]))
    return stops - starts


def _bytes_stop(ends: npt.NDArray[np.uint64], start: int, count: int) -> int:
    """Where a step of spans from entry *start* ends: :data:`KEY_BYTES_PER_STEP` of them, at
    least one entry, at most *count*."""
    first = int(ends[start - 1]) if start else 0
    stop = int(np.searchsorted(ends[:count], np.uint64(first + KEY_BYTES_PER_STEP), side="right"))
    return min(max(stop, start + 1), count)
