"""A linear-scan index: the reference that the fast backends are tested against.

It compares a query with every stored fingerprint (vectorised with NumPy), so it is
exact by construction and O(n) per query. Use it for tests and benchmarks, not crawls.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.fingerprint import check_fingerprint
from ..core.sketch import check_sketch
from ._growable import GrowableArray
from ._storage import KeyStore, entry_columns
from .base import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_SIMILARITY, Match, SimhashIndex


class BruteForceIndex(SimhashIndex):
    """Exact by construction: every query scans every stored fingerprint."""

    backend_name = "brute-force"

    def __init__(
        self, max_distance: int = DEFAULT_MAX_DISTANCE, *, min_similarity: float = DEFAULT_MIN_SIMILARITY
    ) -> None:
        super().__init__(max_distance, min_similarity=min_similarity)
        self._fingerprints = GrowableArray(np.uint64)
        self._keys = KeyStore()
        self._sketches: list[bytes | None] = []

    @classmethod
    def from_arrays(
        cls,
        fingerprints: Iterable[int] | npt.NDArray[Any],
        keys: Sequence[str] | KeyStore,
        max_distance: int = DEFAULT_MAX_DISTANCE,
    ) -> BruteForceIndex:
        """An index over these entries without a Python call per entry (benchmarks)."""
        fps, index_keys = entry_columns(fingerprints, keys)
        index = cls(max_distance)
        index._keys = index_keys
        index._fingerprints = GrowableArray(np.uint64, fps)
        index._sketches = [None] * len(fps)
        return index

    def add_if_new(
        self, fingerprint: int, key: str, wildcard: int = 0, sketch: bytes | None = None
    ) -> Match | None:
        matches = self.query(fingerprint, wildcard, sketch)
        if matches:
            return matches[0]
        self.add(fingerprint, key, sketch)
        return None

    def query(self, fingerprint: int, wildcard: int = 0, sketch: bytes | None = None) -> list[Match]:
        fingerprint, wildcard = check_fingerprint(fingerprint), self.check_wildcard(wildcard)
        sketch = check_sketch(sketch)
        stored = self._fingerprints.values
        differences = stored ^ np.uint64(fingerprint)
        distances = np.bitwise_count(differences)
        counted = np.bitwise_count(differences & ~np.uint64(wildcard)) if wildcard else distances
        hits = np.flatnonzero(counted <= self.max_distance).tolist()
        verdicts = [(i, *self.confirm(sketch, self._sketches[i])) for i in hits]
        matches = [
            Match(self._keys[i], int(stored[i]), int(distances[i]), similarity)
            for i, confirmed, similarity in verdicts
            if confirmed
        ]
        return sorted(matches, key=Match.order)

    def add(self, fingerprint: int, key: str, sketch: bytes | None = None) -> None:
        fingerprint, sketch = check_fingerprint(fingerprint), check_sketch(sketch)
        self._keys.append(key)  # first: it validates the key
        self._fingerprints.append(fingerprint)
        self._sketches.append(sketch)

    def remove(self, fingerprint: int, key: str | None = None) -> int:
        fingerprint = check_fingerprint(fingerprint)
        stored = self._fingerprints.values
        keep = stored != np.uint64(fingerprint)
        for row in np.flatnonzero(~keep).tolist():
            keep[row] = key not in (None, self._keys[row])
        removed = int(len(keep) - keep.sum())
        if removed:
            self._fingerprints = GrowableArray(np.uint64, stored[keep])
            self._keys = self._keys.compress(keep)
            self._sketches = [s for s, kept in zip(self._sketches, keep.tolist()) if kept]
        return removed

    def __len__(self) -> int:
        return len(self._keys)

    def items(self) -> Iterator[tuple[int, str]]:
        return zip(self._fingerprints.values.tolist(), list(self._keys))

    def entries(self) -> Iterator[tuple[int, str, bytes | None]]:
        return zip(self._fingerprints.values.tolist(), list(self._keys), self._sketches)
