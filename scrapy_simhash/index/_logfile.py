"""The file format of the on-disk store: an append-only log of fixed-size records.

A store is a directory with two append-only files:

* ``fingerprints.log``: a 4096-byte header (magic ``SIMHIDX\\n``, format version,
  a JSON block with the fingerprint options signature and creation info, its
  CRC-32), then 64-byte little-endian records of eight 64-bit words (:data:`RECORD`):
  fingerprint, key offset in ``keys.log``, the ``key length | namespace << 32 |
  op << 48`` word, the entry's 32-byte minwise sketch (:mod:`..core.sketch`) as
  four words (zeros: no sketch), and a 64-bit check value mixing all seven words,
  so a torn or zeroed record is detected.
* ``keys.log``: a 16-byte header, then the UTF-8 keys, back to back.

A key is written before its record, and a record is one ``os.write``: after a
crash, a record that exists points at a key that exists. Records are read back in
one ``numpy.fromfile``. Invalid records at the end (an interrupted write) are a
truncated tail, dropped and reported; an invalid record followed by valid ones is
corruption, which raises :class:`IndexFormatError` rather than losing data.

Format 1 had 32-byte records without a sketch. Its entries cannot be confirmed
(:class:`~.base.SimhashIndex`), so it is refused, with the way out: reset or re-crawl.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.sketch import SKETCH_BYTES
from .base import IndexFormatError

FORMAT_VERSION = 2
HEADER_SIZE = 4096
MAGIC = b"SIMHIDX\n"
KEYS_MAGIC = b"SIMHKEY\n"
KEYS_HEADER_SIZE = 16
_HEADER_PREFIX = struct.Struct("<8sIII")  # magic, version, JSON length, JSON CRC-32
_KEYS_HEADER = struct.Struct("<8sII")  # magic, version, reserved

_SKETCH_WORDS = SKETCH_BYTES // 8
RECORD = np.dtype(
    [
        ("fingerprint", "<u8"),
        ("key_offset", "<u8"),
        ("key_length", "<u4"),
        ("namespace", "<u2"),
        ("op", "u1"),
        ("reserved", "u1"),
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
_MULTIPLIERS = tuple(_MUL1 if word % 2 == 0 else _MUL2 for word in range(_WORDS - 1))
_MASK64 = (1 << 64) - 1
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


def pack_record(
    fingerprint: int, key_offset: int, key_length: int, namespace: int, op: int, sketch: bytes | None = None
) -> bytes:
    """One record's bytes; *sketch* is 32 checked bytes, or ``None``."""
    if key_length >> 32:  # it shares a word with the namespace and op
        raise ValueError(f"a key is at most 4 GiB, not {key_length} bytes")
    sketch_words = _NO_SKETCH if sketch is None else _SKETCH.unpack(sketch)
    words = (fingerprint, key_offset, key_length | namespace << 32 | op << 48, *sketch_words)
    return _PACKED.pack(*words, check_value(words))


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


def new_keys_header() -> bytes:
    return _KEYS_HEADER.pack(KEYS_MAGIC, FORMAT_VERSION, 0)


def read_header(path: str) -> dict[str, Any]:
    """The JSON header of a fingerprints log; :class:`IndexFormatError` if it is not one."""
    with open(path, "rb") as file:
        head = file.read(HEADER_SIZE)
    if len(head) < _HEADER_PREFIX.size or not head.startswith(MAGIC):
        raise IndexFormatError(f"{path} is not a scrapy-simhash index: {RESET_HINT}")
    _, version, length, crc = _HEADER_PREFIX.unpack_from(head)
    if version != FORMAT_VERSION:
        raise IndexFormatError(
            f"{path} is an index of format version {version}, this "
            f"scrapy-simhash reads version {FORMAT_VERSION}: {_FORMAT_1_HINT if version == 1 else RESET_HINT}"
        )
    payload = head[_HEADER_PREFIX.size : _HEADER_PREFIX.size + length]
    if len(head) < HEADER_SIZE or zlib.crc32(payload) != crc:
        raise IndexFormatError(f"{path} has a truncated or corrupt header: {RESET_HINT}")
    return dict(json.loads(payload))


def check_keys_header(path: str) -> None:
    with open(path, "rb") as file:
        head = file.read(KEYS_HEADER_SIZE)
    if len(head) < KEYS_HEADER_SIZE or not head.startswith(KEYS_MAGIC):
        raise IndexFormatError(f"{path} is not a scrapy-simhash key file: {RESET_HINT}")
    if _KEYS_HEADER.unpack(head)[1] != FORMAT_VERSION:
        raise IndexFormatError(f"{path} is a key file of another format version: {RESET_HINT}")


@dataclass(frozen=True)
class LogContents:
    """The valid records of a log, and how many bytes of its tail were invalid."""

    records: npt.NDArray[Any]
    truncated_bytes: int

    @property
    def valid_size(self) -> int:
        return HEADER_SIZE + len(self.records) * RECORD.itemsize


def read_records(path: str, keys_path: str) -> LogContents:
    """Every valid record of the log at *path*, whose keys are in *keys_path*.

    A record with a wrong check value is a torn write; at the end of the log it is
    the tail of an interrupted write. Records whose keys lie past the end of the key
    file are what a key file that lost its tail (a power cut before the disk had it, a
    full disk) leaves: keys are appended in record order, so they are the last records,
    and they are dropped with that tail. Anything else is damage, and
    :class:`IndexFormatError` says so.
    """
    size = os.path.getsize(path)
    # The key file's size after the log's: a reader beside a live writer then sees
    # every key of the records it reads (keys are written before their records).
    keys_size = os.path.getsize(keys_path)
    count = max(0, size - HEADER_SIZE) // RECORD.itemsize
    records = np.fromfile(path, dtype=RECORD, count=count, offset=HEADER_SIZE)
    valid = check_values(records) == records["check"]
    if not valid.all():
        first_bad = int(np.argmin(valid))
        if valid[first_bad:].any():
            where = HEADER_SIZE + first_bad * RECORD.itemsize
            raise IndexFormatError(
                f"{path} has a corrupt record #{first_bad} at byte {where} followed by "
                f"valid ones (damaged file, not an interrupted write): {RESET_HINT}"
            )
        records = records[:first_bad]
    ends = records["key_offset"] + records["key_length"]
    keyed = (ends <= np.uint64(keys_size)) & (records["key_offset"] >= np.uint64(KEYS_HEADER_SIZE))
    if not keyed.all():
        first_lost = int(np.argmin(keyed))
        if keyed[first_lost:].any():
            raise IndexFormatError(
                f"{keys_path} is damaged: {int(np.count_nonzero(~keyed))} records of {path} point past its "
                f"end ({keys_size} bytes) and are followed by records that do not: {RESET_HINT}"
            )
        records = records[:first_lost]
    return LogContents(records, size - HEADER_SIZE - len(records) * RECORD.itemsize)
