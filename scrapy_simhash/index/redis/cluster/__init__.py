"""The shared index in a Redis Cluster: the permutation tables spread over its nodes.

Each kept page is an entry (fingerprint and record id, 16 bytes) in one bucket of each
table of Manku, Jain & Das Sarma (WWW 2007), each bucket a key with a hash tag of its
own (:mod:`._layout`), and a record (state, stamp, sketch and a short page's shingles,
key) in its table-0 bucket's slot, its *home*. A check reads the buckets its query
visits, as the in-memory index does (one per table, several with wildcard bits), and the
records of the entries within k; no crawler holds a copy of the index, and its memory
and start time do not grow with it. Every read is of what Redis holds now: no match is reported that Redis does not
hold, whatever a node lost in a restart.

Check-and-record across slots. A page's check spans many slots, so it cannot be one
atomic script; instead every check is ordered by a *stamp*, and the outcome is the one
of the checks run one at a time in stamp order:

1. put the page's record, *undecided*, in its buckets (its entries) and its home;
2. take a stamp from the stamp clock (one key: a counter that also follows the clock of
   its node, :data:`._lua.STAMPS`), strictly later than every stamp taken before;
3. write the stamp into the record, and read the buckets the query visits;
4. among the entries within k whose sketch confirms the match (:meth:`SimhashIndex.confirm`:
   exactly for two short pages): a record *kept* with an earlier stamp is a match; an
   undecided record with an earlier stamp, or none yet, is waited for until it is kept
   or dropped; later stamps are ignored;
5. keep the record if nothing matched, else drop it.

Why it is exact. Let a page B's query cover a page A (A within k of B off B's wildcard
bits, the sketches close), with A stamped before B. By pigeonhole some table puts A in a
bucket B's query visits (:mod:`..._tables`). A's entry was put there (step 1) before A took
its stamp, which was before B took its stamp, before B read that bucket (step 3): B sees
A's entry. A's record is then kept (B matches it), dropped (as it would be run alone
before B: B is not compared with it), or undecided: B waits, and A never waits for B
(A waits only for records stamped before A, or not stamped yet, which take their stamp
without waiting). So waits only go to earlier stamps, never in a cycle, and each check
decides as it would in stamp order. Of two racing crawlers with near-duplicates, exactly
one keeps its page: the one that took its stamp first.

A crawler that stops mid-check leaves an undecided record. It is *dead* once its lease
(:data:`._check.LEASE`, by its home node's clock) ran out: no longer waited for, and no
longer possible to keep (step 5 checks the lease in the same script that keeps it).

``replace_if_new``: a match under the page's own key comes first (unchanged); otherwise
the key's earlier kept records (found by the key's CRC, ``P{u.c}``) are removed, then
the page is kept or dropped. Not in one atomic step as with one node: a record of the
key another crawler keeps at the same moment may stay beside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from redis.cluster import RedisCluster

from ....core.fingerprint import check_fingerprint
from ....core.sketch import SKETCH_BYTES, check_sketch
from ..._design_choice import choose_design
from ...base import DEFAULT_MIN_SIMILARITY, IndexUnavailableError, Match, SimhashIndex, SimhashIndexError, Verdict, own_match
from .._client import UnavailableAsIndexError, connect_cluster, safe_url
from .._layout import check_signature, parse_meta
from .._lua_log import ENSURE_META
from ._check import CheckRun, Outcome, Page
from ._layout import KEPT, READ_FORMATS, ClusterNames, design_of, new_cluster_meta
from ._records import Candidate, RecordReader
from ._scan import count_kept, kept_entries
from ._store import ClusterStore

_ATTEMPTS = 5  # of a check whose lease ran out (a crawler paused for seconds)
_ADD_BATCH = 1000


class ClusterIndex(SimhashIndex):
    """The shared index at the URL of any node of a Redis Cluster (see the module doc)."""

    backend_name = "redis-cluster"

    def __init__(self, url: str, max_distance: int = 3, *, expected_size: int = 1_000_000, namespace: str = "",
                 signature: str = "", reset: bool = False, ttl: float | None = None, create: bool = True,
                 client: RedisCluster | None = None, min_similarity: float = DEFAULT_MIN_SIMILARITY) -> None:
        super().__init__(max_distance, min_similarity=min_similarity)
        if ttl is not None:
            raise ValueError("SIMHASH_TTL is not supported with a Redis Cluster index (one node only)")
        self.url, self.namespace = url, namespace
        self._owns_client = client is None
        self._client: Any = client or connect_cluster(url)
        self._unavailable = UnavailableAsIndexError(url)
        self._names = ClusterNames.of(namespace)
        self._store = ClusterStore(self._client, self._names)
        where = f"Redis namespace {self._names.prefix!r} at {safe_url(url)}"
        try:
            with self._unavailable:
                if reset:
                    self._store.delete_namespace()
                elif not create and not self._client.exists(self._names.meta):
                    raise SimhashIndexError(f"no index in namespace {namespace!r} at {safe_url(url)}")
                wanted = new_cluster_meta(choose_design(max_distance, expected_size), signature)
                flat = [part for pair in wanted.items() for part in pair]
                meta = parse_meta(self._store.one(("EVAL", ENSURE_META, 1, self._names.meta, *flat)))
            check_signature(meta, wanted, where)
            self.signature, self.design = meta["signature"], design_of(meta, max_distance, where)
            # An older namespace's crawlers read headers without shingles: none stored there.
            self._shingles = READ_FORMATS[meta["format"]]
        except BaseException:
            self.close()
            raise
        self._store.crc_bits = self.design.prefix_bits
        self._run = CheckRun(RecordReader(self._store, self.design), max_distance, self.confirm)

    ttl = None  # no expiry in a cluster

    def add_if_new(self, fingerprint: int, key: str, wildcard: int = 0, sketch: bytes | None = None) -> Match | None:
        matches = self._check("check", fingerprint, key, wildcard, sketch).matches
        return matches[0] if matches else None

    def replace_if_new(self, fingerprint: int, key: str, wildcard: int = 0, sketch: bytes | None = None) -> Verdict:
        matches, replaced, _ = self._check("replace", fingerprint, key, wildcard, sketch)
        return Verdict.of(matches, key, replaced)

    def query(self, fingerprint: int, wildcard: int = 0, sketch: bytes | None = None) -> list[Match]:
        page = self._page(fingerprint, "", wildcard, sketch)
        with self._unavailable:
            return self._run.query(page)

    def add(self, fingerprint: int, key: str, sketch: bytes | None = None) -> None:
        self.add_entries([(fingerprint, key, sketch)])

    def add_many(self, items: Iterable[tuple[int, str]]) -> None:
        self.add_entries((fingerprint, key, None) for fingerprint, key in items)

    def add_entries(self, entries: Iterable[tuple[int, str, bytes | None]]) -> None:
        rows = iter(entries)
        while batch := [self._page(fp, key, 0, sketch) for fp, key, sketch in islice(rows, _ADD_BATCH)]:
            with self._unavailable:
                first = self._run.stamps(len(batch))
                self._run.put_many(batch, KEPT, first)

    def remove(self, fingerprint: int, key: str | None = None) -> int:
        page = self._page(fingerprint, "" if key is None else key, 0, None)
        with self._unavailable:
            data = self._store.one(("GET", self._names.home(page.buckets[0])[0]))
            found = self._run.reader.entries_with(data, page.fingerprint)
            return self._remove_kept(found, None if key is None else key)

    def remove_key(self, key: str, keep: bytes = b"") -> int:
        with self._unavailable:
            return self._remove_kept(self._key_candidates(key), key, keep)

    def fingerprints_of(self, key: str) -> list[int]:
        with self._unavailable:
            records = self._run.reader.read(self._key_candidates(key))
        return [r.candidate.fingerprint for r in records if r.header and r.header.state == KEPT and r.key == key]

    def __len__(self) -> int:
        with self._unavailable:
            return count_kept(self._store)

    def items(self) -> Iterator[tuple[int, str]]:
        for fingerprint, key, _ in self.entries():
            yield fingerprint, key

    def entries(self) -> Iterator[tuple[int, str, bytes | None]]:
        with self._unavailable:
            yield from kept_entries(self._store)

    def describe(self) -> dict[str, Any]:
        nodes = len(self._client.get_primaries())
        return {**super().describe(), "url": safe_url(self.url), "namespace": self.namespace, "nodes": nodes,
                "signature": self.signature, "design": self.design.describe()}

    def close(self) -> None:
        if self._owns_client and getattr(self, "_client", None) is not None:
            self._client.close()

    # -- internals -------------------------------------------------------------------

    def _page(self, fingerprint: int, key: str, wildcard: int, sketch: bytes | None) -> Page:
        checked = check_sketch(sketch)
        if checked is not None and not self._shingles:
            checked = checked[:SKETCH_BYTES]
        return self._run_page(check_fingerprint(fingerprint), key, self.check_wildcard(wildcard), checked)

    def _run_page(self, fingerprint: int, key: str, wildcard: int, sketch: bytes | None) -> Page:
        if not isinstance(key, str):
            raise TypeError(f"keys are str, not {type(key).__name__}")
        return CheckRun.page_of(self.design, fingerprint, key, wildcard, sketch)

    def _check(self, mode: str, fingerprint: int, key: str, wildcard: int, sketch: bytes | None) -> Outcome:
        page, replaced = self._page(fingerprint, key, wildcard, sketch), 0
        with self._unavailable:
            for _ in range(_ATTEMPTS):
                rid = self._run.put(page)
                matches = self._run.stamp_and_probe(page, rid, self._run.stamps(1))
                if matches is None:  # its lease ran out: a new record, a new stamp
                    self._run.drop(page, rid)
                    continue
                if mode == "replace":
                    if own_match(matches, key) is not None:
                        self._run.drop(page, rid)
                        return Outcome(matches, 0, False)
                    replaced += self.remove_key(key, keep=rid)
                if matches:
                    self._run.drop(page, rid)
                    return Outcome(matches, replaced, False)
                if self._run.keep(page, rid):
                    return Outcome([], replaced, True)
        raise IndexUnavailableError(f"Redis at {safe_url(self.url)}: checks kept outliving their lease, try again")

    def _key_candidates(self, key: str) -> list[Candidate]:
        page = self._run_page(0, key, 0, None)
        data = self._store.one(("GET", self._names.key_records(page.crc, self._store.crc_bits)))
        return self._run.reader.entries_with(data, None)

    def _remove_kept(self, found: Sequence[Candidate], key: str | None, keep: bytes = b"") -> int:
        """Remove the kept records of *found* (under *key*, if given) but *keep*; how many."""
        removed = 0
        for record in self._run.reader.read([c for c in found if c.rid != keep]):
            header = record.header
            if header is not None and header.state == KEPT and (key is None or record.key == key):
                self._run.drop(self._run.page_of(self.design, header.fingerprint, record.key, 0, None),
                               record.candidate.rid)
                removed += 1
        return removed
