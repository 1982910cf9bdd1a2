"""A worker's local copy of a Redis namespace's log, searched in memory.

The log (see :mod:`._lua`) only grows, so a worker holds records
``first_seq ... position - 1`` in a :class:`~._records.RecordIndex` (row ``r`` is
record ``first_seq + r``; the keys stay in Redis), their key CRCs in a
:class:`~._crc_table.CrcTable`, the last ones read in :class:`~._recent.RecentRecords`
until they are many, and the tombstones it has seen. A search here finds every
candidate among those records (and every record that may be under a key); the check
script confirms them (their sketches and keys stay in Redis) and covers the records
written since. Costs ~41 bytes of the worker's RAM a record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ...core.sketch import estimated_similarity, exact_similarity
from .._crc_table import CrcTable
from ._layout import pack, reply_text, unpack_crcs, unpack_fingerprints
from ._keys import decode_stored_key
from ._recent import RecentRecords
from ._records import RecordIndex
from .._tables import TableDesign
from ..base import Match

# Fewer records are added one by one (into the design chosen for expected_size, when
# the mirror is empty); more, in bulk (MemoryIndex.add_entries' own threshold).
_BULK_ADD = 4096


class LogMirror:
    """Records ``first_seq ... position - 1`` of a log, and the tombstones seen."""

    _records: RecordIndex
    _crcs: CrcTable
    _recent: RecentRecords

    def __init__(self, max_distance: int, expected_size: int) -> None:
        self._max_distance = max_distance
        self._expected_size = expected_size
        #: Counts resets: a reply to a call made before one describes another log.
        self.generation = -1
        self.reset()

    def reset(self) -> None:
        """Forget everything (the namespace was reset or recreated)."""
        self.generation += 1
        self.tombstones_seen = 0
        self._last_tombstone = b""  # the last one seen (8 bytes): see state()
        self.removed: set[int] = set()
        self._restart_at(0)

    @property
    def position(self) -> int:
        """The sequence number of the next record to mirror."""
        return self._recent.first + len(self._recent)

    def state(self) -> list[int | bytes]:
        """What the scripts check this copy against (``diverged`` in :mod:`._lua`):
        its position, the tombstones it has seen, its last record's fingerprint and last
        tombstone (:func:`~._layout.split_last`)."""
        return [self.position, self.tombstones_seen, self._last_fingerprint() + self._last_tombstone]

    def _last_fingerprint(self) -> bytes:
        return pack(self.fingerprint_of(self.position - 1)) if self.position > self.first_seq else b""

    @property
    def design(self) -> TableDesign:
        return self._records.design

    def extend(
        self,
        start: int,
        fingerprints: npt.NDArray[np.uint64] | list[int],
        crcs: npt.NDArray[np.uint32] | list[int],
        fold: bool = True,
    ) -> None:
        """Mirror the records ``start, start + 1, ...`` with these fingerprints and key CRCs;
        into the tables with the recent ones if *fold*, else among the recent ones.

        Those mirrored already are skipped (replies to calls of several threads overlap).
        A *start* past :attr:`position` means the records between are gone (their
        chunks expired, and chunks expire in order): the mirror starts afresh there.
        """
        position = self.position
        if start < position:
            fingerprints, crcs = fingerprints[position - start :], crcs[position - start :]
        elif start > position:
            self._restart_at(start)
        if not len(self._records) and not len(self._recent) and len(fingerprints) >= _BULK_ADD:  # a reopen: one sort
            self._records = RecordIndex.build(np.asarray(fingerprints, dtype=np.uint64), self._max_distance)
            self._crcs.extend(np.asarray(crcs, dtype=np.uint32))
            self._recent = RecentRecords(self.first_seq + len(self._records))
            return
        self._recent.extend(np.asarray(fingerprints, dtype=np.uint64), np.asarray(crcs, dtype=np.uint32))
        if fold:
            self._fold()

    def _fold(self) -> None:
        """Add the recent records to the tables."""
        if not len(self._recent):
            return
        recent, self._recent = self._recent, RecentRecords(self.position)
        fingerprints = recent.fingerprints()
        self._crcs.extend(recent.crcs())
        if len(fingerprints) < _BULK_ADD:  # a few: one by one, merged in the background
            for fingerprint in fingerprints.tolist():
                self._records.add_record(fingerprint)
        elif not len(self._records):
            self._records = RecordIndex.build(fingerprints.copy(), self._max_distance)
        else:
            self._records.add_records(fingerprints.copy())

    def catch_up(self, read: Callable[[int, int, bytes], list[Any]], fold: bool = True) -> None:
        """Mirror the rest of the log: ``read(position, tombstones seen, last fingerprint)``
        returns the records in the log, the first one it returns, their fingerprints and
        key CRCs, and the new tombstones (:meth:`LogSession.sync`), a slice at a time;
        into the tables unless not *fold* (see :meth:`extend`)."""
        start = position = self.position
        last = self._last_fingerprint()
        pieces: list[npt.NDArray[np.uint64]] = []
        crc_pieces: list[npt.NDArray[np.uint32]] = []
        while True:
            records, first, fingerprints, key_crcs, tombstones = read(
                position, self.tombstones_seen, last + self._last_tombstone)
            self.add_tombstones(self.tombstones_seen, unpack_fingerprints(tombstones))
            if int(first) != position:  # expired chunks skipped
                start, pieces, crc_pieces = int(first), [], []
            pieces.append(unpack_fingerprints(fingerprints))
            crc_pieces.append(unpack_crcs(key_crcs))
            position = int(first) + len(pieces[-1])
            if len(pieces[-1]):
                last = pack(int(pieces[-1][-1]))
            if position >= int(records):
                break
        if start != self.position or position != start:  # one bulk extend (a reopen)
            self.extend(start, np.concatenate(pieces), np.concatenate(crc_pieces), fold)

    def apply_check(
        self, position: int, tombstones: int, fingerprint: int, crc: int, reply: list[Any]
    ) -> tuple[list[Match], int]:
        """Mirror what the reply of a check script called at *position* brings (the log's
        tail, the page's own record if stored, new tombstones); return its matches and how
        many earlier records of the key it replaced."""
        records = unpack_fingerprints(reply[2]).tolist() if reply[2] else []
        crcs = unpack_crcs(reply[3]).tolist() if reply[3] else []
        if reply_text(reply[0]) == "stored":
            records, crcs = [*records, fingerprint], [*crcs, crc]
        self.extend(position, records, crcs)
        if reply[4]:
            self.add_tombstones(tombstones, unpack_fingerprints(reply[4]))
        found = list(zip(reply[6::4], reply[7::4], reply[8::4], reply[9::4]))
        return (self.matches(fingerprint, found) if found else []), int(reply[5])

    def forget_expired(self, read: Callable[[int, int, bytes, int], list[Any]]) -> int:
        """Forget the records of expired chunks (see :meth:`forget_before`), as the sync
        script, ``read(first record, tombstones seen, the last of them, 0 records)``,
        finds them: it answers with the first record whose chunk is left (chunks expire in order)."""
        _, first, _, _, tombstones = read(self.first_seq, self.tombstones_seen, self._last_tombstone, 0)
        self.add_tombstones(self.tombstones_seen, unpack_fingerprints(tombstones))
        return self.forget_before(int(first))

    def forget_before(self, seq: int) -> int:
        """Forget the records before *seq* (their chunks expired); return how many went.

        The rest are indexed afresh: one sort, as when the log is first read.
        """
        seq = min(seq, self.position)
        if seq <= self.first_seq:
            return 0
        self._fold()
        forgotten = seq - self.first_seq
        kept = self._records.fingerprints_from(forgotten)
        crcs = self._crcs.without_rows_before(forgotten)
        self.generation += 1  # rows moved: a reply to a call made before names stale ones
        self._restart_at(seq)
        self.removed = {removed for removed in self.removed if removed >= seq}
        if len(kept):
            self._records = RecordIndex.build(kept, self._max_distance)
            self._crcs = crcs
            self._recent = RecentRecords(seq + len(kept))
        return forgotten

    def add_tombstones(self, first: int, seqs: npt.NDArray[np.uint64]) -> None:
        """Apply tombstones ``first, first + 1, ...`` of the log (those not seen yet)."""
        new = seqs[max(0, self.tombstones_seen - first) :]
        self.removed.update(new.tolist())
        self.tombstones_seen += len(new)
        if len(new):
            self._last_tombstone = pack(int(new[-1]))

    def candidates(self, fingerprint: int, wildcard: int) -> dict[int, int]:
        """``{seq: full distance}`` of the mirrored, not removed, records that match."""
        first, removed = self.first_seq, self.removed
        found = {first + row: d for row, d in self._records.rows_within(fingerprint, wildcard).items()}
        found.update(self._recent.within(fingerprint, wildcard, self._max_distance))
        return {seq: d for seq, d in found.items() if seq not in removed}

    def fingerprint_of(self, seq: int) -> int:
        """The fingerprint of mirrored record *seq*."""
        if seq >= self._recent.first:
            return int(self._recent.fingerprints()[seq - self._recent.first])
        return self._records.fingerprint_at(seq - self.first_seq)

    def key_records(self, crc: int) -> list[int]:
        """The mirrored, not removed, records whose key has this CRC (the check script
        compares their keys)."""
        first, removed = self.first_seq, self.removed
        seqs = [first + row for row in self._crcs.rows_with(crc)] + self._recent.with_crc(crc)
        return [seq for seq in seqs if seq not in removed]

    def matches(self, fingerprint: int, found: list[tuple[int, bytes, int, int]]) -> list[Match]:
        """Matches of *fingerprint* from ``(seq, key, a, b)`` of mirrored records (the
        check script's: :func:`reply_similarity`), nearest first; of equally near ones
        with the same key, the oldest record first (as brute force lists them)."""
        matches = []
        for seq, key, a, b in sorted(found, key=lambda record: int(record[0])):
            stored = self.fingerprint_of(int(seq))
            similarity = reply_similarity(int(a), int(b))
            matches.append(Match(decode_stored_key(key), stored, (stored ^ fingerprint).bit_count(), similarity))
        return sorted(matches, key=lambda m: (m.distance, m.key, m.fingerprint))

    def describe(self) -> dict[str, Any]:
        """The log's records and tombstones, and the local index: design, bytes per record."""
        self._fold()
        described = self._records.describe()
        described.pop("backend")
        described["records"] = described.pop("size")
        if len(self._records):
            described["key_crc_bytes_per_record"] = round(self._crcs.nbytes / len(self._records), 1)
        return {"log_records": self.position, "removed_records": self.tombstones_seen,
                "design": described.pop("design"), "mirror": described}

    def bucket_stats(self) -> dict[str, Any]:
        self._fold()
        return self._records.bucket_stats()

    def _restart_at(self, seq: int) -> None:
        self.first_seq = seq
        self._records = RecordIndex(self._max_distance, expected_size=self._expected_size)
        self._crcs = CrcTable()
        self._recent = RecentRecords(seq)


def reply_similarity(a: int, b: int) -> float | None:
    """The similarity of a match as the check script gives it: *a* of *b* shingles in
    common (two short pages, compared exactly), or for *b* 0, *a* bits of the sketches
    differing (-1: not compared, ``None``). The same floats as
    :meth:`~scrapy_simhash.core.sketch.Confirmation.similarity`."""
    if b:
        return exact_similarity(a, b)
    return None if a < 0 else estimated_similarity(a)
