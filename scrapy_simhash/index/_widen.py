"""Widening the sorted tables' buckets a slice of rows at a time.

Each time the index doubles, up to its design's widest buckets (16 bits for k = 3, at 2**20
rows), :func:`._design_choice.design_for_size` adds a bit to the bucket keys, and every row
is sorted into every table again by its new key. Three O(n) steps a table (the keys, a
sort, a gather) took 10-30 ms each at 1M rows on the busy VM of the README's figures: the
longest checks at 1M. :func:`widen_steps` does the same in steps of
*step* rows (:data:`._merge.STEP_ENTRIES`): the rows' fingerprints gathered from table 0 a bucket
range at a time; then, per table, a counting sort: the new keys counted a slice at a time,
the directory from the counts, and each slice of rows (in row order, so that a bucket keeps
its rows in row order, as :meth:`.SortedBuckets.fill_steps` leaves them) written at its
buckets' next free places. Rows land all over an array: its fresh pages are faulted in
first, a step each (:mod:`._pages`).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from ._buckets import SortedBuckets, sort_dtype, table_columns
from ._pages import PageToucher
from ._slices import table0_fingerprints
from ._tables import TableDesign


def widen_steps(
    old: SortedBuckets, fingerprints: npt.NDArray[np.uint64], first_row: int, design: TableDesign, step: int
) -> Generator[None, None, SortedBuckets]:
    """Steps that sort *old*'s rows plus rows ``first_row ...`` (their *fingerprints*) into
    the wider buckets of *design*, about *step* rows a step; they return the new tables."""
    every = np.empty(first_row + len(fingerprints), dtype=np.uint64)
    yield from PageToucher(every).steps_until(len(every))
    yield from row_fingerprint_steps(old, every, step)
    every[first_row:] = fingerprints
    return (yield from sorted_steps(every, design, step))


def sorted_steps(
    fingerprints: npt.NDArray[np.uint64], design: TableDesign, step: int
) -> Generator[None, None, SortedBuckets]:
    """Steps that sort rows ``0 ... n - 1`` (their *fingerprints*) into new tables of
    *design*, about *step* rows a step; they return the tables."""
    tables = SortedBuckets.empty(design, len(fingerprints))
    for table in range(len(design.tables)):
        yield from _sorted_in(tables, fingerprints, table, step)
    return tables


def row_fingerprint_steps(old: SortedBuckets, out: npt.NDArray[np.uint64], step: int) -> Iterator[None]:
    """Fill ``out[row]`` with every row's fingerprint, a range of table 0's buckets a step."""
    directory = old.directories[0].astype(np.int64)
    buckets, start = len(directory) - 1, 0
    while start < buckets:
        stop = int(np.searchsorted(directory, directory[start] + step, side="right")) - 1
        stop = min(max(stop, start + 1), buckets)
        low, high = int(directory[start]), int(directory[stop])
        keys = np.repeat(np.arange(start, stop, dtype=np.uint64), np.diff(directory[start : stop + 1]))
        out[old.rows[low:high]] = table0_fingerprints(old.design, keys, old.slices[0, low:high], old.tails[low:high])
        start = stop
        yield


def _sorted_in(tables: SortedBuckets, fingerprints: npt.NDArray[np.uint64], table: int, step: int) -> Iterator[None]:
    """Sort rows 0..n-1 (their *fingerprints*) into *table* of *tables*, *step* rows a step."""
    design = tables.design
    keys = np.empty(len(fingerprints), dtype=sort_dtype(design.prefix_bits))
    counts = np.zeros(2**design.prefix_bits, dtype=np.int64)
    for start in range(0, len(fingerprints), step):
        keys[start : start + step] = design.table_keys_array(fingerprints[start : start + step], table)
        counts += np.bincount(keys[start : start + step], minlength=len(counts))
        yield
    tables.directories[table, 0] = 0
    np.cumsum(counts, out=tables.directories[table, 1:])
    free = tables.directories[table, :-1].astype(np.int64)  # each bucket's next free place
    for column in tables.columns(table):
        yield from PageToucher(column).steps_until(len(column))
    for start in range(0, len(fingerprints), step):
        _place(tables, fingerprints, table, keys[start : start + step], start, free)
        yield


def _place(
    tables: SortedBuckets, fingerprints: npt.NDArray[np.uint64], table: int, keys: npt.NDArray[Any], start: int,
    free: npt.NDArray[np.int64],
) -> None:
    """Write rows ``start ...`` (their *keys*) at their buckets' next *free* places."""
    counts = np.bincount(keys, minlength=len(free))
    order = np.argsort(keys, kind="stable")  # (a radix sort of 16-bit keys)
    # the i-th of these rows in key order goes to its bucket's next free place plus i less
    # the rows of smaller keys among them
    places = (free - (np.cumsum(counts) - counts))[keys[order]] + np.arange(len(order))
    values = table_columns(tables.design, fingerprints, order + start, 0, table)
    for column, column_values in zip(tables.columns(table), values):
        column[places] = column_values
    free += counts
