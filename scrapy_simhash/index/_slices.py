"""What the sorted tables store per row, so that a probe reads each bucket in order.

A probe of the default design with 14 wildcard bits visits ~50 buckets, ~7,600 rows at
10M fingerprints. Row ids into one fingerprint array made each of them a random read
(~12 ns, the memory's latency); instead each table keeps, in its bucket order, a 32-bit
*slice* of each row: the fingerprint bits after its bucket key in the table's own order,
table 0's key bits first. Table 0 (whose key is the fingerprint's top ``prefix_bits``
bits) also keeps the bits below its slice, the *tail* (``32 - prefix_bits`` bits: 2 bytes
from 16-bit keys on), and the row ids (4 bytes).

The bucket key and the slice give 32 + ``prefix_bits`` known bits of a row, table 0's key
among them. A row whose slice differs from the query's in more than k counted bits is
not a match (exact: the key bits of a visited bucket differ only in wildcard bits). The
few rows of table 0 that pass are checked whole (key, slice and tail are the
fingerprint); those of the other tables are looked up in their table-0 bucket. Every
probe thus filters 4 bytes a row: table 0's 8-byte fingerprints were a third of the bytes
a probe read (at 100M rows, the C probe took 43.3 us a check where it took 49.5). For
k = 3: 4 * 4 + 2 + 4 = 22 bytes a fingerprint (23 with the index's 1-byte hint a row),
where the fingerprints, row ids and three tables' slices took 24.

>>> from ._tables import make_design
>>> layout = SliceLayout.of(make_design(3, 4, 16))
>>> hex(layout.slice_of(0x1111_2222_3333_4444, 1))  # table 1's key is 0x2222: block 0, then block 2
'0x11113333'
>>> hex(layout.table0_key(1, 0x2222, 0x1111_3333))
'0x1111'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.fingerprint import FINGERPRINT_BITS
from ._tables import TableDesign

SLICE_BITS = 32
#: Shift-and-mask terms per bit extraction, padded with zero masks (the C probe's layout).
MAX_TERMS = 64
# (source shift, mask, destination shift): out |= ((value >> src) & mask) << dst
_Term = tuple[int, int, int]


@dataclass(frozen=True)
class SliceLayout:
    """Per table: the terms of its bucket key, of its slice, and of table 0's key from
    ``(key << 32) | slice`` (see the module doc)."""

    key_terms: tuple[tuple[_Term, ...], ...]
    slice_terms: tuple[tuple[_Term, ...], ...]
    table0_terms: tuple[tuple[_Term, ...], ...]

    @staticmethod
    def of(design: TableDesign) -> SliceLayout:
        return _layout(design)

    def slice_of(self, fingerprint: int, table: int) -> int:
        return extract(fingerprint, self.slice_terms[table])

    def table0_key(self, table: int, key: int, slice_: int) -> int:
        """Table 0's bucket key of a row in *table*'s bucket *key* with slice *slice_*."""
        return extract((key << SLICE_BITS) | slice_, self.table0_terms[table])

    def slices_array(self, fingerprints: npt.NDArray[np.uint64], table: int) -> npt.NDArray[np.uint32]:
        return extract_array(fingerprints, self.slice_terms[table]).astype(np.uint32)

    def table0_keys_array(
        self, table: int, keys: npt.NDArray[Any], slices: npt.NDArray[np.uint32]
    ) -> npt.NDArray[np.int64]:
        combined = (keys.astype(np.uint64) << np.uint64(SLICE_BITS)) | slices.astype(np.uint64)
        return extract_array(combined, self.table0_terms[table]).astype(np.int64)

    def packed(self) -> npt.NDArray[np.uint64]:
        """Shape ``(tables, 3, MAX_TERMS, 3)``: every table's three term lists (the C probe's)."""
        return _packed(self)


def tail_bits(design: TableDesign) -> int:
    """Bits of a fingerprint below table 0's slice: its *tail*, kept apart by table 0."""
    return SLICE_BITS - design.prefix_bits


def tail_dtype(design: TableDesign) -> type[np.unsignedinteger[Any]]:
    return np.uint16 if tail_bits(design) <= 16 else np.uint32


def tails_array(design: TableDesign, fingerprints: npt.NDArray[np.uint64]) -> npt.NDArray[np.unsignedinteger[Any]]:
    return (fingerprints & np.uint64((1 << tail_bits(design)) - 1)).astype(tail_dtype(design))


def table0_fingerprints(
    design: TableDesign, keys: npt.NDArray[Any], slices: npt.NDArray[np.uint32], tails: npt.NDArray[Any]
) -> npt.NDArray[np.uint64]:
    """The fingerprints of rows of table 0 from their bucket keys, slices and tails."""
    top, middle = np.uint64(FINGERPRINT_BITS - design.prefix_bits), np.uint64(tail_bits(design))
    high = np.left_shift(keys.astype(np.uint64), top) | np.left_shift(slices.astype(np.uint64), middle)
    return np.bitwise_or(high, tails.astype(np.uint64))


def extract(value: int, terms: tuple[_Term, ...]) -> int:
    out = 0
    for src, mask, dst in terms:
        out |= ((value >> src) & mask) << dst
    return out


def extract_array(values: npt.NDArray[np.uint64], terms: tuple[_Term, ...]) -> npt.NDArray[np.uint64]:
    out = np.zeros(len(values), dtype=np.uint64)
    for src, mask, dst in terms:
        out |= ((values >> np.uint64(src)) & np.uint64(mask)) << np.uint64(dst)
    return out


def _key_bits(design: TableDesign, table: int) -> list[int]:
    """The bit positions of *table*'s bucket key, most significant first."""
    bits = [pos for block in design.tables[table] for pos in _block_bits(design, block)]
    return bits[: design.prefix_bits]


def _block_bits(design: TableDesign, block: int) -> list[int]:
    shift, width = design.blocks[block]
    return list(range(shift + width - 1, shift - 1, -1))


def _terms(sources: list[int], width: int) -> tuple[_Term, ...]:
    """Terms placing bit ``sources[i]`` at bit ``width - 1 - i`` (runs of adjacent bits merged)."""
    terms: list[list[int]] = []  # [lowest source, length, lowest destination]
    for i, src in enumerate(sources):
        dst = width - 1 - i
        if terms and terms[-1][0] == src + 1 and terms[-1][2] == dst + 1:
            terms[-1] = [src, terms[-1][1] + 1, dst]
        else:
            terms.append([src, 1, dst])
    return tuple((src, (1 << length) - 1, dst) for src, length, dst in terms)


@lru_cache(maxsize=64)  # designs are immutable and few
def _layout(design: TableDesign) -> SliceLayout:
    table0 = _key_bits(design, 0)
    if table0 != list(range(FINGERPRINT_BITS - 1, FINGERPRINT_BITS - 1 - design.prefix_bits, -1)):
        raise ValueError("table 0's bucket key must be the fingerprint's top bits (make_design's)")
    keys, slices, resolves = [], [], []
    for table in range(len(design.tables)):
        key = _key_bits(design, table)
        rest = [b for b in table0 if b not in key]
        rest += [b for b in range(FINGERPRINT_BITS - 1, -1, -1) if b not in key and b not in rest]
        sliced = rest[:SLICE_BITS]
        # where each bit of (key << 32) | slice comes from, to find table 0's key bits in it
        combined = {b: SLICE_BITS + len(key) - 1 - i for i, b in enumerate(key)}
        combined.update({b: SLICE_BITS - 1 - i for i, b in enumerate(sliced)})
        keys.append(_terms(key, len(key)))
        slices.append(_terms(sliced, SLICE_BITS))
        resolves.append(_terms([combined[b] for b in table0], len(table0)))
    return SliceLayout(tuple(keys), tuple(slices), tuple(resolves))


@lru_cache(maxsize=64)
def _packed(layout: SliceLayout) -> npt.NDArray[np.uint64]:
    lists = (layout.key_terms, layout.slice_terms, layout.table0_terms)
    packed = np.zeros((len(layout.key_terms), 3, MAX_TERMS, 3), dtype=np.uint64)
    for kind, per_table in enumerate(lists):
        for table, terms in enumerate(per_table):
            if len(terms) > MAX_TERMS:
                raise ValueError(f"a design with more than {MAX_TERMS} runs of bits in a key")
            packed[table, kind, : len(terms)] = terms
    packed.flags.writeable = False
    return packed
