"""Reading a disk store's log back: which records are whole, and which entries are live.

:func:`read_records` keeps the records that a crash cannot have torn. A process killed
with ``kill -9`` leaves at most a partial last record (each record is one ``write``,
after its key). A power cut or a full disk can leave more: the log or ``keys.log``
shorter than what was written, or pages of either zeroed or missing in the part not
yet ``fsync``\\ ed. Past the checkpoint (:mod:`._checkpoint`) every record is checked
(its own check value, its key inside ``keys.log``, its key's CRC) and the first that
fails ends the store: a tail lost costs the entries of that tail, never the store.
Inside the checkpoint, a bad record followed by good ones is damage, not a crash, and
:class:`IndexFormatError` says so rather than drop what follows.

:func:`live_entries` replays removals and resets: what a namespace holds now.
"""

from __future__ import annotations

import logging
import mmap
import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _logfile as lf
from ._checkpoint import CHECKPOINT_NAME, Checkpoint
from ._files import read_into
from .base import IndexFormatError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LogContents:
    """The records kept, how many bytes of the log's tail were dropped, and how many bytes
    the checkpoint said were on disk that the log and ``keys.log`` no longer hold."""

    records: npt.NDArray[Any]
    truncated_bytes: int
    ops: npt.NDArray[np.uint8]  # the records' ops (a column read once)
    synced_log_bytes_missing: int = 0
    synced_key_bytes_missing: int = 0

    @property
    def valid_size(self) -> int:
        return lf.HEADER_SIZE + len(self.records) * lf.RECORD.itemsize


def read_records(
    files: tuple[int, int], paths: tuple[str, str], checkpoint: Checkpoint | None,
    check_keys: bool = True, mapped: bool = False,
) -> LogContents:
    """The whole records of the log open as ``files[0]``, whose keys are in ``files[1]``
    (*paths*: their names, for messages and the map).

    *check_keys*: the records hold their keys' CRCs (format 3). Without a *checkpoint*
    every record is checked as a tail. *mapped*: the records are a copy-on-write memory map
    of the log, not a copy of it (6.4 GB at 100M entries); only for the store's writer, whose
    lock keeps any other process from cutting or renaming the file under the map.
    """
    (log_fd, keys_fd), (path, keys_path) = files, paths
    size = os.fstat(log_fd).st_size
    # The key file's size after the log's: a reader beside a live writer then sees
    # every key of the records it reads (keys are written before their records).
    keys_size = os.fstat(keys_fd).st_size
    count = max(0, size - lf.HEADER_SIZE) // lf.RECORD.itemsize
    records: npt.NDArray[Any]
    if mapped and count:
        records = np.memmap(path, dtype=lf.RECORD, mode="c", offset=lf.HEADER_SIZE, shape=(count,))
    else:
        records = _read_all(log_fd, count)
        count = len(records)
    synced = 0 if checkpoint is None else min(count, (checkpoint.log_size - lf.HEADER_SIZE) // lf.RECORD.itemsize)
    checked, keyed, ops = lf.record_checks(records, keys_size)
    end = _first_false(checked, synced, f"{path} has a corrupt record")
    end = _first_false(keyed[:end], synced, f"{keys_path} is damaged: it ends ({keys_size} bytes) before the key of record")
    if check_keys and end > synced:
        end = synced + _keys_whole(keys_fd, records[synced:end])
    log_missing, keys_missing = (0, 0) if checkpoint is None else (
        max(0, checkpoint.log_size - size), max(0, checkpoint.keys_size - keys_size))
    return LogContents(
        records[:end], size - lf.HEADER_SIZE - end * lf.RECORD.itemsize, ops[:end], log_missing, keys_missing
    )


def warn_synced_bytes_missing(contents: LogContents, log_path: str, keys_path: str) -> None:
    """The files are shorter than the checkpoint says they were when synced: not a
    crash's torn tail but damage (a disk's, a copy cut short). What is left is kept."""
    log_bytes, key_bytes = contents.synced_log_bytes_missing, contents.synced_key_bytes_missing
    records = -(-log_bytes // lf.RECORD.itemsize)
    shorter = [
        *([f"{log_path} by {log_bytes} bytes ({records} records)"] if log_bytes else []),
        *([f"{keys_path} by {key_bytes} bytes"] if key_bytes else []),
    ]
    checkpoint = os.path.join(os.path.dirname(log_path), CHECKPOINT_NAME)
    logger.warning(
        "Entries synced to disk are lost: %(shorter)s shorter than %(checkpoint)s says they were synced"
        " (damage, or a copy cut short); the rest of the store is kept",
        {"shorter": " and ".join(shorter), "checkpoint": checkpoint},
    )


def _read_all(fd: int, count: int) -> npt.NDArray[Any]:
    """The first *count* records of the log open as *fd* (fewer if it was cut meanwhile)."""
    records = np.empty(count, dtype=lf.RECORD)
    read = read_into(fd, records.view(np.uint8).data, lf.HEADER_SIZE)
    return records[: read // lf.RECORD.itemsize]


def _first_false(good: npt.NDArray[np.bool_], synced: int, damage: str) -> int:
    """How many records are kept: up to the first not *good* one. One inside the *synced*
    part that good ones follow is damage (a crash leaves a tail), so it raises."""
    if good.all():
        return len(good)
    first = int(np.argmin(good))
    if first < synced and good[first:].any():
        where = lf.HEADER_SIZE + first * lf.RECORD.itemsize
        raise IndexFormatError(
            f"{damage} #{first} (byte {where} of the log) followed by valid ones, in the part"
            f" synced to disk (damage, not an interrupted write): {lf.RESET_HINT}"
        )
    return first


def _keys_whole(keys_fd: int, records: npt.NDArray[Any]) -> int:
    """How many of *records* (from the first) have their keys as written (CRC-checked)."""
    offsets, lengths = lf.key_offsets(records).tolist(), records["key_length"].tolist()
    crcs = lf.key_crcs(records).tolist()
    with mmap.mmap(keys_fd, 0, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped)
        try:
            for row, (offset, length, crc) in enumerate(zip(offsets, lengths, crcs)):
                if lf.key_crc(view[offset : offset + length]) != crc:
                    return row
        finally:
            view.release()
    return len(records)


def live_entries(
    records: npt.NDArray[Any], key_of: Callable[[np.void], bytes], ops: npt.NDArray[np.uint8] | None = None
) -> npt.NDArray[np.bool_]:
    """Which *records* are entries still there: added, and not removed or cleared since.

    *key_of* reads a record's key (only removals by key and their targets are read); *ops*:
    the records' ops, if read already.
    """
    ops = records["op"] if ops is None else ops
    alive = ops == lf.OP_ADD
    clears = np.flatnonzero(ops == lf.OP_CLEAR)
    if len(clears):
        namespaces = records["namespace"]
        last_clear = np.full(1 << 16, -1, dtype=np.int64)
        np.maximum.at(last_clear, namespaces[clears], clears)
        alive &= np.arange(len(records)) > last_clear[namespaces]
    removals = np.flatnonzero((ops == lf.OP_REMOVE) | (ops == lf.OP_REMOVE_ALL))
    if len(removals):
        _replay_removals(records, alive, removals, key_of)
    return alive


def _replay_removals(
    records: npt.NDArray[Any], alive: npt.NDArray[np.bool_], removals: npt.NDArray[np.intp],
    key_of: Callable[[np.void], bytes],
) -> None:
    """Clear *alive* for each entry a later removal of its namespace and fingerprint took
    (and of its key, for ``OP_REMOVE``). Only entries with a removed fingerprint are looked at."""
    fingerprints, namespaces, ops = records["fingerprint"], records["namespace"], records["op"]
    by_target: defaultdict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for row, namespace, fingerprint, op in zip(
        removals.tolist(), namespaces[removals].tolist(), fingerprints[removals].tolist(), ops[removals].tolist()
    ):
        by_target[namespace, fingerprint].append((row, op))
    removed = np.unique(fingerprints[removals])
    slots = np.minimum(np.searchsorted(removed, fingerprints), len(removed) - 1)
    for row in np.flatnonzero(alive & (removed[slots] == fingerprints)).tolist():
        for removal, op in by_target.get((int(namespaces[row]), int(fingerprints[row])), ()):
            if removal > row and (op == lf.OP_REMOVE_ALL or key_of(records[removal]) == key_of(records[row])):
                alive[row] = False
                break
