"""An on-disk store shared by its namespaces: append records, load a namespace.

:class:`DiskStore` holds the directory described in :mod:`._logfile` (opened by
:class:`~._storefiles.StoreFiles`); inside a process every namespace shares one
:class:`DiskStore` (see :mod:`.disk`). A *read-only* store takes no lock and changes
nothing: it reads a snapshot, even of a store that a running crawl is writing.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from . import _logfile as lf
from ._disk_records import RecordsAtOpen, read_keys
from ._files import unwritable, write_all
from ._growable import GrowableArray
from ._replay import live_entries
from ._sketches import SketchStore
from ._storage import KeyStore, encode_key
from ._storefiles import KEYS_NAME, LOG_NAME, StoreFiles
from .base import IndexUnavailableError, SimhashIndexError

__all__ = ["KEYS_NAME", "LOG_NAME", "DiskStore"]

logger = logging.getLogger(__name__)

#: Namespace ids are 16-bit; the empty namespace is id 0 and needs no record.
MAX_NAMESPACES = 0xFFFF
#: From this many entries a namespace's keys are read in a thread of their own.
_KEYS_IN_A_THREAD = 1 << 20
#: With fsync after every write, the checkpoint (three more fsyncs) is written at most this often.
_CHECKPOINT_SECONDS = 1.0


_F = TypeVar("_F", bound=Callable[..., Any])


def _locked(method: _F) -> _F:
    """Run *method* under the store's lock: the namespaces of a store share its files, and
    the Scrapy glue opens a host's namespace in a worker thread while others write."""

    @wraps(method)
    def locked(self: DiskStore, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)

    return locked  # type: ignore[return-value]


class DiskStore(StoreFiles):
    """The append-only files of one store directory, shared by its namespaces (threads
    included: see :func:`_locked`)."""

    def __init__(
        self, directory: str, *, signature: str, reset: bool, fsync_seconds: float | None = None,
        read_only: bool = False, compact: bool | None = None,
    ) -> None:
        """*fsync_seconds*: ``None``, never ``fsync`` (a killed process loses nothing, a power
        cut the writes the disk did not have yet); ``0``, after every write; ``T``, at most
        T seconds after a write (the first write T seconds after the last ``fsync``).
        *compact*: ``None``, rewrite the store at open when most of its records are dead
        (:mod:`._compaction`); ``True``, rewrite it; ``False``, never."""
        self.fsync_seconds = fsync_seconds
        self.lock = threading.RLock()
        self._opened = False  # (closing a store that failed to open syncs nothing)
        records, ops = self._open_files(directory, signature, reset, read_only, compact)
        adds = ops == lf.OP_ADD
        only_adds = bool(adds.all())
        declared = records[:0] if only_adds else records[ops == lf.OP_NAMESPACE]
        self._namespaces = {self._key_of(r): int(r["namespace"]) for r in declared}
        # (a copy only if needed; without a namespace declared, every entry is the default one's)
        self._at_open = RecordsAtOpen(records if only_adds else records[adds], one_namespace=not self._namespaces)
        self.users = 0
        self._opened = True

    # -- namespaces -------------------------------------------------------------------

    @_locked
    def namespace_id(self, name: str) -> int:
        """The id of namespace *name*, recorded on first use."""
        if name == "" or name in self._namespaces:
            return self._namespaces.get(name, 0)
        if self.read_only:
            raise SimhashIndexError(f"{self.directory} has no namespace {name!r} (it has {self.namespaces})")
        new_id = max(self._namespaces.values(), default=0) + 1
        if new_id > MAX_NAMESPACES:
            raise SimhashIndexError(f"{self.directory} already has {MAX_NAMESPACES} namespaces")
        self.append(new_id, lf.OP_NAMESPACE, 0, name)
        self._namespaces[name] = new_id
        return new_id

    @property
    def namespaces(self) -> list[str]:
        return ["", *sorted(self._namespaces)]

    # -- writing ----------------------------------------------------------------------

    @_locked
    def append(
        self, namespace: int, op: int, fingerprint: int, key: str, sketch: bytes | None = None
    ) -> None:
        """Write one record (and its key); durable against kill -9 when it returns.

        *fingerprint* and *sketch* must be checked already: they are written as given.
        """
        self._check_writable()
        span = lf.key_span(encode_key(key), sketch)
        offset = self._write_keys(span)
        self._write_log(lf.pack_record(fingerprint, offset, span, namespace, op, sketch))
        if op == lf.OP_CLEAR:
            self._at_open.forget(namespace)
        self._sync_if_due()

    @_locked
    def append_many(
        self,
        namespace: int,
        fingerprints: npt.NDArray[np.uint64],
        keys: Sequence[str],
        sketches: SketchStore,
    ) -> None:
        """Write many ADD records with two ``os.write`` calls."""
        self._check_writable()
        shingles = [sketches.shingles(row) for row in range(len(keys))]
        encoded = [encode_key(key) + tail for key, tail in zip(keys, shingles)]  # (lf.key_span)
        lengths = np.fromiter(map(len, encoded), dtype=np.uint64, count=len(encoded))
        records = np.zeros(len(encoded), dtype=lf.RECORD)
        records["fingerprint"] = fingerprints
        records["sketch"] = sketches.rows
        records["shingles"] = [len(tail) // 2 for tail in shingles]
        crcs = np.fromiter(map(lf.key_crc, encoded), dtype=np.uint64, count=len(encoded))
        offsets = self._write_keys(b"".join(encoded)) + np.cumsum(lengths) - lengths
        records["key_offset"] = offsets | crcs << np.uint64(lf.KEY_OFFSET_BITS)
        records["key_length"] = lengths
        records["namespace"] = namespace
        records["op"] = lf.OP_ADD
        self._write_log(lf.pack_records(records))
        self._sync_if_due()

    def _sync_if_due(self) -> None:
        if self.fsync_seconds is None or time.monotonic() - self._synced_at < self.fsync_seconds:
            return
        try:
            self._sync(checkpoint=time.monotonic() - self._checkpointed_at >= max(self.fsync_seconds, _CHECKPOINT_SECONDS))
        except IndexUnavailableError:
            self._write_failed = True
            raise
        except OSError as exc:  # (the checkpoint's directory fsync, an fstat: what the fsyncs do not name)
            self._write_failed = True
            raise unwritable(self.directory, exc) from exc

    def _check_writable(self) -> None:
        if self.read_only:
            raise SimhashIndexError(f"{self.directory} is open read-only")

    def _write_keys(self, data: bytes) -> int:
        offset = self._key_end
        try:
            write_all(self._keys_fd, data)
        except OSError as exc:
            self._key_end = os.fstat(self._keys_fd).st_size  # whatever part was written
            self._write_failed = True
            raise unwritable(self.keys_path, exc) from exc
        self._key_end += len(data)
        return offset

    def _write_log(self, data: bytes) -> None:
        try:
            write_all(self._log_fd, data)
        except OSError as exc:
            # a partial record would shift every later one: cut back to whole records
            size = os.fstat(self._log_fd).st_size
            os.ftruncate(self._log_fd, size - (size - lf.HEADER_SIZE) % lf.RECORD.itemsize)
            self._write_failed = True
            raise unwritable(self.log_path, exc) from exc

    # -- reading ----------------------------------------------------------------------

    @_locked
    def load(self, namespace: int) -> tuple[npt.NDArray[np.uint64], KeyStore, SketchStore]:
        """The live entries of *namespace*: fingerprints, keys and sketches, in insertion order."""
        records = self._at_open.take(namespace)  # read once, at open
        if records is None:  # opened before: its index may have written since
            records = self._read_log(check_keys=self.read_only).records  # (a writer wrote them itself)
            records = records[records["namespace"] == namespace]
            records = records[live_entries(records, self._key_bytes)]
        if len(records) < _KEYS_IN_A_THREAD:
            keys, shingles = read_keys(self.keys_path, self._keys_fd, records)
            return records["fingerprint"].copy(), keys, SketchStore(records["sketch"], shingles)
        with ThreadPoolExecutor(1) as pool:  # the keys read (I/O, a copy) while the columns are copied
            read = pool.submit(read_keys, self.keys_path, self._keys_fd, records)
            # (the sketches straight into their column: one copy of 3.2 GB at 100M entries, not two)
            words, fingerprints = GrowableArray(np.uint64, records["sketch"]), records["fingerprint"].copy()
            keys, shingles = read.result()
            return fingerprints, keys, SketchStore.adopting(words, shingles)

    @_locked
    def flush(self) -> None:
        """``fsync`` both files, then record that they are on disk (:mod:`._checkpoint`)."""
        super().flush()

    @_locked
    def close(self) -> None:
        """Flush (a writer), then close the files and unlock the directory."""
        try:
            if self._opened:
                self._flush_at_close()
        finally:
            self._opened = False
            self._close_files()

    def _flush_at_close(self) -> None:
        """Flush; after a failed write (a full disk) a failed flush only warns: the write's
        error, raised already, is the one to see (a ``with`` block would see this one instead)."""
        try:
            self.flush()
        except IndexUnavailableError as exc:
            if not self._write_failed:
                raise
            logger.warning("Could not sync %(directory)s at close: %(error)s", {"directory": self.directory, "error": str(exc)})  # (its text: the error would keep the mapped files alive)
