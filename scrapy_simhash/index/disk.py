"""The on-disk index: persists across crawls, pause/resume (JOBDIR) and crashes.

Every entry (fingerprint, key and minwise sketch) is appended to a log (see
:mod:`._logfile` for the format) with an unbuffered ``os.write`` before ``add_if_new``
acknowledges it, so a crawl killed with ``kill -9`` at any moment loses nothing it
reported as kept. Against power loss, ``fsync_seconds=T`` ``fsync``\\ s the files at
most T seconds after a write (``SIMHASH_FSYNC``), ``durable=True`` after every write.
On open the log is replayed with NumPy into a :class:`~.memory.MemoryIndex`, sketches
included, so queries (and their sketch confirmation) run at in-memory speed.

Several namespaces (spiders, domains) share one store directory; each
:class:`DiskIndex` loads only its own. One process holds a store at a time.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..core.fingerprint import check_fingerprint
from ..core.sketch import check_sketch
from . import _logfile as lf
from ._design_choice import bulk_design
from ._diskstore import KEYS_NAME, LOG_NAME, DiskStore
from ._pages import one_call
from ._snapshot import SNAPSHOT_MIN_ROWS, read_snapshot, snapshot_path, write_snapshot
from ._sketches import SketchStore
from ._storage import fingerprint_array
from .base import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_SIMILARITY, Match, SimhashIndex, SimhashIndexError, Verdict
from .memory import MemoryIndex

logger = logging.getLogger(__name__)

_OPEN_STORES: dict[tuple[str, bool], DiskStore] = {}  # (real path, read-only) -> store
_OPEN_STORES_LOCK = threading.Lock()


class DiskIndex(SimhashIndex):
    """One namespace of the store in directory *path* (created if missing).

    *signature* (:meth:`FingerprintOptions.signature`) is written when the store is
    created; opening it with another one raises :class:`IndexFormatError`, as does a
    foreign, corrupt or other-version file. *reset* starts this namespace empty (and
    replaces a store that cannot be read). *read_only* opens an existing store to
    read, without its lock (a snapshot, even of a store a crawl is writing), and
    refuses writes. *max_distance* and *min_similarity* are not stored: each opening
    chooses them.
    """

    backend_name = "disk"

    def __init__(
        self,
        path: str | os.PathLike[str],
        max_distance: int = DEFAULT_MAX_DISTANCE,
        *,
        expected_size: int = 1_000_000,
        namespace: str = "",
        signature: str = "",
        reset: bool = False,
        durable: bool = False,
        fsync_seconds: float | None = None,
        read_only: bool = False,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
    ) -> None:
        super().__init__(max_distance, min_similarity=min_similarity)
        if read_only and reset:
            raise ValueError("a read-only index cannot be reset")
        self.path, self.namespace = os.fspath(path), namespace
        self._store = _acquire(self.path, signature, reset, 0.0 if durable else fsync_seconds, read_only)
        try:
            self._namespace_id = self._store.namespace_id(namespace)
            if reset:
                self._store.append(self._namespace_id, lf.OP_CLEAR, 0, "")
            fingerprints, keys, sketches = self._store.load(self._namespace_id)
            self._snapshot = snapshot_path(self._store.directory, self._namespace_id)
            snapshot = read_snapshot(self._snapshot, fingerprints, bulk_design(max_distance, len(fingerprints)))
            self._memory = MemoryIndex.from_arrays(
                fingerprints, keys, max_distance, sketches=sketches, min_similarity=min_similarity,
                tables=snapshot.tables if snapshot else None, key_lookup=snapshot.key_lookup if snapshot else None,
            )
        except BaseException:
            _release(self._store)
            raise

    def add_if_new(
        self, fingerprint: int, key: str, wildcard: int = 0, sketch: bytes | None = None
    ) -> Match | None:
        match = self._memory.nearest(fingerprint, wildcard, sketch)
        if match is None:
            self.add(fingerprint, key, sketch)  # on disk first, then in memory
        return match

    def replace_if_new(self, fingerprint: int, key: str, wildcard: int = 0, sketch: bytes | None = None) -> Verdict:
        with one_call():  # (a removal and an insert: one turn of the index's upkeep for both)
            return super().replace_if_new(fingerprint, key, wildcard, sketch)

    def query(self, fingerprint: int, wildcard: int = 0, sketch: bytes | None = None) -> list[Match]:
        return self._memory.query(fingerprint, wildcard, sketch)

    def query_many(self, fingerprints: Sequence[int]) -> list[list[Match]]:
        return self._memory.query_many(fingerprints)

    def add(self, fingerprint: int, key: str, sketch: bytes | None = None) -> None:
        fingerprint, sketch = check_fingerprint(fingerprint), check_sketch(sketch)  # before writing
        self._opened().append(self._namespace_id, lf.OP_ADD, fingerprint, key, sketch)
        self._memory.add(fingerprint, key, sketch)

    def _add_unmatched(self, fingerprint: int, key: str, wildcard: int, sketch: bytes | None) -> Match | None:
        self.add(fingerprint, key, sketch)  # one writer (the store's lock): nothing can have come meanwhile
        return None

    def add_many(self, items: Iterable[tuple[int, str]]) -> None:
        self.add_entries((fingerprint, key, None) for fingerprint, key in items)

    def add_entries(self, entries: Iterable[tuple[int, str, bytes | None]]) -> None:
        rows = list(entries)
        fingerprints = fingerprint_array([fingerprint for fingerprint, _, _ in rows])
        keys = [key for _, key, _ in rows]
        sketches = [sketch for _, _, sketch in rows]
        # every column checked before anything is written: a bad entry stores nothing
        self._opened().append_many(self._namespace_id, fingerprints, keys, SketchStore.from_sketches(sketches))
        self._memory.add_entries(zip(fingerprints.tolist(), keys, sketches))

    def remove(self, fingerprint: int, key: str | None = None) -> int:
        fingerprint = check_fingerprint(fingerprint)
        op = lf.OP_REMOVE_ALL if key is None else lf.OP_REMOVE
        store = self._opened()
        removed = self._memory.remove(fingerprint, key)
        if removed:
            store.append(self._namespace_id, op, fingerprint, key or "")
        return removed

    def fingerprints_of(self, key: str) -> list[int]:
        return self._memory.fingerprints_of(key)

    def __len__(self) -> int:
        return len(self._memory)

    def items(self) -> Iterator[tuple[int, str]]:
        return self._memory.items()

    def entries(self) -> Iterator[tuple[int, str, bytes | None]]:
        return self._memory.entries()

    def describe(self) -> dict[str, Any]:
        store = self._opened()
        return {
            **self._memory.describe(),
            "backend": self.backend_name,
            "path": self.path,
            "namespace": self.namespace,
            "namespaces": store.namespaces,
            "signature": store.header.get("signature", ""),
            "created_at": store.header.get("created_at"),
            "file_bytes": store.file_bytes,
            "truncated_tail_bytes": store.truncated_bytes,
            "synced_bytes_missing": store.synced_bytes_missing,
        }

    def bucket_stats(self) -> dict[str, Any]:
        return self._memory.bucket_stats()

    def flush(self) -> None:
        self._opened().flush()

    def _opened(self) -> DiskStore:
        """The store, or an error that says the index was closed (not an AttributeError)."""
        if self._store is None:
            raise SimhashIndexError(f"the disk index at {self.path} is closed")
        return self._store

    def prepare_key_lookups(self) -> None:
        self._memory.prepare_key_lookups()

    def close(self) -> None:
        if self._store is None:
            return
        try:
            if not self._store.read_only and len(self._memory) >= SNAPSHOT_MIN_ROWS:
                tables = self._memory.settled_tables()  # a faster next open
                write_snapshot(self._snapshot, tables, self._memory.settled_key_lookup())
        except OSError as exc:  # (only a shortcut: the next open builds the tables from the log)
            logger.warning("Could not write %(path)s: %(error)s", {"path": self._snapshot, "error": exc})
        finally:
            _release(self._store)
            self._store = None  # type: ignore[assignment]
            self._memory.close()


def compact_store(path: str | os.PathLike[str]) -> tuple[int, int]:
    """Rewrite the store at *path* with its live entries only (``scrapy-simhash compact``),
    as its next writer would once most of its records are dead; its file bytes before and after."""
    path = os.fspath(path)
    if not os.path.isfile(os.path.join(path, LOG_NAME)):
        raise FileNotFoundError(errno.ENOENT, "no disk index there", path)
    before = _file_bytes(path)
    DiskStore(os.path.realpath(path), signature="", reset=False, compact=True).close()
    return before, _file_bytes(path)


def hold_store(
    path: str | os.PathLike[str], signature: str = "", reset: bool = False, fsync_seconds: float | None = None
) -> Callable[[], None]:
    """Open the store at *path* to write (its lock taken, the options it was made with
    checked against *signature*) and keep it open, for the namespaces opened later to
    share, until the function returned is called: a crawl with an index per host fails at
    its start, not at each host's first page, on a store it cannot use."""
    store = _acquire(os.fspath(path), signature, reset, fsync_seconds, read_only=False)
    return lambda: _release(store)


def _file_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, name)) for name in (LOG_NAME, KEYS_NAME))


def _acquire(
    path: str, signature: str, reset: bool, fsync_seconds: float | None, read_only: bool
) -> DiskStore:
    """The process-wide store of *path*: namespaces opened together share it."""
    real = (os.path.realpath(path), read_only)
    with _OPEN_STORES_LOCK:
        store = _OPEN_STORES.get(real)
        if store is None:
            store = _OPEN_STORES[real] = DiskStore(
                real[0], signature=signature, reset=reset, fsync_seconds=fsync_seconds, read_only=read_only
            )
        else:
            store.check_signature(signature)
        store.users += 1
    return store


def _release(store: DiskStore) -> None:
    with _OPEN_STORES_LOCK:
        store.users -= 1
        if store.users == 0:
            del _OPEN_STORES[store.directory, store.read_only]
            store.close()
