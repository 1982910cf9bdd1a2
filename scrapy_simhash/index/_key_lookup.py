"""Finding an index's records by key: the older versions of a page fetched again.

Each record's key is looked up through a 32-bit CRC of its stored bytes (the same in
every process, unlike ``hash()``), in a :class:`~._crc_table.CrcTable` of the rows by CRC.
A CRC only narrows the search: the keys of the rows it names are then compared
(:class:`KeyLookup` here; the check script for a Redis worker's mirror). The CRCs
themselves: :mod:`._key_crcs`.
"""

from __future__ import annotations

from ._crc_table import CrcTable, KeyArrays
from ._key_crcs import crcs_of_keys, key_crc
from ._storage import KeyStore, encode_key

class KeyLookup:
    """The rows of a :class:`KeyStore` (which only grows) that hold a key."""

    def __init__(self, table: CrcTable | None = None) -> None:
        self._table = table if table is not None else CrcTable()

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

    def rows_of(self, key: str, keys: KeyStore) -> list[int]:
        """The rows of *keys* that hold *key*, oldest first."""
        self.catch_up(keys)
        encoded = encode_key(key)
        return [row for row in self._table.rows_with(key_crc(encoded)) if keys.encoded(row) == encoded]

    @property
    def nbytes(self) -> int:
        return self._table.nbytes
