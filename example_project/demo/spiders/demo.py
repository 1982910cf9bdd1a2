"""A spider that follows every link of a site and yields one item per page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from scrapy_simhash import NearDuplicatePage


class DemoSpider(scrapy.Spider):
    """``scrapy crawl demo -a start_url=http://127.0.0.1:8000/`` (``run_demo.py`` does it for you)."""

    name = "demo"

    def __init__(self, start_url: str = "http://127.0.0.1:8000/", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_url = start_url
        self.allowed_domains = [urlsplit(start_url).hostname or ""]  # stay on the site: offline
        self.link_extractor = LinkExtractor()

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.start_url, errback=self.dropped)

    def parse(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, HtmlResponse):
            return
        match = response.meta.get("simhash") or {}
        if match.get("duplicate_of") and not match["unchanged"]:
            # A near-duplicate handed on for its links (SIMHASH_FOLLOW_DROPPED): the add-on
            # drops the item below, and the links are followed.
            self._log_drop(
                response.url, match["duplicate_of"], match["distance"], match["similarity"], " (links followed)"
            )
        yield {
            "url": response.url,
            "title": response.css("title::text").get(),
            # The page's fingerprint: SimhashPipeline reuses it instead of computing another.
            "simhash": response.meta.get("simhash"),
        }
        for link in self.link_extractor.extract_links(response):
            yield response.follow(link, errback=self.dropped)

    def dropped(self, failure: Failure) -> None:
        """Near-duplicates arrive here as NearDuplicatePage (an IgnoreRequest), like other errors."""
        if failure.check(NearDuplicatePage):
            error = failure.value
            self._log_drop(error.url, error.duplicate_of, error.distance, error.similarity)
        elif failure.check(HttpError):
            # A broken link of the site (404...): the site's problem, not the crawl's.
            response = failure.value.response
            self.logger.info("Skipped %(url)s: HTTP %(status)d", {"url": response.url, "status": response.status})
        else:
            self.logger.error("Request %(url)s failed: %(failure)r", {"url": failure.request.url, "failure": failure})

    def _log_drop(self, url: str, original: str, distance: int, similarity: float | None, note: str = "") -> None:
        self.logger.info(
            "Dropped %(url)s: near-duplicate of %(original)s (distance %(distance)d%(similarity)s)%(note)s",
            {"url": url, "original": original, "distance": distance, "note": note,
             "similarity": "" if similarity is None else f", similarity {similarity:.2f}"},
        )
