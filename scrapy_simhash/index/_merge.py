"""Merging the write buffer into the sorted tables a slice at a time.

A merge moves every row of every table: at 10M rows and 4 tables, ~0.1 s in one go,
which would hold Scrapy's reactor that long once every 131k pages. :func:`merge_steps`
does the same work in steps of about :data:`STEP_ENTRIES` entries (~0.5 ms each); the
index runs one step per insert and meanwhile answers from the old tables plus the rows
being merged, still in their (now frozen) write buffer. A merge of ``n`` rows takes
about ``tables * n / STEP_ENTRIES`` steps (~164 at 10M, ~1,600 at 100M), far fewer than
the inserts that fill the next buffer (``min(n / 64, 131072)``), so merges never pile up.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ._buckets import SortedBuckets, WriteBuffer, check_rows, sort_dtype, sorted_table
from ._tables import TableDesign

#: Entries of one table moved per step: ~0.5 ms of NumPy copying.
STEP_ENTRIES = 1 << 18

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

    def matches(
        self, fingerprints: npt.NDArray[np.uint64], fingerprint: int, max_distance: int, wildcard: int = 0
    ) -> dict[int, int]:
        """``{row: full distance}`` of every row within *max_distance* off *wildcard*."""
        found = self.sorted.matches(fingerprints, fingerprint, max_distance, wildcard)
        for buffer in self.buffers():
            found.update(buffer.matches(fingerprints, fingerprint, max_distance, wildcard))
        return found

    def add(self, row: int, fingerprint: int, bucket_keys: Sequence[int]) -> None:
        """Buffer a row (*bucket_keys*: in the buffer's design); a step of the merge under way."""
        self.buffer.add(row, fingerprint, bucket_keys)
        if self.merging is not None:
            try:
                next(self.merging)
            except StopIteration as done:
                self.sorted, self.merging, self.frozen = done.value, None, None

    def start_merge(self, fingerprints: npt.NDArray[np.uint64], design: TableDesign) -> None:
        """Freeze the buffer and merge it a step per :meth:`add`; new rows go into a new
        buffer of *design* (the merged tables', wider as the index grows)."""
        self.finish()  # (never under way by then at the index's bound: see the module doc)
        self.frozen, self.buffer = self.buffer, WriteBuffer(design, len(fingerprints))
        self.merging = merge_steps(self.sorted, fingerprints, self.frozen.first_row, design)

    def merge_now(self, fingerprints: npt.NDArray[np.uint64], first_row: int, design: TableDesign) -> None:
        """Merge every row from *first_row* on (all unmerged) at once (bulk loads)."""
        self.finish()
        self.sorted = merged(self.sorted, fingerprints, first_row, design)
        self.buffer = WriteBuffer(design, len(fingerprints))

    def finish(self) -> None:
        """Run the merge under way to its end."""
        if self.merging is not None:
            self.sorted, self.merging, self.frozen = finish(self.merging), None, None


def merge_steps(
    old: SortedBuckets, fingerprints: npt.NDArray[np.uint64], first_row: int, design: TableDesign
) -> MergeSteps:
    """Steps that build *old* plus rows ``first_row ...`` (*fingerprints*: all rows so far,
    a view that must not change meanwhile) in the buckets of *design*, without touching *old*.

    *design* is *old*'s, or the same tables with wider buckets (the index grew): then each
    table is re-sorted whole (one step a table, rows already grouped by the shorter prefix).
    """
    check_rows(len(fingerprints))
    tables, size = len(design.tables), len(fingerprints)
    rows = np.empty((tables, size), dtype=np.uint32)  # pages are touched as steps fill them
    directories = np.empty((tables, 2**design.prefix_bits + 1), dtype=np.uint32)
    new_rows = np.arange(first_row, size, dtype=np.uint32)
    for table in range(tables):
        if design.prefix_bits != old.design.prefix_bits:
            order = np.concatenate((old.rows[table], new_rows))
            rows[table], directories[table] = sorted_table(design, fingerprints, table, order)
            yield
        else:
            yield from _merge_table(old, table, fingerprints[first_row:], first_row, rows[table], directories[table])
    return SortedBuckets(design, rows, directories)


def _merge_table(
    old: SortedBuckets,
    table: int,
    fingerprints: npt.NDArray[np.uint64],
    first_row: int,
    out_rows: npt.NDArray[np.uint32],
    out_directory: npt.NDArray[np.uint32],
) -> Iterator[None]:
    """Fill one table's rows and directory with *old*'s plus the new rows, in steps.

    New rows go at the end of their bucket, so each bucket stays sorted by row id: one
    linear pass over the old rows, bucket range by bucket range.
    """
    keys = old.design.table_keys_array(fingerprints, table).astype(sort_dtype(old.design.prefix_bits))
    order = np.argsort(keys, kind="stable")  # a radix sort for 16-bit keys: 1 ms, not 14, for 131k rows
    yield
    sorted_keys = keys[order].astype(np.int64)
    old_directory = old.directories[table].astype(np.int64)
    directory = old_directory.copy()
    directory[1:] += np.cumsum(np.bincount(keys, minlength=len(directory) - 1))
    out_directory[:] = directory
    # where each new row lands: after its bucket's old rows and the earlier new rows
    targets = old_directory[sorted_keys + 1] + np.arange(len(order))
    buckets = len(directory) - 1
    start = 0
    yield
    while start < buckets:
        stop = int(np.searchsorted(directory, directory[start] + STEP_ENTRIES, side="right")) - 1
        stop = min(max(stop, start + 1), buckets)
        first, last = np.searchsorted(sorted_keys, [start, stop])
        old_rows = old.rows[table][old_directory[start] : old_directory[stop]]
        interleave(out_rows, int(directory[start]), old_rows, targets[first:last], order[first:last] + first_row)
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


def finish(steps: MergeSteps) -> SortedBuckets:
    """Run the remaining steps of a merge; its merged tables."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
