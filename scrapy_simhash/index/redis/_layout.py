"""What a Redis namespace holds, seen from Python: meta, key names, records.

The layout (an append-only log in chunks) is described in :mod:`._lua`, whose
scripts read and write it.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any
from urllib.parse import quote

import numpy as np
import numpy.typing as npt

from ...core.fingerprint import check_fingerprint
from ...core.sketch import SKETCH_BYTES, check_sketch
from .._key_crcs import key_crc
from ._keys import decode_stored_key, encode_stored_key
from ..base import IndexFormatError, signature_difference

# "6": short pages' shingles after their sketches (``P:x<c>``); "5" had none (still read
# and written, without them: see ``SHINGLES`` in :mod:`._lua`), "4" no key CRCs
# (``P:h<c>``), "3" no sketches either, "2" stored keys as plain UTF-8.
FORMAT_VERSION = "6"
#: The formats this version opens: its own, and "5", whose records have no shingles.
READ_FORMATS = (FORMAT_VERSION, "5")
#: Keys longer than this (coded bytes) are refused: a chunk of keys must stay under
#: Redis' 512 MB string limit (4094 keys of 64 KiB are 256 MiB).
MAX_KEY_BYTES = 0xFFFF
# Records a chunk: small enough that a TTL frees memory soon after records expire (a
# chunk goes when its last record does) and that reading a tail touches <= 2 chunks,
# large enough that the per-key overhead of Redis (~100 bytes, 5 keys a chunk) is
# ~0.1 byte a record. Not 4096: 4094 records of 32 (sketches), 8 (fingerprints) and 4
# bytes (key ends, expiries) plus Redis' string header fill allocations of exactly 128,
# 32 and 16 KiB, where 4096 spill into jemalloc's next size classes (160, 40 and 20 KiB).
CHUNK_RECORDS = 4094
#: The key end of a record whose chunk lost strings and was blanked (``blank`` in :mod:`._lua`).
GONE = 0xFFFF_FFFF
# The kinds of chunk strings an entry is read from: fingerprints, key ends, keys,
# expiries, sketches (the key CRCs, ``h``, are only for the scripts and the mirrors); and
# the hash of short pages' shingles (``x``, read with HGETALL).
CHUNK_KINDS = ("f", "o", "k", "e", "s")
SHINGLES_KIND = "x"
#: How a record stored without a sketch holds it (a real one is all zeros with probability 2**-256).
NO_SKETCH = bytes(SKETCH_BYTES)


def new_meta(max_distance: int, signature: str, ttl: float | None) -> dict[str, str]:
    """The meta hash of a new namespace: format, options signature, TTL, chunk size."""
    return {
        "format": FORMAT_VERSION,
        "signature": signature,
        "created_with_max_distance": str(max_distance),  # informative: any k searches the log
        "ttl": str(math.ceil(ttl or 0)),
        "chunk_records": str(CHUNK_RECORDS),
        "epoch": uuid.uuid4().hex,
    }


def check_meta(meta: dict[str, str], wanted: dict[str, str], where: str) -> None:
    """Refuse a namespace whose format, options or TTL do not fit *wanted*."""
    if meta.get("format") not in READ_FORMATS:
        raise IndexFormatError(
            f"{where} has format {meta.get('format')!r}, this version reads formats "
            f"{' and '.join(map(repr, READ_FORMATS))} (format '1' is the bucket layout of earlier versions, "
            "'2' their log with keys not coded, '3' their log without sketches, '4' without key "
            "CRCs): start it afresh "
            "with SIMHASH_INDEX_RESET=True on one worker (import --reset), or delete the namespace "
            "(or use another one)"
        )
    check_signature(meta, wanted, where)
    if wanted["ttl"] != meta["ttl"]:
        raise ValueError(
            f"{where} was created with ttl={int(meta['ttl']) or None}, not "
            f"{int(wanted['ttl']) or None}: use the same SIMHASH_TTL (--ttl on the command line) "
            "or reset it"
        )


def check_signature(meta: dict[str, str], wanted: dict[str, str], where: str) -> None:
    """Refuse a namespace whose fingerprints were made with other options than *wanted*'s."""
    if wanted["signature"] and meta["signature"] and meta["signature"] != wanted["signature"]:
        raise IndexFormatError(
            f"{where} holds fingerprints made otherwise ({signature_difference(meta['signature'], wanted['signature'])}):"
            " they are not comparable with these: reset it (SIMHASH_INDEX_RESET=True on one worker,"
            " or import --reset) or use another namespace"
        )


def parse_meta(reply: list[Any]) -> dict[str, str]:
    """The meta hash from an HGETALL-style flat reply."""
    values = [reply_text(value) for value in reply]
    return dict(zip(values[::2], values[1::2]))


def encoded_key(key: str) -> bytes:
    """*key* as stored (coded, :mod:`._keys`); a clear error when it is too long for a chunk."""
    encoded = encode_stored_key(key)
    if len(encoded) > MAX_KEY_BYTES:
        raise ValueError(f"key is {len(encoded)} bytes once coded, the Redis index stores at most {MAX_KEY_BYTES}")
    return encoded


def pack_crc(crc: int) -> bytes:
    """The 4 big-endian bytes a key's CRC (:func:`~._key_lookup.key_crc`) is stored as."""
    return crc.to_bytes(4, "big")


def pack(fingerprint: int) -> bytes:
    """The 8 big-endian bytes a fingerprint is stored as (exact: no float scores)."""
    return fingerprint.to_bytes(8, "big")


def split_last(last: bytes, tombstones: int) -> tuple[bytes, bytes]:
    """A mirror's *last* (``diverged`` in :mod:`._lua`): its last record's fingerprint (8
    bytes, or none) and, when it has seen *tombstones*, its last tombstone (8 bytes).

    >>> split_last(b"F" * 8 + b"T" * 8, 2), split_last(b"T" * 8, 1), split_last(b"F" * 8, 0)
    ((b'FFFFFFFF', b'TTTTTTTT'), (b'', b'TTTTTTTT'), (b'FFFFFFFF', b''))
    """
    if tombstones and len(last) >= 8:
        return last[:-8], last[-8:]
    return last, b""


def pack_sketch(sketch: bytes | None) -> bytes:
    """A sketch as the scripts take it: its 32 bytes (:data:`NO_SKETCH` for none), then a
    short page's shingles (:mod:`._lua` stores those in ``P:x<c>``)."""
    return NO_SKETCH if sketch is None else sketch


def add_batches(
    entries: Iterable[tuple[int, str, bytes | None]], size: int
) -> Iterator[tuple[list[int], list[int], list[bytes]]]:
    """*entries*, *size* at a time, checked and packed: each batch's fingerprints, key
    CRCs, and the add script's arguments (fingerprints, sketches, key CRCs, the sketches'
    sizes, keys). A bad entry raises before its batch is sent."""
    rows = iter(entries)
    while batch := list(islice(rows, size)):
        fingerprints = [check_fingerprint(fingerprint) for fingerprint, _, _ in batch]
        sketches = [pack_sketch(check_sketch(sketch)) for _, _, sketch in batch]
        sizes = b"".join(len(sketch).to_bytes(2, "big") for sketch in sketches)
        keys = [encoded_key(key) for _, key, _ in batch]
        crcs = [key_crc(key) for key in keys]
        packed = [b"".join(map(pack, fingerprints)), b"".join(sketches), b"".join(map(pack_crc, crcs)), sizes]
        yield fingerprints, crcs, [*packed, *keys]


def unpack_fingerprints(data: bytes) -> npt.NDArray[np.uint64]:
    """Packed big-endian fingerprints (or tombstones) as uint64."""
    return np.frombuffer(data, dtype=">u8").astype(np.uint64)


def unpack_crcs(data: bytes) -> npt.NDArray[np.uint32]:
    """Packed big-endian key CRCs as uint32."""
    return np.frombuffer(data, dtype=">u4").astype(np.uint32)


@dataclass(frozen=True)
class Names:
    """The Redis key names of one namespace."""

    prefix: str

    @classmethod
    def of(cls, namespace: str) -> Names:
        """The names of *namespace* (quoted: no ':' inside, so no namespace's prefix is the
        start of another's)."""
        return cls(f"simhash:{quote(namespace, safe='/@')}:")

    @property
    def meta(self) -> str:
        return self.prefix + "meta"

    @property
    def counter(self) -> str:
        """The number of records ever appended."""
        return self.prefix + "n"

    @property
    def tombstones(self) -> str:
        """The removed records' sequence numbers, 8 bytes each."""
        return self.prefix + "x"

    @property
    def script_keys(self) -> list[str]:
        """KEYS of every log script: meta, record counter, tombstones."""
        return [self.meta, self.counter, self.tombstones]

    def chunk(self, kind: str, number: int) -> str:
        return f"{self.prefix}{kind}{number}"


@dataclass(frozen=True)
class Chunk:
    """The strings of one chunk, as read with GET (``None``: the key does not exist), and
    its short pages' shingles (HGETALL)."""

    first_seq: int
    fingerprints: bytes | None
    ends: bytes | None
    keys: bytes | None
    expiries: bytes | None
    sketches: bytes | None
    #: ``P:x<c>`` as HGETALL reads it: the short pages' shingles by slot (bytes of its number).
    shingles: dict[bytes, bytes]

    def live_entries(self, removed: set[int], now: int | None) -> Iterator[tuple[int, str, bytes | None]]:
        """Its ``(fingerprint, key, sketch)``, without removed (and, with *now*, expired) ones."""
        if self.fingerprints is None or self.ends is None or self.keys is None:
            return  # gone (expired with its last record, or evicted)
        fps = np.frombuffer(self.fingerprints, dtype=">u8").tolist()
        ends = np.frombuffer(self.ends, dtype=">u4").tolist()
        live = [True] * len(fps)
        if now is not None:
            live = (np.frombuffer(self.expiries or b"", dtype=">u4") > now).tolist()
        start = 0
        for slot, (fingerprint, stop, alive) in enumerate(zip(fps, ends, live)):
            if stop == GONE:  # blanked (``blank`` in _lua); the next key starts at 0
                start = 0
                continue
            whole = start <= stop <= len(self.keys)  # (else keys lost, begun again under old ends: gone)
            if alive and whole and self.first_seq + slot not in removed:
                yield fingerprint, decode_stored_key(self.keys[start:stop]), self._sketch(slot)
            start = stop

    def _sketch(self, slot: int) -> bytes | None:
        """The sketch in *slot* (and a short page's shingles after it); ``None`` when it was
        stored without one (zeros, or past the end of the string: see ``append`` in :mod:`._lua`)."""
        sketch = (self.sketches or b"")[slot * SKETCH_BYTES : (slot + 1) * SKETCH_BYTES]
        if len(sketch) < SKETCH_BYTES or sketch == NO_SKETCH:
            return None
        return sketch + self.shingles.get(str(slot).encode(), b"")


def reply_text(value: Any) -> str:
    """A status word of a script reply (redis-py returns bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)
