"""Bucket layouts of the in-memory permutation index (see :mod:`._tables`).

:class:`SortedBuckets` is the bulk part: per table, the row ids sorted by bucket
key (4 bytes a row) and a directory of ``2**prefix_bits + 1`` bucket offsets, so a
bucket is one contiguous slice. :class:`WriteBuffer` holds the rows added since the
last merge in dicts and arrays of plain ints; the index merges it into the
sorted arrays when it grows past a bound, so merges are amortised.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ._tables import TableDesign

try:
    from . import _scan  # the C probe, built at install time when a C compiler is there
except ImportError:  # pragma: no cover - depends on the build
    _scan = None  # type: ignore[assignment]

_EMPTY_ROWS = np.empty(0, dtype=np.uint32)
# Without the C probe: a probe visiting more buckets than this (a wildcard probe: 48-52
# with the default 14 bits) looks them all up at once in NumPy (measured at 1M with 12
# bits: 49 vs 73 us one by one); a plain probe visits one a table, cheaper one by one.
_LOOP_BUCKETS = 12
# With the C probe, a wildcard probe scans a write buffer up to this size whole (~1 ns a
# row) rather than by its buckets (~50 dict lookups, ~10 us); a plain probe looks up one
# bucket a table.
_SCANNED_BUFFER = 1 << 15
# Row ids and bucket offsets are uint32: an index holds fewer than 2**32 entries.
MAX_ROWS = 2**32 - 1


def sort_dtype(prefix_bits: int) -> type[np.unsignedinteger[Any]]:
    # NumPy's stable argsort is a radix sort for 16-bit keys (much faster than merge sort)
    return np.uint16 if prefix_bits <= 16 else np.uint32


def _directory(
    keys: npt.NDArray[np.unsignedinteger[Any]], prefix_bits: int
) -> npt.NDArray[np.int64]:
    counts = np.bincount(keys, minlength=2**prefix_bits)
    directory = np.zeros(2**prefix_bits + 1, dtype=np.int64)
    np.cumsum(counts, out=directory[1:])
    return directory


def _expand_ranges(starts: npt.NDArray[np.int64], lengths: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])`` without a Python loop."""
    first_of_range = np.cumsum(lengths) - lengths
    return np.arange(int(lengths.sum())) + np.repeat(starts - first_of_range, lengths)


def check_rows(count: int) -> None:
    if count > MAX_ROWS:
        raise ValueError(f"an in-memory index holds at most {MAX_ROWS} entries")


def sorted_table(
    design: TableDesign, fingerprints: npt.NDArray[np.uint64], table: int, order: npt.NDArray[Any] | None = None
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """One table of rows 0..n-1 (of *fingerprints*): the rows sorted by bucket, and the
    directory. *order*: the rows in an order already grouped by a shorter prefix (stable)."""
    keys = design.table_keys_array(fingerprints, table).astype(sort_dtype(design.prefix_bits))
    if order is None:
        rows = np.argsort(keys, kind="stable")
    else:
        rows = order[np.argsort(keys[order], kind="stable")]
    return rows.astype(np.uint32, copy=False), _directory(keys, design.prefix_bits)


class SortedBuckets:
    """Per table: row ids sorted by bucket, and the offsets of each bucket."""

    def __init__(
        self, design: TableDesign, rows: npt.NDArray[np.uint32], directories: npt.NDArray[np.uint32]
    ) -> None:
        self.design = design
        self.rows = rows  # shape (tables, merged rows)
        self.directories = directories  # shape (tables, 2**prefix_bits + 1)
        # per-table views: indexing a 1-D view is cheaper than 2-D indexing per probe
        self._row_views = list(rows)
        self._directory_views = list(directories)

    def __len__(self) -> int:
        return int(self.rows.shape[1])

    @property
    def nbytes(self) -> int:
        return int(self.rows.nbytes + self.directories.nbytes)

    @classmethod
    def build(
        cls, design: TableDesign, fingerprints: npt.NDArray[np.uint64], orders: npt.NDArray[np.uint32] | None = None
    ) -> SortedBuckets:
        """Sort every row of *fingerprints* into every table (rows 0..n-1). *orders*: per
        table, the rows in an order already grouped by a shorter prefix (:meth:`widened`)."""
        check_rows(len(fingerprints))
        rows = np.empty((len(design.tables), len(fingerprints)), dtype=np.uint32)
        directories = np.empty((len(design.tables), 2**design.prefix_bits + 1), dtype=np.uint32)
        for table in range(len(design.tables)):
            order = None if orders is None else orders[table]
            rows[table], directories[table] = sorted_table(design, fingerprints, table, order)
        return cls(design, rows, directories)

    def widened(self, design: TableDesign, fingerprints: npt.NDArray[np.uint64]) -> SortedBuckets:
        """These rows (of *fingerprints*) in the buckets of *design*: the same tables with a
        longer prefix. Each table's rows are in bucket order already, so sorting them again
        by the longer key sorts nearly sorted data (0.14 against 2.3 s a table at 16M rows;
        8.6 against 28.8 s in all with 10 tables), the same result as :meth:`build`."""
        return SortedBuckets.build(design, fingerprints[: len(self)], self.rows)

    def matches(
        self, fingerprints: npt.NDArray[np.uint64], fingerprint: int, max_distance: int, wildcard: int = 0
    ) -> dict[int, int]:
        """``{row: full distance}`` of the rows (of *fingerprints*) in the buckets a probe
        visits, within *max_distance* of *fingerprint* outside the *wildcard* bits."""
        if _scan is not None:
            bases, free_bits = self.design.probe_bases(fingerprint, wildcard)
            return _scan.sorted_matches(
                self.directories, self.rows, fingerprints, bases, free_bits, fingerprint, wildcard, max_distance
            )
        rows = self._candidates(self.design.probe_keys(fingerprint, wildcard))
        if not len(rows):
            return {}
        differences = fingerprints[rows] ^ np.uint64(fingerprint)
        distances = np.bitwise_count(differences)
        if wildcard:
            distances_off_wildcard = np.bitwise_count(differences & ~np.uint64(wildcard))
        else:
            distances_off_wildcard = distances
        close = distances_off_wildcard <= max_distance
        return dict(zip(rows[close].tolist(), distances[close].tolist()))

    def _candidates(self, key_sets: Sequence[Sequence[int]]) -> npt.NDArray[np.uint32]:
        """Row ids in the buckets *key_sets* (the keys to visit per table), duplicates possible
        (the NumPy probe's)."""
        if sum(map(len, key_sets)) > _LOOP_BUCKETS:
            return self._candidates_vectorised(key_sets)
        parts = []
        for rows, directory, keys in zip(self._row_views, self._directory_views, key_sets):
            for key in keys:
                start, stop = directory[key : key + 2].tolist()
                if stop > start:
                    parts.append(rows[start:stop])
        if not parts:
            return _EMPTY_ROWS
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _candidates_vectorised(self, key_sets: Sequence[Sequence[int]]) -> npt.NDArray[np.uint32]:
        """:meth:`_candidates` with one lookup in the flattened directories for all buckets."""
        width = self.directories.shape[1]
        flat = np.fromiter((t * width + key for t, keys in enumerate(key_sets) for key in keys), dtype=np.intp)
        directory = self.directories.reshape(-1)
        starts = directory[flat].astype(np.int64)
        lengths = directory[flat + 1] - starts
        starts += (flat // width) * self.rows.shape[1]  # into the flattened row arrays
        return self.rows.reshape(-1)[_expand_ranges(starts, lengths)]

    def candidates_many(
        self, keys: npt.NDArray[np.uint64]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.uint32]]:
        """For keys of shape ``(tables, queries)``: (query index, row id) of every candidate."""
        query_parts, row_parts = [], []
        query_ids = np.arange(keys.shape[1])
        for rows, directory, table_keys in zip(self._row_views, self._directory_views, keys):
            bucket_ids = table_keys.astype(np.intp)
            starts = directory[bucket_ids].astype(np.int64)
            lengths = directory[bucket_ids + 1] - starts
            query_parts.append(np.repeat(query_ids, lengths))
            row_parts.append(rows[_expand_ranges(starts, lengths)])
        return np.concatenate(query_parts), np.concatenate(row_parts)

    def bucket_sizes(self) -> npt.NDArray[np.int64]:
        """Shape ``(tables, 2**prefix_bits)``: rows per bucket."""
        return np.diff(self.directories, axis=1)


class WriteBuffer:
    """Rows added since the last merge, chained per table: ``bucket key -> newest row``, and
    for each row the one before it in its bucket (-1: none).

    Ints in dicts and arrays, where a list per bucket made a crawl's buffer thousands of
    lists for each full garbage collection to walk (it never visits these).
    """

    def __init__(self, design: TableDesign, first_row: int) -> None:
        self.first_row = first_row
        self._design = design
        self._newest: list[dict[int, int]] = [{} for _ in design.tables]
        self._older: list[array[int]] = [array("q") for _ in design.tables]
        self._fingerprints = array("Q")

    def __len__(self) -> int:
        return len(self._fingerprints)

    def add(self, row: int, fingerprint: int, keys: Sequence[int]) -> None:
        if row != self.first_row + len(self._fingerprints):
            raise AssertionError("write buffer rows must be consecutive")
        self._fingerprints.append(fingerprint)
        for newest, older, key in zip(self._newest, self._older, keys):
            older.append(newest.get(key, -1))
            newest[key] = row

    def matches(
        self, fingerprints: npt.NDArray[np.uint64], fingerprint: int, max_distance: int, wildcard: int = 0
    ) -> dict[int, int]:
        """``{row: full distance}`` of the buffered rows within *max_distance* off *wildcard*.

        *fingerprints* are the index's (rows ``first_row ...`` are the buffered ones).
        """
        if _scan is not None and wildcard and len(self) <= _SCANNED_BUFFER:
            stop = self.first_row + len(self)
            return _scan.range_matches(fingerprints, self.first_row, stop, fingerprint, wildcard, max_distance)
        found: dict[int, int] = {}
        counted = ~wildcard
        key_sets = self._design.probe_keys(fingerprint, wildcard)
        first = self.first_row
        for newest, older, keys in zip(self._newest, self._older, key_sets):
            # a wildcard probe's ~16 keys a table, few of them in the buffer: one set
            # intersection in C instead of a lookup each
            for key in newest.keys() & keys if len(keys) > 1 else keys:
                row = newest.get(key, -1)
                while row >= 0:
                    difference = fingerprint ^ self._fingerprints[row - first]
                    if (difference & counted).bit_count() <= max_distance:
                        found[row] = difference.bit_count()
                    row = older[row - first]
        return found


def probe_kernel() -> str:
    """Which probe the index runs: ``"c"`` (:mod:`._scan`, built at install) or ``"numpy"``."""
    return "numpy" if _scan is None else "c"


def bucket_stats(buckets: SortedBuckets) -> dict[str, Any]:
    """Largest bucket, skew and candidates per probe of the sorted part.

    ``mean_candidates_per_probe`` is for probes drawn like the stored fingerprints
    (a bucket of ``s`` rows is hit with probability ``s / n`` and yields ``s``
    candidates); ``expected_candidates`` is the design's figure for uniform ones.
    A ratio well above 1 means skewed data (many similar fingerprints).
    """
    size = len(buckets)
    sizes = buckets.bucket_sizes()
    mean_bucket = size / sizes.shape[1]
    data_weighted = float((sizes.astype(np.float64) ** 2).sum() / size) if size else 0.0
    largest = int(sizes.max()) if size else 0
    return {
        "rows": size,
        "buckets_per_table": int(sizes.shape[1]),
        "largest_bucket": largest,
        "skew": round(largest / mean_bucket, 1) if size else 0.0,
        "mean_candidates_per_probe": round(data_weighted, 1),
        "expected_candidates": round(buckets.design.expected_candidates(size), 1),
    }
