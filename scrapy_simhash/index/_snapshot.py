"""A snapshot of a disk store namespace's sorted tables, so that a reopen reads them back
instead of sorting every row into every table again; and, where the index had built it,
its key lookup (the rows sorted by their key's CRC, :mod:`._key_lookup`), which a crawl
would otherwise build from every key when it opens the index (2 s at 10M rows).

Reopening 10M entries spent about a third of its time building the tables (a radix sort
and a gather per table), and that part grows with the entries. :class:`~.disk.DiskIndex`
writes its tables at close (``tables-<namespace id>.snapshot`` beside the log) and reads
them back at open when they are still the tables of its first rows:

* the header and the arrays carry CRC-32s: a torn or damaged file is ignored;
* the header holds the CRC-32 of the fingerprints of the rows it indexes, in row order:
  the rows read from the log must start with exactly those (rows added since are merged
  in; a removal, a reset or another store renumbers them, and the snapshot is ignored);
* the design's blocks and tables must be those the index would use.

A snapshot is only ever a shortcut: the log stays the truth, and whatever is wrong with
the snapshot (missing, stale, torn, unreadable) means the tables are built from the log,
as without one.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO, NamedTuple

import numpy as np
import numpy.typing as npt

from ._buckets import SortedBuckets
from ._files import read_into, remove_if_there
from ._key_lookup import KeyArrays
from ._tables import TableDesign, make_design

logger = logging.getLogger(__name__)

#: Smaller namespaces are rebuilt in well under a second: no file for each (one per host).
SNAPSHOT_MIN_ROWS = 100_000
_MAGIC = b"SIMHTAB\n"
# 1: no key lookup; 2: table 0's whole fingerprints, not its slices and tails (an older
# snapshot is ignored, then written again at close)
_VERSION = 3
# magic, version, max_distance, blocks, prefix_bits, rows, key lookup (1) or not (0), CRC of
# the row fingerprints, CRC of the arrays
_HEADER = struct.Struct("<8sIIIIQIII")
_CRC = struct.Struct("<I")
_CHUNK = 1 << 24  # bytes per read and per CRC step


def snapshot_path(directory: str, namespace: int) -> str:
    return os.path.join(directory, f"tables-{namespace}.snapshot")


class Snapshot(NamedTuple):
    """What a snapshot holds: the tables, and the key lookup's CRCs and rows, if any."""

    tables: SortedBuckets
    key_lookup: KeyArrays | None


def write_snapshot(path: str, tables: SortedBuckets, key_lookup: KeyArrays | None = None) -> None:
    """Write *tables* (rows 0..n-1, none removed) and the *key_lookup* of the same rows to
    *path*, all or nothing (a rename)."""
    design, arrays = tables.design, _arrays(tables, key_lookup)
    if key_lookup is not None and any(len(array) != len(tables) for array in key_lookup):
        raise ValueError("the key lookup is not of the tables' rows")
    fingerprints_crc = _crc_of([tables.row_fingerprints()])
    header = _HEADER.pack(_MAGIC, _VERSION, design.max_distance, len(design.blocks), design.prefix_bits,
                          len(tables), key_lookup is not None, fingerprints_crc, _crc_of(arrays))
    temporary = path + ".tmp"
    try:
        with open(temporary, "wb") as file:
            file.write(header + _CRC.pack(zlib.crc32(header)))
            for array in arrays:
                file.write(memoryview(array).cast("B"))  # (no fsync: a torn snapshot is only ignored)
        os.replace(temporary, path)
    except OSError:
        remove_if_there(temporary)  # (a full disk: a part of a snapshot is only room taken)
        raise


def read_snapshot(path: str, fingerprints: npt.NDArray[np.uint64], design: TableDesign) -> Snapshot | None:
    """The snapshot at *path* if its tables index the first rows of *fingerprints* (in row
    order) in *design*'s tables (buckets as wide or narrower); else None (a reason logged)."""
    try:
        with open(path, "rb") as file:
            return _read(file, fingerprints, design)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        logger.info("Building the index tables from the log: %(path)s unreadable (%(error)s)",
                    {"path": path, "error": exc})
        return None


def _read(file: BinaryIO, fingerprints: npt.NDArray[np.uint64], design: TableDesign) -> Snapshot | None:
    data = file.read(_HEADER.size + _CRC.size)
    if len(data) < _HEADER.size + _CRC.size or zlib.crc32(data[: _HEADER.size]) != _CRC.unpack_from(data, _HEADER.size)[0]:
        return _ignored(file.name, "its header is torn")
    magic, version, max_distance, blocks, prefix_bits, rows, has_keys, fingerprints_crc, arrays_crc = (
        _HEADER.unpack_from(data)
    )
    if magic != _MAGIC or version != _VERSION:
        return _ignored(file.name, "not a snapshot of this version")
    built = make_design(max_distance, blocks, prefix_bits)
    if built.with_prefix_bits(design.prefix_bits) != design or prefix_bits > design.prefix_bits:
        return _ignored(file.name, "made for other tables")
    if rows > len(fingerprints) or _crc_of([fingerprints[:rows]]) != fingerprints_crc:
        return _ignored(file.name, "the log's rows are not the ones it indexes")
    tables = SortedBuckets.empty(built, rows)
    key_lookup = (np.empty(rows, dtype=np.uint32), np.empty(rows, dtype=np.uint32)) if has_keys else None
    arrays = _arrays(tables, key_lookup)
    offset = file.tell()
    for array in arrays:
        if read_into(file.fileno(), memoryview(array).cast("B"), offset) != array.nbytes:
            return _ignored(file.name, "it is cut short")
        offset += array.nbytes
    if os.fstat(file.fileno()).st_size != offset or _crc_of(arrays) != arrays_crc:
        return _ignored(file.name, "its tables are damaged")
    return Snapshot(tables, key_lookup)


def _ignored(path: str, reason: str) -> None:
    logger.info("Building the index tables from the log: the snapshot %(path)s is ignored, %(reason)s",
                {"path": path, "reason": reason})
    return None


def _arrays(tables: SortedBuckets, key_lookup: KeyArrays | None) -> list[npt.NDArray[Any]]:
    return [*tables.arrays(), *(key_lookup or ())]


def _crc_of(arrays: list[npt.NDArray[Any]]) -> int:
    crc = 0
    for part in _chunks(arrays):
        crc = zlib.crc32(part, crc)
    return crc


def _chunks(arrays: list[npt.NDArray[Any]]) -> Iterator[memoryview]:
    for array in arrays:
        view = memoryview(np.ascontiguousarray(array)).cast("B")
        for start in range(0, len(view), _CHUNK):
            yield view[start : start + _CHUNK]
