"""A linear-scan index: the reference that the fast backends are tested against.

It compares a query with every stored fingerprint (vectorised with NumPy), so it is
exact by construction and O(n) per query. Use it for tests and benchmarks, not crawls.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..core.fingerprint import check_fingerprint
from .base import Match, SimhashIndex


class BruteForceIndex(SimhashIndex):
    """Exact by construction: every query scans every stored fingerprint."""

    backend_name = "brute-force"

    def __init__(self, max_distance: int = 3) -> None:
        super().__init__(max_distance)
        self._fingerprints = np.empty(1024, dtype=np.uint64)
        self._keys: list[str] = []

    def add_if_new(self, fingerprint: int, key: str) -> Match | None:
        matches = self.query(fingerprint)
        if matches:
            return matches[0]
        self.add(fingerprint, key)
        return None

    def query(self, fingerprint: int) -> list[Match]:
        fingerprint = check_fingerprint(fingerprint)
        stored = self._fingerprints[: len(self._keys)]
        distances = np.bitwise_count(stored ^ np.uint64(fingerprint))
        hits = np.flatnonzero(distances <= self.max_distance)
        matches = [Match(self._keys[i], int(stored[i]), int(distances[i])) for i in hits]
        return sorted(matches, key=lambda m: (m.distance, m.key))

    def add(self, fingerprint: int, key: str) -> None:
        fingerprint = check_fingerprint(fingerprint)
        size = len(self._keys)
        if size == len(self._fingerprints):
            self._fingerprints = np.resize(self._fingerprints, 2 * size)
        self._fingerprints[size] = fingerprint
        self._keys.append(key)

    def remove(self, fingerprint: int, key: str | None = None) -> int:
        fingerprint = check_fingerprint(fingerprint)
        kept = [(f, k) for f, k in self.items() if not (f == fingerprint and key in (None, k))]
        removed = len(self._keys) - len(kept)
        self._fingerprints = np.array([f for f, _ in kept] or [0], dtype=np.uint64)
        self._keys = [k for _, k in kept]
        return removed

    def __len__(self) -> int:
        return len(self._keys)

    def items(self) -> Iterator[tuple[int, str]]:
        stored = self._fingerprints[: len(self._keys)]
        return zip(map(int, stored), list(self._keys))
