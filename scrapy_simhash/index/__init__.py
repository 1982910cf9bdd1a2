"""Indexes of 64-bit fingerprints searchable by Hamming distance, and :func:`open_index`."""

from __future__ import annotations

import os

from .base import IndexFormatError, IndexUnavailableError, Match, SimhashIndex, SimhashIndexError
from .memory import MemoryIndex

__all__ = [
    "IndexFormatError",
    "IndexUnavailableError",
    "Match",
    "MemoryIndex",
    "SimhashIndex",
    "SimhashIndexError",
    "open_index",
]


def open_index(
    spec: str | os.PathLike[str] | None = None,
    *,
    max_distance: int = 3,
    expected_size: int = 1_000_000,
    namespace: str = "",
    signature: str = "",
    reset: bool = False,
    ttl: float | None = None,
) -> SimhashIndex:
    """Open the index that *spec* names.

    * ``None`` or ``"memory"``: a fresh in-memory index.
    * a ``redis://`` / ``rediss://`` URL: the shared Redis index.
    * anything else: a path to the on-disk store (created if missing).

    *namespace* keeps indexes of several scopes (spiders, domains) apart in one
    store; *signature* (:meth:`FingerprintOptions.signature`) lets a stored index
    refuse fingerprints made with other options; *reset* starts it empty; *ttl*
    (seconds) lets an entry expire where the backend supports it.
    """
    if spec is None or str(spec) == "memory":
        return MemoryIndex(max_distance, expected_size=expected_size)
    raise NotImplementedError(f"index {str(spec)!r}: only the memory index exists so far")
