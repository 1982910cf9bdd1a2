"""The file format of the on-disk store: append-only logs of fixed-size records.

A store is a directory with two append-only files:

* ``fingerprints.log``: a 4096-byte header (magic ``SIMHIDX\\n``, format version,
  a JSON block with the fingerprint options signature, the store's generation and
  creation info, its CRC-32), then 64-byte little-endian records of eight 64-bit words
  (:data:`RECORD`): fingerprint, the key's offset in ``keys.log`` (40 bits) and the low
  24 bits of its CRC-32, the ``key length | namespace << 32 | op << 48 | shingles << 56``
  word, the first 32 bytes of the entry's sketch (:mod:`..core.sketch`) as four words
  (zeros: no sketch), and a 64-bit check value mixing all seven words, so a torn or
  zeroed record is detected.
* ``keys.log``: a 16-byte header (magic, version, generation), then the UTF-8 keys,
  back to back. A short page's key is followed by the rest of its sketch, its
  ``shingles`` 16-bit values: the record's "key" (its length, its CRC) spans both, so
  that the checks, the recovery and the compaction of keys carry them unchanged.

A key is written before its record, and a record is one ``os.write``. After a kill -9
every record points at a key that is there; after a power cut the disk may hold a
record without its key, or a key's page zeroed: the key's CRC in the record finds
that, and :mod:`._replay` drops such records with the rest of the tail. Compaction
(:mod:`._compaction`) writes a new pair of files with the next *generation*: both
headers name it, so a log is never read with another log's keys.

Formats 2 and 3 had no shingles after the keys (and 2 no key CRC, generation 0): they are
read as they are, and rewritten in format 4 by the first process that opens them to write. Format 1
had 32-byte records without a sketch. Its entries cannot be confirmed
(:class:`~.base.SimhashIndex`), so it is refused, with the way out: reset or re-crawl.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.sketch import SKETCH_BYTES
from . import _key_crcs
from .base import IndexFormatError

FORMAT_VERSION = 4
#: Older versions read as they are (then rewritten by the first writer: see :mod:`.disk`).
READABLE_VERSIONS = (2, 3, 4)
HEADER_SIZE = 4096
MAGIC = b"SIMHIDX\n"
KEYS_MAGIC = b"SIMHKEY\n"
KEYS_HEADER_SIZE = 16
_HEADER_PREFIX = struct.Struct("<8sIII")  # magic, version, JSON length, JSON CRC-32
_KEYS_HEADER = struct.Struct("<8sII")  # magic, version, generation

_SKETCH_WORDS = SKETCH_BYTES // 8
RECORD = np.dtype(
    [
        ("fingerprint", "<u8"),
        ("key_offset", "<u8"),
        ("key_length", "<u4"),
        ("namespace", "<u2"),
        ("op", "u1"),
        ("shingles", "u1"),  # the 16-bit shingles after the key in keys.log
        ("sketch", "<u8", (_SKETCH_WORDS,)),
        ("check", "<u8"),
    ]
)
_WORDS = RECORD.itemsize // 8
_PACKED = struct.Struct(f"<{_WORDS}Q")  # a record as its words: the check value is the last
_SKETCH = struct.Struct(f"<{_SKETCH_WORDS}Q")
_NO_SKETCH = (0,) * _SKETCH_WORDS
assert RECORD.itemsize == _PACKED.size == 64

# Operations: an entry added, the entries of a fingerprint and key removed, a
# namespace named (its id in ``namespace``, its name as the key), a namespace
# cleared (reset), every entry of a fingerprint removed.
OP_ADD, OP_REMOVE, OP_NAMESPACE, OP_CLEAR, OP_REMOVE_ALL = 1, 2, 3, 4, 5

# splitmix64 constants: a cheap, well-mixing check value computable with NumPy.
_SEED, _MUL1, _MUL2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
# One multiplier per checked word (all but the check itself), alternating.
_CHECK_BLOCK = 1 << 14  # records checked at a time (record_checks): 1 MB, in the cache
_MULTIPLIERS = tuple(_MUL1 if word % 2 == 0 else _MUL2 for word in range(_WORDS - 1))
_MASK64 = (1 << 64) - 1
#: The key offset word: the offset in its low bits (1 TiB of keys), a CRC of the key above.
KEY_OFFSET_BITS = 40
KEY_OFFSET_MASK = (1 << KEY_OFFSET_BITS) - 1
KEY_CRC_MASK = (1 << (64 - KEY_OFFSET_BITS)) - 1
RESET_HINT = "delete it, or reset it (SIMHASH_INDEX_RESET=True in a crawl, import --reset on the command line)"
# Format 1 is readable but useless now: without sketches no match can be confirmed.
_FORMAT_1_HINT = (
    "its entries have no minwise sketch, which confirms every match now; start a new index "
    "with SIMHASH_INDEX_RESET=True (or scrapy-simhash import --reset), or delete the directory and crawl again"
)


def check_value(words: Sequence[int]) -> int:
    """The check value of the first seven words of a record (:func:`check_values` for many).

    Each step (XOR a word, multiply by an odd constant) is a bijection, so a change
    of any one word always changes the result.
    """
    h = _SEED
    for word, multiplier in zip(words, _MULTIPLIERS):
        h = ((h ^ word) * multiplier) & _MASK64
    return h ^ (h >> 31)


def check_values(records: npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    """:func:`check_value` of every record, vectorised (uint64 products wrap)."""
    words = records.view("<u8").reshape(-1, _WORDS)
    h = np.full(len(words), _SEED, dtype=np.uint64)
    for column, multiplier in enumerate(_MULTIPLIERS):
        h ^= words[:, column]
        h *= np.uint64(multiplier)
    h ^= h >> np.uint64(31)
    return h


def key_crc(data: bytes | memoryview) -> int:
    """The part of a key's CRC-32 (:func:`._key_crcs.key_crc`, what the key lookup sorts by)
    its record holds."""
    return _key_crcs.key_crc(data) & KEY_CRC_MASK


def key_word(offset: int, crc: int) -> int:
    if offset >> KEY_OFFSET_BITS:
        raise ValueError(f"keys.log is full: a store holds at most {KEY_OFFSET_MASK} bytes of keys")
    return offset | crc << KEY_OFFSET_BITS


def record_checks(
    records: npt.NDArray[Any], keys_size: int
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_], npt.NDArray[np.uint8]]:
    """Per record: whether its check value is right, whether its key lies inside ``keys.log``
    (of *keys_size* bytes), and its op. A cache-sized block at a time: one pass over the
    records (each column read apart was a pass over all of them: 6.4 GB at 100M entries)."""
    checked, keyed = np.empty(len(records), dtype=bool), np.empty(len(records), dtype=bool)
    ops = np.empty(len(records), dtype=np.uint8)
    for start in range(0, len(records), _CHECK_BLOCK):
        block, part = records[start : start + _CHECK_BLOCK], slice(start, start + _CHECK_BLOCK)
        checked[part] = check_values(block) == block["check"]
        offsets = key_offsets(block)
        keyed[part] = (offsets + block["key_length"] <= np.uint64(keys_size)) & (offsets >= KEYS_HEADER_SIZE)
        ops[part] = block["op"]
    return checked, keyed, ops


def key_offsets(records: npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    """Where each record's key starts in ``keys.log``."""
    return records["key_offset"] & np.uint64(KEY_OFFSET_MASK)


def key_crcs(records: npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    return records["key_offset"] >> np.uint64(KEY_OFFSET_BITS)


def pack_record(
    fingerprint: int, key_offset: int, span: bytes, namespace: int, op: int, sketch: bytes | None = None
) -> bytes:
    """One record's bytes, for its key (and a short page's shingles: :func:`key_span`)
    written at *key_offset*; *sketch* is checked, or ``None``."""
    if len(span) >> 32:  # it shares a word with the namespace and op
        raise ValueError(f"a key is at most 4 GiB, not {len(span)} bytes")
    shingles = 0 if sketch is None else (len(sketch) - SKETCH_BYTES) // 2
    sketch_words = _NO_SKETCH if sketch is None else _SKETCH.unpack_from(sketch)
    length_word = len(span) | namespace << 32 | op << 48 | shingles << 56
    words = (fingerprint, key_word(key_offset, key_crc(span)), length_word, *sketch_words)
    return _PACKED.pack(*words, check_value(words))


def key_span(key: bytes, sketch: bytes | None) -> bytes:
    """What ``keys.log`` holds for an entry: its key, then a short page's shingles."""
    return key if sketch is None else key + sketch[SKETCH_BYTES:]


def key_length(record: np.void) -> int:
    """The length of a record's key alone, without the shingles after it."""
    return int(record["key_length"]) - 2 * int(record["shingles"])


def pack_records(records: npt.NDArray[Any]) -> bytes:
    """Fill in the check values of *records* (a RECORD array) and return their bytes."""
    records["check"] = check_values(records)
    return records.tobytes()


def new_header(info: dict[str, Any]) -> bytes:
    payload = json.dumps(info, sort_keys=True).encode()
    prefix = _HEADER_PREFIX.pack(MAGIC, FORMAT_VERSION, len(payload), zlib.crc32(payload))
    if len(prefix) + len(payload) > HEADER_SIZE:
        raise ValueError("index header information is too long")
    return (prefix + payload).ljust(HEADER_SIZE, b"\0")


def new_keys_header(generation: int) -> bytes:
    return _KEYS_HEADER.pack(KEYS_MAGIC, FORMAT_VERSION, generation)


def read_header(path: str, fd: int | None = None) -> dict[str, Any]:
    """The JSON header of a fingerprints log (read from *fd* if given: the file a reader
    opened, whatever was renamed to *path* since), with its ``version``;
    :class:`IndexFormatError` if it is not one."""
    head = _read_head(path, fd, HEADER_SIZE)
    if len(head) < _HEADER_PREFIX.size or not head.startswith(MAGIC):
        raise IndexFormatError(f"{path} is not a scrapy-simhash index: {RESET_HINT}")
    _, version, length, crc = _HEADER_PREFIX.unpack_from(head)
    if version not in READABLE_VERSIONS:
        raise IndexFormatError(
            f"{path} is an index of format version {version}, this "
            f"scrapy-simhash reads version {FORMAT_VERSION}: {_FORMAT_1_HINT if version == 1 else RESET_HINT}"
        )
    payload = head[_HEADER_PREFIX.size : _HEADER_PREFIX.size + length]
    if len(head) < HEADER_SIZE or zlib.crc32(payload) != crc:
        raise IndexFormatError(f"{path} has a truncated or corrupt header: {RESET_HINT}")
    return {**json.loads(payload), "version": version}


def check_keys_header(path: str, header: dict[str, Any], fd: int | None = None) -> None:
    """Refuse a key file (read from *fd* if given) that is not the one of the log whose
    *header* was read."""
    head = _read_head(path, fd, KEYS_HEADER_SIZE)
    if len(head) < KEYS_HEADER_SIZE or not head.startswith(KEYS_MAGIC):
        raise IndexFormatError(f"{path} is not a scrapy-simhash key file: {RESET_HINT}")
    _, version, generation = _KEYS_HEADER.unpack(head)
    if version != header["version"]:
        raise IndexFormatError(f"{path} is a key file of another format version: {RESET_HINT}")
    if generation != header.get("generation", 0):
        raise IndexFormatError(
            f"{path} is of generation {generation}, its log of generation {header.get('generation', 0)}: "
            f"files of two compactions mixed (copied by hand?): {RESET_HINT}"
        )


def _read_head(path: str, fd: int | None, size: int) -> bytes:
    if fd is not None:
        return os.pread(fd, size, 0)
    with open(path, "rb") as file:
        return file.read(size)
