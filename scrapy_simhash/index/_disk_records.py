"""Reading one namespace of a disk store: its records from what was read at open, its
keys from a memory map of ``keys.log``.

A store read at open holds every namespace's records; a crawl with
``SIMHASH_SCOPE = "domain"`` then opens a namespace per host. Each takes its records from
that one read (:class:`RecordsAtOpen`, grouped once) and reads only the pages of
``keys.log`` its keys are on (:func:`read_keys`), where reading the files again for each
host made opening 200 hosts over 1M records take 11 s.
"""

from __future__ import annotations

import os

import numpy as np
import numpy.typing as npt

from ._files import read_into
from ._growable import GrowableArray, capacity_for
from ._logfile import key_offsets
from ._sketches import ShingleColumn
from ._storage import KeyStore
from .base import IndexFormatError


class RecordsAtOpen:
    """The records a store read when it opened, handed out one namespace at a time.

    :meth:`take` gives a namespace its records once; a namespace opened again, after its
    index wrote to the store, must read the log again (``None``). A namespace's records are
    only ever written after it was opened (a reset's ``OP_CLEAR`` first: :meth:`forget`).
    """

    def __init__(self, records: npt.NDArray, one_namespace: bool = False) -> None:
        """*one_namespace*: every record is of the default namespace (no need to look)."""
        self._records: npt.NDArray | None = records
        self._groups: dict[int, npt.NDArray[np.intp] | slice] | None = {0: slice(None)} if one_namespace else None
        self._taken: set[int] = set()

    def take(self, namespace: int) -> npt.NDArray | None:
        """The records of *namespace* read at open, in log order; ``None`` when taken before."""
        if namespace in self._taken or self._records is None:
            return None
        self._taken.add(namespace)
        rows = self._grouped().pop(namespace, np.empty(0, dtype=np.intp))
        records = self._records[rows]
        if not self._groups:
            self._records = None  # every namespace taken: the store holds nothing more
        return records

    def forget(self, namespace: int) -> None:
        """*namespace* was cleared: it starts empty."""
        if self._records is not None:
            self._grouped().pop(namespace, None)

    def _grouped(self) -> dict[int, npt.NDArray[np.intp] | slice]:
        """The rows of each namespace not taken yet (grouped on first use)."""
        if self._groups is None:
            assert self._records is not None
            self._groups = _group_by_namespace(self._records["namespace"])
        return self._groups


def _group_by_namespace(namespaces: npt.NDArray[np.uint16]) -> dict[int, npt.NDArray[np.intp] | slice]:
    """Row numbers by namespace, each in log order (a stable sort); all rows (a slice: no
    copy of the records) when they are all of one namespace."""
    if len(namespaces) and namespaces.min() == namespaces.max():
        return {int(namespaces[0]): slice(None)}
    order = np.argsort(namespaces, kind="stable")
    values, starts = np.unique(namespaces[order], return_index=True)
    stops = [*starts[1:].tolist(), len(order)]
    return {int(value): order[start:stop] for value, start, stop in zip(values.tolist(), starts.tolist(), stops)}


def read_keys(keys_path: str, keys_fd: int, records: npt.NDArray) -> tuple[KeyStore, ShingleColumn]:
    """The keys of *records* from ``keys.log`` (open as *keys_fd*), as a :class:`KeyStore`,
    and the shingles that follow the keys of short pages (:mod:`._logfile`)."""
    if not len(records):
        return KeyStore(), ShingleColumn()
    shingle_bytes = 2 * records["shingles"].astype(np.uint64)
    key_bytes = int((records["key_length"] - shingle_bytes).sum())
    room = key_bytes // 8 + (1 << 16)  # (the keys' column grows from there: no copy at the first append)
    data, lengths = gather_keys(keys_path, keys_fd, records, room)
    if not shingle_bytes.any():
        return _key_store(data, key_bytes, lengths), ShingleColumn()
    # Each span is a key, then its shingles (none for most): split the bytes in two.
    parts = np.column_stack((lengths - shingle_bytes, shingle_bytes)).ravel().astype(np.int64)
    is_key = np.repeat(np.tile(np.array([True, False]), len(records)), parts)
    joined = data[: int(lengths.sum())]
    keys = np.empty(key_bytes + room, dtype=np.uint8)
    np.compress(is_key, joined, out=keys[:key_bytes])
    rows = np.flatnonzero(shingle_bytes)
    shingles = ShingleColumn(rows, np.cumsum(shingle_bytes[rows]), joined[~is_key])
    return _key_store(keys, key_bytes, lengths - shingle_bytes), shingles


def _key_store(data: npt.NDArray[np.uint8], size: int, lengths: npt.NDArray[np.uint64]) -> KeyStore:
    """The keys of the first *size* bytes of *data* (the rest: room to grow), *lengths* each."""
    ends = np.empty(capacity_for(len(lengths)), dtype=np.uint64)
    np.cumsum(lengths, out=ends[: len(lengths)])  # (in place: 0.8 GB at 100M entries, not a copy of them)
    return KeyStore.adopting(GrowableArray.adopting(data, size), GrowableArray.adopting(ends, len(lengths)))


def gather_keys(
    keys_path: str, keys_fd: int, records: npt.NDArray, room: int = 0
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint64]]:
    """The keys of *records* back to back (and *room* bytes more after them), and their
    lengths: read run by run (keys of a namespace are mostly adjacent) into one array, so
    only the parts that hold them are read."""
    starts, lengths = key_offsets(records), records["key_length"].astype(np.uint64)
    if not len(records):
        return np.empty(room, dtype=np.uint8), lengths
    ends = starts + lengths
    size = os.fstat(keys_fd).st_size
    if size < int(ends.max()):
        raise IndexFormatError(f"{keys_path} ended at byte {size}, before the keys its records point at")
    breaks = np.flatnonzero(starts[1:] != ends[:-1]) + 1
    run_starts = starts[np.concatenate(([0], breaks))].tolist()
    run_ends = ends[np.concatenate((breaks - 1, [len(records) - 1]))].tolist()
    # (pread into it: a memory map's page faults took 3x as long; np.empty, not a
    # bytearray, which zeroes every byte first)
    joined = np.empty(int(lengths.sum()) + room, dtype=np.uint8)
    with joined.data as target:
        at = 0
        for start, end in zip(run_starts, run_ends):
            _read_exactly(keys_fd, target[at : at + end - start], start)
            at += end - start
    return joined, lengths


def _read_exactly(fd: int, target: memoryview, offset: int) -> None:
    """Fill *target* from *fd* at *offset*, or raise: the file ends before."""
    read = read_into(fd, target, offset)
    if read < len(target):
        raise IndexFormatError(f"keys.log ended at byte {offset + read}, before the keys its records point at")
