"""A namespace's log scripts and a worker's mirror of its log, kept in step.

Every call of :class:`~.redis.RedisIndex` that runs a script goes through
:meth:`LogSession.retrying`: when a script answers that the namespace is not the
mirrored one any more (reset, lost in a restart) the mirror starts afresh, when it
answers that the mirror is too far behind to scan the rest the mirror catches up, and
the call runs again. A check that other workers' records are expected to have put too
far behind catches up first (:meth:`LogSession.read_ahead`), so that it runs one script.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from ._client import UnavailableAsIndexError, safe_url
from ._layout import reply_text, unpack_fingerprints
from ._lua import SYNC
from ._mirror import LogMirror
from ._scripts import LogScripts
from ..base import IndexUnavailableError

#: Longest tail of unseen records a script scans (~0.6 us each in Lua); a worker further
#: behind is answered ``behind`` at once, catches up by plain reads (~30 us of Redis time
#: for 10,000 records, measured with benchmarks/bench_redis_tail.py) and calls again.
TAIL_BOUND = 64
# A check expecting this many unseen records or more catches up first: a transaction of
# plain reads (~10 us of Redis time, one more round trip) costs Redis less than a script
# scanning them.
_READ_AHEAD_AT = 16
# A worker behind catches up at most this many chunks of the log at a time (32,752
# records, 393 KB): one MULTI/EXEC of plain reads of each chunk's fingerprints and key
# CRCs, which cost Redis ~0.05 us a KB where a script's reply costs ~2 (measured with
# benchmarks/bench_redis_tail.py); Redis serves others between two of them.
_SYNC_CHUNKS = 8
# The chunk strings a mirror holds, and their width a record: fingerprints, key CRCs.
_COLUMNS = (("f", 8), ("h", 4))
# Attempts of a call interrupted by catching up or by a reset namespace.
_ATTEMPTS = 10
_T = TypeVar("_T")


class Retry(Exception):
    """The log moved under a call (a reset namespace, a long tail): run it again."""


class BacklogForecast:
    """The records other workers store between two checks of this one, foreseen from how
    fast the log grew by their records between its last checks (half the last interval's
    rate, half the earlier forecast's). This worker's own records are left out: counted,
    a lone crawler's burst of checks then a pause foresaw a backlog, and read ahead for
    nothing after each pause."""

    def __init__(self) -> None:
        self._end, self._at, self._rate = 0, 0.0, 0.0
        self._own = 0  # records this worker stored itself

    def stored(self, count: int) -> None:
        """This worker stored *count* records itself (in the log before its next check)."""
        self._own += count

    def observe(self, end: int) -> None:
        """A check saw the log end at record *end*, now."""
        now, others = time.monotonic(), end - self._own
        if self._at and now > self._at:
            self._rate = (self._rate + max(others - self._end, 0) / (now - self._at)) / 2
        self._end, self._at = others, now

    def expected(self) -> int:
        """Records the log is expected to have grown by since the last check."""
        return int(self._rate * (time.monotonic() - self._at)) if self._at else 0


class LogSession:
    """The scripts of one namespace and this worker's mirror of its log."""

    def __init__(self, scripts: LogScripts, mirror: LogMirror, url: str) -> None:
        self.scripts, self.mirror, self.url = scripts, mirror, url
        self.lock = threading.RLock()  # the glue calls from several threads; the mirror is not safe
        self.unavailable = UnavailableAsIndexError(url)
        self.backlog = BacklogForecast()

    def call(self, source: str, args: list[Any]) -> list[Any]:
        """Run a log script. When the namespace is not the mirrored one any more (reset,
        lost in a restart), mirror it afresh; when the mirror is too far behind for the
        script to scan the rest, catch up; then raise :class:`Retry`."""
        reply = self.scripts.call(source, args)
        if reply is None:
            self.reload()
            raise Retry
        if reply_text(reply[0]) == "behind":  # {'behind', records in the log}; read, folded after the call
            self.catch_up(int(reply[1]) - self.mirror.position, fold=False)
            raise Retry
        return reply

    def remove(self, source: str, args: list[Any]) -> int:
        """Run a removal script, *args* made with the mirror's state under the lock held
        now, and mirror its reply: the tombstones the mirror had not seen, the new ones
        included (counted as any, so that Redis losing them is noticed); return how many
        records it removed."""
        reply = self.call(source, args)
        self.mirror.add_tombstones(self.mirror.tombstones_seen, unpack_fingerprints(reply[1]))
        return len(reply) - 2

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

    def read_ahead(self) -> None:
        """Catch up before a check when other workers are expected to have stored more
        than a few records since the last one (:class:`BacklogForecast`)."""
        expected = self.backlog.expected()
        if expected >= _READ_AHEAD_AT:  # (into the tables after the check: RecentRecords)
            self.retrying(partial(self.catch_up, expected, fold=False))

    def reload(self) -> None:
        """Adopt the namespace's meta (creating it if missing) and mirror its log afresh."""
        with self.lock:
            self.scripts.adopt()
            self.mirror.reset()
            self.catch_up()

    def catch_up(self, expected: int | None = None, fold: bool = True) -> None:
        """Bring the mirror up to the end of the log (as it was when this started), reading
        enough chunks at a time for *expected* more records (``None``: as many as may be);
        into its tables unless not *fold* (:meth:`LogMirror.extend`)."""
        with self.lock:
            self.mirror.catch_up(partial(self.sync, expected=expected), fold)

    def sync(
        self, position: int, tombstones: int, last: bytes, limit: int | None = None, expected: int | None = None
    ) -> list[Any]:
        """The records in the log, the first one left past the expired chunks, the
        fingerprints and key CRCs of the records from that first one to the end of the
        chunks read (:func:`_chunks_for` *expected* records; none if *limit* is 0), and the new tombstones; read as plain strings
        (:meth:`LogScripts.read_log`), or in the sync script's transaction when the first
        chunk is gone (expired: the script skips to the first one left) or *limit* is 0."""
        if limit == 0:
            records, first, new_tombstones, _ = self._read_synced(position, tombstones, last, [])
            return [records, first, b"", b"", new_tombstones]
        size = self.scripts.chunk_records
        chunk_numbers = range(position // size, position // size + _chunks_for(expected, position, size))
        ranges = [(self.scripts.names.chunk(kind, chunk), max(0, position - chunk * size) * width)
                  for chunk in chunk_numbers for kind, width in _COLUMNS]
        read = self._read_plain(position, tombstones, last, ranges) or self._read_synced(
            position, tombstones, last, ranges
        )
        records, first, new_tombstones, strings = read  # first: position, or a later chunk's start
        columns = [bytearray(), bytearray()]  # zeros where a chunk is gone, as the script reads it
        for chunk, pair in zip(chunk_numbers, zip(strings[::2], strings[1::2])):
            count = min(records, (chunk + 1) * size) - max(first, chunk * size)
            for column, data, (_, width) in zip(columns, pair, _COLUMNS):
                column += data[: count * width].ljust(count * width, b"\0") if count > 0 else b""
        return [records, first, bytes(columns[0]), bytes(columns[1]), new_tombstones]

    def _read_plain(
        self, position: int, tombstones: int, last: bytes, ranges: list[tuple[str, int]]
    ) -> tuple[int, int, bytes, list[bytes]] | None:
        """*ranges* and what the sync script would tell, read as plain strings; ``None``
        when the first chunk is gone (expired: the sync script finds the first one left)."""
        read = self.scripts.read_log(position, tombstones, last, ranges)
        if read is None:
            self.reload()
            raise Retry
        records, new_tombstones, strings = read
        size = self.scripts.chunk_records
        if len(strings[0]) < 8 * min(records - position, size - position % size):
            return None
        return records, position, new_tombstones, strings

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


def _chunks_for(expected: int | None, position: int, chunk_records: int) -> int:
    """Chunks to read from *position* on for *expected* more records (``None``: the
    most): a quarter more, as more may come meanwhile, since reading a chunk that does
    not exist yet costs Redis ~1 us."""
    if expected is None:
        return _SYNC_CHUNKS
    return min(_SYNC_CHUNKS, 1 + (position % chunk_records + expected + expected // 4 + 64) // chunk_records)
