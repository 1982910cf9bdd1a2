"""The interface every index backend implements, and the errors they raise.

Error hierarchy::

    SimhashIndexError
     +-- IndexFormatError (also ValueError)   a file of another format/version, foreign or corrupt
     +-- IndexUnavailableError                the backend cannot be reached or written to
                                              (Redis went away, the disk is full)

An index stores ``(fingerprint, key)`` pairs (the key is usually the page URL or an
item id) and finds every stored fingerprint within Hamming distance
``max_distance`` of a query, exactly: no false negatives, nothing beyond the bound.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final

if TYPE_CHECKING:
    from typing_extensions import Self


#: Manku, Jain & Das Sarma (WWW 2007, section 4) find k = 3 right for 64-bit
#: fingerprints of web pages: high precision and recall at once.
DEFAULT_MAX_DISTANCE: Final = 3
#: The largest k any index takes. Manku, Jain & Das Sarma (WWW 2007) build tables for
#: k <= 7 on 64 bits; past 8, near-duplicates and unrelated pages overlap (and the
#: tables stop paying off).
MAX_DISTANCE_LIMIT: Final = 8


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


class SimhashIndex(ABC):
    """A set of ``(fingerprint, key)`` pairs searchable by Hamming distance.

    Implement the abstract methods; the others have working defaults that a backend
    may override to do better (one round trip for a batch, say).
    """

    #: Short name for logs and ``inspect`` ("memory", "disk", "redis", ...).
    backend_name: ClassVar[str] = "custom"

    def __init__(self, max_distance: int = DEFAULT_MAX_DISTANCE) -> None:
        if isinstance(max_distance, bool) or not isinstance(max_distance, int):
            raise TypeError(f"max_distance must be an int, not {max_distance!r}")
        if not 0 <= max_distance <= MAX_DISTANCE_LIMIT:
            raise ValueError(f"max_distance must be between 0 and {MAX_DISTANCE_LIMIT}, not {max_distance}")
        self.max_distance = max_distance

    @abstractmethod
    def add_if_new(self, fingerprint: int, key: str, wildcard: int = 0) -> Match | None:
        """Check and record in one step (atomically where the backend is shared).

        Return the nearest stored match (see :meth:`query`) and store nothing, or
        return ``None`` after storing ``(fingerprint, key)``.
        """

    @abstractmethod
    def query(self, fingerprint: int, wildcard: int = 0) -> list[Match]:
        """Every stored match, nearest first.

        A stored fingerprint matches when it differs from *fingerprint* in at most
        ``max_distance`` bits outside the *wildcard* mask: bits of the query that may
        differ freely (its least-confident bits, :attr:`FingerprintResult.wildcard`).
        ``Match.distance`` is the full Hamming distance.
        """

    @abstractmethod
    def add(self, fingerprint: int, key: str) -> None:
        """Store ``(fingerprint, key)`` unconditionally."""

    @abstractmethod
    def remove(self, fingerprint: int, key: str | None = None) -> int:
        """Remove the entries with this fingerprint (and key, if given); return how many."""

    @abstractmethod
    def __len__(self) -> int:
        """Number of stored entries."""

    @abstractmethod
    def items(self) -> Iterator[tuple[int, str]]:
        """Every stored ``(fingerprint, key)`` pair, in no particular order."""

    def add_many(self, items: Iterable[tuple[int, str]]) -> None:
        """Store many pairs unconditionally (bulk load, import)."""
        for fingerprint, key in items:
            self.add(fingerprint, key)

    def query_many(self, fingerprints: Sequence[int]) -> list[list[Match]]:
        """:meth:`query` for each fingerprint, in order."""
        return [self.query(fingerprint) for fingerprint in fingerprints]

    def nearest(self, fingerprint: int, wildcard: int = 0) -> Match | None:
        """The nearest stored match (see :meth:`query`), or ``None``."""
        matches = self.query(fingerprint, wildcard)
        return matches[0] if matches else None

    def describe(self) -> dict[str, Any]:
        """What ``inspect`` and the open log line show: backend, size, design, ..."""
        return {"backend": self.backend_name, "size": len(self), "max_distance": self.max_distance}

    def flush(self) -> None:
        """Make everything acknowledged so far durable (no-op where it already is)."""

    def close(self) -> None:
        """Release files and connections; the index is unusable afterwards."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
