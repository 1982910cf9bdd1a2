"""The NumPy twin of the sorted tables' C probe (``scan_c/sorted.c``), which runs where the
C probe was not built or is switched off, and which the tests and the C probe's check at
import (:func:`._buckets.c_probe_mismatch`) hold it equal to.

Every visited bucket of every table in one pass over the flattened directories and slices
(:mod:`._slices`): the rows whose slice is within the distance are checked whole where
they are table 0's (its bucket key, slice and tail are the fingerprint), or looked up in
their table-0 bucket (the other tables').
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ._slices import table0_fingerprints

if TYPE_CHECKING:
    from ._buckets import SortedBuckets

Positions = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]


def numpy_matches(tables: SortedBuckets, fingerprint: int, max_distance: int, wildcard: int = 0) -> dict[int, int]:
    """``{row: fingerprint}`` of the rows in the buckets a probe visits, within
    *max_distance* of *fingerprint* outside the *wildcard* bits."""
    counted = ~wildcard & (2**64 - 1)
    close = _SliceFilter(tables, fingerprint, counted, max_distance)
    key_sets = tables.design.probe_keys(fingerprint, wildcard)
    table_of = np.fromiter((t for t, keys in enumerate(key_sets) for _ in keys), dtype=np.int64)
    keys = np.fromiter((key for keys in key_sets for key in keys), dtype=np.int64)
    table_of, keys, positions = close(_positions(tables, table_of, keys))
    direct = table_of == 0
    if not direct.all():  # (rare: the rows within k, and ~1 in 10^4 others)
        _, found_keys, found_positions = close(_looked_up(tables, (table_of[~direct], keys[~direct], positions[~direct])))
        keys = np.concatenate((keys[direct], found_keys))
        positions = np.concatenate((positions[direct], found_positions))
    fingerprints = table0_fingerprints(tables.design, keys, tables.slices[0, positions], tables.tails[positions])
    within = np.bitwise_count((fingerprints ^ np.uint64(fingerprint)) & np.uint64(counted)) <= max_distance
    return dict(zip(tables.rows[positions[within]].tolist(), fingerprints[within].tolist()))


def _looked_up(tables: SortedBuckets, found: Positions) -> Positions:
    """Every row of the table-0 buckets that rows of the other tables (*found*) name."""
    table_of, keys, positions = found
    values = tables.slices[table_of, positions].tolist()
    table0_keys = {tables.layout.table0_key(t, k, v) for t, k, v in zip(table_of.tolist(), keys.tolist(), values)}
    buckets = np.array(sorted(table0_keys), dtype=np.int64)
    return _positions(tables, np.zeros_like(buckets), buckets)


class _SliceFilter:
    """Keeps the rows whose slice is within *max_distance* of the query's (its slice and
    counted bits in each table computed once)."""

    def __init__(self, tables: SortedBuckets, fingerprint: int, counted: int, max_distance: int) -> None:
        count = len(tables.design.tables)
        self._slices = tables.slices
        self._queries = np.array([tables.layout.slice_of(fingerprint, t) for t in range(count)], np.uint32)
        self._masks = np.array([tables.layout.slice_of(counted, t) for t in range(count)], np.uint32)
        self._max_distance = max_distance

    def __call__(self, found: Positions) -> Positions:
        table_of, keys, positions = found
        differing = (self._slices[table_of, positions] ^ self._queries[table_of]) & self._masks[table_of]
        close = np.bitwise_count(differing) <= self._max_distance
        return table_of[close], keys[close], positions[close]


def _positions(tables: SortedBuckets, table_of: npt.NDArray[np.int64], keys: npt.NDArray[np.int64]) -> Positions:
    """Every position in the buckets *keys* of *table_of*: its table, bucket key and position."""
    flat = table_of * tables.directories.shape[1] + keys
    directories = tables.directories.reshape(-1)
    starts = directories[flat].astype(np.int64)
    lengths = directories[flat + 1].astype(np.int64) - starts
    return np.repeat(table_of, lengths), np.repeat(keys, lengths), _expand_ranges(starts, lengths)


def _expand_ranges(starts: npt.NDArray[np.int64], lengths: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])`` without a Python loop."""
    first_of_range = np.cumsum(lengths) - lengths
    return np.arange(int(lengths.sum())) + np.repeat(starts - first_of_range, lengths)
