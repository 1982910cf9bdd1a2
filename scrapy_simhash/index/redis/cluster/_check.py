"""One check-and-record in the cluster (the protocol argued in :mod:`.`): put, stamp,
probe, wait for the earlier records still undecided, then keep or drop.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..._key_crcs import key_crc
from ..._tables import TableDesign
from ...base import Match
from .._layout import encoded_key
from ._layout import CHOOSING, KEPT, STAMPED, entry, pack_header
from ._lua import PUT, SET_STATE, STAMPS
from ._records import Candidate, RecordReader
from ._store import Command, script

#: Seconds a record may stay undecided (by its home node's clock): a crawler that
#: stopped mid-check leaves a record that others stop waiting for after this, and that
#: can no longer be kept. Far above a check's few milliseconds and the 5 s socket timeout.
LEASE = 15
# Waiting for an earlier record to be decided: the first pause, doubling up to the last.
_FIRST_WAIT, _LAST_WAIT = 0.001, 0.05


Confirm = Callable[[bytes | None, bytes | None], tuple[bool, float | None]]


class Outcome(NamedTuple):
    matches: list[Match]
    replaced: int
    stored: bool


class Page(NamedTuple):
    """What a check is asked about, and where its record goes."""

    fingerprint: int
    key: str
    wildcard: int
    sketch: bytes | None
    stored_key: bytes
    crc: int
    buckets: tuple[int, ...]


class CheckRun:
    """The protocol's steps for one index (see :mod:`.`)."""

    def __init__(self, reader: RecordReader, max_distance: int, confirm: Confirm) -> None:
        """*confirm*: :meth:`~...base.SimhashIndex.confirm` (whether a query's and a
        record's sketches confirm a match, and the pages' similarity)."""
        self.reader, self.store = reader, reader.store
        self.max_distance, self.confirm = max_distance, confirm

    @staticmethod
    def page_of(design: TableDesign, fingerprint: int, key: str, wildcard: int, sketch: bytes | None) -> Page:
        stored_key = encoded_key(key)
        return Page(fingerprint, key, wildcard, sketch, stored_key, key_crc(stored_key),
                    design.bucket_keys(fingerprint))

    def query(self, page: Page) -> list[Match]:
        """The kept records that match, nearest first (no record put)."""
        replies = self.store.run(self.reader.probe_commands(page.fingerprint, page.wildcard))
        return self.settle(page, self._candidates(page, replies, b""), None)

    def put(self, page: Page) -> bytes:
        """Put the page's record, undecided; its id."""
        rid = os.urandom(8)
        self.store.run(self._put_commands(page, rid, CHOOSING, 0))
        return rid

    def put_many(self, pages: Sequence[Page], state: bytes, first_stamp: int) -> None:
        """Put records in *state*, stamped from *first_stamp* on, in one pipeline."""
        commands = []
        for n, page in enumerate(pages):
            commands += self._put_commands(page, os.urandom(8), state, first_stamp + n)
        self.store.run(commands)

    def _put_commands(self, page: Page, rid: bytes, state: bytes, stamp: int) -> list[Command]:
        header = pack_header(state, stamp, page.fingerprint, page.sketch)
        home = self.store.names.home(page.buckets[0])
        put = script(PUT, home, entry(page.fingerprint, rid), rid, header, page.stored_key)
        return [put, *self.store.append_commands(range(len(page.buckets)), page.buckets, page.fingerprint, rid,
                                                 page.crc)]

    def stamps(self, count: int) -> int:
        """The first of *count* new stamps (:data:`._lua.STAMPS`)."""
        return int(self.store.one(script(STAMPS, [self.store.names.clock], count)))

    def stamp_and_probe(self, page: Page, rid: bytes, stamp: int) -> list[Match] | None:
        """Stamp the record, then the matches stamped before it; ``None`` when its lease ran out."""
        home_headers = self.store.names.home(page.buckets[0])[1]
        replies = self.store.run([
            script(SET_STATE, [home_headers], rid, STAMPED, stamp.to_bytes(8, "big"), LEASE, CHOOSING),
            *self.reader.probe_commands(page.fingerprint, page.wildcard)])
        if replies[0] != 1:
            return None
        return self.settle(page, self._candidates(page, replies[1:], rid), stamp)

    def keep(self, page: Page, rid: bytes) -> bool:
        """Decide the record kept; ``False`` when its lease ran out first (then it is dropped)."""
        home_headers = self.store.names.home(page.buckets[0])[1]
        if self.store.one(script(SET_STATE, [home_headers], rid, KEPT, b"", LEASE, STAMPED)) == 1:
            return True
        self.drop(page, rid)
        return False

    def drop(self, page: Page, rid: bytes) -> None:
        """Remove record *rid* of *page* everywhere (an undecided one: its check dropped it)."""
        self.store.run(self.store.drop_commands(range(len(page.buckets)), page.buckets, rid, page.crc))

    def settle(self, page: Page, candidates: list[Candidate], stamp: int | None) -> list[Match]:
        """The confirmed matches among *candidates* kept before *stamp* (any, if ``None``),
        once every earlier record among them still undecided is decided."""
        matches, pause = [], _FIRST_WAIT
        while candidates:
            waiting = []
            for record in self.reader.read(candidates):
                header = record.header
                if header is None:
                    continue  # gone (dropped, removed)
                confirmed, similarity = self.confirm(page.sketch, header.sketch)
                if not confirmed:
                    continue  # the sketches (or shingles) say it is another page
                if header.state == KEPT:
                    if stamp is None or header.stamp < stamp:
                        candidate = record.candidate
                        matches.append(Match(record.key, candidate.fingerprint, candidate.distance, similarity))
                elif stamp is not None and record.age < LEASE and not (header.state == STAMPED and header.stamp > stamp):
                    waiting.append(record.candidate)  # earlier (or not stamped yet), undecided
            candidates = waiting
            if waiting:
                time.sleep(pause)
                pause = min(2 * pause, _LAST_WAIT)
        return sorted(matches, key=Match.order)

    def _candidates(self, page: Page, replies: Sequence[bytes | None], rid: bytes) -> list[Candidate]:
        found = self.reader.candidates(replies, page.fingerprint, page.wildcard, self.max_distance)
        return [candidate for candidate in found if candidate.rid != rid]
