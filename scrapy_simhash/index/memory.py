"""In-memory index (placeholder: a linear scan until the permutation tables land)."""

from __future__ import annotations

from .brute import BruteForceIndex


class MemoryIndex(BruteForceIndex):
    backend_name = "memory"

    def __init__(self, max_distance: int = 3, expected_size: int = 1_000_000) -> None:
        super().__init__(max_distance)
