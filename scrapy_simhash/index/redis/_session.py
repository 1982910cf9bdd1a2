"""A namespace's log scripts and a worker's mirror of its log, kept in step.

Every call of :class:`~.redis.RedisIndex` that runs a script goes through
:meth:`LogSession.retrying`: when a script answers that the namespace is not the
mirrored one any more (reset, lost in a restart) the mirror starts afresh, when it
answers that the mirror is too far behind to scan the rest the mirror catches up, and
the call runs again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple, TypeVar

from ._client import UnavailableAsIndexError, safe_url
from ._layout import reply_text
from ._lua import SYNC
from ._mirror import LogMirror
from ._scripts import LogScripts
from ..base import IndexUnavailableError

# A worker behind catches up this many chunks of the log at a time (32,752 records, 393 KB):
# one MULTI/EXEC of the sync script and plain reads of each chunk's fingerprints and key
# CRCs, which cost Redis ~0.05 us a KB where a script's reply costs ~2 (measured with
# benchmarks/bench_redis_tail.py); Redis serves others between two of them.
_SYNC_CHUNKS = 8
# The chunk strings a mirror holds, and their width a record: fingerprints, key CRCs.
_COLUMNS = (("f", 8), ("h", 4))
# Attempts of a call interrupted by catching up or by a reset namespace.
_ATTEMPTS = 10
_T = TypeVar("_T")


class _Behind(NamedTuple):
    """A script's answer that the mirror is too far behind (``behind`` in :mod:`._lua`)."""

    records: int
    position: int
    tombstones_seen: int
    tombstones: bytes


class Retry(Exception):
    """The log moved under a call (a reset namespace, a long tail): run it again."""


class LogSession:
    """The scripts of one namespace and this worker's mirror of its log."""

    def __init__(self, scripts: LogScripts, mirror: LogMirror, url: str) -> None:
        self.scripts, self.mirror, self.url = scripts, mirror, url
        self.lock = threading.RLock()  # the glue calls from several threads; the mirror is not safe
        self.unavailable = UnavailableAsIndexError(url)

    def call(self, source: str, args: list[Any]) -> list[Any]:
        """Run a log script. When the namespace is not the mirrored one any more (reset,
        lost in a restart), mirror it afresh; when the mirror is too far behind for the
        script to scan the rest, catch up; then raise :class:`Retry`."""
        reply = self.scripts.call(source, args)
        if reply is None:
            self.reload()
            raise Retry
        if reply_text(reply[0]) == "behind":
            self.catch_up(_Behind(int(reply[1]), int(reply[2]), int(reply[3]), reply[4]))
            raise Retry
        return reply

    def retrying(self, attempt: Callable[[], _T], locked: bool = True) -> _T:
        """*attempt()* (under the lock if *locked*) until it does not raise :class:`Retry`;
        Redis' "try again later" failures as :class:`IndexUnavailableError`."""
        with self.unavailable:
            for _ in range(_ATTEMPTS):
                try:
                    if not locked:
                        return attempt()
                    with self.lock:
                        return attempt()
                except Retry:
                    continue
        raise IndexUnavailableError(f"Redis at {safe_url(self.url)}: the namespace kept changing, try again")

    def reload(self) -> None:
        """Adopt the namespace's meta (creating it if missing) and mirror its log afresh."""
        with self.lock:
            self.scripts.adopt()
            self.mirror.reset()
            self.catch_up()

    def catch_up(self, behind: _Behind | None = None) -> None:
        """Bring the mirror up to the end of the log (as it was when this started); from
        what a script answered *behind* if the mirror is still where it was then."""
        with self.lock:
            self.mirror.catch_up(partial(self.sync, behind=behind))

    def sync(
        self, position: int, tombstones: int, last: bytes, limit: int | None = None, behind: _Behind | None = None
    ) -> list[Any]:
        """What the sync script tells (records in the log, the first one left past the
        expired chunks, the new tombstones) and the fingerprints and key CRCs of the records
        from that first one to the end of :data:`_SYNC_CHUNKS` chunks (none if *limit* is 0),
        read as plain strings in the script's transaction; or, when *behind* is from this
        *position*, the reads alone (:meth:`_read_behind`)."""
        if limit == 0:
            records, first, new_tombstones, _ = self._read_synced(position, tombstones, last, [])
            return [records, first, b"", b"", new_tombstones]
        size = self.scripts.chunk_records
        chunks = range(position // size, position // size + _SYNC_CHUNKS)
        ranges = [(self.scripts.names.chunk(kind, chunk), max(0, position - chunk * size) * width)
                  for chunk in chunks for kind, width in _COLUMNS]
        read = self._read_behind(behind, position, tombstones, ranges) or self._read_synced(
            position, tombstones, last, ranges
        )
        records, first, new_tombstones, strings = read  # first: position, or a later chunk's start
        columns = [bytearray(), bytearray()]  # zeros where a chunk is gone, as the script reads it
        for chunk, pair in zip(chunks, zip(strings[::2], strings[1::2])):
            count = min(records, (chunk + 1) * size) - max(first, chunk * size)
            for column, data, (_, width) in zip(columns, pair, _COLUMNS):
                column += data[: count * width].ljust(count * width, b"\0") if count > 0 else b""
        return [records, first, bytes(columns[0]), bytes(columns[1]), new_tombstones]

    def _read_behind(
        self, behind: _Behind | None, position: int, tombstones: int, ranges: list[tuple[str, int]]
    ) -> tuple[int, int, bytes, list[bytes]] | None:
        """*ranges* read after a script answered *behind* from this *position*: no sync
        script needed, since records before the end of the log never change (a chunk gone
        since holds expired records, which match nothing). ``None`` when *behind* is from
        elsewhere, or the first chunk is gone (expired meanwhile: the sync script skips it)."""
        if behind is None or (behind.position, behind.tombstones_seen) != (position, tombstones):
            return None
        strings = self.scripts.read(ranges)
        size = self.scripts.chunk_records
        if len(strings[0]) < 8 * min(behind.records - position, size - position % size):
            return None
        return behind.records, position, behind.tombstones, strings

    def _read_synced(
        self, position: int, tombstones: int, last: bytes, ranges: list[tuple[str, int]]
    ) -> tuple[int, int, bytes, list[bytes]]:
        """The sync script's answer and *ranges* read in its transaction."""
        reply, strings = self.scripts.call_reading(SYNC, [position, tombstones, last], ranges)
        if reply is None:
            self.reload()
            raise Retry
        return int(reply[1]), int(reply[2]), reply[3], strings

    def with_mirror(self, read: Callable[[LogMirror], _T]) -> _T:
        """*read* the mirror once caught up."""
        self.catch_up()
        return read(self.mirror)
