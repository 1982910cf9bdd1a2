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
from typing import Any, TypeVar

from ._client import UnavailableAsIndexError, safe_url
from ._layout import reply_text
from ._lua import SYNC
from ._mirror import LogMirror
from ._scripts import LogScripts
from ..base import IndexUnavailableError

# A worker behind catches up in slices of this many records at most (and within one chunk
# of the log): Redis spends ~1.5 us a KB it reads into a script and returns, ~40 us a slice
# (measured with benchmarks/bench_redis_tail.py), and serves no one else meanwhile.
_SYNC_RECORDS = 2048
# Attempts of a call interrupted by catching up or by a reset namespace.
_ATTEMPTS = 10
_T = TypeVar("_T")


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
            self.catch_up()
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

    def catch_up(self) -> None:
        """Bring the mirror up to the end of the log (as it was when this started)."""
        with self.lock:
            self.mirror.catch_up(self.sync)

    def sync(self, position: int, tombstones: int, last: bytes, limit: int = _SYNC_RECORDS) -> list[Any]:
        """The sync script's reply: records in the log, the first one returned (past the
        expired chunks), up to *limit* fingerprints from there, the new tombstones."""
        return self.call(SYNC, [position, tombstones, last, limit])[1:]

    def with_mirror(self, read: Callable[[LogMirror], _T]) -> _T:
        """*read* the mirror once caught up."""
        self.catch_up()
        return read(self.mirror)
