"""A SimHash index in Redis, shared by many crawler processes on many machines.

Redis holds an append-only log of records (:mod:`._redis_lua`); every worker mirrors
it in memory (:mod:`._redis_mirror`, ~33 bytes of RAM a record) and searches there.
``add_if_new`` is one Lua script, one round trip, atomic on the server: it confirms
the mirror's matches, scans the few records other workers appended since, and appends
the record when nothing matched. Of two workers that meet near-duplicates at the same
moment, exactly one keeps its page.

TTL (*ttl* seconds, fixed when a namespace is created): a record stops matching ``ttl``
seconds after it was stored (Redis' clock, to the second), so a near-duplicate is admitted
again; Redis frees records 4094 at a time, when the last of a chunk has expired, and each
worker forgets those chunks in its copy every ``ttl / 4`` seconds (:meth:`RedisIndex.forget_expired`).

Failures: an unreachable Redis raises :class:`IndexUnavailableError` (the Scrapy
glue applies ``SIMHASH_ON_INDEX_ERROR``); every call reconnects by itself, and a
namespace lost in a restart is created again, empty, and mirrored afresh.
"""

from __future__ import annotations

import threading
import time
from functools import partial
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

import redis

from ..core.fingerprint import check_fingerprint
from ._redis_client import UnavailableAsIndexError, connect, safe_url
from ._redis_keys import encode_stored_key
from ._redis_layout import Names, encoded_key, new_meta, pack, reply_text
from ._redis_lua import ADD, CHECK, KEYS_OF, REMOVE, SYNC
from ._redis_mirror import LogMirror
from ._redis_reader import LogReader
from ._redis_scripts import LogScripts
from .base import IndexUnavailableError, Match, SimhashIndex, SimhashIndexError

# Longest tail of unseen records the check script scans (~1 us each in Lua); a
# worker further behind catches up first, in slices of _SYNC_RECORDS (2 MB).
_TAIL_BOUND = 2048
_SYNC_RECORDS = 1 << 18
_ADD_BATCH = 1000
# With a TTL, expired records leave a worker's copy every ttl / 4 seconds, at most
# once a minute (each time the copy is indexed afresh: ~0.2 s a million records).
_FORGET_EVERY_TTL = 0.25
_FORGET_AT_MOST_EVERY = 60.0
# Attempts of a call interrupted by catching up or by a reset namespace.
_ATTEMPTS = 10
_T = TypeVar("_T")


class RedisIndex(SimhashIndex):
    """The shared index at a ``redis://`` or ``rediss://`` URL (password in the URL).

    A missing namespace is created, unless *create* is false (tools that only read).
    """

    backend_name = "redis"

    def __init__(
        self,
        url: str,
        max_distance: int = 3,
        *,
        expected_size: int = 1_000_000,
        namespace: str = "",
        signature: str = "",
        reset: bool = False,
        ttl: float | None = None,
        create: bool = True,
        client: redis.Redis | None = None,
    ) -> None:
        super().__init__(max_distance)
        if ttl is not None and ttl < 1:
            raise ValueError(f"ttl must be at least 1 second, not {ttl!r}")
        self.url, self.namespace, self.signature = url, namespace, signature
        self._client = client or connect(url)
        # quoted: no ':' inside, so no namespace's prefix is the start of another's
        self._names = Names(f"simhash:{quote(namespace, safe='/@')}:")
        self._scripts = LogScripts(self._client, self._names, new_meta(max_distance, signature, ttl), url)
        self._mirror = LogMirror(max_distance, expected_size)
        self._reader = LogReader(self._client, self._names)
        self._lock = threading.RLock()  # the glue calls from several threads; the mirror is not safe
        self._unavailable = UnavailableAsIndexError(url)
        self._next_forget = time.monotonic() + _FORGET_AT_MOST_EVERY
        try:
            with self._unavailable:
                if reset:
                    self._reader.delete_namespace()
                elif not create and not self._reader.exists():
                    raise SimhashIndexError(f"no index in namespace {namespace!r} at {safe_url(url)}")
            self._retrying(self._reload)
        except BaseException:
            self._client.close()  # refused or unreachable: no pooled socket left behind
            raise

    @property
    def ttl(self) -> int | None:
        """Seconds an entry lives (the namespace's, fixed when it was created), or ``None``."""
        return self._scripts.ttl

    # -- the SimhashIndex interface -------------------------------------------------

    def add_if_new(self, fingerprint: int, key: str, wildcard: int = 0) -> Match | None:
        if time.monotonic() >= self._next_forget:
            self.forget_expired()  # first: if Redis fails here, nothing was stored
        matches = self._check("check", fingerprint, key, wildcard)
        return matches[0] if matches else None

    def query(self, fingerprint: int, wildcard: int = 0) -> list[Match]:
        return self._check("query", fingerprint, "", wildcard)

    def add(self, fingerprint: int, key: str) -> None:
        self.add_many([(fingerprint, key)])

    def add_many(self, items: Iterable[tuple[int, str]]) -> None:
        batch: list[tuple[int, bytes]] = []
        for fingerprint, key in items:
            batch.append((check_fingerprint(fingerprint), encoded_key(key)))
            if len(batch) == _ADD_BATCH:
                self._add_batch(batch)
                batch = []
        if batch:
            self._add_batch(batch)

    def query_many(self, fingerprints: Sequence[int]) -> list[list[Match]]:
        queries = [check_fingerprint(fingerprint) for fingerprint in fingerprints]

        def attempt() -> list[list[Match]]:
            self._catch_up()
            found = [self._mirror.candidates(query, 0) for query in queries]
            seqs = sorted({seq for candidates in found for seq in candidates})
            keys = dict(zip(seqs, self._log_call(KEYS_OF, seqs)[1:])) if seqs else {}
            return [self._mirror.matches(query, [(s, keys[s]) for s in candidates if keys[s] is not None])
                    for query, candidates in zip(queries, found)]

        return self._retrying(attempt)

    def remove(self, fingerprint: int, key: str | None = None) -> int:
        fingerprint = check_fingerprint(fingerprint)
        args = [pack(fingerprint), "0" if key is None else "1", b"" if key is None else encode_stored_key(key)]

        def attempt() -> int:
            mirror = self._mirror
            same = [seq for seq, distance in mirror.candidates(fingerprint, 0).items() if distance == 0]
            reply = self._log_call(REMOVE, [*args, mirror.position, _TAIL_BOUND, *same])
            mirror.removed.update(int(seq) for seq in reply[1:])
            return len(reply) - 1

        return self._retrying(attempt)

    def __len__(self) -> int:
        with self._unavailable:
            return self._reader.count(self.ttl is not None, self._scripts.chunk_records)

    def items(self) -> Iterator[tuple[int, str]]:
        with self._unavailable:
            yield from self._reader.entries(self._scripts.chunk_records, self.ttl is not None)

    def describe(self) -> dict[str, Any]:
        info = {**super().describe(), "url": safe_url(self.url), "namespace": self.namespace, "ttl": self.ttl,
                "signature": self._scripts.signature}
        return {**info, **self._retrying(partial(self._with_mirror, LogMirror.describe))}

    def bucket_stats(self) -> dict[str, Any]:
        """The bucket statistics of this worker's mirror (largest, skew, candidates per probe)."""
        return self._retrying(partial(self._with_mirror, LogMirror.bucket_stats))

    def forget_expired(self) -> int:
        """Drop the records of expired chunks from this worker's copy (with a TTL); return
        how many went. Checks call it every ``ttl / 4`` seconds, at most once a minute."""
        self._next_forget = time.monotonic() + max(_FORGET_EVERY_TTL * (self.ttl or 0), _FORGET_AT_MOST_EVERY)
        if self.ttl is None:
            return 0
        return self._retrying(partial(self._mirror.forget_expired, self._sync))

    def close(self) -> None:
        self._client.close()

    # -- internals -------------------------------------------------------------------

    def _check(self, mode: str, fingerprint: int, key: str, wildcard: int) -> list[Match]:
        fingerprint, wildcard = check_fingerprint(fingerprint), check_fingerprint(wildcard)
        args = [mode, pack(fingerprint), pack(~wildcard & 0xFFFF_FFFF_FFFF_FFFF), self.max_distance,
                encoded_key(key)]

        def attempt() -> list[Match]:
            with self._lock:  # the mirror under the lock; Redis waited for without, by any thread
                mirror, generation = self._mirror, self._mirror.generation
                position, tombstones = mirror.position, mirror.tombstones_seen
                candidates = mirror.candidates(fingerprint, wildcard)
            reply = self._log_call(CHECK, [*args, position, tombstones, _TAIL_BOUND, *candidates])
            with self._lock:
                if mirror.generation != generation:  # mirrored afresh meanwhile: seqs are stale
                    if reply_text(reply[0]) == "stored":
                        return []
                    raise _Retry
                return mirror.apply_check(position, tombstones, fingerprint, reply)

        return self._retrying(attempt, locked=False)

    def _add_batch(self, batch: list[tuple[int, bytes]]) -> None:
        args = [b"".join(pack(fingerprint) for fingerprint, _ in batch), *(key for _, key in batch)]

        def attempt() -> None:
            first = int(self._log_call(ADD, args)[1])
            if first == self._mirror.position:  # nobody else wrote between: no read back
                self._mirror.extend(first, [fingerprint for fingerprint, _ in batch])
            else:
                self._catch_up()

        self._retrying(attempt)

    def _catch_up(self) -> None:
        """Bring the mirror up to the end of the log (as it was when this started)."""
        with self._lock:
            self._mirror.catch_up(self._sync)

    def _sync(self, position: int, tombstones: int, limit: int = _SYNC_RECORDS) -> list[Any]:
        """The sync script's reply: records in the log, the first one returned (past the
        expired chunks), up to *limit* fingerprints from there, the new tombstones."""
        return self._log_call(SYNC, [position, tombstones, limit])[1:]

    def _with_mirror(self, read: Callable[[LogMirror], _T]) -> _T:
        self._catch_up()
        return read(self._mirror)

    def _log_call(self, source: str, args: list[Any]) -> list[Any]:
        """Run a log script. When the namespace is not the mirrored one any more (reset,
        lost in a restart), mirror it afresh; when the mirror is too far behind for the
        script to scan the rest, catch up; then raise :class:`_Retry`."""
        reply = self._scripts.call(source, args)
        if reply is None:
            self._reload()
            raise _Retry
        if reply_text(reply[0]) == "behind":
            self._catch_up()
            raise _Retry
        return reply

    def _retrying(self, attempt: Callable[[], _T], locked: bool = True) -> _T:
        with self._unavailable:
            for _ in range(_ATTEMPTS):
                try:
                    if not locked:
                        return attempt()
                    with self._lock:
                        return attempt()
                except _Retry:
                    continue
        raise IndexUnavailableError(f"Redis at {safe_url(self.url)}: the namespace kept changing, try again")

    def _reload(self) -> None:
        """Adopt the namespace's meta (creating it if missing) and mirror its log afresh."""
        with self._lock:
            self._scripts.adopt()
            self._mirror.reset()
            self._catch_up()


class _Retry(Exception):
    """The log moved under a call (a reset namespace, a long tail): run it again."""
