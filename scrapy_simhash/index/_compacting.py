"""The in-memory index's tombstones, and when its compaction (:mod:`._dropping`) runs.

A compaction is due once the removed rows outnumber both the write buffer's bound and a
quarter of the rows; it starts at a removal, once no merge of the tables or of the key
lookup is under way (a removal runs a step of one that is, so that removals alone get
there too; no merge of the tables starts meanwhile), and runs a step per insert and per
removal, when the call has its turn (:func:`._pages.take_turn`: a crawl's check of a changed
page is a removal and an insert, one turn for both).
At 10M rows (a quarter removed) a compaction is 5,292 steps, 4.6 s in all (at 100M ~10
times more), fewer than the inserts that fill the write buffer (131,072), which waits for
it to end to be merged.
"""

from __future__ import annotations

from collections.abc import Iterator

from ._dropping import Compaction, Rows
from ._key_lookup import KeyLookup
from ._merge import BufferedTables
from ._pages import take_turn
from ._release import release_step
from ._sketches import SketchStore
from ._growable import GrowableArray
from ._storage import KeyStore
from ._tombstones import Tombstones


class CompactingRows:
    """The rows of a :class:`~.memory.MemoryIndex`, its tombstones and their compaction."""

    _keys: KeyStore
    _sketches: SketchStore
    _hints: GrowableArray
    _tables: BufferedTables
    _key_lookup: KeyLookup | None
    #: Rows removed (since the compaction under way began, if any: it drops the earlier ones).
    _removed: Tombstones
    _compaction: Compaction | None
    _releasing: Iterator[None] | None  # the last compaction's old columns, freed in steps

    def _buffer_bound(self) -> int:
        raise NotImplementedError

    def _tombstones(self) -> Iterator[Tombstones]:
        """The sets of removed rows (those a compaction under way drops, and the others)."""
        yield self._removed
        if self._compaction is not None:
            yield self._compaction.dropped

    def _removed_count(self) -> int:
        return sum(map(len, self._tombstones()))

    def _is_removed(self, row: int) -> bool:
        return any(row in removed for removed in self._tombstones())

    def _live(self, found: dict[int, int]) -> dict[int, int]:
        """*found* (``{row: fingerprint}``) without the removed rows."""
        for removed in self._tombstones():
            if removed:
                removed.drop_from(found)
        return found

    def _upkeep(self, removal: bool) -> None:
        """After an insert or a (non-empty) removal, if the call has its turn
        (:func:`._pages.take_turn`): a step of the compaction under way, or of the release
        of the last one's old columns, or of what a due one waits for, or its start; and a
        slice of the memory of arrays dropped before (:func:`._release.release_step`)."""
        release_step()
        if self._compaction is not None:
            if take_turn() and self._compaction.step():
                self._end_compaction()
        elif self._releasing is not None:
            if take_turn() and next(self._releasing, False) is False:  # (its steps yield None)
                self._releasing = None
        elif removal and self._compaction_due() and take_turn():
            self._start_compaction()

    def _compaction_due(self) -> bool:
        return len(self._removed) > max(self._buffer_bound(), len(self._hints) // 4)

    def _merge_may_start(self) -> bool:
        """Whether a full write buffer may be merged now: not during a compaction, nor while
        one waits for the merge under way to end (it would wait for the next one too)."""
        return self._compaction is None and not self._compaction_due()

    def _start_compaction(self) -> None:
        """Start the compaction due, or run a step of the merge it waits for."""
        if self._tables.merging is not None:
            self._tables.step()
            return
        if self._key_lookup is not None:
            self._key_lookup.catch_up(self._keys)  # (in a crawl, every row but this call's is in)
            if self._key_lookup.table.merging:
                self._key_lookup.table.merge_step()
                return
        self._compaction = Compaction(self._rows(), self._tables, self._removed)
        self._removed = Tombstones(listed=True)  # (renumbered at its end)

    def _end_compaction(self) -> None:
        assert self._compaction is not None
        rows, self._removed, self._releasing = self._compaction.apply(self._rows(), self._tables, self._removed)
        self._keys, self._sketches, self._hints, self._key_lookup = rows.keys, rows.sketches, rows.hints, rows.lookup
        self._compaction = None

    def _finish_compaction(self) -> None:
        """Run the compaction under way, if any, to its end at once."""
        if self._compaction is not None:
            self._compaction.finish()
            self._end_compaction()

    def _compact_now(self) -> None:
        """Drop every removed row now (a disk store's close): merges, then a compaction, at once."""
        self._finish_compaction()
        if self._removed:
            self._tables.finish()
            if self._key_lookup is not None:
                self._key_lookup.settled_arrays(self._keys)  # (every row in, merged now)
            self._start_compaction()
            self._finish_compaction()

    def _rows(self) -> Rows:
        return Rows(self._keys, self._sketches, self._hints, self._key_lookup)
