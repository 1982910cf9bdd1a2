"""Reading records of the cluster index: the candidates a probe finds, and their state.

A probe reads the buckets a query visits (plain ``GET``\\ s: 16 bytes an entry) and keeps
the entries within k of the query off its wildcard bits; their headers and keys are then
read from their homes (:data:`._lua.RESOLVE`, one call per home, with the home node's
clock to tell a dead record by its lease).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from ....core.fingerprint import FINGERPRINT_BITS
from ..._tables import TableDesign
from .._keys import decode_stored_key
from ._layout import ENTRY_BYTES, Header, unpack_entries, unpack_header
from ._lua import RESOLVE
from ._store import ClusterStore, Command, script

_ALL_BITS = (1 << FINGERPRINT_BITS) - 1


class Candidate(NamedTuple):
    """An entry within k of a query: its record id, fingerprint and full distance."""

    rid: bytes
    fingerprint: int
    distance: int


class Record(NamedTuple):
    """A candidate's record as its home holds it (``header`` ``None``: gone)."""

    candidate: Candidate
    header: Header | None
    key: str
    age: int


class RecordReader:
    """Probes and record reads for one namespace's table design."""

    def __init__(self, store: ClusterStore, design: TableDesign) -> None:
        self.store, self.design = store, design

    def probe_commands(self, fingerprint: int, wildcard: int) -> list[Command]:
        """``GET`` of every bucket a query visits (each once)."""
        names = self.store.names
        buckets = {(t, b) for t, keys in enumerate(self.design.probe_keys(fingerprint, wildcard)) for b in keys}
        return [("GET", names.bucket(t, b)) for t, b in sorted(buckets)]

    def candidates(self, replies: Iterable[bytes | None], fingerprint: int, wildcard: int,
                   max_distance: int) -> list[Candidate]:
        """The entries of the *replies* (buckets) within *max_distance* of *fingerprint*
        outside *wildcard*, each record once."""
        data = b"".join(reply for reply in replies if reply)
        if len(data) < ENTRY_BYTES:
            return []
        entries = unpack_entries(data)
        differences = entries["fingerprint"].astype(np.uint64) ^ np.uint64(fingerprint)
        counted = np.bitwise_count(differences & np.uint64(~wildcard & _ALL_BITS))
        close = np.flatnonzero(counted <= max_distance)
        distances = np.bitwise_count(differences[close]).tolist()
        found = {}
        for row, distance in zip(close.tolist(), distances):
            rid = bytes(entries["rid"][row]).ljust(8, b"\0")  # (numpy strips trailing zero bytes)
            found[rid] = Candidate(rid, int(entries["fingerprint"][row]), distance)
        return list(found.values())

    def entries_with(self, data: bytes | None, fingerprint: int) -> list[Candidate]:
        """The entries of one bucket (or a key's records) with exactly *fingerprint*, or any
        fingerprint when it is ``None``."""
        if not data:
            return []
        entries = unpack_entries(data)
        found = {}
        for fp, rid in zip(entries["fingerprint"].tolist(), entries["rid"].tolist()):
            if fingerprint is None or fp == fingerprint:
                found[rid.ljust(8, b"\0")] = Candidate(rid.ljust(8, b"\0"), fp, 0)
        return list(found.values())

    def read(self, candidates: Sequence[Candidate]) -> list[Record]:
        """The records of *candidates*, from their homes."""
        by_home: dict[int, list[Candidate]] = defaultdict(list)
        for candidate in candidates:
            by_home[self.design.bucket_keys(candidate.fingerprint)[0]].append(candidate)
        homes = list(by_home)
        commands: list[Command] = [
            script(RESOLVE, self.store.names.home(home)[1:], *(c.rid for c in by_home[home])) for home in homes]
        records = []
        for home, reply in zip(homes, self.store.run(commands)):
            now = int(reply[0])
            for n, candidate in enumerate(by_home[home]):
                header, key = reply[1 + 2 * n], reply[2 + 2 * n]
                if header and key is not None:
                    parsed = unpack_header(header)
                    records.append(Record(candidate, parsed, decode_stored_key(key), now - parsed.put_at))
                else:
                    records.append(Record(candidate, None, "", 0))
        return records
