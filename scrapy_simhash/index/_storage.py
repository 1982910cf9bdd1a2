"""Compact column storage for the in-memory index: no Python object per entry.

:func:`fingerprint_array` validates many fingerprints at once.
:class:`GrowableArray` is an append-only NumPy array with amortised growth;
:class:`KeyStore` keeps every key in one UTF-8 buffer plus an array of end offsets,
so ten million URLs cost their bytes plus 8 bytes each, not ~100 bytes of ``str``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.fingerprint import check_fingerprint
from ._pages import PageToucher

# GrowableArray grows by 1/8 (slack, hence memory, stays small: at most ~9.6 bytes a
# fingerprint for 8) and moves to its larger copy a slice per append, starting when
# 1/16 of its room is left: no append copies the whole array (0.24 s for a 10M-row
# index's columns), and the copy is done when a quarter of that room is used. Both copies
# are allocated meanwhile, as in any copy: for n / 63 appends (160k at 10M rows). (256
# values a value, the copy of a row's sketch was 8 KB an insert: at 100M rows, read and
# written into fresh pages, it took an insert 10.6 us to append its row, 4.7 at 10M.) An
# append that would write into a fresh 2 MB page of the copy only faults it in (see
# _pages: 7-9 ms a page on the VM measured, the longest checks left at 10M).
_GROWTH = 1.125
_MIN_CAPACITY = 1024
_COPY_PER_VALUE = 64  # values copied per value appended while moving: 512 bytes of uint64
_ROW_VALUES = 4  # values a row appends at most (a sketch's words)


class GrowableArray:
    """An append-only 1-D NumPy array."""

    def __init__(self, dtype: npt.DTypeLike, values: npt.ArrayLike | None = None) -> None:
        initial = np.asarray(values if values is not None else [], dtype=dtype)
        self._size = initial.size
        self._data = np.empty(max(_MIN_CAPACITY, self._size + self._size // 16), dtype=dtype)
        self._data[: self._size].reshape(initial.shape)[...] = initial  # (a strided column: one copy)
        self._next: npt.NDArray[Any] | None = None  # the larger copy being filled
        self._next_pages: PageToucher | None = None  # _next's pages, faulted in one by one
        self._view: memoryview | None = None  # _data's bytes, for extend_bytes
        self._copied = 0  # values of _data already in _next

    def __len__(self) -> int:
        return self._size

    @property
    def values(self) -> npt.NDArray[Any]:
        """The stored values (a view: valid until the next append)."""
        return self._data[: self._size]

    @property
    def nbytes(self) -> int:
        """Allocated bytes, slack (and a larger copy being filled) included."""
        return int(self._data.nbytes + (self._next.nbytes if self._next is not None else 0))

    def append(self, value: int) -> None:
        if self._size == len(self._data):
            self._reserve(self._size + 1)
        self._data[self._size] = value
        self._size += 1
        self._move(1)

    def extend(self, values: npt.ArrayLike) -> None:
        values = np.asarray(values, dtype=self._data.dtype)
        end = self._size + len(values)
        if end > len(self._data):
            self._reserve(end)
        self._data[self._size : end] = values
        self._size = end
        self._move(len(values))

    def extend_bytes(self, data: bytes) -> None:
        """:meth:`extend` with values given as their bytes in the machine's order (a
        memoryview's copy: ~0.1 us, where a NumPy array of them and its copy take ~1)."""
        itemsize = self._data.itemsize
        end = self._size + len(data) // itemsize
        if end > len(self._data):
            self._reserve(end)
        if self._view is None:
            self._view = self._data.data.cast("B")
        self._view[self._size * itemsize : end * itemsize] = data
        appended, self._size = end - self._size, end
        self._move(appended)

    def _move(self, appended: int) -> None:
        """Copy a slice into the larger array (starting one when 1/16 of the room is left)."""
        if self._next is None:
            if len(self._data) - self._size > len(self._data) // 16:
                return
            self._next = np.empty(int(len(self._data) * _GROWTH) + 1, dtype=self._data.dtype)
            self._next_pages, self._copied = PageToucher(self._next), 0
        stop = min(self._copied + appended * _COPY_PER_VALUE, self._size)
        if appended <= _ROW_VALUES and self._next_pages is not None and self._next_pages.touch_next(stop):
            return  # (a fresh page of the copy: faulted in by a row's append alone; a bulk one copies)
        self._next[self._copied : stop] = self._data[self._copied : stop]
        self._copied = stop
        if stop == self._size:
            self._data, self._next, self._view, self._next_pages = self._next, None, None, None

    def _reserve(self, needed: int) -> None:
        """Room for *needed* values at once (a bulk extend, or appends outrunning the move)."""
        capacity = max(needed, int(len(self._data) * _GROWTH) + 1)
        grown = np.empty(capacity, dtype=self._data.dtype)
        grown[: self._size] = self._data[: self._size]
        self._data, self._next, self._view, self._next_pages = grown, None, None, None


class KeyStore:
    """Many ``str`` keys in one UTF-8 buffer; key ``i`` is ``data[ends[i-1]:ends[i]]``."""

    def __init__(self) -> None:
        self._data = bytearray()
        self._ends = GrowableArray(np.uint64)

    @classmethod
    def from_buffer(cls, data: bytes | bytearray, ends: npt.ArrayLike) -> KeyStore:
        """Adopt an encoded buffer (a bytearray as it is, no copy) and its end offsets (as a
        disk store keeps them)."""
        store = cls()
        store._data = data if isinstance(data, bytearray) else bytearray(data)
        store._ends = GrowableArray(np.uint64, ends)
        ends = store._ends.values.astype(np.int64)
        last = int(ends[-1]) if len(ends) else 0
        if last != len(data) or (np.diff(ends) < 0).any():
            raise ValueError("key end offsets must be non-decreasing and end at the buffer length")
        return store

    @classmethod
    def from_keys(cls, keys: Iterable[str]) -> KeyStore:
        store = cls()
        store.extend(keys)
        return store

    @property
    def data(self) -> bytes:
        """The UTF-8 buffer (a copy), for persisting with :attr:`ends`."""
        return bytes(self._data)

    @property
    def ends(self) -> npt.NDArray[np.uint64]:
        return self._ends.values

    @property
    def buffer(self) -> bytearray:
        """The UTF-8 buffer itself, to read in place (it grows: hold no view across a write)."""
        return self._data

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, index: int) -> str:
        start, stop = self._bounds(index)
        return decode_key(self._data[start:stop])

    def encoded(self, index: int) -> bytearray:
        """Key *index* as stored (UTF-8), not decoded (a copy: the buffer grows)."""
        start, stop = self._bounds(index)
        return self._data[start:stop]

    def _bounds(self, index: int) -> tuple[int, int]:
        ends = self._ends.values
        return (int(ends[index - 1]) if index else 0), int(ends[index])

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    @property
    def nbytes(self) -> int:
        return len(self._data) + self._ends.nbytes

    def append(self, key: str) -> None:
        self._data += encode_key(key)
        self._ends.append(len(self._data))

    def extend(self, keys: Iterable[str]) -> None:
        encoded = [encode_key(key) for key in keys]
        lengths = np.fromiter(map(len, encoded), dtype=np.uint64, count=len(encoded))
        self._ends.extend(len(self._data) + np.cumsum(lengths, dtype=np.uint64))
        self._data += b"".join(encoded)

    def extend_from(self, other: KeyStore) -> None:
        """Append every key of *other* without decoding them."""
        self._ends.extend(len(self._data) + other.ends)
        self._data += other._data

    def compress(self, keep: npt.NDArray[np.bool_]) -> KeyStore:
        """A new store with the keys where *keep* is true (vectorised, no decoding)."""
        ends = self.ends.astype(np.int64)
        lengths = ends - np.concatenate((np.zeros(1, dtype=np.int64), ends[:-1]))
        byte_mask = np.repeat(keep, lengths)
        data = np.frombuffer(self._data, dtype=np.uint8)[byte_mask]
        return KeyStore.from_buffer(data.tobytes(), np.cumsum(lengths[keep], dtype=np.uint64))


def encode_key(key: str) -> bytes:
    if not isinstance(key, str):
        raise TypeError(f"a key is a str, not {type(key).__name__}: {key!r}")
    # surrogatepass: any Python str round-trips, even lone surrogates from bad input
    return key.encode("utf-8", "surrogatepass")


def decode_key(data: bytes | bytearray) -> str:
    """The key :func:`encode_key` wrote; bytes damaged since (a bad disk, a stray
    write) come back as U+FFFD rather than fail every query that meets them."""
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")


def fingerprint_array(values: Iterable[int] | npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    """Validate fingerprints in bulk: integers in ``[0, 2**64)``, as uint64."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        if values.dtype.kind == "i" and len(values) and int(values.min()) < 0:
            raise ValueError(f"not a 64-bit fingerprint: {int(values.min())}")
        return values.astype(np.uint64, copy=False)
    # np.asarray would turn a list mixing ints above 2**63 into floats: check each one
    return np.fromiter(map(check_fingerprint, values), dtype=np.uint64)


def entry_columns(
    fingerprints: Iterable[int] | npt.NDArray[Any], keys: Sequence[str] | KeyStore
) -> tuple[npt.NDArray[np.uint64], KeyStore]:
    """Validated columns for a bulk build: fingerprints as uint64 and the keys stored."""
    fps = fingerprint_array(fingerprints)
    store = keys if isinstance(keys, KeyStore) else KeyStore.from_keys(keys)
    if len(store) != len(fps):
        raise ValueError(f"{len(fps)} fingerprints but {len(store)} keys")
    return fps, store
