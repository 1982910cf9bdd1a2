"""The exceptions the Scrapy components raise for near-duplicates.

Hierarchy::

    IgnoreRequest (Scrapy)
     +-- NearDuplicatePage    raised by SimhashMiddleware: the response is dropped
    DropItem (Scrapy)
     +-- NearDuplicateItem    raised by SimhashPipeline: the item is dropped

Both carry what was found, so an errback (``failure.check(NearDuplicatePage)``)
or a log formatter can tell which earlier page or item the drop duplicates.
"""

from __future__ import annotations

from scrapy.exceptions import DropItem, IgnoreRequest

from .core.fingerprint import to_hex
from .index.base import similarity_note


def _described(what: str, fingerprint: int, duplicate_of: str, distance: int, similarity: float | None) -> str:
    return f"{what} (simhash {to_hex(fingerprint)}) of {duplicate_of} at distance {distance}{similarity_note(similarity)}"


class NearDuplicatePage(IgnoreRequest):
    """A response whose main text is within the distance bound of an earlier page."""

    def __init__(
        self, url: str, fingerprint: int, duplicate_of: str, distance: int, similarity: float | None = None
    ) -> None:
        super().__init__(_described(f"Near-duplicate page {url}", fingerprint, duplicate_of, distance, similarity))
        self.url = url
        self.fingerprint = fingerprint
        self.duplicate_of = duplicate_of
        self.distance = distance
        #: The Jaccard similarity the two pages' sketches estimate (None: not confirmed by one).
        self.similarity = similarity


class NearDuplicateItem(DropItem):
    """An item whose text fields are within the distance bound of an earlier item, or
    an unchanged item (:attr:`unchanged`): its own record, under its key, from an earlier
    crawl or another crawler.

    It is logged at DEBUG (``log_level``): an expected drop, not a warning.
    """

    def __init__(
        self, key: str, fingerprint: int, duplicate_of: str, distance: int, similarity: float | None = None
    ) -> None:
        what = "Unchanged item" if duplicate_of == key else "Near-duplicate item"
        super().__init__(
            _described(f"{what} {key}", fingerprint, duplicate_of, distance, similarity), log_level="DEBUG"
        )
        #: Its own record (same key) from an earlier crawl or another crawler.
        self.unchanged = duplicate_of == key
        self.key = key
        self.fingerprint = fingerprint
        self.duplicate_of = duplicate_of
        self.distance = distance
        self.similarity = similarity
