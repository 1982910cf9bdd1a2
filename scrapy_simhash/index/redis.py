"""A SimHash index in Redis, shared by many crawler processes on many machines.

``add_if_new`` is one Lua script (one round trip, atomic on the server): of two
workers that meet near-duplicates at the same moment, exactly one keeps its page.
The key layout is described in :mod:`scrapy_simhash.index._redis_lua`.

TTL (*ttl* seconds, fixed when a namespace is created): every record carries its
expiry, ``stored_at + ttl`` by the Redis server's clock. From that second on the
record is invisible to every query, so the next near-duplicate is admitted again;
expired records are dropped from a bucket the next time it is written, and a bucket
nobody writes to vanishes ``ttl + 1`` seconds after its last write.

Failures: an unreachable Redis raises :class:`IndexUnavailableError` (the Scrapy
glue applies ``SIMHASH_ON_INDEX_ERROR``); every call reconnects by itself, and a
script lost in a restart is loaded again (redis-py's ``Script`` does that).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from functools import partial
from typing import Any, cast
from urllib.parse import quote

import redis

from ..core.fingerprint import check_fingerprint
from ._buckets import bucket_stats
from ._redis_client import connect, glob_escape, is_no_meta, safe_url, unavailable_as_index_error
from ._redis_layout import (
    MAX_KEY_BYTES,
    BucketSizes,
    byte_block_prefix_bits,
    check_meta,
    new_meta,
    pack,
    parse_key_records,
    parse_matches,
)
from ._redis_lua import CHECK_AND_ADD, ENSURE_META, REMOVE
from ._storage import encode_key
from ._tables import TableDesign, make_design
from .base import Match, SimhashIndex

_PIPELINE_CHUNK = 1000
_ScriptCall = tuple[list[str], list[Any]]  # a script's keys and arguments


class RedisIndex(SimhashIndex):
    """The shared index at a ``redis://`` or ``rediss://`` URL (password in the URL)."""

    backend_name = "redis"
    blocking_io = True

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
        client: redis.Redis | None = None,
    ) -> None:
        super().__init__(max_distance)
        if ttl is not None and ttl < 1:
            raise ValueError(f"ttl must be at least 1 second, not {ttl!r}")
        self.url, self.namespace, self.signature = url, namespace, signature
        self._client = client or connect(url)
        # quoted: no ':' inside, so no namespace's prefix is the start of another's
        self._prefix = f"simhash:{quote(namespace, safe='/@')}:"
        self._check_script = self._client.register_script(CHECK_AND_ADD)
        self._remove_script = self._client.register_script(REMOVE)
        self._meta_script = self._client.register_script(ENSURE_META)
        self._wanted = new_meta(max_distance, expected_size, signature, ttl)
        try:
            with self._unavailable():
                if reset:
                    self._delete_namespace()
                self._adopt(self._ensure_meta())
        except BaseException:
            self._client.close()  # refused or unreachable: no pooled socket left behind
            raise

    # -- the SimhashIndex interface -------------------------------------------------

    def add_if_new(self, fingerprint: int, key: str, wildcard: int = 0) -> Match | None:
        matches = self._run("check", fingerprint, key, wildcard)
        return matches[0] if matches else None

    def query(self, fingerprint: int, wildcard: int = 0) -> list[Match]:
        return self._run("query", fingerprint, "", wildcard)

    def add(self, fingerprint: int, key: str) -> None:
        self._run("add", fingerprint, key)

    def add_many(self, items: Iterable[tuple[int, str]]) -> None:
        batch: list[tuple[int, str]] = []
        for item in items:
            batch.append(item)
            if len(batch) == _PIPELINE_CHUNK:
                self._pipelined("add", batch)
                batch = []
        if batch:
            self._pipelined("add", batch)

    def query_many(self, fingerprints: Sequence[int]) -> list[list[Match]]:
        return self._pipelined("query", [(fp, "") for fp in fingerprints])

    def remove(self, fingerprint: int, key: str | None = None) -> int:
        fingerprint = check_fingerprint(fingerprint)
        encoded = b"" if key is None else encode_key(key)

        def build() -> _ScriptCall:
            args = [self._record_bytes, pack(fingerprint), "0" if key is None else "1", encoded]
            return self._script_keys(fingerprint), args

        with self._unavailable():
            return int(self._call(self._remove_script, build))

    def __len__(self) -> int:
        if self.ttl is None:
            with self._unavailable():
                return int(self._client.get(self._prefix + "n") or 0)
        return sum(1 for _ in self.items())

    def items(self) -> Iterator[tuple[int, str]]:
        with self._unavailable():
            now = int(self._client.time()[0])
            for name in self._scan("k*"):
                data = cast(bytes, self._client.get(name) or b"")
                yield from parse_key_records(data, self._record_bytes, now)

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update(url=safe_url(self.url), namespace=self.namespace, ttl=self.ttl)
        info["design"] = self.design.describe()
        return info

    def bucket_sizes(self, table: int) -> list[int]:
        """Records per non-empty bucket of *table* (TTL: expired ones not yet dropped too)."""
        with self._unavailable():
            names = list(self._scan(f"t{table}:*"))
            with self._client.pipeline(transaction=False) as pipe:
                for name in names:
                    pipe.strlen(name)
                return [int(size) // self._record_bytes for size in pipe.execute()]

    def bucket_stats(self) -> dict[str, Any]:
        """The in-memory index's bucket statistics (largest, skew, candidates per probe)."""
        tables = [self.bucket_sizes(t) for t in range(len(self.design.tables))]
        return bucket_stats(BucketSizes(self.design, tables))  # type: ignore[arg-type]  # duck-typed

    def close(self) -> None:
        self._client.close()

    # -- internals -------------------------------------------------------------------

    def _run(self, mode: str, fingerprint: int, key: str, wildcard: int = 0) -> list[Match]:
        fingerprint, wildcard = check_fingerprint(fingerprint), check_fingerprint(wildcard)
        with self._unavailable():
            reply = self._call(self._check_script, partial(self._check_call, mode, fingerprint, key, wildcard))
        return parse_matches(reply)

    def _pipelined(self, mode: str, batch: Sequence[tuple[int, str]]) -> list[list[Match]]:
        builds = [partial(self._check_call, mode, check_fingerprint(fp), key, 0) for fp, key in batch]
        calls = [build() for build in builds]
        with self._unavailable():
            replies = self._execute(calls)
            lost = [i for i, reply in enumerate(replies) if is_no_meta(reply)]
            if lost:  # Redis lost the namespace mid-batch: recreate it, redo those calls
                self._adopt(self._ensure_meta())
                for i, reply in zip(lost, self._execute([builds[i]() for i in lost])):
                    replies[i] = reply
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return [parse_matches(reply) for reply in replies]

    def _execute(self, calls: list[_ScriptCall]) -> list[Any]:
        with self._client.pipeline(transaction=False) as pipe:
            for keys, args in calls:
                self._check_script(keys=keys, args=args, client=pipe)
            return list(pipe.execute(raise_on_error=False))

    def _call(self, script: Any, build: Callable[[], _ScriptCall]) -> Any:
        """Run *script* with ``build()``'s keys and arguments; if Redis lost the namespace
        (restart, flush), recreate it and build again (the design may have changed)."""
        keys, args = build()
        try:
            return script(keys=keys, args=args)
        except redis.ResponseError as exc:
            if not is_no_meta(exc):
                raise
            self._adopt(self._ensure_meta())
            keys, args = build()
            return script(keys=keys, args=args)

    def _check_call(self, mode: str, fingerprint: int, key: str, wildcard: int) -> _ScriptCall:
        keys, tables = self._probe_keys(fingerprint, wildcard)
        return keys, self._script_args(mode, fingerprint, key, wildcard, tables)

    def _script_keys(self, fingerprint: int) -> list[str]:
        buckets = enumerate(self.design.bucket_keys(fingerprint))
        return self._keys_around(self._bucket_names(buckets), fingerprint)

    def _keys_around(self, buckets: list[str], fingerprint: int) -> list[str]:
        """The script's keys: *buckets*, then the key shard, the counter and the meta hash."""
        shard = f"{self._prefix}k{fingerprint >> (64 - self._shard_bits)}"
        return [*buckets, shard, self._prefix + "n", self._prefix + "meta"]

    def _bucket_names(self, buckets: Iterable[tuple[int, int]]) -> list[str]:
        """Redis names of (table, bucket key) pairs."""
        return [f"{self._prefix}t{t}:{b:x}" for t, b in buckets]

    def _probe_keys(self, fingerprint: int, wildcard: int) -> tuple[list[str], bytes]:
        """The script's keys: own buckets first, then the other buckets a wildcard probe
        visits; and the table of each bucket, one byte each."""
        own = self.design.bucket_keys(fingerprint)
        buckets = list(enumerate(own))
        if wildcard:
            probes = self.design.probe_keys(fingerprint, wildcard)
            buckets += [(t, b) for t, keys in enumerate(probes) for b in keys if b != own[t]]
        tables = bytes(t for t, _ in buckets)
        return self._keys_around(self._bucket_names(buckets), fingerprint), tables

    def _script_args(
        self, mode: str, fingerprint: int, key: str, wildcard: int, tables: bytes
    ) -> list[Any]:
        encoded = encode_key(key)
        if len(encoded) > MAX_KEY_BYTES:
            raise ValueError(
                f"key is {len(encoded)} bytes, the Redis index stores at most {MAX_KEY_BYTES}"
            )
        return [
            self._record_bytes,
            pack(fingerprint),
            self.max_distance,
            mode,
            encoded,
            int(self.ttl or 0),
            self._prefix + "k",
            self._shard_bits,
            pack(~wildcard & 0xFFFF_FFFF_FFFF_FFFF),
            tables,
            len(self.design.tables),
            self._byte_block_prefix,
        ]

    def _ensure_meta(self) -> dict[str, str]:
        flat = [part for pair in self._wanted.items() for part in pair]
        reply = self._meta_script(keys=[self._prefix + "meta"], args=flat)
        values = [v.decode() if isinstance(v, bytes) else str(v) for v in reply]
        return dict(zip(values[::2], values[1::2]))

    def _adopt(self, meta: dict[str, str]) -> None:
        """Use the namespace's stored design; refuse one that would give wrong answers."""
        where = f"Redis namespace {self._prefix!r} at {safe_url(self.url)}"
        check_meta(meta, self._wanted, self.max_distance, where)
        self.ttl = int(meta["ttl"]) or None
        self.design: TableDesign = make_design(
            int(meta["max_distance"]), int(meta["blocks"]), int(meta["prefix_bits"])
        )
        self._shard_bits = int(meta["shard_bits"])
        self._byte_block_prefix = byte_block_prefix_bits(self.design)
        self._record_bytes = 12 if self.ttl else 8

    def _scan(self, pattern: str) -> Iterator[str]:
        prefix = glob_escape(self._prefix)
        for name in self._client.scan_iter(match=prefix + pattern, count=1000):
            yield name.decode() if isinstance(name, bytes) else name

    def _delete_namespace(self) -> None:
        names = list(self._scan("*"))
        for start in range(0, len(names), _PIPELINE_CHUNK):
            self._client.unlink(*names[start : start + _PIPELINE_CHUNK])

    def _unavailable(self) -> AbstractContextManager[None]:
        return unavailable_as_index_error(self.url)
