"""The interface every index backend implements, and the errors they raise.

Error hierarchy::

    SimhashIndexError
     +-- IndexFormatError (also ValueError)   a file of another format/version, foreign or corrupt
     +-- IndexUnavailableError                the backend cannot be reached or written to
                                              (Redis went away, the disk is full)

An index stores ``(fingerprint, key)`` pairs (the key is usually the page URL or an
item id), each with an optional minwise sketch (:mod:`scrapy_simhash.core.sketch`), and
finds every stored fingerprint within Hamming distance ``max_distance`` of a query,
exactly: no false negatives, nothing beyond the bound. When both the query and a stored
entry have a sketch, the entry matches only if the sketches also estimate a Jaccard
similarity of at least ``min_similarity`` (the confirmation step: SimHash finds the
candidates, the sketch confirms them). An entry stored without a sketch is matched on
its fingerprint alone.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, NamedTuple

from ..core.fingerprint import check_fingerprint
from ..core.sketch import Confirmation

if TYPE_CHECKING:
    from typing_extensions import Self


#: Manku, Jain & Das Sarma (WWW 2007, section 4) find k = 3 right for 64-bit
#: fingerprints of web pages: high precision and recall at once.
DEFAULT_MAX_DISTANCE: Final = 3
#: The largest k any index takes. Manku, Jain & Das Sarma (WWW 2007) build tables for
#: k <= 7 on 64 bits; past 8, near-duplicates and unrelated pages overlap (and the
#: tables stop paying off).
MAX_DISTANCE_LIMIT: Final = 8
#: A SimHash match is a near-duplicate when the pages share at least this Jaccard
#: similarity of their shingle sets (README, "Choosing k"): the ground truth's line, exactly
#: for two short pages, else as their sketches estimate it
#: (:class:`~scrapy_simhash.core.sketch.Confirmation`).
DEFAULT_MIN_SIMILARITY: Final = 0.8
#: The longest TTL, in seconds (31.7 years): Redis stores a record's expiry as 32-bit
#: seconds since 1970 (``struct.pack('>I4', NOW + TTL)`` in ``index/redis/_lua.py``), which
#: end in 2106; a billion seconds stays clear of that until 2074.
MAX_TTL: Final = 1_000_000_000


def check_ttl(ttl: float, name: str = "ttl") -> float:
    """*ttl* if it is a number of seconds an entry can live (at least 1, at most :data:`MAX_TTL`),
    else ``ValueError`` (``TypeError`` for no number) naming *name*.

    >>> check_ttl(float("inf"), "SIMHASH_TTL")
    Traceback (most recent call last):
    ...
    ValueError: SIMHASH_TTL must be a number of seconds from 1 to 1000000000, not inf
    """
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(ttl).__name__}")
    if not 1 <= ttl <= MAX_TTL:  # (NaN is neither)
        raise ValueError(f"{name} must be a number of seconds from 1 to {MAX_TTL}, not {ttl!r}")
    return ttl


def signature_difference(stored: str, current: str) -> str:
    """What differs between two :meth:`FingerprintOptions.signature` strings: why a stored
    index refuses fingerprints made otherwise.

    >>> signature_difference("simhash-v3;min_tokens=10;shingle_size=2", "simhash-v4;min_tokens=10;shingle_size=3")
    'algorithm version 3 (stored) != 4 (now), shingle_size 2 (stored) != 3 (now)'
    """
    old, new = signature_fields(stored), signature_fields(current)
    names = sorted(set(old) | set(new), key=lambda name: (name != "algorithm version", name))
    return ", ".join(
        f"{name} {old.get(name, '?')} (stored) != {new.get(name, '?')} (now)"
        for name in names
        if old.get(name) != new.get(name)
    )


def signature_fields(signature: str) -> dict[str, str]:
    """The ``name=value`` fields of a signature, and its ``"algorithm version"``."""
    version, _, rest = signature.partition(";")
    fields = dict(part.partition("=")[::2] for part in rest.split(";") if part)
    fields["algorithm version"] = version.removeprefix("simhash-v")
    return fields


def own_match(matches: Sequence[Match], key: str) -> Match | None:
    """The nearest of *matches* stored under *key*: the page's own record, if it is one."""
    return next((match for match in matches if match.key == key), None)


def is_own_record(match: Match | None, key: str) -> bool:
    """Whether *match* is the checked page's own record (stored under its *key*)."""
    return match is not None and match.key == key


def similarity_note(similarity: float | None) -> str:
    """``", similarity 0.93"`` for a match its sketch confirmed, else nothing."""
    return "" if similarity is None else f", similarity {similarity:.2f}"


class SimhashIndexError(Exception):
    """Base class of the errors raised by index backends."""


class IndexFormatError(SimhashIndexError, ValueError):
    """A stored index is of another format or version, foreign, or corrupt."""


class IndexUnavailableError(SimhashIndexError):
    """The backend cannot be reached or written right now (Redis went away, a full disk)."""


@dataclass(frozen=True, slots=True)
class Match:
    """A stored fingerprint found within the distance bound of a query."""

    key: str
    fingerprint: int
    distance: int
    #: The Jaccard similarity the two sketches estimate, or ``None`` when the query or
    #: the stored entry has no sketch (then the fingerprints alone decided).
    similarity: float | None = None

    def order(self) -> tuple[int, str, int, bool, float]:
        """The order of :meth:`SimhashIndex.query`'s answer: nearest first, then by key,
        fingerprint and similarity (a confirmed match before an unconfirmed one)."""
        return (self.distance, self.key, self.fingerprint, self.similarity is None, -(self.similarity or 0.0))


class Verdict(NamedTuple):
    """What :meth:`SimhashIndex.replace_if_new` found and did."""

    #: The match (the page's own record first), or ``None``: the page was stored.
    match: Match | None
    #: How many earlier records of the key were removed: the page changed since.
    replaced: int = 0

    @classmethod
    def of(cls, matches: Sequence[Match], key: str, replaced: int = 0) -> Verdict:
        """The verdict of a check that found *matches*: the page's own record first
        (:func:`own_match`, unchanged), else the nearest match, else none (stored)."""
        return cls(own_match(matches, key) or (matches[0] if matches else None), replaced)


class SimhashIndex(ABC):
    """A set of ``(fingerprint, key)`` pairs searchable by Hamming distance.

    Implement the abstract methods; the others have working defaults that a backend
    may override to do better (one round trip for a batch, say).
    """

    #: Short name for logs and ``inspect`` ("memory", "disk", "redis", ...).
    backend_name: ClassVar[str] = "custom"

    def __init__(
        self, max_distance: int = DEFAULT_MAX_DISTANCE, *, min_similarity: float = DEFAULT_MIN_SIMILARITY
    ) -> None:
        if isinstance(max_distance, bool) or not isinstance(max_distance, int):
            raise TypeError(f"max_distance must be an int, not {max_distance!r}")
        if not 0 <= max_distance <= MAX_DISTANCE_LIMIT:
            raise ValueError(f"max_distance must be between 0 and {MAX_DISTANCE_LIMIT}, not {max_distance}")
        self.max_distance = max_distance
        self.min_similarity = float(min_similarity)
        #: When two sketches confirm a match (exactly for two short pages, else by estimate).
        self.confirmation = Confirmation(self.min_similarity)
        #: Two sketches (one of a longer page) confirm a match when they differ in at most
        #: this many bits.
        self.max_sketch_distance = self.confirmation.max_distance

    @abstractmethod
    def add_if_new(
        self, fingerprint: int, key: str, wildcard: int = 0, sketch: bytes | None = None
    ) -> Match | None:
        """Check and record in one step (atomically where the backend is shared).

        Return the nearest stored match (see :meth:`query`) and store nothing, or
        return ``None`` after storing ``(fingerprint, key, sketch)``.
        """

    def replace_if_new(
        self, fingerprint: int, key: str, wildcard: int = 0, sketch: bytes | None = None
    ) -> Verdict:
        """:meth:`add_if_new` for a page that may be stored already under *key* (fetched
        again), so that the index keeps one record a key: its latest version.

        A match under *key* itself comes first (:func:`own_match`: the page is unchanged)
        and nothing changes. Otherwise the key's earlier records (an older version of the
        page) are removed, and the nearest match is returned, or the page stored.

        This default runs in steps (memory and disk, with one writer each, use it); Redis does
        it in one atomic script.
        """
        matches = self.query(fingerprint, wildcard, sketch)
        own = own_match(matches, key)
        if own is not None:
            return Verdict(own)
        replaced = self.remove_key(key)  # none of the matches: they are under other keys
        if matches:
            return Verdict(matches[0], replaced)
        return Verdict(self._add_unmatched(fingerprint, key, wildcard, sketch), replaced)

    def _add_unmatched(self, fingerprint: int, key: str, wildcard: int, sketch: bytes | None) -> Match | None:
        """Store a page the query just found no match for (:meth:`replace_if_new`): with
        :meth:`add_if_new`, which checks again, as another writer may have stored one since.
        A backend with one writer stores it at once."""
        return self.add_if_new(fingerprint, key, wildcard, sketch)

    @abstractmethod
    def query(self, fingerprint: int, wildcard: int = 0, sketch: bytes | None = None) -> list[Match]:
        """Every stored match, nearest first.

        A stored fingerprint matches when it differs from *fingerprint* in at most
        ``max_distance`` bits outside the *wildcard* mask: bits of the query that may
        differ freely (its least-confident bits, :attr:`FingerprintResult.wildcard`; none
        at ``max_distance`` 0, so that k = 0 matches exact copies only),
        and, when *sketch* and the stored entry's sketch are both given, they confirm
        it (:meth:`confirm`).
        ``Match.distance`` is the full Hamming distance.
        """

    @abstractmethod
    def add(self, fingerprint: int, key: str, sketch: bytes | None = None) -> None:
        """Store ``(fingerprint, key, sketch)`` unconditionally."""

    @abstractmethod
    def remove(self, fingerprint: int, key: str | None = None) -> int:
        """Remove the entries with this fingerprint (and key, if given); return how many."""

    def remove_key(self, key: str) -> int:
        """Remove every entry stored under *key*; return how many.

        This default scans :meth:`items`; the built-in backends look the key up.
        """
        return sum(self.remove(fingerprint, key) for fingerprint in set(self.fingerprints_of(key)))

    def fingerprints_of(self, key: str) -> list[int]:
        """The fingerprints stored under *key* (this default scans :meth:`items`)."""
        return [fingerprint for fingerprint, stored_key in self.items() if stored_key == key]

    @abstractmethod
    def __len__(self) -> int:
        """Number of stored entries."""

    @abstractmethod
    def items(self) -> Iterator[tuple[int, str]]:
        """Every stored ``(fingerprint, key)`` pair, in no particular order."""

    def entries(self) -> Iterator[tuple[int, str, bytes | None]]:
        """Every stored ``(fingerprint, key, sketch)``, in no particular order."""
        for fingerprint, key in self.items():
            yield fingerprint, key, None

    def add_many(self, items: Iterable[tuple[int, str]]) -> None:
        """Store many pairs unconditionally (bulk load, import).

        The memory and disk indexes check every pair before they store any: a bad one
        (a fingerprint out of range, a key not a ``str``) raises and stores none. Redis
        stores them in batches of 1,000 as they come, so a bad one stores none of its batch, and
        the batches before it are stored. (This default, one :meth:`add` at a time, stores
        those before the bad one.)
        """
        for fingerprint, key in items:
            self.add(fingerprint, key)

    def add_entries(self, entries: Iterable[tuple[int, str, bytes | None]]) -> None:
        """Store many ``(fingerprint, key, sketch)`` unconditionally (import); a bad entry:
        as :meth:`add_many` says."""
        for fingerprint, key, sketch in entries:
            self.add(fingerprint, key, sketch)

    def check_wildcard(self, wildcard: int) -> int:
        """*wildcard* checked; none at ``max_distance`` 0, which matches exact copies only."""
        wildcard = check_fingerprint(wildcard)
        return wildcard if self.max_distance else 0

    def confirm(self, query_sketch: bytes | None, stored_sketch: bytes | None) -> tuple[bool, float | None]:
        """Whether a stored entry within k is a match, and the similarity of the two pages:
        ``(True, None)`` when either has no sketch (the fingerprints alone decide)."""
        if query_sketch is None or stored_sketch is None:
            return True, None
        similarity = self.confirmation.similarity(query_sketch, stored_sketch)
        return similarity is not None, similarity

    def query_many(self, fingerprints: Sequence[int]) -> list[list[Match]]:
        """:meth:`query` for each fingerprint, in order."""
        return [self.query(fingerprint) for fingerprint in fingerprints]

    def nearest(self, fingerprint: int, wildcard: int = 0, sketch: bytes | None = None) -> Match | None:
        """The nearest stored match (see :meth:`query`), or ``None``."""
        matches = self.query(fingerprint, wildcard, sketch)
        return matches[0] if matches else None

    def describe(self) -> dict[str, Any]:
        """What ``inspect`` and the open log line show: backend, size, design, ..."""
        return {"backend": self.backend_name, "size": len(self), "max_distance": self.max_distance,
                "min_similarity": self.min_similarity}

    def flush(self) -> None:
        """Make everything acknowledged so far durable (no-op where it already is)."""

    def prepare_key_lookups(self) -> None:
        """Build now what finding a key's records needs (:meth:`replace_if_new`,
        :meth:`fingerprints_of`), where the first such call would (a no-op where nothing is
        built): a crawl does it when it opens the index, so that no check waits for it."""

    def close(self) -> None:
        """Release files and connections; the index is unusable afterwards."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
