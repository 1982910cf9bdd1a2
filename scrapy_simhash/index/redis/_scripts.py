"""Calling the log scripts of one namespace (:mod:`._lua`) with the namespace's meta.

Every call goes through redis-py's own command path: its :class:`~redis.commands.core.Script`
objects (``EVALSHA``, the script loaded again if Redis lost it), the client's thread-safe
connection pool and its :class:`~redis.retry.Retry` (see :func:`._client.connect`), whatever
client is given (TLS, a Sentinel's master). That path costs the crawler 16-29 us of CPU a
call more than the wire format written by hand did (15-17 us; bench_redis_calls.py), a
check ~0.1 ms more (bench_redis.py; README, "Many crawlers, one index"): small beside the
~1.1 ms of CPU a page costs the plugin, and Redis' time is the same.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.client import Pipeline

from ._client import is_no_meta, safe_url
from ._layout import Names, check_meta, parse_meta, reply_text, split_last
from ._lua import ADD, CHECK, KEYS_OF, REMOVE, REMOVE_KEY, SYNC
from ._lua_log import ENSURE_META


class LogScripts:
    """The scripts of a namespace, run with its epoch, chunk size and TTL (see :meth:`adopt`)."""

    def __init__(self, client: redis.Redis, names: Names, wanted: dict[str, str], url: str) -> None:
        self._client, self._names = client, names
        self._wanted = wanted
        self._where = f"Redis namespace {names.prefix!r} at {safe_url(url)}"
        self._scripts = {source: client.register_script(source)
                         for source in (CHECK, ADD, SYNC, REMOVE, REMOVE_KEY, KEYS_OF, ENSURE_META)}
        self.epoch = self.signature = ""
        self.chunk_records = 0
        self._common_args: list[Any] = []  # ARGV[1..4] of every script: epoch, prefix, chunk size, TTL
        self.ttl: int | None = None

    @property
    def names(self) -> Names:
        return self._names

    def adopt(self) -> None:
        """Take the namespace's meta (created from *wanted* if missing); refuse one that
        does not fit (:func:`check_meta`)."""
        flat = [part for pair in self._wanted.items() for part in pair]
        meta = parse_meta(self._scripts[ENSURE_META](keys=[self._names.meta], args=flat))
        check_meta(meta, self._wanted, self._where)
        self.ttl = int(meta["ttl"]) or None
        self.signature = meta["signature"]  # the first worker's fingerprint options
        self.chunk_records = int(meta["chunk_records"])
        self.epoch = meta["epoch"]
        self._common_args = [self.epoch, self._names.prefix, self.chunk_records, int(self.ttl or 0)]

    def call(self, source: str, args: list[Any]) -> list[Any] | None:
        """Run a log script; ``None`` when the namespace is not the adopted one any more
        (reset, or lost in a restart: adopt it again)."""
        try:
            reply = self._scripts[source](keys=self._names.script_keys, args=[*self._common_args, *args])
        except redis.ResponseError as exc:
            if not is_no_meta(exc):
                raise
            return None
        return None if reply_text(reply[0]) == "reload" else list(reply)

    def call_reading(
        self, source: str, args: list[Any], ranges: list[tuple[str, int]]
    ) -> tuple[list[Any] | None, list[bytes]]:
        """:meth:`call`, then read *ranges* (``GETRANGE name offset -1``), in one ``MULTI``/``EXEC`` (redis-py's
        pipeline): the reads see the log as the script saw it."""
        pipe = self._client.pipeline(transaction=True)
        self._scripts[source](keys=self._names.script_keys, args=[*self._common_args, *args], client=pipe)
        try:
            reply, *strings = _reading(pipe, ranges).execute()
        except redis.ResponseError as exc:
            if not is_no_meta(exc):
                raise
            return None, []
        return (None if reply_text(reply[0]) == "reload" else list(reply)), strings

    def read_log(
        self, position: int, tombstones: int, last: bytes, ranges: list[tuple[str, int]]
    ) -> tuple[int, bytes, list[bytes]] | None:
        """The log's records, the tombstones after the first *tombstones*, and *ranges*
        (``GETRANGE name offset -1``), read as plain strings in one ``MULTI``/``EXEC`` (no
        script: Redis spends ~0.05 us a KB on them); ``None`` when this is not the log that
        a mirror at *position*, with *tombstones* and *last* (its last record's fingerprint and
        tombstone, :func:`split_last`), copies: another epoch or none (reset, lost), or a log that lost writes the mirror
        saw, told as ``diverged`` in :mod:`._lua` tells a script. Then mirror it afresh."""
        pipe = self._client.pipeline(transaction=True)
        pipe.hget(self._names.meta, "epoch")
        pipe.get(self._names.counter)
        # from the last tombstone seen: fewer than seen, and the log is not the mirrored one
        pipe.getrange(self._names.tombstones, max(tombstones - 1, 0) * 8, -1)
        chunk, slot = divmod(max(position - 1, 0), self.chunk_records)
        pipe.getrange(self._names.chunk("f", chunk), slot * 8, slot * 8 + 7)  # the mirror's last record
        epoch, records, new_tombstones, stored_last, *strings = _reading(pipe, ranges).execute()
        records, (last, last_tombstone) = int(records or 0), split_last(last, tombstones)
        if epoch is None or reply_text(epoch) != self.epoch or records < position:
            return None
        if tombstones:
            if len(new_tombstones) < 8 or (last_tombstone and new_tombstones[:8] != last_tombstone):
                return None
            new_tombstones = new_tombstones[8:]
        if position and len(last) == 8 and len(stored_last) == 8 and stored_last != last:
            return None  # (a chunk gone with its TTL proves nothing)
        return records, new_tombstones, strings


def _reading(pipe: Pipeline, ranges: list[tuple[str, int]]) -> Pipeline:
    for name, offset in ranges:
        pipe.getrange(name, offset, -1)
    return pipe

