"""Choosing a permutation-table design: the trade-off of Manku, Jain & Das Sarma
(WWW 2007, section 3.1.1) between tables and candidates per probe, with the costs
measured on this implementation.

More blocks mean more tables (memory, and one lookup each per probe) but longer
leading blocks, hence fewer candidates per probe. :func:`choose_design` minimises the
modelled cost of a probe under a memory cap; :func:`design_for_size` widens buckets as
an index grows.
"""

from __future__ import annotations

import math
from math import comb

from ..core.fingerprint import FINGERPRINT_BITS
from ._slices import tail_dtype
from ._tables import TableDesign, make_design

#: Largest prefix :func:`choose_design` picks (a 256 MiB directory per table).
_MAX_AUTO_PREFIX_BITS = 26
#: Fewest buckets a table gets, so small indexes still spread out.
_MIN_AUTO_PREFIX_BITS = 8
#: Aim at ~16 rows per bucket: directories stay ~1/16 of the row arrays (a bucket is read
#: in order, so a longer one costs little; at ~8, 1M fingerprints took 26.05 bytes each).
_ROWS_PER_BUCKET_LOG2 = 4

# Cost of a probe of MemoryIndex: fixed work per table (key, directory lookup) and per
# candidate (then a random read of the fingerprint array + popcount; now a read in bucket
# order, ~3.5 ns at 10M: not fitted again, the 26-byte cap leaves k = 3 one design). Fitted by
# `python benchmarks/bench_index.py --calibrate --sizes 10000000` (k = 3, 8 designs of
# 4-20 tables, 10M fingerprints, the C probe, CPython 3.11, a shared 2-core VM): only
# their ratio matters to choose_design. (The NumPy probe: 2800 and 15, about the same
# ratio, so the same designs but between ~13.5M and ~16.7M fingerprints.)
COST_PER_TABLE_NS = 771.0
COST_PER_CANDIDATE_NS = 6.9
#: The in-memory layout (:mod:`._slices`): every table holds a uint32 slice a row, table 0
#: also a uint32 row id and a tail (2 bytes for buckets of 16 bits and more, else 4); each
#: row has a 1-byte hint.
_ROW_ID_BYTES = 4
_SLICE_BYTES = 4
_HINT_BYTES = 1
_OFFSET_BYTES = 4
#: Default memory cap of :func:`choose_design`, index structure only (no keys).
DEFAULT_MAX_BYTES_PER_FINGERPRINT = 64.0
#: The in-memory index's cap (:func:`starting_design`): 100M fingerprints in ~2.6 GB. For
#: k = 3 that keeps the 4 tables of 16-bit blocks (23 bytes from 16-bit buckets on) at any
#: size, where 64 would take 10 tables (47) past ~13.5M.
MEMORY_MAX_BYTES_PER_FINGERPRINT = 26.0
#: What the bucket directories of an empty index may take (:func:`starting_design`): an
#: index sized for 1e9 pages would otherwise hold 1.3 GB before its first page.
EMPTY_INDEX_BYTES = 64 * 2**20
#: choose_design tries B = k + 1 ... k + _MAX_EXTRA_BLOCKS.
_MAX_EXTRA_BLOCKS = 8


def bytes_per_fingerprint(design: TableDesign, size: int) -> float:
    """Index memory per fingerprint (fingerprint, row ids, directories; no keys)."""
    directories = len(design.tables) * (2**design.prefix_bits + 1) * _OFFSET_BYTES
    return _row_bytes(len(design.tables), tail_dtype(design)().itemsize) + directories / max(size, 1)


def probe_cost_ns(design: TableDesign, size: int) -> float:
    """Modelled cost of one probe at *size* fingerprints (see the COST_* constants)."""
    tables = len(design.tables) * COST_PER_TABLE_NS
    return tables + design.expected_candidates(size) * COST_PER_CANDIDATE_NS


def choose_design(
    max_distance: int,
    expected_size: int,
    *,
    max_bytes_per_fingerprint: float = DEFAULT_MAX_BYTES_PER_FINGERPRINT,
) -> TableDesign:
    """The cheapest design per probe for *expected_size* fingerprints.

    Cost model: ``tables * COST_PER_TABLE_NS + candidates * COST_PER_CANDIDATE_NS``
    (paper, section 3.1.1, with constants measured on this implementation), among
    designs within *max_bytes_per_fingerprint*; if none fits, the one with the
    fewest tables (``B = k + 1``).

    >>> choose_design(3, 10_000_000).describe()["blocks"]
    [16, 16, 16, 16]
    >>> len(choose_design(3, 1_000_000_000).tables)
    10
    """
    if expected_size < 0:
        raise ValueError(f"expected_size must be >= 0, not {expected_size}")
    fitting = []
    last = min(max_distance + _MAX_EXTRA_BLOCKS, FINGERPRINT_BITS)
    for blocks in range(max_distance + 1, last + 1):
        if _row_bytes(comb(blocks, max_distance)) > max_bytes_per_fingerprint:
            break  # more blocks only mean more tables
        design = design_for_size(make_design(max_distance, blocks), expected_size)
        if bytes_per_fingerprint(design, expected_size) <= max_bytes_per_fingerprint:
            fitting.append(design)
    if not fitting:
        return design_for_size(make_design(max_distance, max_distance + 1), expected_size)
    return min(fitting, key=lambda d: probe_cost_ns(d, expected_size))


def starting_design(max_distance: int, expected_size: int) -> TableDesign:
    """The design an in-memory index starts with: :func:`choose_design`'s tables for
    *expected_size* within :data:`MEMORY_MAX_BYTES_PER_FINGERPRINT`, with buckets for no
    more fingerprints than directories of :data:`EMPTY_INDEX_BYTES` hold; they widen as
    pages come (:func:`design_for_size`).

    >>> starting_design(3, 1_000_000_000).describe()["tables"]
    4
    >>> starting_design(3, 1_000_000) == choose_design(3, 1_000_000)
    True
    """
    design = choose_design(max_distance, expected_size, max_bytes_per_fingerprint=MEMORY_MAX_BYTES_PER_FINGERPRINT)
    most_buckets = EMPTY_INDEX_BYTES // (len(design.tables) * _OFFSET_BYTES)
    if 2**design.prefix_bits <= most_buckets:
        return design
    return design.with_prefix_bits(max(_MIN_AUTO_PREFIX_BITS, math.floor(math.log2(most_buckets))))


def _row_bytes(tables: int, tail_bytes: int = 2) -> int:
    """Bytes per fingerprint of the row arrays alone (no directories); by default with the
    2-byte tails of 16-bit buckets, the fewest."""
    return tables * _SLICE_BYTES + tail_bytes + _ROW_ID_BYTES + _HINT_BYTES


def bulk_design(max_distance: int, size: int) -> TableDesign:
    """The design of an in-memory index built in bulk over *size* fingerprints."""
    return design_for_size(starting_design(max_distance, size), size)


def design_for_size(design: TableDesign, size: int) -> TableDesign:
    """*design* with a bucket width fit for *size* fingerprints (~16 per bucket)."""
    wanted = math.floor(math.log2(max(size, 1))) - _ROWS_PER_BUCKET_LOG2
    wanted = max(_MIN_AUTO_PREFIX_BITS, min(wanted, _MAX_AUTO_PREFIX_BITS))
    prefix_bits = min(wanted, design.leading_bits)
    if prefix_bits == design.prefix_bits:
        return design
    return design.with_prefix_bits(prefix_bits)

