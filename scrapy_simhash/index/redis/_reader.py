"""Reading a whole Redis namespace without the scripts: entries, count, deletion.

For ``entries``, ``items``, ``len`` and ``export``: a chunk at a time, pipelined, so a client holds
one batch of chunks (a few MB) however large the log is. Not atomic: entries stored
or removed meanwhile may or may not be seen, as with any scan.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import numpy as np
import redis

from ._client import glob_escape
from ._layout import CHUNK_KINDS, SHINGLES_KIND, Chunk, Names, unpack_fingerprints

# Chunks read per pipelined round trip (~6 MB with 50-byte keys and 32-byte sketches).
_CHUNKS_PER_READ = 16
_DELETE_BATCH = 1000


class LogReader:
    """The log of one namespace, read directly (see the module doc)."""

    def __init__(self, client: redis.Redis, names: Names) -> None:
        self._client = client
        self._names = names

    def count(self, with_ttl: bool, chunk_records: int) -> int:
        """Live entries: records minus tombstones (each removes one live record); with a
        TTL, the unexpired records chunk by chunk, minus the tombstones among them."""
        records, tombstones, now = self._counters()
        if not with_ttl:
            return records - len(tombstones) // 8
        removed = set(unpack_fingerprints(tombstones).tolist())
        live = 0
        for numbers in _batches(-(-records // chunk_records)):
            with self._client.pipeline(transaction=False) as pipe:
                for number in numbers:
                    pipe.get(self._names.chunk("e", number))
                expiries = pipe.execute()
            for number, chunk_expiries in zip(numbers, expiries):
                slots = np.flatnonzero(np.frombuffer(chunk_expiries or b"", dtype=">u4") > now)
                seqs = (slots + number * chunk_records).tolist()
                live += len(seqs) - len(removed.intersection(seqs))
        return live

    def entries(self, chunk_records: int, with_ttl: bool) -> Iterator[tuple[int, str, bytes | None]]:
        """Every live ``(fingerprint, key, sketch)``, in the order stored."""
        records, tombstones, now = self._counters()
        removed = set(unpack_fingerprints(tombstones).tolist())
        for numbers in _batches(-(-records // chunk_records)):
            for number, chunk in zip(numbers, self._read_chunks(numbers)):
                yield from Chunk(number * chunk_records, *chunk).live_entries(
                    removed, now if with_ttl else None)

    def exists(self) -> bool:
        """Whether the namespace exists (its meta hash), without creating it."""
        return bool(self._client.exists(self._names.meta))

    def delete_namespace(self) -> None:
        pattern = glob_escape(self._names.prefix) + "*"
        names = list(self._client.scan_iter(match=pattern, count=1000))
        for start in range(0, len(names), _DELETE_BATCH):
            self._client.unlink(*names[start : start + _DELETE_BATCH])

    def _counters(self) -> tuple[int, bytes, int]:
        """Records ever appended, the tombstones, and the Redis clock (seconds)."""
        with self._client.pipeline(transaction=False) as pipe:
            pipe.get(self._names.counter)
            pipe.get(self._names.tombstones)
            pipe.time()
            records, tombstones, (now, _) = pipe.execute()
        return int(records or 0), tombstones or b"", int(now)

    def _read_chunks(self, numbers: range) -> list[list[Any]]:
        """Per chunk number, its strings in :data:`CHUNK_KINDS` order, then its shingles' hash."""
        with self._client.pipeline(transaction=False) as pipe:
            for number in numbers:
                for kind in CHUNK_KINDS:
                    pipe.get(self._names.chunk(kind, number))
                pipe.hgetall(self._names.chunk(SHINGLES_KIND, number))
            values = cast(list[Any], pipe.execute())
        width = len(CHUNK_KINDS) + 1
        return [values[i : i + width] for i in range(0, len(values), width)]


def _batches(chunk_count: int) -> Iterator[range]:
    """Chunk numbers ``0 ... chunk_count - 1`` in batches read in one round trip."""
    for first in range(0, chunk_count, _CHUNKS_PER_READ):
        yield range(first, min(first + _CHUNKS_PER_READ, chunk_count))
