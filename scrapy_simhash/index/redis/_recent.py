"""The records a worker's mirror read ahead of a check, not yet in its tables.

A worker that reads the end of the log before a check (``LogSession.read_ahead``) adds
those records to its tables after the check, not before: adding thousands takes it
~10 ms, after which Redis' caches are cold on a machine they share, and the check script
would cost Redis about twice as much (measured with benchmarks/bench_redis_tail.py).
Meanwhile the check compares each of them with its page (NumPy, a few ns a record).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


class RecentRecords:
    """Records ``first ... first + len(self) - 1``: fingerprints and key CRCs, in growing arrays."""

    def __init__(self, first: int) -> None:
        self.first = first
        self._fingerprints: npt.NDArray[np.uint64] = np.empty(64, dtype=np.uint64)
        self._crcs: npt.NDArray[np.uint32] = np.empty(64, dtype=np.uint32)
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def extend(self, fingerprints: npt.NDArray[np.uint64], crcs: npt.NDArray[np.uint32]) -> None:
        """Append records (their arrays grow by doubling: a record at a time costs O(1))."""
        count = self._count + len(fingerprints)
        if count > len(self._fingerprints):
            capacity = max(count, 2 * len(self._fingerprints))
            self._fingerprints = _grown(self._fingerprints, capacity, self._count)
            self._crcs = _grown(self._crcs, capacity, self._count)
        self._fingerprints[self._count : count] = fingerprints
        self._crcs[self._count : count] = crcs
        self._count = count

    def fingerprints(self) -> npt.NDArray[np.uint64]:
        return self._fingerprints[: self._count]

    def crcs(self) -> npt.NDArray[np.uint32]:
        return self._crcs[: self._count]

    def within(self, fingerprint: int, wildcard: int, max_distance: int) -> dict[int, int]:
        """``{seq: full distance}`` of the records within *max_distance* of *fingerprint*
        off the *wildcard* bits."""
        if not self._count:
            return {}
        differ = self.fingerprints() ^ np.uint64(fingerprint)
        near = np.flatnonzero(np.bitwise_count(differ & np.uint64(~wildcard & 0xFFFF_FFFF_FFFF_FFFF)) <= max_distance)
        distances = np.bitwise_count(differ[near]).tolist()
        return {self.first + row: distance for row, distance in zip(near.tolist(), distances)}

    def with_crc(self, crc: int) -> list[int]:
        """The sequence numbers of the records whose key has this CRC."""
        if not self._count:
            return []
        return (np.flatnonzero(self.crcs() == np.uint32(crc)) + self.first).tolist()


def _grown(array: npt.NDArray[np.generic], capacity: int, used: int) -> npt.NDArray[np.generic]:
    grown = np.empty(capacity, dtype=array.dtype)
    grown[:used] = array[:used]
    return grown
