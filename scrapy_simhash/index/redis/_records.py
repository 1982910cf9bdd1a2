"""The in-memory index of a worker's mirror (:mod:`._mirror`): fingerprints only.

A :class:`~.memory.MemoryIndex` whose rows are log records: every key empty and no
sketch kept (Redis holds the keys and the sketches, and the check script confirms), so
a record costs the worker only its fingerprint and its rows in the tables.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from .._renumbering import Renumbering
from .._sketches import SketchStore
from .._storage import KeyStore
from ..memory import MemoryIndex


class NoSketches(SketchStore):
    """A sketch column that keeps none: only how many rows it stands for."""

    def __init__(self, rows: int = 0) -> None:
        super().__init__()  # an empty array, never grown
        self._rows = rows

    @property
    def nbytes(self) -> int:
        return 0

    def __len__(self) -> int:
        return self._rows

    def append(self, sketch: bytes | None) -> None:
        self._rows += 1

    def extend_from(self, other: SketchStore) -> None:
        self._rows += len(other)

    def __getitem__(self, row: int) -> bytes | None:
        return None

    def distances(self, rows: npt.NDArray[np.intp], sketch: bytes) -> npt.NDArray[np.int64]:
        return np.full(len(rows), -1, dtype=np.int64)  # as rows stored without a sketch

    def rows_from(self, first: int) -> NoSketches:
        return NoSketches(self._rows - first)

    def compaction_steps(self, renumbering: Renumbering, step: int) -> Generator[None, None, NoSketches]:
        yield from ()  # (nothing to copy)
        return NoSketches(renumbering.kept)


class RecordIndex(MemoryIndex):
    """A :class:`MemoryIndex` whose rows are log records, every key empty, no sketches."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sketches = NoSketches()

    @classmethod
    def build(cls, fingerprints: npt.NDArray[np.uint64], max_distance: int) -> RecordIndex:
        """An index of these records built in bulk (one sort)."""
        count = len(fingerprints)
        built = cls.from_arrays(fingerprints, _empty_keys(count), max_distance, sketches=NoSketches(count))
        return cast(RecordIndex, built)  # from_arrays builds a cls

    def rows_within(self, fingerprint: int, wildcard: int) -> dict[int, int]:
        """``{row: full distance}`` of the rows within ``max_distance`` off *wildcard*."""
        return {row: (stored ^ fingerprint).bit_count() for row, stored in self._probe(fingerprint, wildcard).items()}

    def fingerprint_at(self, row: int) -> int:
        return self._tables.fingerprint_of(row, int(self._hints.values[row]))

    def fingerprints_from(self, row: int) -> npt.NDArray[np.uint64]:
        """The fingerprints of rows ``row ...`` (a copy)."""
        return self._tables.row_fingerprints()[row:]

    def add_record(self, fingerprint: int) -> None:
        """Append a record: :meth:`add` without checking the fingerprint (the log's are valid)."""
        self._append(fingerprint, "", None)

    def add_records(self, fingerprints: npt.NDArray[np.uint64]) -> None:
        """Append many records at once (a catch-up): one merge, nothing done per record
        in Python (as :meth:`add_entries` would: check, encode, sketch each)."""
        self.extend_rows(fingerprints, _empty_keys(len(fingerprints)), NoSketches(len(fingerprints)))


def _empty_keys(count: int) -> KeyStore:
    return KeyStore.from_buffer(b"", np.zeros(count, dtype=np.uint64))
