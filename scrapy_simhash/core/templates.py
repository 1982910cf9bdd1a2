"""Per-site template memory: text blocks that recur across pages of a site are boilerplate.

Learned online, one page at a time, with no second pass: for each domain it counts
on how many distinct pages each text block (by hash) was seen. A block is template
once it has been seen on at least ``min_pages`` pages *and* on at least
``min_share`` of the pages seen on the domain so far; template blocks are left out
of the fingerprints of that domain's pages. A site's chrome is on nearly every page;
a heading or a sentence common in the content ("Bugfixes", "See also") is on a
minority, and stays.

Consistency: pages fingerprinted before a block is learned keep it. The share rule
keeps that rare (only true chrome is ever learned), and main-content extraction has
removed most chrome already, so this is a safety net, not the main filter.

"Distinct pages" is judged by content, not URL: a page is known by its fingerprint,
and a page within ``same_page_distance`` bits of one the block was already seen on
is the same page (a copy under a session-id or tracking URL, a print version).
Otherwise an article fetched under several URLs would teach its own text as
template. A repost inside another site's template keeps its article blocks: they are
new on that site, and only that site's chrome is learned there.

Memory is bounded: at most ``max_domains`` domains (least recently used dropped)
and ``max_blocks`` blocks per domain (blocks seen on a single page dropped first).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import cast

try:
    from . import _extract  # C, built at install when a compiler is there (see content.py)
except ImportError:  # pragma: no cover - depends on the build
    _extract = None  # type: ignore[assignment]

_DIGITS = re.compile(r"\d+")
#: Template lines with counters are short; a long block that differs in its numbers is
#: content (release notes of versions 2.2.20 and 3.0.14).
_SHORT_BLOCK = 64
#: Fingerprints kept per block to tell new pages from near-copies; past that, a count.
_REMEMBERED_PAGES = 8
#: One page's fingerprint in _DomainMemory.pages_of.
_PAGE_BITS = (1 << 64) - 1
#: Block keys remembered where the C module was not built (a page's blocks are keyed by
#: filter() then learn(), and a site's template blocks on every page): ~200 bytes each.
_REMEMBERED_KEYS = 1 << 15


def block_key(block: str) -> int:
    """A key for a normalised text block; digits do not count in short blocks.

    Counters, dates and ids differ from page to page inside the same template line
    ("views: 6033", "posted 2024-01-12"), so in a short block every run of digits
    reads as ``0``. Python's own string hash is enough: the memory lives in one
    process, and it is several times cheaper than a cryptographic hash.

    >>> block_key("views: 6033") == block_key("views: 17")
    True
    """
    if len(block) <= _SHORT_BLOCK:
        block = _DIGITS.sub("0", block)
    return hash(block)


class _DomainMemory:
    """How many distinct pages of one domain each block was seen on."""

    __slots__ = ("pages", "pages_of", "seen")

    def __init__(self) -> None:
        self.pages = 0
        # Per block: on how many distinct pages it was seen (a plain dict, so filtering
        # a page's blocks is one lookup each)...
        self.seen: dict[int, int] = {}
        # ...and the fingerprints of the first seen[key] pages, to tell a new page from a
        # near-copy; dropped once full (from then on, only counted). They are packed into
        # one int, 64 bits each: a list per block made a crawl's memory tens of thousands
        # of lists, which each full garbage collection walks (an int it never visits).
        self.pages_of: dict[int, int] = {}

    def count(self, key: int) -> int:
        return self.seen.get(key, 0)

    def record(self, keys: set[int], page: int, settings: TemplateMemory) -> None:
        """Record that the blocks *keys* were seen on the page *page*."""
        seen, pages_of, distance = self.seen, self.pages_of, settings.same_page_distance
        for key in keys:
            count = seen.get(key)
            if count is None:
                if len(seen) >= settings.max_blocks:
                    self._forget_rare()
                seen[key] = 1
                pages_of[key] = page
                continue
            pages = pages_of.get(key)
            if pages is None:
                seen[key] = count + 1
                continue
            for shift in range(0, count * 64, 64):
                if ((pages >> shift & _PAGE_BITS) ^ page).bit_count() <= distance:
                    break  # a near-copy of a page it was seen on
            else:
                seen[key] = count + 1
                if count + 1 >= _REMEMBERED_PAGES:
                    del pages_of[key]
                else:
                    pages_of[key] = pages | page << (count * 64)

    def _forget_rare(self) -> None:
        """Make room: forget the blocks seen on one page, and when they are fewer than a
        quarter of the memory, the least seen down to three quarters of it. (A scan that
        freed a slot or two, the memory full of shared blocks, ran for each new block: a
        page of 1,000 new ones took 235 ms.)"""
        seen = self.seen
        forgotten = [key for key, count in seen.items() if count < 2]
        if len(forgotten) < len(seen) // 4:  # (the least seen first, the oldest among equals)
            forgotten = [key for key, _ in sorted(seen.items(), key=lambda item: item[1])[: len(seen) // 4]]
        for key in forgotten:
            del seen[key]
            self.pages_of.pop(key, None)


class TemplateMemory:
    """Online, bounded, per-domain memory of template blocks (see the module doc).

    Use :meth:`filter` before fingerprinting a page and :meth:`learn` after.
    """

    def __init__(
        self,
        min_pages: int = 5,
        min_share: float = 0.6,
        max_domains: int = 1000,
        max_blocks: int = 20_000,
        same_page_distance: int = 16,
    ) -> None:
        if min_pages < 2:
            raise ValueError(f"min_pages must be at least 2, not {min_pages}")
        if max_domains < 1 or max_blocks < 1:
            raise ValueError("max_domains and max_blocks must be positive")
        if not 0.0 <= min_share <= 1.0:
            raise ValueError(f"min_share must be between 0 and 1, not {min_share}")
        self.min_pages = min_pages
        self.min_share = min_share
        self.max_domains = max_domains
        self.max_blocks = max_blocks
        self.same_page_distance = same_page_distance
        self._domains: OrderedDict[str, _DomainMemory] = OrderedDict()
        self._keys: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._domains)

    def _memory(self, domain: str) -> _DomainMemory:
        memory = self._domains.get(domain)
        if memory is None:
            memory = self._domains[domain] = _DomainMemory()
            if len(self._domains) > self.max_domains:
                self._domains.popitem(last=False)
        else:
            self._domains.move_to_end(domain)
        return memory

    def filter(self, domain: str, blocks: Sequence[str]) -> list[str]:
        """*blocks* less those learned as template on *domain*."""
        memory = self._domains.get(domain)
        if memory is None:
            return list(blocks)
        needed = self._needed(memory)
        seen = memory.seen
        return [block for block, key in zip(blocks, self._keys_of(blocks)) if seen.get(key, 0) < needed]

    def _keys_of(self, blocks: Sequence[str]) -> list[int]:
        """:func:`block_key` of each block: in C, or remembered (a dict lookup is ~10x cheaper)."""
        if _extract is not None:
            return _extract.block_keys(list(blocks), _SHORT_BLOCK)
        keys = self._keys
        if len(keys) > _REMEMBERED_KEYS:
            keys.clear()  # simpler than LRU; a site's template blocks come back at once
        found = list(map(keys.get, blocks))
        if None not in found:
            return cast("list[int]", found)
        for block in blocks:
            if block not in keys:
                keys[block] = block_key(block)
        return list(map(keys.__getitem__, blocks))

    def _needed(self, memory: _DomainMemory) -> float:
        return max(self.min_pages, self.min_share * memory.pages)

    def learn(self, domain: str, blocks: Sequence[str], page: int) -> None:
        """Record that *blocks* were seen on a page whose fingerprint is *page*."""
        memory = self._memory(domain)
        memory.pages += 1
        memory.record(set(self._keys_of(blocks)), page, self)

    def is_template(self, domain: str, block: str) -> bool:
        """Whether *block* has been learned as template on *domain*."""
        memory = self._domains.get(domain)
        return memory is not None and memory.count(block_key(block)) >= self._needed(memory)
