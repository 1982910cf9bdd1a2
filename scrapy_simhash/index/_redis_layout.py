"""What a Redis namespace holds, seen from Python: meta, records, replies.

The key layout is described in :mod:`._redis_lua`, whose scripts read and write it.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from ._storage import decode_key
from ._tables import TableDesign, make_design
from .base import IndexFormatError, Match

FORMAT_VERSION = "1"
#: Keys longer than this (UTF-8 bytes) do not fit the 2-byte length of a key record.
MAX_KEY_BYTES = 0xFFFF
# ~32 records per bucket: each Redis key costs ~80 bytes, so larger buckets than
# the in-memory index's keep memory down (4 tables * 80 / 32 = 10 bytes a
# fingerprint), while Lua still scans a bucket in a few microseconds.
_ROWS_PER_BUCKET_LOG2 = 5
# ~32 key records per key shard.
_KEYS_PER_SHARD_LOG2 = 5
# B = 4 blocks of 16 bits, table t leading with block t (k = 3): the check script
# finds candidates by their 2 bytes of block t (see _redis_lua.leading).
_BYTE_BLOCKS = ((48, 16), (32, 16), (16, 16), (0, 16))
_BYTE_TABLES = ((0,), (1,), (2,), (3,))


def new_meta(
    max_distance: int, expected_size: int, signature: str, ttl: float | None
) -> dict[str, str]:
    """The meta hash of a new namespace: format, options signature, design, TTL.

    B = k + 1 blocks (Manku et al., section 3.1.1: the fewest tables), since Redis
    memory grows with each stored copy of a fingerprint.
    """
    blocks = max_distance + 1
    leading = make_design(max_distance, blocks).leading_bits
    wanted = math.floor(math.log2(max(expected_size, 2))) - _ROWS_PER_BUCKET_LOG2
    shard_bits = math.floor(math.log2(max(expected_size, 2))) - _KEYS_PER_SHARD_LOG2
    return {
        "format": FORMAT_VERSION,
        "signature": signature,
        "max_distance": str(max_distance),
        "blocks": str(blocks),
        "prefix_bits": str(max(1, min(wanted, leading, 32))),
        "shard_bits": str(max(1, min(shard_bits, 24))),
        "ttl": str(math.ceil(ttl or 0)),
    }


def check_meta(meta: dict[str, str], wanted: dict[str, str], max_distance: int, where: str) -> None:
    """Refuse a namespace whose format, options, TTL or design do not fit *wanted*."""
    if meta.get("format") != FORMAT_VERSION:
        raise IndexFormatError(
            f"{where} has format {meta.get('format')!r}, expected "
            f"{FORMAT_VERSION!r}: delete it or set SIMHASH_INDEX_RESET=True"
        )
    if wanted["signature"] and meta["signature"] and meta["signature"] != wanted["signature"]:
        raise IndexFormatError(
            f"{where} holds fingerprints made with other options "
            f"({meta['signature']}): use another namespace or reset it"
        )
    if wanted["ttl"] != meta["ttl"]:
        raise ValueError(
            f"{where} was created with ttl={int(meta['ttl']) or None}, not "
            f"{int(wanted['ttl']) or None}: use the same SIMHASH_TTL (--ttl on the command line) "
            "or reset it"
        )
    if max_distance > int(meta["max_distance"]):
        raise ValueError(
            f"{where} was created for max_distance <= {meta['max_distance']}, "
            f"not {max_distance}: reset it or use another namespace"
        )


def byte_block_prefix_bits(design: TableDesign) -> int:
    """*design*'s prefix bits if table t leads with bytes 2t, 2t + 1 of a record, else 0."""
    aligned = design.blocks == _BYTE_BLOCKS and design.tables == _BYTE_TABLES
    return design.prefix_bits if aligned else 0


def pack(fingerprint: int) -> bytes:
    """The 8 big-endian bytes a fingerprint is stored as (exact: no float scores)."""
    return fingerprint.to_bytes(8, "big")


def parse_matches(reply: list[Any]) -> list[Match]:
    """The matches of a check-and-add reply, nearest first (``[]`` when it stored)."""
    if reply[0] == 1:
        return []
    matches = [
        Match(decode_key(key), int.from_bytes(fp8, "big"), int(distance))
        for fp8, distance, key in zip(reply[1::3], reply[2::3], reply[3::3])
    ]
    return sorted(matches, key=lambda m: (m.distance, m.key, m.fingerprint))


def parse_key_records(data: bytes, record_bytes: int, now: int) -> Iterator[tuple[int, str]]:
    """The live ``(fingerprint, key)`` pairs of a key shard string."""
    pos = 0
    while pos < len(data):
        (klen,) = struct.unpack_from(">H", data, pos + record_bytes)
        live = record_bytes == 8 or struct.unpack_from(">I", data, pos + 8)[0] > now
        if live:
            start = pos + record_bytes + 2
            key = decode_key(data[start : start + klen])
            yield int.from_bytes(data[pos : pos + 8], "big"), key
        pos += record_bytes + 2 + klen


class BucketSizes:
    """The bucket sizes of a Redis namespace, shaped like ``SortedBuckets`` for ``bucket_stats``."""

    def __init__(self, design: TableDesign, tables: list[list[int]]) -> None:
        self.design = design
        self._sizes = np.zeros((len(tables), 2**design.prefix_bits), dtype=np.int64)
        for row, sizes in zip(self._sizes, tables):
            row[: len(sizes)] = sizes

    def __len__(self) -> int:
        return int(self._sizes[0].sum())

    def bucket_sizes(self) -> npt.NDArray[np.int64]:
        return self._sizes
