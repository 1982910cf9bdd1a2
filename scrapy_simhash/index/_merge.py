"""Merging the write buffer into the sorted tables a slice at a time.

A merge moves every row of every table: at 10M rows and 4 tables, ~0.1 s in one go,
which would hold Scrapy's reactor that long once every 131k pages. :func:`merge_steps`
does the same work in steps of about :data:`STEP_ENTRIES` entries, and a step of its own
for each fresh 2 MB page it is about to write (:mod:`._pages`); the index runs one step per
insert and meanwhile answers from the old tables plus the rows being merged, still in their
(now frozen) write buffer. A merge of ``n`` rows takes about ``tables * n / STEP_ENTRIES``
steps plus one per 2 MB of tables (~750 at 10M, ~7,500 at 100M), far fewer than the
inserts that fill the next buffer (``min(n / 64, 131072)``), so merges never pile up.
Measured at 10M rows alone (``STEP_ENTRIES`` 2**16): 0.08-0.09 ms a step at the median, at
most 1.3-1.6 ms (sorting a table's new rows), ~100 ms in all.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ._buckets import SortedBuckets, check_rows, sort_dtype, table_columns
from ._pages import PageToucher
from ._release import release_later
from ._write_buffer import WriteBuffer
from ._tables import TableDesign
from ._widen import widen_steps

#: Entries of one table moved per step: ~0.1 ms of NumPy copying (2**18 took ~0.5 ms, and
#: wrote 1-3 MB of fresh pages a step: see :mod:`._pages`).
STEP_ENTRIES = 1 << 16

_T = TypeVar("_T")

#: A merge in progress: each ``next()`` does one step; it returns the merged tables.
MergeSteps = Generator[None, None, SortedBuckets]


class BufferedTables:
    """The sorted tables, the write buffer in front of them, and the merge under way (its
    rows stay searchable in their frozen buffer until it ends)."""

    def __init__(self, sorted_part: SortedBuckets, first_row: int) -> None:
        self.sorted = sorted_part
        self.buffer = WriteBuffer(sorted_part.design, first_row)
        self.frozen: WriteBuffer | None = None
        self.merging: MergeSteps | None = None

    def buffers(self) -> list[WriteBuffer]:
        """The write buffers that hold rows, oldest first."""
        return [buffer for buffer in (self.frozen, self.buffer) if buffer is not None and len(buffer)]

    @property
    def buffer_bytes(self) -> int:
        """The allocated bytes of the write buffers (the one being merged included)."""
        return sum(buffer.nbytes for buffer in (self.frozen, self.buffer) if buffer is not None)

    def matches(self, fingerprint: int, max_distance: int, wildcard: int = 0) -> dict[int, int]:
        """``{row: fingerprint}`` of every row within *max_distance* off *wildcard*."""
        found = self.sorted.matches(fingerprint, max_distance, wildcard)
        if self.frozen is not None:  # (no list of the buffers: a check calls this)
            found.update(self.frozen.matches(fingerprint, max_distance, wildcard))
        if len(self.buffer):
            found.update(self.buffer.matches(fingerprint, max_distance, wildcard))
        return found

    def fingerprint_of(self, row: int, hint: int) -> int:
        """The fingerprint of *row* (*hint*: its :func:`._buckets.hint_of`)."""
        for buffer in self.buffers():
            if buffer.first_row <= row < buffer.first_row + len(buffer):
                return buffer.fingerprint_of(row)
        return self.sorted.fingerprint_of(row, hint)

    def row_fingerprints(self) -> npt.NDArray[np.uint64]:
        """Every row's fingerprint, in row order (a new array)."""
        return np.concatenate([self.sorted.row_fingerprints(), *(b.fingerprints for b in self.buffers())])

    def add(self, row: int, fingerprint: int) -> int:
        """Buffer a row; its table-0 bucket key (in the buffer's design). (The index runs a
        step of the merge under way after it, :meth:`step`.)"""
        return self.buffer.add(row, fingerprint)

    def step(self) -> None:
        """Run a step of the merge under way, if any."""
        if self.merging is not None:
            try:
                next(self.merging)
            except StopIteration as done:
                release_later(self.sorted)
                self.sorted, self.merging, self.frozen = done.value, None, None

    def start_merge(self, design: TableDesign) -> None:
        """Freeze the buffer and merge it a step per :meth:`add`; new rows go into a new
        buffer of *design* (the merged tables', wider as the index grows)."""
        self.finish()  # (never under way by then at the index's bound: see the module doc)
        first_row = self.buffer.first_row + len(self.buffer)
        self.frozen, self.buffer = self.buffer, WriteBuffer(design, first_row)
        self.merging = merge_steps(self.sorted, self.frozen.fingerprints, self.frozen.first_row, design)

    def freeze_for_compaction(self) -> npt.NDArray[np.uint64]:
        """Freeze the buffer for a compaction (:mod:`._dropping`; no merge under way): new
        rows go into a new one, checks search it until :meth:`end_compaction`. Its rows'
        fingerprints."""
        first_row = self.buffer.first_row + len(self.buffer)
        self.frozen, self.buffer = self.buffer, WriteBuffer(self.sorted.design, first_row)
        return self.frozen.fingerprints

    def end_compaction(self, compacted: SortedBuckets, dropped: int) -> None:
        """Search *compacted* (the rows before the buffer, *dropped* of them dropped and the
        others renumbered) and the buffer, renumbered alike."""
        self.sorted, self.frozen = compacted, None
        self.buffer.first_row -= dropped

    def merge_now(self, fingerprints: npt.NDArray[np.uint64], design: TableDesign) -> None:
        """Merge the buffered rows and then *fingerprints* (rows after them) at once (bulk loads)."""
        self.finish()
        first_row = len(self.sorted)
        new = np.concatenate((self.buffer.fingerprints, fingerprints))
        if len(new) or design != self.sorted.design:  # (nothing to merge: the tables stay)
            self.sorted = merged(self.sorted, new, first_row, design)
        self.buffer = WriteBuffer(design, first_row + len(new))

    def finish(self) -> None:
        """Run the merge under way to its end."""
        if self.merging is not None:
            self.sorted, self.merging, self.frozen = finish(self.merging), None, None


def merge_steps(
    old: SortedBuckets, fingerprints: npt.NDArray[np.uint64], first_row: int, design: TableDesign
) -> MergeSteps:
    """Steps that build *old* plus rows ``first_row ...`` (their *fingerprints*) in the
    buckets of *design*, without touching *old*.

    *design* is *old*'s, or the same tables with wider buckets (the index grew): then every
    row is sorted into every table again, a slice a step (:mod:`._widen`).
    """
    check_rows(first_row + len(fingerprints))
    tables = len(design.tables)
    if design.prefix_bits != old.design.prefix_bits:
        return (yield from widen_steps(old, fingerprints, first_row, design, STEP_ENTRIES))
    merged_part = SortedBuckets.empty(design, first_row + len(fingerprints))
    for table in range(tables):
        yield from _merge_table(old, merged_part, table, fingerprints, first_row)
    return merged_part


def _merge_table(
    old: SortedBuckets, out: SortedBuckets, table: int, fingerprints: npt.NDArray[np.uint64], first_row: int
) -> Iterator[None]:
    """Fill one table of *out* with *old*'s rows plus the new ones, in steps.

    New rows go at the end of their bucket, so each bucket stays sorted by row id: one
    linear pass over the old rows, bucket range by bucket range.
    """
    keys = old.design.table_keys_array(fingerprints, table).astype(sort_dtype(old.design.prefix_bits))
    order = np.argsort(keys, kind="stable")  # a radix sort for 16-bit keys: 1 ms, not 14, for 131k rows
    yield
    sorted_keys = keys[order].astype(np.int64)
    new_columns = table_columns(old.design, fingerprints, order, first_row, table)
    old_directory = old.directories[table].astype(np.int64)
    directory = old_directory.copy()
    directory[1:] += np.cumsum(np.bincount(keys, minlength=len(directory) - 1))
    out.directories[table] = directory
    # where each new row lands: after its bucket's old rows and the earlier new rows
    targets = old_directory[sorted_keys + 1] + np.arange(len(order))
    buckets = len(directory) - 1
    start = 0
    pages = [PageToucher(column) for column in out.columns(table)]
    yield
    while start < buckets:
        stop = int(np.searchsorted(directory, directory[start] + STEP_ENTRIES, side="right")) - 1
        stop = min(max(stop, start + 1), buckets)
        for toucher in pages:  # (the pages this step fills, faulted in a step each before it)
            yield from toucher.steps_until(int(directory[stop]))
        first, last = np.searchsorted(sorted_keys, [start, stop])
        low, old_rows = int(directory[start]), slice(old_directory[start], old_directory[stop])
        for column, old_column, new_column in zip(out.columns(table), old.columns(table), new_columns):
            interleave(column, low, old_column[old_rows], targets[first:last], new_column[first:last])
        start = stop
        yield


def interleave(
    out: npt.NDArray[Any], low: int, old: npt.NDArray[Any], targets: npt.NDArray[np.int64], new: npt.NDArray[Any]
) -> None:
    """Fill ``out[low : low + len(old) + len(new)]``: the *new* values at their places
    *targets* (in *out*, increasing), the *old* ones in order around them."""
    segment = out[low : low + len(old) + len(new)]
    is_old = np.ones(len(segment), dtype=bool)
    is_old[targets - low] = False
    segment[is_old] = old
    segment[~is_old] = new


def merged(old: SortedBuckets, fingerprints: npt.NDArray[np.uint64], first_row: int, design: TableDesign) -> SortedBuckets:
    """:func:`merge_steps` run to the end at once (bulk loads)."""
    return finish(merge_steps(old, fingerprints, first_row, design))


def finish(steps: Generator[None, None, _T]) -> _T:
    """Run the remaining steps of a merge (or of any steps that return something); what they return."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
