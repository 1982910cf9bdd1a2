"""The two files of an on-disk store: lock, create, check, read back, sync, compact.

:class:`StoreFiles` opens the directory described in :mod:`._logfile` (one process at a
time: an exclusive ``flock`` on ``lock``; a *read-only* opening takes no lock and changes
nothing), finishes a compaction a crash interrupted, reads the records back
(:mod:`._replay`), and as a writer cuts a torn tail off, compacts when that is due
(:mod:`._compaction`) and checkpoints what it keeps (:mod:`._checkpoint`).
:class:`~._diskstore.DiskStore` writes and reads namespaces on top.
"""

from __future__ import annotations

import datetime
import errno
import logging
import os
import socket
import time
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _logfile as lf
from ._checkpoint import CHECKPOINT_NAME, Checkpoint, read_checkpoint, write_checkpoint
from ._compaction import NEW, compact, finish_interrupted, log_to_read, worth_compacting
from ._files import fsync_directory, fsync_file, lock_directory, remove_if_there, write_new
from ._replay import LogContents, live_entries, read_records, warn_synced_bytes_missing
from ._settling import read_settled
from ._storage import decode_key
from .base import IndexFormatError, IndexUnavailableError, signature_difference

logger = logging.getLogger(__name__)

LOG_NAME, KEYS_NAME = "fingerprints.log", "keys.log"
#: The files a compaction renames (a reader beside it opens again when they move).
_STORE_NAMES = (LOG_NAME, KEYS_NAME, LOG_NAME + NEW, KEYS_NAME + NEW)
#: A full disk (or quota, or file size limit): a store can still be read.
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class StoreFiles:
    """``fingerprints.log`` and ``keys.log`` of one store directory, open."""

    def _open_files(
        self, directory: str, signature: str, reset: bool, read_only: bool, compaction: bool | None
    ) -> tuple[npt.NDArray, npt.NDArray[np.uint8]]:
        """Open the store (created if missing) and return its live entries and namespaces,
        and their ops.
        *compaction*: ``None``, rewrite the store when most of its records are dead;
        ``True``, rewrite it; ``False``, never."""
        self.directory, self.read_only = directory, read_only
        self._write_failed = False  # (a write error was raised or logged: close only warns if it cannot sync)
        self._synced_at = self._checkpointed_at = time.monotonic()
        self.log_path = os.path.join(directory, LOG_NAME)
        self.keys_path = os.path.join(directory, KEYS_NAME)
        if read_only and not os.path.exists(self.log_path) and not os.path.exists(self.log_path + NEW):
            raise IndexFormatError(f"{directory} holds no scrapy-simhash index ({LOG_NAME} is missing)")
        self._lock_fd = None if read_only else lock_directory(directory)
        self._fds: list[int] = []
        try:
            contents = self._open(signature, reset)
            self.truncated_bytes = contents.truncated_bytes
            self.synced_bytes_missing = contents.synced_log_bytes_missing + contents.synced_key_bytes_missing
            if self.synced_bytes_missing:
                warn_synced_bytes_missing(contents, self.log_path, self.keys_path)
            return self._live(contents, compaction)
        except BaseException:
            self._close_files()
            raise

    def _open(self, signature: str, reset: bool) -> LogContents:
        """Check and read the files; with *reset*, replace files that cannot be read."""
        if self.read_only:
            return self._open_to_read(signature)
        finish_interrupted(self.log_path, self.keys_path)
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

    def _open_to_read(self, signature: str) -> LogContents:
        """Open the files without changing any, again where a compaction's renames met the
        open (:mod:`._settling`)."""
        return read_settled(lambda: self._read_pair(signature), self.directory, _STORE_NAMES)

    def _read_pair(self, signature: str) -> LogContents:
        """Open the log and its key file, then check and read what is open: whatever is
        renamed over them afterwards, the reader holds one generation's pair."""
        base = os.path.join(self.directory, LOG_NAME)
        self.log_path = log_to_read(base, self.keys_path)
        self._close_fds()
        self._log_fd = os.open(self.log_path, os.O_RDONLY)
        self._fds.append(self._log_fd)
        self.header: dict[str, Any] = lf.read_header(self.log_path, self._log_fd)
        try:
            self._keys_fd = os.open(self.keys_path, os.O_RDONLY)
        except FileNotFoundError:
            raise IndexFormatError(f"{self.keys_path} is missing: {lf.RESET_HINT}") from None
        self._fds.append(self._keys_fd)
        lf.check_keys_header(self.keys_path, self.header, self._keys_fd)
        self.check_signature(signature)
        contents = self._read_log(check_keys=True)
        self._key_end = os.fstat(self._keys_fd).st_size
        return contents

    def _read(self) -> LogContents:
        self._reopen_files()
        contents = self._read_log(check_keys=True)
        self._key_end = os.fstat(self._keys_fd).st_size
        return contents

    def _reopen_files(self) -> None:
        self._close_fds()
        mode = os.O_RDONLY if self.read_only else os.O_RDWR | os.O_APPEND
        self._log_fd = os.open(self.log_path, mode)
        self._fds.append(self._log_fd)
        self._keys_fd = os.open(self.keys_path, mode)
        self._fds.append(self._keys_fd)

    def _read_log(self, check_keys: bool) -> LogContents:
        checkpoint = read_checkpoint(self.directory, self.generation)
        format_3 = self.header["version"] == lf.FORMAT_VERSION
        files, paths = (self._log_fd, self._keys_fd), (self.log_path, self.keys_path)
        return read_records(files, paths, checkpoint, check_keys and format_3, not self.read_only)

    def _live(self, contents: LogContents, compaction: bool | None) -> tuple[npt.NDArray, npt.NDArray[np.uint8]]:
        """The live entries and the namespaces of *contents*, and their ops; a writer also
        cuts a torn tail off, rewrites the store when that is due, and checkpoints what it keeps."""
        records, ops = contents.records, contents.ops
        keep = live_entries(records, self._key_bytes, ops) | (ops == lf.OP_NAMESPACE)
        if self.read_only:
            return records[keep], ops[keep]
        if contents.truncated_bytes:
            logger.warning(
                "Dropped %(bytes)d bytes at the end of %(path)s: an interrupted write, or records whose"
                " keys %(keys)s lost with its tail",
                {"bytes": contents.truncated_bytes, "path": self.log_path, "keys": self.keys_path},
            )
            # New keys go where the key file ends now: records that pointed past it must go
            # before anything is appended (the checkpoint below syncs the cut).
            os.ftruncate(self._log_fd, contents.valid_size)
        if not keep.all():  # (a copy of every record: only if needed)
            records, ops = records[keep], ops[keep]
        outdated = self.header["version"] != lf.FORMAT_VERSION
        if compaction or (compaction is None and (outdated or worth_compacting(contents.records, len(records)))):
            self.header = compact(self.log_path, self.keys_path, self._keys_fd, self.header, records)
            self._reopen_files()
            self._key_end = os.fstat(self._keys_fd).st_size
        self._checkpoint_at_open(contents)
        return records, ops

    def _checkpoint_at_open(self, contents: LogContents) -> None:
        """Sync and checkpoint what the open kept. On a full disk the store still opens (its
        entries are there to check against; each write then fails, naming its file), the old
        checkpoint kept, unless it covers bytes the files lost (:func:`._replay.warn_synced_bytes_missing`)."""
        try:
            self.flush()
        except IndexUnavailableError as exc:
            if not isinstance(exc.__cause__, OSError) or exc.__cause__.errno not in _NO_SPACE:
                raise
            logger.warning("Opening %(directory)s without a new checkpoint: %(error)s", {"directory": self.directory, "error": str(exc)})  # (its text: the error would keep the mapped files alive)
            self._write_failed = True
            if self.synced_bytes_missing:
                remove_if_there(os.path.join(self.directory, CHECKPOINT_NAME))

    @property
    def file_bytes(self) -> int:
        """The bytes of the two files open (a reader's log may be one a compaction renamed since)."""
        return os.fstat(self._log_fd).st_size + os.fstat(self._keys_fd).st_size

    @property
    def generation(self) -> int:
        """Which compaction wrote the files (0: never, in format 2)."""
        return int(self.header.get("generation", 0))

    def _check(self, signature: str) -> None:
        self.header = lf.read_header(self.log_path)
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
        # An old checkpoint (of files removed by hand, or replaced by a reset) is not of these.
        remove_if_there(os.path.join(self.directory, CHECKPOINT_NAME))
        write_new(self.keys_path, lf.new_keys_header(1))
        write_new(self.log_path, lf.new_header(info))
        fsync_directory(self.directory)
        self.header = {**info, "version": lf.FORMAT_VERSION}

    def flush(self) -> None:
        """``fsync`` both files, then record that they are on disk (:mod:`._checkpoint`)."""
        if not self.read_only:
            self._sync(checkpoint=True)

    def _sync(self, checkpoint: bool) -> None:
        fsync_file(self._keys_fd, self.keys_path)  # keys first: a record is never on disk without its key
        fsync_file(self._log_fd, self.log_path)
        self._synced_at = time.monotonic()
        if checkpoint:
            sizes = os.fstat(self._log_fd).st_size, os.fstat(self._keys_fd).st_size
            write_checkpoint(self.directory, Checkpoint(self.generation, *sizes))
            self._checkpointed_at = self._synced_at

    def _key_bytes(self, record: np.void) -> bytes:
        offset = int(record["key_offset"]) & lf.KEY_OFFSET_MASK
        return os.pread(self._keys_fd, lf.key_length(record), offset)

    def _key_of(self, record: np.void) -> str:
        return decode_key(self._key_bytes(record))

    def _close_fds(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []

    def _close_files(self) -> None:
        self._close_fds()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
