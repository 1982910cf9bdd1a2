"""Dropping the in-memory index's removed rows for good, a step at a time.

Removed rows stay in the index as tombstones (a set of row numbers) until they outnumber
a quarter of its rows; then a :class:`Compaction` drops them: every other row is numbered
again from 0, in the same order (:mod:`._renumbering`), in new copies of the index's
columns: the tables (every kept row's fingerprint gathered from table 0 and the write
buffer, then sorted into every table as a widening does, :mod:`._widen`), the hints, the
sketches, the keys (:mod:`._column_steps`) and the key lookup
(:meth:`~._crc_table.CrcTable.compaction_steps`). At 10M rows, done at once, this held a
check for 5.6 s of CPU time.

The index runs a step per insert or removal (:mod:`._compacting`) and answers from its old
columns meanwhile, the tombstones the compaction drops (:attr:`Compaction.dropped`) and
those removed since both filtered out. Rows added meanwhile go into the old columns and a
new write buffer (``rows ...``, :meth:`~._merge.BufferedTables.freeze_for_compaction`);
no merge starts. At the end, :meth:`Compaction.apply` appends those rows to the new
columns, moves the write buffer's and the key lookup's recent rows down by the number
dropped (an offset each), and renumbers the tombstones removed since: work for the rows
added during the compaction only.

Meanwhile both copies are held: the kept rows' columns (at 10M rows, a quarter removed:
1.1 GiB more allocated at the end, 0.84 GiB more RSS at the peak; the one-call compaction
peaked at 1.35 GiB more), plus a byte and a uint32 a row for the renumbering and, while
the tables are rebuilt, 8 bytes a row of fingerprints.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _merge
from ._buckets import SortedBuckets
from ._column_steps import key_steps, kept_values_steps
from ._crc_table import CrcTable
from ._key_lookup import KeyLookup
from ._merge import BufferedTables
from ._pages import PageToucher
from ._release import release_later, release_steps
from ._renumbering import Renumbering
from ._sketches import SketchStore
from ._growable import GrowableArray
from ._storage import KeyStore
from ._tombstones import Tombstones
from ._widen import row_fingerprint_steps, sorted_steps


@dataclass
class Rows:
    """An index's columns by row (its tables aside): what a compaction renumbers."""

    keys: KeyStore
    sketches: SketchStore
    hints: GrowableArray
    lookup: KeyLookup | None


class Compaction:
    """The rows of an index less the *dropped* ones (tombstones no one changes any more),
    renumbered, in new columns built a step at a time (see the module doc)."""

    def __init__(self, rows: Rows, tables: BufferedTables, dropped: Tombstones) -> None:
        """Start: *tables* freeze their write buffer, the key lookup its recent rows (it
        must have every row and no merge under way, as *tables*)."""
        self.dropped = dropped
        self.renumbering = Renumbering(len(rows.hints), len(dropped))
        self.steps_taken = 0
        self._held: dict[str, Any] = {"renumbering": self.renumbering}  # (for nbytes)
        self._tables: SortedBuckets | None = None
        self._result: Rows | None = None
        lookup = rows.lookup.table.compaction_steps(self.renumbering) if rows.lookup is not None else None
        self._steps = self._run(rows, tables.sorted, tables.freeze_for_compaction(), lookup)

    @property
    def nbytes(self) -> int:
        """The bytes of what it has built so far (the parts done, and its working arrays)."""
        return sum(int(part.nbytes) for part in self._held.values())

    def step(self) -> bool:
        """Run a step; whether it was the last (then :meth:`apply`)."""
        self.steps_taken += 1
        try:
            next(self._steps)
        except StopIteration as done:
            self._result = done.value
            return True
        return False

    def finish(self) -> None:
        """Run the remaining steps at once (a bulk load, a disk store's close)."""
        while self._result is None:
            self.step()

    def apply(self, rows: Rows, tables: BufferedTables, removed: Tombstones) -> tuple[Rows, Tombstones, Iterator[None]]:
        """The index's new columns (*rows*' columns now hold the rows added during the
        compaction; *tables* are switched to the new ones in place), its tombstones
        *removed* during the compaction (listed), renumbered, and the steps that free the
        old columns (:mod:`._release`)."""
        new, first, dropped = self._result, self.renumbering.rows, self.renumbering.dropped
        assert new is not None and self._tables is not None, "apply() before the last step"
        new.keys.extend_from(rows.keys.rows_from(first))
        new.sketches.extend_from(rows.sketches.rows_from(first))
        new.hints.extend(rows.hints.values[first:])
        if new.lookup is not None and rows.lookup is not None:
            new.lookup.table.adopt_recent(rows.lookup.table, dropped)
        old: list[object] = [rows.keys, rows.sketches, rows.hints, tables.sorted, self.renumbering]
        if rows.lookup is not None:
            old += [rows.lookup.table, *rows.lookup.table.frozen_dicts()]
        tables.end_compaction(self._tables, dropped)
        self._held.clear()
        return new, Tombstones.of_rows(self.renumbering.new_rows(removed.rows())), release_steps(old)

    def _run(
        self, rows: Rows, old: SortedBuckets, frozen: npt.NDArray[np.uint64],
        lookup_steps: Generator[None, None, CrcTable] | None,
    ) -> Generator[None, None, Rows]:
        """The steps (the tables' and the key lookup's frozen at the start, *frozen* and
        *lookup_steps*: a generator's own code runs at its first step only)."""
        step, renumbering = _merge.STEP_ENTRIES, self.renumbering
        yield from renumbering.steps(self.dropped)
        # (half a merge step's rows: a step of the counting sort took up to 5 ms with 2**16)
        self._tables = self._held["tables"] = yield from self._table_steps(old, frozen, max(1, step // 2))
        hints = self._held["hints"] = yield from kept_values_steps(lambda: rows.hints.values, renumbering, step)
        sketches = self._held["sketches"] = yield from rows.sketches.compaction_steps(renumbering, step)
        keys = self._held["keys"] = yield from key_steps(rows.keys, renumbering, step)
        lookup = KeyLookup((yield from lookup_steps)) if lookup_steps is not None else None
        return Rows(keys, sketches, hints, lookup)

    def _table_steps(
        self, old: SortedBuckets, frozen: npt.NDArray[np.uint64], step: int
    ) -> Generator[None, None, SortedBuckets]:
        """The kept rows in new tables: every row's fingerprint gathered (from table 0, then
        the frozen write buffer's), the kept ones moved down in place, then sorted into
        every table."""
        every = self._held["fingerprints"] = np.empty(self.renumbering.rows, dtype=np.uint64)
        yield from PageToucher(every).steps_until(len(every))
        yield from row_fingerprint_steps(old, every, step)
        every[len(old) :] = frozen
        for old_rows, new_rows, keep in self.renumbering.slices(step):
            every[new_rows] = every[old_rows][keep]  # (the right side a copy: new rows come first)
            yield
        tables = yield from sorted_steps(every[: self.renumbering.kept], old.design, step)
        release_later(self._held.pop("fingerprints"))
        return tables
