"""Compaction of a disk store: its live entries rewritten into a new pair of files.

A store only appends: a page replaced (``replace_if_new``), a namespace reset, an
entry removed leave records that replay to nothing. When those *dead* records are
more than half of the log (and at least :data:`MIN_DEAD_RECORDS`), the process that
opens the store to write rewrites it (:func:`compact`), before it serves a check: the
live entries and the namespaces go to ``keys.log.new`` and ``fingerprints.log.new``
under the next generation, both are ``fsync``\\ ed, then renamed over the old ones,
keys first. A crash at any step leaves one of three states, which the next open
finishes (:func:`finish_interrupted`):

* ``keys.log.new`` still there: the rename never happened; the old files are whole,
  the new ones are deleted;
* only ``fingerprints.log.new`` there: ``keys.log`` is the new one already, and the
  new log is complete (it was synced before the first rename): it is renamed too;
* neither: the compaction is done (or never started).

A reader changes nothing: it reads the files the writer would have left (:func:`log_to_read`).
"""

from __future__ import annotations

import datetime
import os
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _logfile as lf
from ._disk_records import gather_keys
from ._files import fsync_directory, remove_if_there, write_synced
from ._key_crcs import crcs_of_keys
from .base import IndexUnavailableError

NEW = ".new"
#: Fewer dead records than this are left alone: rewriting a small store on every open
#: to save a few kilobytes is not worth its fsyncs.
MIN_DEAD_RECORDS = 1024


def worth_compacting(records: npt.NDArray[Any], kept: int) -> bool:
    """Whether the *records* of a log, of which *kept* are live, should be rewritten."""
    dead = len(records) - kept
    return dead >= MIN_DEAD_RECORDS and 2 * dead > len(records)


def finish_interrupted(log_path: str, keys_path: str) -> None:
    """Finish or undo a compaction a crash interrupted (the store's writer only: readers
    change nothing, see :func:`log_to_read`)."""
    if os.path.exists(keys_path + NEW):
        remove_if_there(keys_path + NEW)
        remove_if_there(log_path + NEW)
    elif os.path.exists(log_path + NEW):
        os.replace(log_path + NEW, log_path)
        fsync_directory(os.path.dirname(log_path))


def log_to_read(log_path: str, keys_path: str) -> str:
    """The log a reader reads with ``keys.log``: the new one where the writer is about to
    rename it (or a crash stopped it before). It may be renamed away meanwhile: the reader
    then finds the files changed, and opens again (:mod:`._storefiles`)."""
    if not os.path.exists(keys_path + NEW) and os.path.exists(log_path + NEW):
        return log_path + NEW
    return log_path


def compact(
    log_path: str, keys_path: str, keys_fd: int, header: dict[str, Any], kept: npt.NDArray[Any]
) -> dict[str, Any]:
    """Rewrite the store as the *kept* records (a copy: their key words are rewritten) and
    their keys, in the current format; return the new log's header."""
    data, lengths = gather_keys(keys_path, keys_fd, kept)
    ends = np.cumsum(lengths, dtype=np.uint64)
    crcs = lf.key_crcs(kept) if header["version"] == lf.FORMAT_VERSION else _crcs(data, ends)
    kept["key_offset"] = np.uint64(lf.KEYS_HEADER_SIZE) + ends - lengths
    if len(kept) and int(kept["key_offset"][-1]) >> lf.KEY_OFFSET_BITS:
        raise ValueError("keys.log is full: a store holds at most 1 TiB of keys")
    kept["key_offset"] |= crcs << np.uint64(lf.KEY_OFFSET_BITS)
    generation = int(header.get("generation", 0)) + 1
    info = {name: value for name, value in header.items() if name != "version"}
    info |= {"generation": generation, "compacted_at": _now()}
    try:
        write_synced(keys_path + NEW, [lf.new_keys_header(generation), data.data])
        write_synced(log_path + NEW, [lf.new_header(info), lf.pack_records(kept)])
    except IndexUnavailableError:  # (a full disk: the old files are whole, the new ones only take room)
        remove_if_there(keys_path + NEW)
        remove_if_there(log_path + NEW)
        raise
    directory = os.path.dirname(log_path)
    fsync_directory(directory)
    os.replace(keys_path + NEW, keys_path)  # the commit point (see the module docstring)
    fsync_directory(directory)
    os.replace(log_path + NEW, log_path)
    fsync_directory(directory)
    return {**info, "version": lf.FORMAT_VERSION}


def _crcs(data: npt.NDArray[np.uint8], ends: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The key CRCs of keys stored back to back, as records hold them (a format 2 store has none)."""
    return np.array(crcs_of_keys(data, ends), dtype=np.uint64) & np.uint64(lf.KEY_CRC_MASK)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
