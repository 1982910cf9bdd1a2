"""A SimHash index in Redis, shared by many crawler processes on many machines.

Redis holds an append-only log of records, each with its sketch and a short page's
shingles (:mod:`._lua`); every worker mirrors the fingerprints in memory
(:mod:`._mirror`, ~33 bytes of RAM a record) and searches there. ``add_if_new`` is one
Lua script, one round trip, atomic on the server (:mod:`._lua_check`): it confirms the
mirror's candidates (live, and alike as :meth:`SimhashIndex.confirm` tells: exactly for
two short pages, else by their sketches), scans the few records other workers appended
since (at most 64: a worker that expects more reads them first as plain strings, and one
further behind than it expected is told so at once, :mod:`._session`), and appends the
record when nothing was confirmed. Of two workers that meet near-duplicates at the same
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

import time
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import Any

import redis

from ...core.fingerprint import check_fingerprint
from ...core.sketch import check_sketch
from .._key_crcs import key_crc
from ._client import connect, safe_url
from ._keys import decode_stored_key, encode_stored_key
from ._layout import Names, add_batches, encoded_key, new_meta, pack, pack_crc, pack_sketch, reply_text
from ._lua import ADD, CHECK, KEYS_OF, REMOVE, REMOVE_KEY
from ._mirror import LogMirror
from ._reader import LogReader
from ._scripts import LogScripts
from ._session import TAIL_BOUND, LogSession, Retry
from ..base import DEFAULT_MIN_SIMILARITY, Match, SimhashIndex, SimhashIndexError, Verdict, check_ttl

_ADD_BATCH = 1000
# With a TTL, expired records leave a worker's copy every ttl / 4 seconds, at most
# once a minute (each time the copy is indexed afresh: ~0.2 s a million records).
_FORGET_EVERY_TTL = 0.25
_FORGET_AT_MOST_EVERY = 60.0


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
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
    ) -> None:
        super().__init__(max_distance, min_similarity=min_similarity)
        if ttl is not None:
            check_ttl(ttl)
        self.url, self.namespace, self.signature = url, namespace, signature
        # A client given is shared (one per URL for a crawl's many namespaces): its owner closes it.
        self._owns_client = client is None
        self._client = client or connect(url)
        self._names = Names.of(namespace)
        self._scripts = LogScripts(self._client, self._names, new_meta(max_distance, signature, ttl), url)
        self._log = LogSession(self._scripts, LogMirror(max_distance, expected_size), url)
        self._mirror, self._unavailable = self._log.mirror, self._log.unavailable
        self._reader = LogReader(self._client, self._names)
        self._next_forget = time.monotonic() + _FORGET_AT_MOST_EVERY
        try:
            with self._unavailable:
                if reset:
                    self._reader.delete_namespace()
                elif not create and not self._reader.exists():
                    raise SimhashIndexError(f"no index in namespace {namespace!r} at {safe_url(url)}")
            self._log.retrying(self._log.reload)
        except BaseException:
            self.close()  # refused or unreachable: no pooled socket left behind
            raise

    @property
    def ttl(self) -> int | None:
        """Seconds an entry lives (the namespace's, fixed when it was created), or ``None``."""
        return self._scripts.ttl

    # -- the SimhashIndex interface -------------------------------------------------

    def add_if_new(
        self, fingerprint: int, key: str, wildcard: int = 0, sketch: bytes | None = None
    ) -> Match | None:
        matches, _ = self._check("check", fingerprint, key, wildcard, sketch)
        return matches[0] if matches else None

    def replace_if_new(
        self, fingerprint: int, key: str, wildcard: int = 0, sketch: bytes | None = None
    ) -> Verdict:
        matches, replaced = self._check("replace", fingerprint, key, wildcard, sketch)
        return Verdict.of(matches, key, replaced)

    def query(self, fingerprint: int, wildcard: int = 0, sketch: bytes | None = None) -> list[Match]:
        return self._check("query", fingerprint, "", wildcard, sketch)[0]

    def add(self, fingerprint: int, key: str, sketch: bytes | None = None) -> None:
        self.add_entries([(fingerprint, key, sketch)])

    def add_many(self, items: Iterable[tuple[int, str]]) -> None:
        self.add_entries((fingerprint, key, None) for fingerprint, key in items)

    def add_entries(self, entries: Iterable[tuple[int, str, bytes | None]]) -> None:
        for fingerprints, crcs, args in add_batches(entries, _ADD_BATCH):
            self._add_batch(fingerprints, crcs, args)

    def query_many(self, fingerprints: Sequence[int]) -> list[list[Match]]:
        queries = [check_fingerprint(fingerprint) for fingerprint in fingerprints]

        def attempt() -> list[list[Match]]:
            self._log.catch_up()
            found = [self._mirror.candidates(query, 0) for query in queries]
            seqs = sorted({seq for candidates in found for seq in candidates})
            keys = dict(zip(seqs, self._log.call(KEYS_OF, seqs)[1:])) if seqs else {}
            return [self._mirror.matches(query, [(s, keys[s], -1, 0) for s in candidates if keys[s] is not None])
                    for query, candidates in zip(queries, found)]  # -1, 0: no sketch to compare

        return self._log.retrying(attempt)

    def remove(self, fingerprint: int, key: str | None = None) -> int:
        fingerprint = check_fingerprint(fingerprint)
        args = [pack(fingerprint), "0" if key is None else "1", b"" if key is None else encode_stored_key(key)]

        def attempt() -> int:
            mirror = self._mirror
            same = [seq for seq, distance in mirror.candidates(fingerprint, 0).items() if distance == 0]
            return self._log.remove(REMOVE, [*args, *mirror.state(), TAIL_BOUND, *same])

        return self._log.retrying(attempt)

    def remove_key(self, key: str) -> int:
        stored = encoded_key(key)
        crc = key_crc(stored)

        def attempt() -> int:
            mirror = self._mirror
            return self._log.remove(REMOVE_KEY, [stored, pack_crc(crc), *mirror.state(), TAIL_BOUND,
                                                 *mirror.key_records(crc)])

        return self._log.retrying(attempt)

    def fingerprints_of(self, key: str) -> list[int]:
        crc = key_crc(encoded_key(key))

        def attempt() -> list[int]:
            self._log.catch_up()
            seqs = self._mirror.key_records(crc)
            keys = self._log.call(KEYS_OF, seqs)[1:] if seqs else []
            return [self._mirror.fingerprint_of(seq) for seq, stored in zip(seqs, keys)
                    if stored is not None and decode_stored_key(stored) == key]

        return self._log.retrying(attempt)

    def __len__(self) -> int:
        with self._unavailable:
            return self._reader.count(self.ttl is not None, self._scripts.chunk_records)

    def items(self) -> Iterator[tuple[int, str]]:
        for fingerprint, key, _ in self.entries():
            yield fingerprint, key

    def entries(self) -> Iterator[tuple[int, str, bytes | None]]:
        with self._unavailable:
            yield from self._reader.entries(self._scripts.chunk_records, self.ttl is not None)

    def describe(self) -> dict[str, Any]:
        info = {**super().describe(), "url": safe_url(self.url), "namespace": self.namespace, "ttl": self.ttl,
                "signature": self._scripts.signature}
        return {**info, **self._log.retrying(partial(self._log.with_mirror, LogMirror.describe))}

    def bucket_stats(self) -> dict[str, Any]:
        """The bucket statistics of this worker's mirror (largest, skew, candidates per probe)."""
        return self._log.retrying(partial(self._log.with_mirror, LogMirror.bucket_stats))

    def forget_expired(self) -> int:
        """Drop the records of expired chunks from this worker's copy (with a TTL); return
        how many went. Checks call it every ``ttl / 4`` seconds, at most once a minute."""
        self._next_forget = time.monotonic() + max(_FORGET_EVERY_TTL * (self.ttl or 0), _FORGET_AT_MOST_EVERY)
        if self.ttl is None:
            return 0
        return self._log.retrying(partial(self._mirror.forget_expired, self._log.sync))

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    # -- internals -------------------------------------------------------------------

    def _check(
        self, mode: str, fingerprint: int, key: str, wildcard: int, sketch: bytes | None
    ) -> tuple[list[Match], int]:
        """The check script in *mode*: its matches, and how many records of *key* it replaced."""
        if mode != "query" and time.monotonic() >= self._next_forget:
            self.forget_expired()  # first: if Redis fails here, nothing was stored
        fingerprint, wildcard = check_fingerprint(fingerprint), self.check_wildcard(wildcard)
        stored_key = encoded_key(key)
        crc = key_crc(stored_key)
        args = [mode, pack(fingerprint), pack(~wildcard & 0xFFFF_FFFF_FFFF_FFFF), self.max_distance,
                stored_key, pack_sketch(check_sketch(sketch)), self.max_sketch_distance,
                self.confirmation.min_permille]

        def attempt() -> tuple[list[Match], int]:
            with self._log.lock:  # the mirror under the lock; Redis waited for without, by any thread
                mirror, generation = self._mirror, self._mirror.generation
                position, tombstones, last = mirror.state()
                candidates = mirror.candidates(fingerprint, wildcard)
                key_records = mirror.key_records(crc) if mode == "replace" else []
            reply = self._log.call(CHECK, [*args, position, tombstones, last, TAIL_BOUND, pack_crc(crc),
                                           len(key_records), *key_records, *candidates])
            with self._log.lock:
                if mirror.generation != generation:  # mirrored afresh meanwhile: seqs are stale
                    if reply_text(reply[0]) == "stored":
                        return [], int(reply[5])
                    raise Retry
                applied = mirror.apply_check(position, tombstones, fingerprint, crc, reply)
                if reply_text(reply[0]) == "stored":
                    self._log.backlog.stored(1)
                self._log.backlog.observe(mirror.position)
                return applied

        self._log.read_ahead()
        return self._log.retrying(attempt, locked=False)

    def _add_batch(self, fingerprints: list[int], crcs: list[int], args: list[bytes]) -> None:
        """Run the add script on one batch (:func:`add_batches`) and mirror it."""

        def attempt() -> None:
            first = int(self._log.call(ADD, args)[1])
            self._log.backlog.stored(len(fingerprints))
            if first == self._mirror.position:  # nobody else wrote between: no read back
                self._mirror.extend(first, fingerprints, crcs)
            else:
                self._log.catch_up()

        self._log.retrying(attempt)
