"""Compact column storage for the in-memory index: no Python object per entry.

:func:`fingerprint_array` validates many fingerprints at once.
:class:`KeyStore` keeps every key in one UTF-8 column plus an array of end offsets,
so ten million URLs cost their bytes plus 8 bytes each, not ~100 bytes of ``str``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.fingerprint import check_fingerprint
from ._growable import GrowableArray


class KeyStore:
    """Many ``str`` keys in one UTF-8 column; key ``i`` is ``data[ends[i-1]:ends[i]]``.

    The bytes are a :class:`GrowableArray` (NumPy, on huge pages), not a ``bytearray``:
    a ``bytearray`` past the allocator's mmap threshold (32 MB at most) was copied once
    whole by the append that crossed it (15.7 ms, in a compaction's copy of 10M keys), and
    freed 450 MB in 29 ms.
    """

    def __init__(self) -> None:
        self._data = GrowableArray(np.uint8)
        self._ends = GrowableArray(np.uint64)

    @classmethod
    def from_buffer(cls, data: bytes | bytearray | npt.NDArray[np.uint8], ends: npt.ArrayLike) -> KeyStore:
        """The keys of an encoded buffer (copied) and their end offsets, checked."""
        stored = np.frombuffer(data, dtype=np.uint8)
        store = cls.adopting(GrowableArray(np.uint8, stored), GrowableArray(np.uint64, ends))
        ends = store.ends.astype(np.int64)
        last = int(ends[-1]) if len(ends) else 0
        if last != len(data) or (np.diff(ends) < 0).any():
            raise ValueError("key end offsets must be non-decreasing and end at the buffer length")
        return store

    @classmethod
    def adopting(cls, data: GrowableArray, ends: GrowableArray) -> KeyStore:
        """The store of the bytes *data* and their end offsets, as they are (no copy, nothing checked)."""
        store = cls()
        store._data, store._ends = data, ends
        return store

    @classmethod
    def from_keys(cls, keys: Iterable[str]) -> KeyStore:
        store = cls()
        store.extend(keys)
        return store

    @property
    def data(self) -> bytes:
        """The UTF-8 bytes (a copy), for persisting with :attr:`ends`."""
        return self._data.values.tobytes()

    @property
    def ends(self) -> npt.NDArray[np.uint64]:
        return self._ends.values

    @property
    def buffer(self) -> npt.NDArray[np.uint8]:
        """The UTF-8 bytes themselves, to read in place (a view: valid until the next append)."""
        return self._data.values

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, index: int) -> str:
        return decode_key(self.encoded(index))

    def encoded(self, index: int) -> bytes:
        """Key *index* as stored (UTF-8), not decoded."""
        ends = self._ends.values
        start, stop = (int(ends[index - 1]) if index else 0), int(ends[index])
        return self._data.values[start:stop].tobytes()

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    @property
    def nbytes(self) -> int:
        return self._data.nbytes + self._ends.nbytes

    def append(self, key: str) -> None:
        self._data.extend_bytes(encode_key(key))
        self._ends.append(len(self._data))

    def extend(self, keys: Iterable[str]) -> None:
        encoded = [encode_key(key) for key in keys]
        lengths = np.fromiter(map(len, encoded), dtype=np.uint64, count=len(encoded))
        self._ends.extend(len(self._data) + np.cumsum(lengths, dtype=np.uint64))
        self._data.extend_bytes(b"".join(encoded))

    def extend_from(self, other: KeyStore) -> None:
        """Append every key of *other* without decoding them."""
        self._ends.extend(len(self._data) + other.ends)
        self._data.extend(other.buffer)

    def rows_from(self, first: int) -> KeyStore:
        """The keys of rows ``first ...``, in a new store."""
        start = int(self.ends[first - 1]) if first else 0
        ends = self.ends[first:] - np.uint64(start)
        return KeyStore.adopting(GrowableArray(np.uint8, self.buffer[start:]), GrowableArray(np.uint64, ends))

    def compress(self, keep: npt.NDArray[np.bool_]) -> KeyStore:
        """A new store with the keys where *keep* is true (vectorised, no decoding)."""
        ends = self.ends.astype(np.int64)
        lengths = ends - np.concatenate((np.zeros(1, dtype=np.int64), ends[:-1]))
        data = self.buffer[np.repeat(keep, lengths)]
        return KeyStore.from_buffer(data, np.cumsum(lengths[keep], dtype=np.uint64))


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
