"""The files of an on-disk store: create, check, lock, append, replay.

:class:`DiskStore` owns the directory described in :mod:`._logfile`. One process at
a time holds it (an exclusive ``flock`` on ``lock``); inside that process every
namespace shares one :class:`DiskStore` (see :mod:`.disk`). A *read-only* store
takes no lock and changes nothing: it reads a snapshot, even of a store that a
running crawl is writing.
"""

from __future__ import annotations

import datetime
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from . import _logfile as lf
from ._checkpoint import Checkpoint, read_checkpoint, write_checkpoint
from ._compaction import compact, finish_interrupted, worth_compacting
from ._disk_records import RecordsAtOpen, read_keys
from ._files import fsync_directory, lock_directory, write_all, write_new
from ._replay import LogContents, live_entries, read_records
from ._storage import KeyStore, SketchStore, decode_key, encode_key
from .base import IndexFormatError, IndexUnavailableError, SimhashIndexError, signature_difference

logger = logging.getLogger(__name__)

LOG_NAME, KEYS_NAME = "fingerprints.log", "keys.log"
#: Namespace ids are 16-bit; the empty namespace is id 0 and needs no record.
MAX_NAMESPACES = 0xFFFF
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


class DiskStore:
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
        self.directory, self.read_only = directory, read_only
        self.fsync_seconds = fsync_seconds
        self.lock = threading.RLock()
        self._synced_at = self._checkpointed_at = time.monotonic()
        self.log_path = os.path.join(directory, LOG_NAME)
        self.keys_path = os.path.join(directory, KEYS_NAME)
        if read_only and not os.path.exists(self.log_path) and not os.path.exists(self.log_path + ".new"):
            raise IndexFormatError(f"{directory} holds no scrapy-simhash index ({LOG_NAME} is missing)")
        self._lock_fd = None if read_only else lock_directory(directory)
        self._fds: list[int] = []
        self._opened = False  # (closing a store that failed to open syncs nothing)
        try:
            contents = self._open(signature, reset)
            records = self._live(contents, compact)
        except BaseException:
            self.close()
            raise
        self.truncated_bytes = contents.truncated_bytes
        declared = records[records["op"] == lf.OP_NAMESPACE]
        self._namespaces = {self._key_of(r): int(r["namespace"]) for r in declared}
        self._at_open = RecordsAtOpen(records[records["op"] == lf.OP_ADD])
        self.users = 0
        self._opened = True

    # -- creation and checks ----------------------------------------------------------

    def _open(self, signature: str, reset: bool) -> LogContents:
        """Check and read the files; with *reset*, replace files that cannot be read."""
        self.log_path = finish_interrupted(self.log_path, self.keys_path, self.read_only)
        if not os.path.exists(self.log_path):
            self._create(signature)
        try:
            self._check(signature)
            return self._read()
        except IndexFormatError as exc:
            if not reset:
                raise
            logger.warning("Starting a new index: %(reason)s", {"reason": exc})
            self._create(signature)
            return self._read()

    def _read(self) -> LogContents:
        self._reopen_files()
        contents = self._read_log(check_keys=True)
        self._key_end = os.fstat(self._keys_fd).st_size
        return contents

    def _reopen_files(self) -> None:
        for fd in self._fds:
            os.close(fd)
        mode = os.O_RDONLY if self.read_only else os.O_RDWR | os.O_APPEND
        self._log_fd = os.open(self.log_path, mode)
        self._keys_fd = os.open(self.keys_path, mode)
        self._fds = [self._log_fd, self._keys_fd]

    def _read_log(self, check_keys: bool) -> LogContents:
        checkpoint = read_checkpoint(self.directory, self.generation)
        format_3 = self.header["version"] == lf.FORMAT_VERSION
        return read_records(self.log_path, self.keys_path, checkpoint, check_keys and format_3)

    def _live(self, contents: LogContents, compaction: bool | None) -> npt.NDArray:
        """The live entries and the namespaces of *contents*; a writer also cuts a torn
        tail off, rewrites the store when that is due, and checkpoints what it keeps."""
        records = contents.records
        keep = live_entries(records, self._key_bytes) | (records["op"] == lf.OP_NAMESPACE)
        if self.read_only:
            return records[keep]
        if contents.truncated_bytes:
            logger.warning(
                "Dropped %(bytes)d bytes at the end of %(path)s: an interrupted write, or records whose"
                " keys %(keys)s lost with its tail",
                {"bytes": contents.truncated_bytes, "path": self.log_path, "keys": self.keys_path},
            )
            # New keys go where the key file ends now: records that pointed past it must go
            # before anything is appended (the checkpoint below syncs the cut).
            os.ftruncate(self._log_fd, contents.valid_size)
        records = records[keep]
        outdated = self.header["version"] != lf.FORMAT_VERSION
        if compaction or (compaction is None and (outdated or worth_compacting(contents.records, len(records)))):
            self.header = compact(self.log_path, self.keys_path, self._keys_fd, self.header, records)
            self._reopen_files()
            self._key_end = os.fstat(self._keys_fd).st_size
        self.flush()
        return records

    @property
    def generation(self) -> int:
        """Which compaction wrote the files (0: never, in format 2)."""
        return int(self.header.get("generation", 0))

    def _check(self, signature: str) -> None:
        self.header: dict[str, object] = lf.read_header(self.log_path)
        if not os.path.exists(self.keys_path):
            raise IndexFormatError(f"{self.keys_path} is missing: {lf.RESET_HINT}")
        lf.check_keys_header(self.keys_path, self.header)
        self.check_signature(signature)

    def check_signature(self, signature: str) -> None:
        """Refuse fingerprints made with other options than the stored ones."""
        stored = str(self.header.get("signature", ""))
        if signature and stored and stored != signature:
            raise IndexFormatError(
                f"{self.log_path} holds fingerprints made otherwise ({signature_difference(stored, signature)}):"
                f" they are not comparable with these: {lf.RESET_HINT}, or crawl into a new index"
            )

    def _create(self, signature: str) -> None:
        """Write both files under temporary names, then rename: a crash leaves none or both
        (the log last: a key file without a log is replaced)."""
        info = {
            "signature": signature,
            "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"
            ),
            "created_on": socket.gethostname(),
            "record_bytes": lf.RECORD.itemsize,
            "generation": 1,
        }
        write_new(self.keys_path, lf.new_keys_header(1))
        write_new(self.log_path, lf.new_header(info))
        fsync_directory(self.directory)
        self.header = {**info, "version": lf.FORMAT_VERSION}

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
        data = encode_key(key)
        offset = self._write_keys(data)
        self._write_log(lf.pack_record(fingerprint, offset, data, namespace, op, sketch))
        if op == lf.OP_CLEAR:
            self._at_open.forget(namespace)
        self._sync_if_due()

    @_locked
    def append_many(
        self,
        namespace: int,
        fingerprints: npt.NDArray[np.uint64],
        keys: Sequence[str],
        sketches: npt.NDArray[np.uint64],
    ) -> None:
        """Write many ADD records with two ``os.write`` calls (*sketches*: ``SketchStore.rows``)."""
        self._check_writable()
        encoded = [encode_key(key) for key in keys]
        lengths = np.fromiter(map(len, encoded), dtype=np.uint64, count=len(encoded))
        records = np.zeros(len(encoded), dtype=lf.RECORD)
        records["fingerprint"] = fingerprints
        records["sketch"] = sketches
        crcs = np.fromiter(map(lf.key_crc, encoded), dtype=np.uint64, count=len(encoded))
        offsets = self._write_keys(b"".join(encoded)) + np.cumsum(lengths) - lengths
        records["key_offset"] = offsets | crcs << np.uint64(lf.KEY_OFFSET_BITS)
        records["key_length"] = lengths
        records["namespace"] = namespace
        records["op"] = lf.OP_ADD
        self._write_log(lf.pack_records(records))
        self._sync_if_due()

    @_locked
    def flush(self) -> None:
        """``fsync`` both files, then record that they are on disk (:mod:`._checkpoint`)."""
        if not self.read_only:
            self._sync(checkpoint=True)

    def _sync(self, checkpoint: bool) -> None:
        os.fsync(self._keys_fd)  # keys first: a record is never on disk without its key
        os.fsync(self._log_fd)
        self._synced_at = time.monotonic()
        if checkpoint:
            sizes = os.fstat(self._log_fd).st_size, os.fstat(self._keys_fd).st_size
            write_checkpoint(self.directory, Checkpoint(self.generation, *sizes))
            self._checkpointed_at = self._synced_at

    def _sync_if_due(self) -> None:
        if self.fsync_seconds is None or time.monotonic() - self._synced_at < self.fsync_seconds:
            return
        try:
            self._sync(checkpoint=time.monotonic() - self._checkpointed_at >= max(self.fsync_seconds, _CHECKPOINT_SECONDS))
        except OSError as exc:
            raise _unwritable(self.directory, exc) from exc

    def _check_writable(self) -> None:
        if self.read_only:
            raise SimhashIndexError(f"{self.directory} is open read-only")

    def _write_keys(self, data: bytes) -> int:
        offset = self._key_end
        try:
            write_all(self._keys_fd, data)
        except OSError as exc:
            self._key_end = os.fstat(self._keys_fd).st_size  # whatever part was written
            raise _unwritable(self.keys_path, exc) from exc
        self._key_end += len(data)
        return offset

    def _write_log(self, data: bytes) -> None:
        try:
            write_all(self._log_fd, data)
        except OSError as exc:
            # a partial record would shift every later one: cut back to whole records
            size = os.fstat(self._log_fd).st_size
            os.ftruncate(self._log_fd, size - (size - lf.HEADER_SIZE) % lf.RECORD.itemsize)
            raise _unwritable(self.log_path, exc) from exc

    # -- reading ----------------------------------------------------------------------

    @_locked
    def load(self, namespace: int) -> tuple[npt.NDArray[np.uint64], KeyStore, SketchStore]:
        """The live entries of *namespace*: fingerprints, keys and sketches, in insertion order."""
        records = self._at_open.take(namespace)  # read once, at open
        if records is None:  # opened before: its index may have written since
            records = self._read_log(check_keys=self.read_only).records  # (a writer wrote them itself)
            records = records[records["namespace"] == namespace]
            records = records[live_entries(records, self._key_bytes)]
        sketches = SketchStore(records["sketch"].reshape(-1))
        return records["fingerprint"].copy(), read_keys(self.keys_path, self._keys_fd, records), sketches

    def _key_bytes(self, record: np.void) -> bytes:
        offset = int(record["key_offset"]) & ((1 << lf.KEY_OFFSET_BITS) - 1)
        return os.pread(self._keys_fd, int(record["key_length"]), offset)

    def _key_of(self, record: np.void) -> str:
        return decode_key(self._key_bytes(record))

    @_locked
    def close(self) -> None:
        """Flush (a writer), then close the files and unlock the directory."""
        try:
            if self._opened:
                self.flush()
        finally:
            self._opened = False
            self._close_files()

    def _close_files(self) -> None:
        for fd in self._fds:
            os.close(fd)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        self._fds = []


def _unwritable(path: str, exc: OSError) -> IndexUnavailableError:
    """A failed write (disk full, I/O error): like an unreachable server, the Scrapy
    glue applies ``SIMHASH_ON_INDEX_ERROR`` (keep the page unchecked by default)."""
    return IndexUnavailableError(f"cannot write {path}: {exc.strerror or exc}")
