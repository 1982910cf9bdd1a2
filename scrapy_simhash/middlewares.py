"""The downloader middleware that drops (or marks) near-duplicate pages."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.httpobj import urlparse_cached

from ._glue import NearDuplicateChecker
from .index.base import is_own_record
from .config import enabled_settings
from .core.fingerprint import to_hex
from .exceptions import NearDuplicatePage
from .index import IndexUnavailableError, Match

if TYPE_CHECKING:
    from typing_extensions import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.settings import BaseSettings

    from .core.fingerprinter import FingerprintResult

#: The ``Request.meta`` key that holds the result, and the item field the
#: pipeline reads it back from.
META_KEY = "simhash"
#: Set on the requests a followed near-duplicate yields (:class:`SimhashSpiderMiddleware`):
#: with ``SIMHASH_FOLLOW_DROPPED = "siblings"`` a near-duplicate found there is not followed.
VIA_DROPPED_KEY = "simhash_via_dropped"

logger = logging.getLogger(__name__)
#: A directory's default document: named by its directory.
_INDEX_PAGE = re.compile(r"(?:index|default)(?:\.\w+)?", re.IGNORECASE)


class SimhashMiddleware:
    """Drop responses whose main text nearly duplicates a page seen before.

    Enable it with the add-on (``ADDONS = {"scrapy_simhash.Addon": 300}``), or in
    :setting:`DOWNLOADER_MIDDLEWARES` at 540: the responses it sees are then final
    (after retries, redirects and decompression).

    Each HTML response with a status in ``SIMHASH_HTTP_STATUSES`` (200) is
    fingerprinted and checked against the index in one step. Other responses
    (robots.txt, Scrapy's own ``NO_CALLBACK`` downloads, images, JSON, errors) pass untouched and count as
    ``simhash/skipped/<reason>``. The result goes to ``request.meta["simhash"]``::

        {"url": "http://.../b.html", "unchanged": False, "fingerprint": "3f0c...", "wildcard": "...", "sketch": "...",
         "duplicate_of": "http://.../a.html" or None, "distance": 2 or None, "similarity": 0.93 or None}

    A page whose own record an earlier crawl (or another crawler sharing the index)
    stored is *unchanged*: ``"unchanged": True``, ``"duplicate_of"`` its own URL. It
    reaches the callback, so that its links are followed (a new page of the site is
    found through unchanged ones), and :class:`SimhashSpiderMiddleware` drops the items
    the callback yields from it (``SIMHASH_KEEP_UNCHANGED = True`` keeps them). A page
    re-fetched within one crawl (a retry, a resumed ``JOBDIR`` crawl) is not unchanged:
    it goes on as the first time.

    With ``SIMHASH_ACTION = "drop"`` (the default) a near-duplicate raises
    :exc:`~scrapy_simhash.NearDuplicatePage`, an :exc:`~scrapy.exceptions.IgnoreRequest`:
    the callback is not called and the page's links are not followed. That is
    right for a copy: a page that repeats another one links to what the original
    links to, and following copies is how crawlers fall into session-id and
    mirror traps. An errback sees it with ``failure.check(NearDuplicatePage)``.
    A *sibling*, a near-duplicate named as another document than its original
    (:func:`document_name`), may link to pages only it links to: with
    ``SIMHASH_FOLLOW_DROPPED = "siblings"`` (the default) it reaches its callback, for its
    links, one step away from a kept page, and :class:`SimhashSpiderMiddleware` drops its
    items (:meth:`_follows`).
    With ``SIMHASH_ACTION = "mark"`` the response goes on to the callback with the
    match in ``response.meta["simhash"]`` and the spider decides.

    Set ``request.meta["dont_simhash"] = True`` to leave one request alone.
    The first near-duplicate is logged at DEBUG::

        DEBUG: Near-duplicate page http://host/b.html of http://host/a.html (distance 2, similarity 0.93)
        - no more near-duplicates will be shown (see SIMHASH_DEBUG to show all)
    """

    def __init__(self, crawler: Crawler) -> None:
        self.config = enabled_settings(crawler.settings)
        self._checker = NearDuplicateChecker(
            crawler, self.config, kind="page", stats_prefix="simhash", logger=logger
        )
        self._follow_dropped = self.config.follow_dropped
        if self._follow_dropped != "never" and not _spider_middleware_enabled(crawler.settings):
            # A followed page's items would be kept: drop near-duplicates with their links.
            logger.warning(
                "SIMHASH_FOLLOW_DROPPED=%(value)r needs scrapy_simhash.SimhashSpiderMiddleware in"
                " SPIDER_MIDDLEWARES (the add-on enables it) to drop a followed page's items:"
                " near-duplicates are dropped with their links",
                {"value": self._follow_dropped},
            )
            self._follow_dropped = "never"

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_response(self, request: Request, response: Response) -> Response:
        passed_on = request.meta.get(META_KEY)
        if isinstance(passed_on, dict) and passed_on.get("url") == response.url:
            # A verdict passed on to a request of the same URL (an async postback, another
            # format of the page): not this response's, which its own check, if any, sets.
            del request.meta[META_KEY]
        if request.meta.get("dont_simhash"):
            self._checker.count("skipped/dont_simhash")
            return response
        page = self._fingerprint(request, response)
        if page is None or page.fingerprint is None:
            return response
        match = await self._check(page, response)
        unchanged = is_own_record(match, response.url)
        request.meta[META_KEY] = page_meta(page, match, response.url, unchanged=unchanged)
        if match is not None and not unchanged and self.config.action == "drop":
            if not self._follows(request, response.url, match.key):
                raise NearDuplicatePage(response.url, page.fingerprint, match.key, match.distance, match.similarity)
            self._checker.count("dropped/followed")
        return response

    def _follows(self, request: Request, url: str, original: str) -> bool:
        """Whether a near-duplicate at *url* still reaches its callback, for its links.

        A copy under its original's document name (a mirror, a session id, tracking
        parameters, a print flag) links where its original links. A page under another
        name that shares most of its text (a sibling class, a "members" page) may link to
        pages only it links to: it is followed, but only one step away from a kept page,
        so that a chain of copies (a calendar, a trap) stops at its second link.
        """
        if self._follow_dropped != "siblings":
            return self._follow_dropped == "always"
        if request.meta.get(VIA_DROPPED_KEY):
            return False
        name, original_name = document_name(url), document_name(original)
        return bool(name and original_name and name != original_name)

    def _fingerprint(self, request: Request, response: Response) -> FingerprintResult | None:
        """The page's fingerprint, or ``None`` (counted as skipped, with the reason)."""
        reason = self._skip_reason(request, response)
        if reason is not None:
            self._checker.count(f"skipped/{reason}")
            return None
        # The tree of response.selector, parsed once for us and the callback's selectors.
        return self._checker.fingerprint_response(response)

    def _skip_reason(self, request: Request, response: Response) -> str | None:
        if response.status not in self.config.http_statuses:
            return "status"
        # (The substring first: parsing every page's URL costs ~5 us.)
        if "/robots.txt" in response.url and urlparse_cached(response).path == "/robots.txt":
            return "robots_txt"
        if request.callback is NO_CALLBACK:
            # Scrapy's own downloads (robots.txt, media pipelines) reach no callback:
            # there is no page to drop. (Not ``dont_obey_robotstxt``: users set it on pages.)
            return "no_callback"
        if not isinstance(response, HtmlResponse):
            return "not_html"
        return None

    async def _check(self, page: FingerprintResult, response: Response) -> Match | None:
        host = self._checker.host_of(response.url)
        try:
            assert page.fingerprint is not None
            return await self._checker.check(page.fingerprint, response.url, host, page.wildcard, page.sketch)
        except IndexUnavailableError as exc:
            raise IgnoreRequest(f"Simhash index unavailable (SIMHASH_ON_INDEX_ERROR='fail'): {exc}") from exc


def _spider_middleware_enabled(settings: BaseSettings) -> bool:
    """Whether ``SPIDER_MIDDLEWARES`` holds :class:`SimhashSpiderMiddleware` (a class or a path)."""
    for component, priority in settings.getwithbase("SPIDER_MIDDLEWARES").items():
        path = component if isinstance(component, str) else f"{component.__module__}.{component.__qualname__}"
        if priority is not None and path.startswith("scrapy_simhash.") and path.endswith(".SimhashSpiderMiddleware"):
            return True
    return False


def document_name(url: str) -> str:
    """The document *url* names: the last segment of its path, without ``;parameters``
    (``/docs/solver-cg.html``, ``/docs/solver-cg/`` and ``/docs/solver-cg/index.html`` all
    name ``solver-cg``...), or ``""`` for the site's root."""
    segments = [segment for segment in unquote(urlsplit(url).path.partition(";")[0]).split("/") if segment]
    if segments and _INDEX_PAGE.fullmatch(segments[-1]):
        segments.pop()
    return segments[-1] if segments else ""


def page_meta(page: FingerprintResult, match: Match | None, url: str, *, unchanged: bool = False) -> dict[str, Any]:
    """The ``meta["simhash"]`` value of the page at *url*: the fingerprint and what it
    duplicates, if anything (itself, when *unchanged*: its own record from an earlier crawl).
    A callback may pass its meta on (``meta=response.meta``): the *url* tells whose it is."""
    assert page.fingerprint is not None
    return {
        "url": url,
        "unchanged": unchanged,
        "fingerprint": to_hex(page.fingerprint),
        "wildcard": to_hex(page.wildcard),
        "sketch": page.sketch.hex() if page.sketch else None,
        "duplicate_of": match.key if match else None,
        "distance": match.distance if match else None,
        "similarity": match.similarity if match else None,
    }
