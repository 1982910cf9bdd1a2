"""What the middleware and the pipeline share: fingerprint, check-and-record, stats, logs.

One :class:`NearDuplicateChecker` per component. It checks pages in their index
(:mod:`._indexes`: the crawl's, the spider's, or the host's), calls ``replace_if_new`` (off
the event loop for network backends), tells an unchanged page from one this crawl saw
(:mod:`._checked`), counts ``<prefix>/...`` stats and logs the first near-duplicate at DEBUG.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, TypeVar
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.utils.asyncio import run_in_thread
from scrapy.utils.job import job_dir

from ._checked import CheckedIn, CheckedKeys
from ._index_setting import UnusableHostIndex, naming_the_index, shown_spec
from ._indexes import ComponentIndexes, summary
from ._outage import Outage
from .core.fingerprinter import Fingerprinter, FingerprintResult, python_stages
from .index import (
    IndexUnavailableError,
    Match,
    SimhashIndex,
    SimhashIndexError,
    Verdict,
    is_shared_spec,
    uses_disk,
)
from .index.base import is_own_record, similarity_note

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import TextResponse

    from .config import SimhashSettings

_T = TypeVar("_T")


class NearDuplicateChecker:
    """Check-and-record fingerprints of one kind ("page" or "item") for one crawler."""

    def __init__(
        self,
        crawler: Crawler,
        config: SimhashSettings,
        *,
        kind: str,
        stats_prefix: str,
        logger: logging.Logger,
    ) -> None:
        self.config = config
        self._logger = logger  # the component's: users filter logs by the class they enabled
        self.fingerprinter = Fingerprinter(config.fingerprint)
        self._crawler = crawler
        # Looked up once: each lookup on Scrapy's stats collector costs ~1 us (its
        # __getattribute__), and a page counts 2 to 5 events.
        self._inc_stat = crawler.stats.inc_value
        self._kind = kind
        self._prefix = stats_prefix
        self._indexes = ComponentIndexes(config, kind, crawler.spidercls.name)
        # Calls that may wait run in worker threads, off the reactor: Redis' (and the opening
        # of a host's Redis index, in SIMHASH_SCOPE="domain"), and a disk index's when
        # SIMHASH_FSYNC has it fsync its log. Without fsync, its appends only reach the page
        # cache (a few us), less than a thread's round trip (~0.1 ms of CPU a check).
        disk_in_thread = uses_disk(config.index) and config.fsync is not None
        self._in_thread = is_shared_spec(config.index) or disk_in_thread
        # Redis' clients are thread-safe; a disk index takes one call at a time.
        self._one_call = threading.Lock() if disk_in_thread else contextlib.nullcontext()
        self._checked = CheckedKeys.of_crawl(job_dir(crawler.settings), kind)
        self._log_next_match = True
        self._index_errors = 0  # in a row: the first is warned of, the count logged when it is back
        self._log_next_error = True
        self._outage = Outage()
        self._unusable_hosts: set[str] = set()  # warned of (_host_index_error)
        self._open()
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        _warn_of_python_stages(crawler, logger)

    def _open(self) -> None:
        """Open the index now (or, with one per host, the store they share), so a bad path,
        a store made with other options or an unreachable server fails the start."""
        with naming_the_index(self.config.index):
            if self.config.scope == "domain":
                self._indexes.check_store()
                self._logger.info(
                    "Simhash %(kind)s index: one per host (SIMHASH_SCOPE='domain'), %(spec)s, k=%(k)d",
                    {"kind": self._kind, "spec": shown_spec(self.config.index) or "memory",
                     "k": self.config.max_distance},
                )
                return
            info = self._indexes.for_host("").describe()  # counts the entries once (a scan in Redis with TTL)
        self._logger.info(
            "Simhash %(kind)s index opened: %(index)s", {"kind": self._kind, "index": summary(info)}
        )
        self._stats_set("index_size/open", info["size"])

    def spider_closed(self) -> None:
        self._checked.close()
        try:
            if not self._outage.pause:  # (a failing index is left alone: a hung one costs a timeout more)
                self._stats_set("index_size/close", sum(len(index) for index in self._indexes.opened))
        except IndexUnavailableError:
            pass  # no size then; closing, no request to fail (index_error counts pages: see README)
        finally:
            self._indexes.close()

    async def check(
        self, fingerprint: int, key: str, host: str = "", wildcard: int = 0, sketch: bytes | None = None
    ) -> Match | None:
        """Record *fingerprint* under *key*, or return the earlier one it duplicates.

        *wildcard*: the fingerprint's least-confident bits, which may differ freely
        (:attr:`FingerprintResult.wildcard`); *sketch*: the page's minwise sketch, which
        must confirm a match (:attr:`FingerprintResult.sketch`).

        A match under *key* itself (:func:`~.index.base.is_own_record`) is the page's own record: from
        this crawl (a retry, a resumed ``JOBDIR`` crawl), it is ``None``, counted
        ``seen_again``; from an earlier crawl or another crawler, it is counted
        ``unchanged`` and returned, unless ``SIMHASH_KEEP_UNCHANGED``. Otherwise the key's
        earlier records, if any, are replaced (counted ``changed``): the index keeps the
        latest version of a page (:meth:`SimhashIndex.replace_if_new`).

        An unreachable index counts ``index_error`` and keeps the page, or re-raises
        :class:`IndexUnavailableError` when ``SIMHASH_ON_INDEX_ERROR = "fail"``.
        """
        self.count("checked")
        if self._outage.skipping():  # a failing index, left alone for a while (:mod:`._outage`)
            self._skipped()
            return None
        # Before the index records it: a crawl killed in between knows the key on resume.
        checked_before = self._checked.check_in(key)
        failures = self._outage.failures
        try:
            if self._in_thread:
                verdict = await run_in_thread(self._ask, failures, self._replace_if_new, fingerprint, key, host,
                                              wildcard, sketch)
            else:
                if not self._indexes.is_open(host):  # a new host's index (SIMHASH_SCOPE="domain"):
                    await run_in_thread(self._ask, failures, self._index_for, host)  # opened off the reactor
                verdict = self._ask(failures, self._replace_if_new, fingerprint, key, host, wildcard, sketch)
        except UnusableHostIndex as exc:
            self._outage.probe_over()  # (a probe that learnt nothing of the index: the next call probes)
            self._host_index_error(host, exc)
            return None
        except IndexUnavailableError as exc:
            self._index_error(exc)  # (the outage heard of it in _ask)
            return None
        except BaseException:
            self._outage.probe_over()
            raise
        if verdict is None:  # an outage began while the call waited for a worker thread
            self._skipped()
            return None
        if self._index_errors:
            self._index_back()
            self._outage.recovered()
        if verdict.replaced:  # its earlier version's record went: the page changed since
            self.count("changed")
        match = verdict.match
        if is_own_record(match, key):
            return self._own_record(match, key, checked_before)
        self._count_result(key, match)
        return match

    def host_of(self, url: str) -> str:
        """The host whose index a page at *url* is checked in (:meth:`check`): ``""``, the
        one index, unless ``SIMHASH_SCOPE = "domain"`` (no URL parsed then: ~5 us a page)."""
        if self.config.scope != "domain":
            return ""
        try:
            return urlsplit(url).hostname or ""
        except ValueError:  # a malformed URL (a bad IPv6 address): the index of no host
            return ""

    def _own_record(self, match: Match, key: str, checked_before: CheckedIn) -> Match | None:
        """The verdict on a page whose own record is its match: unchanged since an earlier
        crawl (or fetched by another crawler), unless this crawl recorded it. An item this
        run checked already (two pages yield it) is a copy of the one it kept."""
        if checked_before is CheckedIn.THIS_RUN and self._kind == "item":
            self._count_result(key, match)
            return match
        if checked_before and not self._checked.was_unchanged(key):
            self.count("seen_again")
            return None
        self.count("unchanged")
        self._checked.found_unchanged(key)
        return None if self.config.keep_unchanged else match

    def fingerprint_html(self, html: str | bytes, url: str | None) -> FingerprintResult | None:
        """The page's fingerprint, or ``None`` (counted as ``skipped/<reason>``)."""
        return self._fingerprint(self.fingerprinter.from_html, html, url=url)

    def fingerprint_response(self, response: TextResponse) -> FingerprintResult | None:
        """:meth:`fingerprint_html` of a response, read from the tree its selectors use: the
        spider's callback parses nothing again, and neither do we."""
        return self._fingerprint(
            self.fingerprinter.from_tree, lambda: response.selector.root, response.text, url=response.url
        )

    def fingerprint_text(self, content: str) -> FingerprintResult | None:
        """The text's fingerprint, or ``None`` (counted as ``skipped/<reason>``)."""
        return self._fingerprint(self.fingerprinter.from_text, content)

    def _fingerprint(
        self, method: Callable[..., FingerprintResult], *args: Any, **kwargs: Any
    ) -> FingerprintResult | None:
        try:
            result = method(*args, **kwargs)
        except Exception:
            # A fingerprinting bug must not cost the crawl a page: keep it, unchecked.
            self.count("skipped/error")
            if self._log_next_error:
                self._logger.exception(
                    "Simhash could not fingerprint a %(kind)s; kept unchecked"
                    " (further errors are only counted: %(stat)s)",
                    {"kind": self._kind, "stat": f"{self._prefix}/skipped/error"},
                )
                self._log_next_error = False
            return None
        if result.fingerprint is None:
            self.count(f"skipped/{result.skip_reason or 'no_text'}")
            return None
        return result

    def _skipped(self) -> None:
        """A check that left the failing index alone: its page is kept unchecked."""
        self.count("index_error/skipped")
        self._index_error(IndexUnavailableError(f"not asked for {self._outage.pause:g} s after a failure"))

    def _ask(self, failures: int, call: Callable[..., _T], *args: Any) -> _T | None:
        """*call(*args)* on the index (in a worker thread for Redis), or ``None`` without asking
        when an outage began since the check was let through (at *failures*, see
        :meth:`Outage.began_since`): it waited for a thread behind calls that waited out the
        timeout. A failure is noted here, at once: the thread takes up its next call before
        the event loop hears of this one."""
        if self._outage.began_since(failures):
            return None
        try:
            return call(*args)
        except UnusableHostIndex:
            raise  # (one host's: the index is not down)
        except IndexUnavailableError:
            self._outage.failed()
            raise

    def _replace_if_new(
        self, fingerprint: int, key: str, host: str, wildcard: int, sketch: bytes | None
    ) -> Verdict:
        with self._one_call:
            return self._index_for(host).replace_if_new(fingerprint, key, wildcard, sketch)

    def _index_for(self, host: str) -> SimhashIndex:
        try:
            return self._indexes.for_host(host)
        except IndexUnavailableError:
            raise
        except (OSError, SimhashIndexError) as exc:  # (SIMHASH_SCOPE="domain": the store was checked at the start)
            raise UnusableHostIndex(f"SIMHASH_INDEX={shown_spec(self.config.index)!r}, host {host!r}: {exc}") from exc

    def _count_result(self, key: str, match: Match | None) -> None:
        if match is None:
            self.count("kept")
            return
        self.count("dropped" if self.config.action == "drop" or self._kind != "page" else "marked")
        self.count("exact" if match.distance == 0 else "near")
        self.count(f"distance/{match.distance}")
        self._log_match(key, match)

    def _log_match(self, key: str, match: Match) -> None:
        args = {"kind": self._kind, "key": key, "original": match.key, "distance": match.distance,
                "similarity": similarity_note(match.similarity)}
        message = "Near-duplicate %(kind)s %(key)s of %(original)s (distance %(distance)d%(similarity)s)"
        if self.config.debug:
            self._logger.debug(message, args)
        elif self._log_next_match:
            hint = " - no more near-duplicates will be shown (see SIMHASH_DEBUG to show all)"
            self._logger.debug(message + hint, args)
            self._log_next_match = False

    def _index_error(self, exc: IndexUnavailableError) -> None:
        self.count("index_error")
        self._index_errors += 1
        if self.config.on_index_error == "fail":
            raise exc
        if self._index_errors == 1:  # one WARNING per outage
            self._logger.warning(
                "Simhash index unavailable, keeping %(kind)ss unchecked (SIMHASH_ON_INDEX_ERROR='keep'): %(error)s",
                {"kind": self._kind, "error": exc},
            )

    def _host_index_error(self, host: str, exc: UnusableHostIndex) -> None:
        """A page of a host whose index cannot be opened (a Redis namespace made with
        other options): kept unchecked, counted, one WARNING per host; the crawl's other
        hosts go on as before (the index is not down: no outage)."""
        self.count("index_error")
        if self.config.on_index_error == "fail":
            raise exc
        if host not in self._unusable_hosts:
            self._unusable_hosts.add(host)
            self._logger.warning(
                "Simhash cannot open the index of a host, keeping its %(kind)ss unchecked: %(error)s",
                {"kind": self._kind, "error": exc},
            )

    def _index_back(self) -> None:
        """The index answers again: say so, and warn again at its next outage."""
        self._logger.info(
            "Simhash %(kind)s index available again, after %(errors)d failed checks (stat %(stat)s)",
            {"kind": self._kind, "errors": self._index_errors, "stat": f"{self._prefix}/index_error"},
        )
        self._index_errors = 0

    def count(self, event: str) -> None:
        """Count ``<prefix>/<event>`` (``skipped/<reason>``, ``dropped``, ...)."""
        self._inc_stat(f"{self._prefix}/{event}")

    def _stats_set(self, name: str, value: int) -> None:
        self._crawler.stats.set_value(f"{self._prefix}/{name}", value)


#: The crawlers told that fingerprinting runs in Python: once each, not once a component.
_WARNED_OF_PYTHON_STAGES: weakref.WeakSet[Crawler] = weakref.WeakSet()


def _warn_of_python_stages(crawler: Crawler, logger: logging.Logger) -> None:
    """Fingerprinting runs slower without its C modules: say so when a crawl's first component starts."""
    slow = python_stages()
    if slow and crawler not in _WARNED_OF_PYTHON_STAGES:
        _WARNED_OF_PYTHON_STAGES.add(crawler)
        logger.warning(
            "Simhash runs its %(stages)s in Python: its C code was not built at install (no C compiler?),"
            " so fingerprinting takes about twice as long (see the README, Set-up)",
            {"stages": " and ".join(slow)},
        )
