"""The in-memory permutation index (Manku, Jain & Das Sarma, WWW 2007, section 3).

Layout, with no Python object per fingerprint:

* an entry's *row id* is its position in the keys and sketches, in the order added;
* keys: one UTF-8 buffer plus end offsets (:class:`~._storage.KeyStore`);
* sketches: 32 bytes a row, and a short page's shingles (:class:`~._sketches.SketchStore`),
  read only for the rows within ``max_distance`` of a query, to confirm them;
* per table of the :class:`~._tables.TableDesign`, in bucket order, with a bucket
  directory (:class:`~._buckets.SortedBuckets`): a 32-bit slice of each fingerprint (4
  bytes a row), and in table 0 the rest of it and the row ids (6 bytes from 16-bit buckets
  on), so that a probe reads its buckets in order (:mod:`._slices`);
* per row, a 1-byte hint of where table 0 holds it (its fingerprint by row id);
* a small write buffer of recent rows (:class:`~._write_buffer.WriteBuffer`), merged
  into the sorted arrays once it holds ``max(4096, min(n / 64, 131072))`` rows, a step
  per insert (:mod:`._merge`: no call does the O(n) merge at once);
* removed rows as a set of tombstones, dropped for good when they outnumber both the
  buffer bound and 1/4 of the rows, by a compaction run a step per insert and removal
  (:mod:`._compacting`, :mod:`._dropping`: no call does it at once either).

A probe reads the rows of its bucket in every table and keeps those within
``max_distance``: exact (see :mod:`._tables` and :mod:`._slices`). It runs in one C pass
(:mod:`._scan`), or with NumPy where that was not built. Not thread-safe: call it from one
thread (the Scrapy glue does).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.fingerprint import check_fingerprint
from ..core.sketch import check_sketch
from ._buckets import SortedBuckets, bucket_stats, hint_of, probe_kernel, row_hints
from ._compacting import CompactingRows
from ._design_choice import design_for_size, starting_design
from ._dropping import Compaction
from ._key_lookup import KeyArrays, KeyLookup
from ._merge import BufferedTables
from ._pages import one_call, take_turn
from ._release import release_all
from ._sketches import SketchStore
from ._growable import GrowableArray
from ._storage import KeyStore, encode_key, entry_columns, fingerprint_array
from ._tables import TableDesign
from ._tombstones import Tombstones
from .base import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_SIMILARITY, Match, SimhashIndex, Verdict

_MIN_BUFFER = 4096
_MAX_BUFFER = 1 << 17
_ITEMS_CHUNK = 65536


class MemoryIndex(CompactingRows, SimhashIndex):
    """Exact near-duplicate search in memory; see the module doc for the layout.

    *design* fixes the tables (see :func:`~._tables.make_design`); by default
    :func:`~._design_choice.choose_design` picks the tables for *expected_size*, and the
    buckets start narrow (:func:`~._design_choice.starting_design`) and widen as the
    index grows.
    """

    backend_name = "memory"
    _tables: BufferedTables

    def __init__(
        self,
        max_distance: int = DEFAULT_MAX_DISTANCE,
        expected_size: int = 1_000_000,
        design: TableDesign | None = None,
        *,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
    ) -> None:
        super().__init__(max_distance, min_similarity=min_similarity)
        if design is not None and design.max_distance != max_distance:
            raise ValueError(
                f"design is for distance {design.max_distance}, not max_distance={max_distance}"
            )
        self._auto_design = design is None
        self.design = design or starting_design(max_distance, expected_size)
        self._hints = GrowableArray(np.uint8)  # one a row: see SortedBuckets.fingerprint_of
        self._keys = KeyStore()
        self._sketches = SketchStore()
        self._removed = Tombstones()
        self._compaction: Compaction | None = None
        self._releasing: Iterator[None] | None = None
        self._key_lookup: KeyLookup | None = None  # built by the first search by key (or prepare_key_lookups)
        #: Rows kept in the write buffer before a merge (None: the default bound).
        self.buffer_limit: int | None = None
        self._reset_tables(np.empty(0, dtype=np.uint64))

    @classmethod
    def from_arrays(
        cls,
        fingerprints: Iterable[int] | npt.NDArray[Any],
        keys: Sequence[str] | KeyStore,
        max_distance: int = DEFAULT_MAX_DISTANCE,
        design: TableDesign | None = None,
        *,
        sketches: SketchStore | None = None,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        tables: SortedBuckets | None = None,
        key_lookup: KeyArrays | None = None,
    ) -> MemoryIndex:
        """An index over these entries built in bulk (sorts, no per-entry Python).

        *tables*: the sorted tables of the first rows, built before (a disk store's
        snapshot, checked by :func:`._snapshot.read_snapshot`); the rows after them are merged
        in. *key_lookup*: likewise, the key lookup of the first rows.
        """
        fps, store = entry_columns(fingerprints, keys)
        if sketches is not None and len(sketches) != len(fps):
            raise ValueError(f"{len(fps)} fingerprints but {len(sketches)} sketches")
        index = cls(max_distance, expected_size=len(fps), design=design, min_similarity=min_similarity)
        if index._auto_design:  # buckets for the entries it holds, not an empty index's
            index.design = design_for_size(index.design, len(fps))
        index._keys = store
        index._sketches = sketches if sketches is not None else SketchStore.empty(len(fps))
        index._reset_tables(fps, tables)
        index._key_lookup = KeyLookup.from_arrays(key_lookup) if key_lookup is not None else None
        return index

    def settled_tables(self) -> SortedBuckets:
        """The sorted tables with every row merged in and the removed ones dropped (renumbering
        the rows as a reopened disk store will): what a disk store's snapshot holds."""
        self._compact_now()
        self._tables.merge_now(np.empty(0, dtype=np.uint64), self.design)
        return self._tables.sorted

    # -- the interface --------------------------------------------------------

    def add_if_new(
        self, fingerprint: int, key: str, wildcard: int = 0, sketch: bytes | None = None
    ) -> Match | None:
        fingerprint, wildcard = check_fingerprint(fingerprint), self.check_wildcard(wildcard)
        sketch = check_sketch(sketch)
        matches = self._matches(fingerprint, self._probe(fingerprint, wildcard), sketch)
        if matches:
            return matches[0]
        self._append(fingerprint, key, sketch)
        return None

    def query(self, fingerprint: int, wildcard: int = 0, sketch: bytes | None = None) -> list[Match]:
        fingerprint, wildcard = check_fingerprint(fingerprint), self.check_wildcard(wildcard)
        return self._matches(fingerprint, self._probe(fingerprint, wildcard), check_sketch(sketch))

    def add(self, fingerprint: int, key: str, sketch: bytes | None = None) -> None:
        fingerprint, sketch = check_fingerprint(fingerprint), check_sketch(sketch)
        self._append(fingerprint, key, sketch)

    def replace_if_new(self, fingerprint: int, key: str, wildcard: int = 0, sketch: bytes | None = None) -> Verdict:
        with one_call():  # (a removal and an insert: one turn of upkeep for both)
            return super().replace_if_new(fingerprint, key, wildcard, sketch)

    def _add_unmatched(self, fingerprint: int, key: str, wildcard: int, sketch: bytes | None) -> Match | None:
        self.add(fingerprint, key, sketch)  # one writer: nothing can have come meanwhile
        return None

    def add_many(self, items: Iterable[tuple[int, str]]) -> None:
        self.add_entries((fingerprint, key, None) for fingerprint, key in items)

    def add_entries(self, entries: Iterable[tuple[int, str, bytes | None]]) -> None:
        rows = list(entries)
        if len(rows) < _MIN_BUFFER:
            checked = [_checked_entry(*row) for row in rows]  # all before any is stored, as in bulk
            for fingerprint, key, sketch in checked:
                self._append(fingerprint, key, sketch)
            return
        fps = fingerprint_array([fingerprint for fingerprint, _, _ in rows])
        new_keys = KeyStore.from_keys(key for _, key, _ in rows)  # validates before storing
        self.extend_rows(fps, new_keys, SketchStore.from_sketches(sketch for _, _, sketch in rows))

    def extend_rows(self, fingerprints: npt.NDArray[np.uint64], keys: KeyStore, sketches: SketchStore) -> None:
        """Append rows in bulk from columns already checked (one merge into the tables)."""
        self._finish_compaction()
        self._keys.extend_from(keys)
        self._sketches.extend_from(sketches)
        self._hints.extend(row_hints(self.design, fingerprints))
        self.design = self._design_for(len(self._hints))
        self._tables.merge_now(fingerprints, self.design)

    def query_many(self, fingerprints: Sequence[int]) -> list[list[Match]]:
        return [self._matches(query, self._probe(query)) for query in fingerprint_array(fingerprints).tolist()]

    def remove(self, fingerprint: int, key: str | None = None) -> int:
        fingerprint = check_fingerprint(fingerprint)
        found = self._probe(fingerprint)
        return self._remove_rows([r for r, f in found.items() if f == fingerprint and key in (None, self._keys[r])])

    def remove_key(self, key: str) -> int:
        return self._remove_rows(self._rows_of_key(key))

    def fingerprints_of(self, key: str) -> list[int]:
        rows = self._rows_of_key(key)  # (first: it may end a compaction, renumbering the rows)
        hints = self._hints.values
        return [self._tables.fingerprint_of(row, int(hints[row])) for row in rows]

    def settled_key_lookup(self) -> KeyArrays | None:
        """The key lookup's arrays for every row (after :meth:`settled_tables`: no row
        removed), if it was built."""
        return None if self._key_lookup is None else self._key_lookup.settled_arrays(self._keys)

    def prepare_key_lookups(self) -> None:
        self._lookup().catch_up(self._keys)  # every key's CRC, sorted in (2.1 s for 10M keys)

    def _rows_of_key(self, key: str) -> list[int]:
        """The live rows stored under *key*, oldest first."""
        return self._lookup().rows_of(key, self._keys, lambda row: not self._is_removed(row))

    def _lookup(self) -> KeyLookup:
        if self._key_lookup is None:
            self._finish_compaction()  # (it is built over every row at once anyway, renumbered)
            self._key_lookup = KeyLookup()
        return self._key_lookup

    def close(self) -> None:
        release_all()  # (the arrays its upkeep dropped, handed back a slice a call until now)

    def __len__(self) -> int:
        return len(self._hints) - self._removed_count()

    def items(self) -> Iterator[tuple[int, str]]:
        for row, fingerprint in self._live_rows():
            yield fingerprint, self._keys[row]

    def entries(self) -> Iterator[tuple[int, str, bytes | None]]:
        for row, fingerprint in self._live_rows():
            yield fingerprint, self._keys[row], self._sketches[row]

    def _live_rows(self) -> Iterator[tuple[int, int]]:
        """``(row, fingerprint)`` of every live row, in row order."""
        fps = self._tables.row_fingerprints()
        for start in range(0, len(fps), _ITEMS_CHUNK):  # chunks: no list of n ints at once
            chunk = fps[start : start + _ITEMS_CHUNK].tolist()
            for row, fingerprint in enumerate(chunk, start):
                if not self._is_removed(row):
                    yield row, fingerprint

    def describe(self) -> dict[str, Any]:
        described = {
            **super().describe(),
            "design": self.design.describe(),
            "buffered": sum(map(len, self._tables.buffers())),
            "removed_pending": self._removed_count(),
            "compaction": None if self._compaction is None else {
                "steps": self._compaction.steps_taken, "bytes": self._compaction.nbytes},
            "probe": probe_kernel(),
        }
        if len(self):  # per fingerprint means nothing for an empty index
            usage = self.memory_usage()
            for part in ("index", "key", "sketch"):
                described[f"{part}_bytes_per_fingerprint"] = round(usage[f"{part}_bytes"] / len(self), 1)
        return described

    def memory_usage(self) -> dict[str, int]:
        """Allocated bytes of the index structure (the write buffers' arrays included), the
        keys (and their lookup, once built), the sketches, and the new columns of a
        compaction under way."""
        index_bytes = self._tables.sorted.nbytes + self._hints.nbytes + self._tables.buffer_bytes
        index_bytes += sum(removed.nbytes for removed in self._tombstones())
        key_bytes = self._keys.nbytes + (self._key_lookup.nbytes if self._key_lookup is not None else 0)
        compaction_bytes = self._compaction.nbytes if self._compaction is not None else 0
        return {"index_bytes": index_bytes, "key_bytes": key_bytes, "sketch_bytes": self._sketches.nbytes,
                "compaction_bytes": compaction_bytes}

    def bucket_stats(self) -> dict[str, Any]:
        """Bucket sizes of the sorted part: largest, skew, candidates per probe."""
        return bucket_stats(self._tables.sorted)

    # -- internals ------------------------------------------------------------

    def _append(self, fingerprint: int, key: str, sketch: bytes | None) -> None:
        """Store a row, and run this call's turn of upkeep (:func:`._pages.one_call`)."""
        row = len(self._hints)
        with one_call():
            self._keys.append(key)  # first: it validates the key
            self._sketches.append(sketch)
            self._hints.append(hint_of(self.design, self._tables.add(row, fingerprint), fingerprint))
            if self._tables.merging is not None and take_turn():
                self._tables.step()
            if len(self._tables.buffer) >= self._buffer_bound() and self._merge_may_start():
                self.design = self._design_for(len(self._hints))  # new rows bucketed as the merged tables
                self._tables.start_merge(self.design)
            self._upkeep(removal=False)

    def _remove_rows(self, rows: list[int]) -> int:
        if rows:
            self._removed.add(rows)
            with one_call():
                self._upkeep(removal=True)
        return len(rows)

    def _buffer_bound(self) -> int:
        if self.buffer_limit is not None:
            return self.buffer_limit
        return max(_MIN_BUFFER, min(len(self._hints) // 64, _MAX_BUFFER))

    def _probe(self, fingerprint: int, wildcard: int = 0) -> dict[int, int]:
        """``{row: fingerprint}`` of every live row within ``max_distance`` off *wildcard*."""
        found = self._tables.matches(fingerprint, self.max_distance, wildcard)
        return self._live(found) if self._removed or self._compaction is not None else found

    def _matches(self, query: int, found: dict[int, int], sketch: bytes | None = None) -> list[Match]:
        """The matches of *found* rows (``{row: fingerprint}``), those whose sketch does not
        confirm left out."""
        if not found:
            return []
        if sketch is None:
            matches = [Match(self._keys[r], f, (f ^ query).bit_count()) for r, f in found.items()]
        else:
            rows = np.fromiter(found, dtype=np.intp, count=len(found))
            matches = []
            for at, similarity in self._sketches.confirm(rows, sketch, self.confirmation):
                row = int(rows[at])
                matches.append(Match(self._keys[row], found[row], (found[row] ^ query).bit_count(), similarity))
        return sorted(matches, key=Match.order)

    def _design_for(self, size: int) -> TableDesign:
        """More buckets as the index grows (once per doubling), unless the design was given."""
        return design_for_size(self.design, size) if self._auto_design else self.design

    def _reset_tables(self, fingerprints: npt.NDArray[np.uint64], built: SortedBuckets | None = None) -> None:
        """Sort every row (these *fingerprints*) into the tables again, or only the rows
        after those *built* already holds; empty the write buffer."""
        self._hints = GrowableArray(np.uint8, row_hints(self.design, fingerprints))
        if built is None:
            self._tables = BufferedTables(SortedBuckets.build(self.design, fingerprints), len(fingerprints))
        else:
            self._tables = BufferedTables(built, len(built))
            self._tables.merge_now(fingerprints[len(built) :], self.design)


def _checked_entry(fingerprint: int, key: str, sketch: bytes | None) -> tuple[int, str, bytes | None]:
    encode_key(key)  # (raises for a key that is not a str)
    return check_fingerprint(fingerprint), key, check_sketch(sketch)
