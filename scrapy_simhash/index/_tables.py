"""The permutation-table design of Manku, Jain & Das Sarma, "Detecting
Near-Duplicates for Web Crawling" (WWW 2007), section 3.

The 64 bits of a fingerprint are cut into ``B`` blocks as evenly as possible.
Each of the ``C(B, k)`` tables picks ``B - k`` of the blocks as its *leading*
blocks; a fingerprint goes into the bucket named by the first ``prefix_bits`` bits
of its leading blocks, concatenated.

Why this is exact (paper, section 3.1): if two fingerprints differ in at most
``k`` bits, at most ``k`` of the ``B`` blocks differ, so at least ``B - k`` blocks
agree entirely. The table whose leading blocks are exactly those blocks puts both
in the same bucket, because its bucket key is a prefix of the concatenation of
those blocks. Every candidate a probe finds is then checked by its full Hamming
distance, so nothing beyond ``k`` is reported either.

The trade-off (paper, section 3.1.1): more blocks mean more tables (memory and one
lookup each) but longer leading blocks, hence fewer candidates per probe;
:mod:`._design_choice` picks a design by it.

>>> design = make_design(3, 4, prefix_bits=16)
>>> design.blocks
((48, 16), (32, 16), (16, 16), (0, 16))
>>> design.tables
((0,), (1,), (2,), (3,))
>>> design.bucket_keys(0x1234_5678_9ABC_DEF0)
(4660, 22136, 39612, 57072)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.fingerprint import FINGERPRINT_BITS

#: Bucket keys index a directory of ``2**prefix_bits`` offsets per table.
MAX_PREFIX_BITS = 32
# (source shift, mask, destination shift): key |= ((fp >> src) & mask) << dst
_Term = tuple[int, int, int]


@dataclass(frozen=True)
class TableDesign:
    """Blocks, tables and bucket width of a permutation index (see module doc)."""

    max_distance: int
    blocks: tuple[tuple[int, int], ...]
    tables: tuple[tuple[int, ...], ...]
    prefix_bits: int
    _terms: tuple[tuple[_Term, ...], ...] = field(init=False, repr=False, compare=False)
    #: Width of the shortest concatenation of leading blocks over all tables (computed once:
    #: an insert asks for it, through its row's hint).
    leading_bits: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        terms = tuple(_key_terms(self.blocks, leading, self.prefix_bits) for leading in self.tables)
        object.__setattr__(self, "_terms", terms)
        leading_bits = min(sum(self.blocks[i][1] for i in leading) for leading in self.tables)
        object.__setattr__(self, "leading_bits", leading_bits)

    def bucket_keys(self, fingerprint: int) -> tuple[int, ...]:
        """One bucket key per table, with plain ints (fast for a single probe)."""
        keys = []
        for terms in self._terms:
            key = 0
            for src, mask, dst in terms:
                key |= ((fingerprint >> src) & mask) << dst
            keys.append(key)
        return tuple(keys)

    def probe_keys(self, fingerprint: int, wildcard: int = 0) -> tuple[tuple[int, ...], ...]:
        """Per table, every bucket a query must visit when its *wildcard* bits may differ
        (``base | subset`` for every subset of ``free``, see :meth:`probe_bases`)."""
        if not wildcard:
            return tuple((key,) for key in self.bucket_keys(fingerprint))
        bases, free_bits = self.probe_bases(fingerprint, wildcard)
        return tuple(tuple(base | subset for subset in _subsets(free)) for base, free in zip(bases, free_bits))

    def probe_bases(self, fingerprint: int, wildcard: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Per table, the bucket key of the query outside its wildcard bits, and the key
        bits that come from wildcard bits (the "free" bits).

        Bucket keys are bit extractions, so ``bucket_keys(wildcard)`` marks the key bits
        that come from wildcard bits; the query visits each bucket those bits can spell
        (2**w buckets for w such bits).
        """
        return self.bucket_keys(fingerprint & ~wildcard), self.bucket_keys(wildcard)

    def bucket_keys_array(self, fingerprints: npt.NDArray[np.uint64]) -> npt.NDArray[np.unsignedinteger[Any]]:
        """Bucket keys of many fingerprints: shape ``(tables, n)``, uint32 (uint64 past 32 bits)."""
        return np.stack([self.table_keys_array(fingerprints, table) for table in range(len(self.tables))])

    def table_keys_array(self, fingerprints: npt.NDArray[np.uint64], table: int) -> npt.NDArray[np.unsignedinteger[Any]]:
        """The bucket keys of many fingerprints in one *table* (a merge step works a table at a time)."""
        fps = np.asarray(fingerprints, dtype="<u8")
        dtype = np.uint32 if self.prefix_bits <= 32 else np.uint64
        keys = np.zeros(len(fps), dtype=dtype)
        # Bits 16j..16j+15 of every fingerprint, as a strided uint16 view: a term inside
        # one lane is read from it with narrow ops (a 10M-entry reopen spends most of its
        # time here), the others with 64-bit shifts.
        lanes = fps.view("<u2").reshape(-1, 4)
        for src, mask, dst in self._terms[table]:
            if src % 16 + mask.bit_length() <= 16:
                part = (lanes[:, src // 16] >> np.uint16(src % 16)) & np.uint16(mask)
            else:
                part = (fps >> np.uint64(src)) & np.uint64(mask)
            keys |= part.astype(dtype) << dtype(dst)
        return keys

    def expected_candidates(self, size: int) -> float:
        """Mean candidates per probe over all tables, for uniform fingerprints."""
        return len(self.tables) * size / 2.0**self.prefix_bits

    def with_prefix_bits(self, prefix_bits: int) -> TableDesign:
        """The same blocks and tables with another bucket width."""
        return make_design(self.max_distance, len(self.blocks), prefix_bits)

    def describe(self) -> dict[str, Any]:
        """A JSON-friendly summary for logs and ``inspect``."""
        return {
            "max_distance": self.max_distance,
            "blocks": [width for _, width in self.blocks],
            "tables": len(self.tables),
            "leading_bits": self.leading_bits,
            "prefix_bits": self.prefix_bits,
        }


@lru_cache(maxsize=256)  # designs are immutable; choose_design asks for the same ones
def make_design(max_distance: int, blocks: int, prefix_bits: int | None = None) -> TableDesign:
    """The design with *blocks* blocks for distance *max_distance*.

    *prefix_bits* defaults to the leading width, capped at 16 bits.

    >>> design = make_design(3, 5)
    >>> [width for _, width in design.blocks], len(design.tables), design.prefix_bits
    ([13, 13, 13, 13, 12], 10, 16)
    """
    _check_design_args(max_distance, blocks)
    spans = _even_blocks(blocks)
    tables = tuple(combinations(range(blocks), blocks - max_distance))
    leading = min(sum(spans[i][1] for i in t) for t in tables)
    if prefix_bits is None:
        prefix_bits = min(leading, 16)
    if not 0 < prefix_bits <= min(leading, MAX_PREFIX_BITS):
        raise ValueError(
            f"prefix_bits must be between 1 and {min(leading, MAX_PREFIX_BITS)} "
            f"for {blocks} blocks and distance {max_distance}, not {prefix_bits}"
        )
    return TableDesign(max_distance, spans, tables, prefix_bits)


def _check_design_args(max_distance: int, blocks: int) -> None:
    if not 0 <= max_distance < FINGERPRINT_BITS:
        raise ValueError(f"max_distance must be between 0 and 63, not {max_distance}")
    if not max_distance < blocks <= FINGERPRINT_BITS:
        raise ValueError(
            f"blocks must be between {max_distance + 1} and {FINGERPRINT_BITS} "
            f"for distance {max_distance}, not {blocks}"
        )


def _even_blocks(count: int) -> tuple[tuple[int, int], ...]:
    """(shift, width) of *count* blocks, most significant first; widths differ by <= 1."""
    base, extra = divmod(FINGERPRINT_BITS, count)
    spans, top = [], FINGERPRINT_BITS
    for index in range(count):
        width = base + (index < extra)
        top -= width
        spans.append((top, width))
    return tuple(spans)


def _key_terms(
    blocks: tuple[tuple[int, int], ...], leading: tuple[int, ...], prefix_bits: int
) -> tuple[_Term, ...]:
    """Shift-and-mask steps that build the first *prefix_bits* bits of the leading blocks."""
    runs: list[list[int]] = []  # [shift, width] of runs of adjacent leading blocks
    for index in leading:
        shift, width = blocks[index]
        if runs and runs[-1][0] == shift + width:  # adjacent: one shift serves both
            runs[-1] = [shift, runs[-1][1] + width]
        else:
            runs.append([shift, width])
    terms, remaining = [], prefix_bits
    for shift, width in runs:
        if remaining <= 0:
            break
        used = min(width, remaining)
        remaining -= used
        terms.append((shift + width - used, (1 << used) - 1, remaining))
    return tuple(terms)


def _subsets(free: int) -> tuple[int, ...]:
    """Every subset of the bits of *free*, in counting order.

    >>> _subsets(0b1010)
    (0, 2, 8, 10)
    """
    # A table's free bits are few (<= 4 of 16 by default) and recur: small sets are cached
    # (a tuple of at most 256 ints each), a large one (a mask of many bits) is not.
    return _small_subsets(free) if free.bit_count() <= 8 else _all_subsets(free)


def _all_subsets(free: int) -> tuple[int, ...]:
    subsets, subset = [0], free & -free
    while subset:
        subsets.append(subset)
        subset = (subset - free) & free  # the next subset of `free` in counting order
    return tuple(subsets)


_small_subsets = lru_cache(maxsize=4096)(_all_subsets)
