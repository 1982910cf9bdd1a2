"""The sorted part of the in-memory permutation index (see :mod:`._tables`).

:class:`SortedBuckets`: per table, its rows' slices in bucket order (table 0 also their
tails and row ids, see :mod:`._slices`) and a directory of ``2**prefix_bits + 1`` bucket
offsets, so a bucket is one contiguous run. The rows added since the last merge wait in a
:class:`~._write_buffer.WriteBuffer`. Probes return ``{row: fingerprint}``, with the C
probe (:mod:`._scan`) or its NumPy twin (:mod:`._numpy_probe`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from ._numpy_probe import numpy_matches
from ._slices import SliceLayout, table0_fingerprints, tail_dtype, tails_array
from ._tables import TableDesign, make_design

try:
    from . import _scan  # the C probe, built at install time when a C compiler is there
except ImportError:  # pragma: no cover - depends on the build
    _scan = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

_EMPTY_ROWS = np.empty(0, dtype=np.uint32)
# Row ids and bucket offsets are uint32: an index holds fewer than 2**32 entries.
MAX_ROWS = 2**32 - 1
#: Bits of table 0's key kept per row (1 byte): where to look for a row's fingerprint.
HINT_BITS = 8


def sort_dtype(prefix_bits: int) -> type[np.unsignedinteger[Any]]:
    # NumPy's stable argsort is a radix sort for 16-bit keys (much faster than merge sort)
    return np.uint16 if prefix_bits <= 16 else np.uint32


def _directory(keys: npt.NDArray[np.unsignedinteger[Any]], prefix_bits: int) -> npt.NDArray[np.int64]:
    counts = np.bincount(keys, minlength=2**prefix_bits)
    directory = np.zeros(2**prefix_bits + 1, dtype=np.int64)
    np.cumsum(counts, out=directory[1:])
    return directory


def check_rows(count: int) -> None:
    if count > MAX_ROWS:
        raise ValueError(f"an in-memory index holds at most {MAX_ROWS} entries")


def hint_bits(design: TableDesign) -> int:
    return min(HINT_BITS, design.leading_bits)


def hint_of(design: TableDesign, table0_key: int, fingerprint: int) -> int:
    """A row's hint: the top bits of its fingerprint's table-0 leading blocks (whatever the
    width), from its table-0 key in *design* where that is as wide."""
    shift = design.prefix_bits - hint_bits(design)
    if shift >= 0:
        return table0_key >> shift
    return design.with_prefix_bits(hint_bits(design)).bucket_keys(fingerprint)[0]


def row_hints(design: TableDesign, fingerprints: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    return design.with_prefix_bits(hint_bits(design)).table_keys_array(fingerprints, 0).astype(np.uint8)


def table_columns(
    design: TableDesign, fingerprints: npt.NDArray[np.uint64], order: npt.NDArray[Any], first_row: int, table: int
) -> list[npt.NDArray[Any]]:
    """What *table* stores (:meth:`SortedBuckets.columns`) for rows ``first_row + order`` of
    *fingerprints* (indexed from *first_row*), in that order."""
    chosen = fingerprints[order]
    slices = SliceLayout.of(design).slices_array(chosen, table)
    if table:
        return [slices]
    return [slices, tails_array(design, chosen), (order + first_row).astype(np.uint32)]


class SortedBuckets:
    """Per table, the rows' slices in bucket order (table 0 also their tails and row ids)
    and the offsets of each bucket."""

    def __init__(
        self,
        design: TableDesign,
        directories: npt.NDArray[np.uint32],
        slices: npt.NDArray[np.uint32],
        tails: npt.NDArray[np.unsignedinteger[Any]],
        rows: npt.NDArray[np.uint32],
    ) -> None:
        self.design = design
        self.directories = directories  # shape (tables, 2**prefix_bits + 1)
        self.slices = slices  # shape (tables, rows): every table's slices
        self.tails = tails  # table 0's: the fingerprint bits below its slices
        self.rows = rows  # table 0's row ids
        self.layout = SliceLayout.of(design)
        self._packed = self.layout.packed()  # (cached here: hashing the layout per probe costs)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def nbytes(self) -> int:
        return int(sum(array.nbytes for array in self.arrays()))

    def arrays(self) -> list[npt.NDArray[Any]]:
        """Every array, in the order a snapshot keeps them."""
        return [self.directories, self.slices, self.tails, self.rows]

    @classmethod
    def build(cls, design: TableDesign, fingerprints: npt.NDArray[np.uint64]) -> SortedBuckets:
        """Sort every row of *fingerprints* (rows 0..n-1) into every table."""
        check_rows(len(fingerprints))
        built = cls.empty(design, len(fingerprints))
        for table in range(len(design.tables)):
            for _ in built.fill_steps(fingerprints, table):
                pass
        return built

    def fill_steps(self, fingerprints: npt.NDArray[np.uint64], table: int) -> Iterator[None]:
        """Sort rows 0..n-1 (of *fingerprints*) into *table*, in three steps (a widening merge
        runs one per insert: the whole of a table at 1M rows took 10-13 ms)."""
        keys = self.design.table_keys_array(fingerprints, table).astype(sort_dtype(self.design.prefix_bits))
        yield
        order = np.argsort(keys, kind="stable")
        self.directories[table] = _directory(keys, self.design.prefix_bits)
        yield
        for column, values in zip(self.columns(table), table_columns(self.design, fingerprints, order, 0, table)):
            column[:] = values

    @classmethod
    def empty(cls, design: TableDesign, size: int) -> SortedBuckets:
        """Tables of *size* rows to fill (pages are touched as they are filled)."""
        tables = len(design.tables)
        directories = np.empty((tables, 2**design.prefix_bits + 1), dtype=np.uint32)
        return cls(design, directories, np.empty((tables, size), np.uint32), np.empty(size, tail_dtype(design)),
                   np.empty(size, np.uint32))

    def columns(self, table: int) -> list[npt.NDArray[Any]]:
        """What *table* stores, in its bucket order: its slices (table 0: and tails and row ids)."""
        return [self.slices[table], self.tails, self.rows] if table == 0 else [self.slices[table]]

    def row_fingerprints(self) -> npt.NDArray[np.uint64]:
        """The fingerprints of rows 0..n-1, in row order (a new array)."""
        keys = np.repeat(np.arange(self.directories.shape[1] - 1, dtype=np.uint64), np.diff(self.directories[0]))
        fingerprints = np.empty(len(self), dtype=np.uint64)
        fingerprints[self.rows] = table0_fingerprints(self.design, keys, self.slices[0], self.tails)
        return fingerprints

    def fingerprint_of(self, row: int, hint: int) -> int:
        """The fingerprint of *row*, found among the rows of table 0 with its *hint*."""
        shift = self.design.prefix_bits - hint_bits(self.design)
        first, last = (hint << shift, (hint + 1) << shift) if shift >= 0 else (hint >> -shift, (hint >> -shift) + 1)
        low, high = self.directories[0, first], self.directories[0, last]
        found = np.flatnonzero(self.rows[low:high] == np.uint32(row))
        if not len(found):
            raise KeyError(row)
        at = int(low + found[0])
        key = np.searchsorted(self.directories[0], at, side="right") - 1  # (its bucket)
        found_at = slice(at, at + 1)
        return int(table0_fingerprints(self.design, np.array([key]), self.slices[0, found_at], self.tails[found_at])[0])

    def same_as(self, other: SortedBuckets) -> bool:
        """The same design and the same arrays (tests: a merge gives what a fresh build gives)."""
        return self.design == other.design and all(map(np.array_equal, self.arrays(), other.arrays()))

    def matches(self, fingerprint: int, max_distance: int, wildcard: int = 0) -> dict[int, int]:
        """``{row: fingerprint}`` of the rows in the buckets a probe visits, within
        *max_distance* of *fingerprint* outside the *wildcard* bits."""
        if _scan is not None:
            return _scan.sorted_matches(self._packed, self.directories, self.slices, self.tails, self.rows,
                                        fingerprint, wildcard, max_distance)
        return numpy_matches(self, fingerprint, max_distance, wildcard)

    def bucket_sizes(self) -> npt.NDArray[np.int64]:
        """Shape ``(tables, 2**prefix_bits)``: rows per bucket."""
        return np.diff(self.directories.astype(np.int64), axis=1)


def probe_kernel() -> str:
    """Which probe the index runs: ``"c"`` (:mod:`._scan`, built at install) or ``"numpy"``."""
    return "numpy" if _scan is None else "c"


def c_probe_mismatch() -> str | None:
    """Why the C probe must not run (``SIMHASH_C_PROBE=0``, or a sample on which it differs
    from its NumPy twin), or None."""
    global _scan
    if os.environ.get("SIMHASH_C_PROBE", "1") == "0":
        return "SIMHASH_C_PROBE=0"
    built, rng = _scan, np.random.default_rng(2007)
    bases = rng.integers(0, 2**64 - 1, 64, dtype=np.uint64, endpoint=True)
    noise = np.bitwise_or.reduce(np.uint64(1) << rng.integers(0, 64, (2048, 3)).astype(np.uint64), axis=1)
    fingerprints = bases[rng.integers(0, 64, 2048)] ^ noise  # near one another: most probes find some
    # 32 buckets a table, ~64 rows each (the C filter's whole blocks of rows and their ends),
    # and 16-bit buckets (table 0's 2-byte tails, as from 1M rows on)
    samples = [SortedBuckets.build(make_design(3, 4, bits), fingerprints) for bits in (5, 16)]
    probes = [(int(f) ^ 1, int(w) & 0x0F0F_0F0F_00FF_0F0F, k) for f, w, k in
              zip(fingerprints[:32], rng.integers(0, 2**64, 32, np.uint64), [3, 3, 3, 12] * 8)]
    try:
        found = [sample.matches(f, k, w) for sample in samples for f, w, k in probes]
        _scan = None
        differ = found != [sample.matches(f, k, w) for sample in samples for f, w, k in probes]
    finally:
        _scan = built
    return "it differs from its NumPy twin on a sample" if differ else None


if _scan is not None and (_mismatch := c_probe_mismatch()) is not None:
    logger.warning("Simhash's index probes with NumPy, not its C probe: %s", _mismatch)
    _scan = None


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
