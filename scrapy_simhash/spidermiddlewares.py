"""The spider middleware that drops the items of unchanged pages and of the near-duplicates
``SIMHASH_FOLLOW_DROPPED`` hands on, and follows their links."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured

from .config import enabled_settings
from .middlewares import META_KEY, VIA_DROPPED_KEY

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from typing_extensions import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response


class SimhashSpiderMiddleware:
    """Drop what a callback yields from an unchanged page, except its requests.

    A page whose own record an earlier crawl (or another crawler sharing the index)
    stored is unchanged (:class:`~scrapy_simhash.SimhashMiddleware` sets
    ``response.meta["simhash"]["unchanged"]``). A repeat crawl must still follow its
    links, or the site's new and changed pages, found through unchanged ones, would not
    be reached; but its items were scraped before. So the callback runs, its requests go
    on, and its items are dropped (``simhash/unchanged/items_dropped``).

    A near-duplicate that ``SIMHASH_FOLLOW_DROPPED`` hands on (by default, one named as another
    document than its original) is handled alike: it reaches its callback for its links, and
    its items are dropped (``simhash/dropped/items_dropped``). Its requests carry
    ``meta["simhash_via_dropped"]``, so that a near-duplicate found through it is not followed
    in turn.

    Off with ``SIMHASH_ACTION = "mark"`` (the spider decides). The add-on enables it.
    """

    def __init__(self, crawler: Crawler) -> None:
        config = enabled_settings(crawler.settings)
        # (With SIMHASH_KEEP_UNCHANGED no page is marked unchanged: nothing to drop then.)
        follows = config.follow_dropped != "never"
        if config.action != "drop" or (config.keep_unchanged and not follows):
            raise NotConfigured
        self._dropped = follows
        self._inc_stat = crawler.stats.inc_value

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        why = self._items_dropped(response)
        async for output in result:
            if why is None:
                yield output
            elif not isinstance(output, Request):
                self._inc_stat(f"simhash/{why}/items_dropped")
            else:
                if why == "dropped":
                    output.meta[VIA_DROPPED_KEY] = True
                yield output

    def _items_dropped(self, response: Response) -> str | None:
        """``"unchanged"`` or ``"dropped"`` when the page's items go, else ``None``."""
        request = response.request
        meta = request.meta.get(META_KEY) if request is not None else None
        if not isinstance(meta, dict) or meta.get("duplicate_of") is None:
            return None
        if meta.get("url") != response.url:  # another page's, passed on in the meta: this one was not checked
            return None
        if meta.get("unchanged") is True:
            return "unchanged"
        return "dropped" if self._dropped else None
