"""The ``synced`` file of a disk store: how much of its two files is known to be on disk.

Written (atomically, after both files were ``fsync``\\ ed) when a store opens to write,
when it is flushed (at the end of a crawl, and as ``SIMHASH_FSYNC`` says) and after a
compaction. On open, the records it covers are trusted: damage among them is reported,
not silently dropped. What lies past it was not synced: a power cut may have torn it
anywhere, so every record there has its key's CRC checked, and the first bad one ends
the store (:mod:`._replay`). A checkpoint lost or older than the files only means more
of them is checked.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass

from ._files import fsync_directory, write_new

CHECKPOINT_NAME = "synced"
_MAGIC = b"SIMHSYN\n"
_LAYOUT = struct.Struct("<8sQQQ")  # magic, generation, log bytes, key bytes; then a CRC-32
_CRC = struct.Struct("<I")


@dataclass(frozen=True)
class Checkpoint:
    generation: int
    log_size: int
    keys_size: int


def read_checkpoint(directory: str, generation: int) -> Checkpoint | None:
    """The checkpoint of the files of *generation*; ``None`` if there is none (or a torn one)."""
    try:
        with open(os.path.join(directory, CHECKPOINT_NAME), "rb") as file:
            data = file.read(_LAYOUT.size + _CRC.size + 1)
    except FileNotFoundError:
        return None
    if len(data) != _LAYOUT.size + _CRC.size or zlib.crc32(data[: _LAYOUT.size]) != _CRC.unpack_from(data, _LAYOUT.size)[0]:
        return None
    magic, *fields = _LAYOUT.unpack_from(data)
    checkpoint = Checkpoint(*fields)
    return checkpoint if magic == _MAGIC and checkpoint.generation == generation else None


def write_checkpoint(directory: str, checkpoint: Checkpoint) -> None:
    """Record *checkpoint* (its sizes must be ``fsync``\\ ed already), durably: the directory
    too, since an older checkpoint left by a lost rename could cover bytes rewritten since."""
    data = _LAYOUT.pack(_MAGIC, checkpoint.generation, checkpoint.log_size, checkpoint.keys_size)
    write_new(os.path.join(directory, CHECKPOINT_NAME), data + _CRC.pack(zlib.crc32(data)))
    fsync_directory(directory)
