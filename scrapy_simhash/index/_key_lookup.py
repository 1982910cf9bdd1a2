"""Finding an index's records by key: the older versions of a page fetched again.

Each record's key is looked up through a 32-bit CRC of its stored bytes (the same in
every process, unlike ``hash()``), in a :class:`~._crc_table.CrcTable` of the rows by CRC.
A CRC only narrows the search: the keys of the rows it names are then compared
(:class:`KeyLookup` here; the check script for a Redis worker's mirror). The CRCs
themselves: :mod:`._key_crcs`.
"""

from __future__ import annotations

from collections.abc import Callable

from ._crc_table import CrcTable, KeyArrays
from ._key_crcs import crcs_of_keys, key_crc
from ._storage import KeyStore, encode_key

#: A CRC whose lookup met this many rows has its rows remembered, the removed ones left out
#: (:meth:`KeyLookup.rows_of`)...
REMEMBERED_FROM = 32
#: ...for this many CRCs at most (then forgotten, all at once).
MAX_REMEMBERED = 1 << 16


class KeyLookup:
    """The rows of a :class:`KeyStore` (which only grows) that hold a key."""

    def __init__(self, table: CrcTable | None = None) -> None:
        self._table = table if table is not None else CrcTable()
        #: CRC -> (the rows there were, those of them with the CRC that were live then).
        self._remembered: dict[int, tuple[int, list[int]]] = {}

    @property
    def table(self) -> CrcTable:
        """The rows by key CRC (a compaction renumbers them: :meth:`CrcTable.compaction_steps`)."""
        return self._table

    @classmethod
    def from_arrays(cls, arrays: KeyArrays) -> KeyLookup:
        """The lookup of rows ``0 ... len(crcs) - 1``, from :meth:`settled_arrays`."""
        return cls(CrcTable.of_sorted(arrays))

    def settled_arrays(self, keys: KeyStore) -> KeyArrays:
        """Every row of *keys* sorted in: the arrays :meth:`from_arrays` takes back."""
        self.catch_up(keys)
        return self._table.settled()

    def catch_up(self, keys: KeyStore) -> None:
        """Add the CRCs of the rows of *keys* added since the last call."""
        if self._table.rows < len(keys):
            self._table.extend(crcs_of_keys(keys.buffer, keys.ends, self._table.rows))

    def rows_of(self, key: str, keys: KeyStore, live: Callable[[int], bool] = lambda row: True) -> list[int]:
        """The rows of *keys* that hold *key*, oldest first; only those *live* says are (a
        row stays removed).

        A page fetched again and again (a form posted to one URL, a polled page) leaves a
        removed row a version until a compaction: each lookup went through all of them, and
        the check of a URL's 20,000th version took 24 ms. The live rows of a CRC met with
        :data:`REMEMBERED_FROM` rows or more are remembered, and the next lookup reads only
        those and the rows added since.
        """
        self.catch_up(keys)
        encoded = encode_key(key)
        crc = key_crc(encoded)
        seen, earlier = self._remembered.get(crc, (0, []))
        found = [*earlier, *self._table.rows_with(crc, since=seen)]
        rows = [row for row in found if live(row)]
        if len(found) >= REMEMBERED_FROM or seen:
            if len(self._remembered) >= MAX_REMEMBERED:
                self._remembered.clear()
            self._remembered[crc] = (self._table.rows, rows)
        return [row for row in rows if keys.encoded(row) == encoded]

    @property
    def nbytes(self) -> int:
        return self._table.nbytes
