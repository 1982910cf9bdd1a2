"""Reading a whole cluster namespace: its kept records, home by home (``len``, ``entries``,
``export``). ``SCAN`` on every primary finds the homes; they are read in pipelined batches,
so a client holds one batch at a time. Not atomic, as any scan.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from .._keys import decode_stored_key
from ._layout import KEPT, unpack_header
from ._store import ClusterStore

_HOMES_PER_READ = 200


def count_kept(store: ClusterStore) -> int:
    """How many records are kept."""
    total = 0
    for batch in _batches(store):
        for headers in store.run([("HVALS", name) for name in batch]):
            total += sum(header[:1] == KEPT for header in headers)
    return total


def kept_entries(store: ClusterStore) -> Iterator[tuple[int, str, bytes | None]]:
    """Every kept ``(fingerprint, key, sketch)``."""
    for batch in _batches(store):
        replies = store.run([("HGETALL", name[: -1] + suffix) for name in batch for suffix in "rk"])
        for headers, keys in zip(replies[::2], replies[1::2]):
            for rid, data in headers.items():
                header = unpack_header(data)
                if header.state == KEPT and rid in keys:
                    yield header.fingerprint, decode_stored_key(keys[rid]), header.sketch


def _batches(store: ClusterStore) -> Iterator[list[str]]:
    homes = store.scan_homes()
    while batch := list(islice(homes, _HOMES_PER_READ)):
        yield batch
