"""The spider middleware that drops the items of unchanged pages, and follows their links."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured

from .config import SimhashSettings
from .middlewares import META_KEY

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

    Off with ``SIMHASH_ACTION = "mark"`` (the spider decides) and with
    ``SIMHASH_KEEP_UNCHANGED = True`` (re-scraping). The add-on enables it.
    """

    def __init__(self, crawler: Crawler) -> None:
        config = SimhashSettings.from_settings(crawler.settings)
        if not config.enabled or config.action != "drop" or config.keep_unchanged:
            raise NotConfigured
        self._inc_stat = crawler.stats.inc_value

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        unchanged = _is_unchanged(response)
        async for output in result:
            if unchanged and not isinstance(output, Request):
                self._inc_stat("simhash/unchanged/items_dropped")
                continue
            yield output


def _is_unchanged(response: Response) -> bool:
    request = response.request
    meta = request.meta.get(META_KEY) if request is not None else None
    return isinstance(meta, dict) and meta.get("unchanged") is True
