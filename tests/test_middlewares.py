"""SimhashMiddleware, built with build_from_crawler and fed real pages of the demo site."""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import DEMO_SITE
from redis_server import own_redis_server  # noqa: F401  (a fixture)
from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from scrapy_simhash._outage import Outage

from scrapy_simhash import (
    FingerprintOptions,
    IndexUnavailableError,
    MemoryIndex,
    NearDuplicatePage,
    SimhashMiddleware,
    SimhashPipeline,
    from_hex,
    open_index,
)

ARTICLE = (DEMO_SITE / "articles" / "coffee-roasting.html").read_bytes()
OTHER_ARTICLE = (DEMO_SITE / "articles" / "compost.html").read_bytes()
SHORT_PAGE = b"<html><body><p>Nothing much here.</p></body></html>"
#: What the add-on enables beside the middleware: it drops the items of followed near-duplicates.
WITH_SPIDER_MIDDLEWARE = {"scrapy_simhash.SimhashSpiderMiddleware": 950}


def middleware(**settings: Any) -> SimhashMiddleware:
    """The middleware of a crawler whose settings also enable the spider middleware, as the add-on does."""
    settings.setdefault("SPIDER_MIDDLEWARES", WITH_SPIDER_MIDDLEWARE)
    return build_from_crawler(SimhashMiddleware, get_crawler(settings_dict=settings))


def html_response(url: str, body: bytes = ARTICLE, status: int = 200, **meta: Any) -> HtmlResponse:
    return HtmlResponse(url, body=body, status=status, request=Request(url, meta=meta))


def process(mw: SimhashMiddleware, response: Response) -> Response:
    return asyncio.run(mw.process_response(response.request, response))


def stats(mw: SimhashMiddleware) -> dict[str, Any]:
    return mw._checker._crawler.stats.get_stats()


def test_disabled_raises_not_configured() -> None:
    with pytest.raises(NotConfigured):
        middleware(SIMHASH_ENABLED=False)


def test_a_bad_setting_fails_at_build_time() -> None:
    with pytest.raises(ValueError, match="SIMHASH_SCOPE"):
        middleware(SIMHASH_SCOPE="galaxy")


def test_a_new_page_is_kept_and_described_in_meta() -> None:
    mw = middleware()
    response = html_response("http://a.example/coffee")
    assert process(mw, response) is response
    meta = response.request.meta["simhash"]
    assert meta["duplicate_of"] is None and meta["distance"] is None
    assert from_hex(meta["fingerprint"]) >= 0
    assert stats(mw)["simhash/kept"] == 1


def test_a_copy_is_dropped_with_what_it_duplicates() -> None:
    mw = middleware()
    process(mw, html_response("http://a.example/coffee"))
    copy = html_response("http://b.example/mirror/coffee")
    with pytest.raises(NearDuplicatePage) as raised:
        process(mw, copy)
    error = raised.value
    assert isinstance(error, IgnoreRequest)
    assert (error.url, error.duplicate_of, error.distance) == ("http://b.example/mirror/coffee", "http://a.example/coffee", 0)
    assert copy.request.meta["simhash"]["duplicate_of"] == "http://a.example/coffee"
    assert {k: v for k, v in stats(mw).items() if k.startswith("simhash/") and "index_size" not in k} == {
        "simhash/checked": 2,
        "simhash/kept": 1,
        "simhash/dropped": 1,
        "simhash/exact": 1,
        "simhash/distance/0": 1,
    }


def test_distinct_pages_are_both_kept() -> None:
    mw = middleware()
    process(mw, html_response("http://a.example/coffee"))
    process(mw, html_response("http://a.example/compost", OTHER_ARTICLE))
    assert stats(mw)["simhash/kept"] == 2


def test_mark_mode_lets_the_copy_through_marked() -> None:
    mw = middleware(SIMHASH_ACTION="mark")
    process(mw, html_response("http://a.example/coffee"))
    copy = html_response("http://a.example/coffee?sid=1")
    assert process(mw, copy) is copy
    assert copy.request.meta["simhash"]["duplicate_of"] == "http://a.example/coffee"
    assert stats(mw)["simhash/marked"] == 1
    assert "simhash/dropped" not in stats(mw)


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        (html_response("http://a.example/missing", status=404), "status"),
        (html_response("http://a.example/robots.txt"), "robots_txt"),
        (TextResponse("http://a.example/api.json", body=b'{"a": 1}', request=Request("http://a.example/api.json")), "not_html"),
        (Response("http://a.example/logo.png", body=b"\x89PNG\r\n", request=Request("http://a.example/logo.png")), "not_html"),
        (html_response("http://a.example/short", SHORT_PAGE), "too_short"),
        (html_response("http://a.example/empty", b""), "empty"),
    ],
)
def test_other_responses_pass_untouched_and_are_counted(response: Response, reason: str) -> None:
    mw = middleware()
    assert process(mw, response) is response
    assert "simhash" not in response.request.meta
    assert stats(mw)[f"simhash/skipped/{reason}"] == 1


def test_internal_downloads_are_skipped_but_pages_that_ignore_robots_are_checked() -> None:
    mw = middleware()
    internal = HtmlResponse("http://a.example/f.html", body=ARTICLE,
                            request=Request("http://a.example/f.html", callback=NO_CALLBACK))
    assert process(mw, internal) is internal
    assert stats(mw)["simhash/skipped/no_callback"] == 1
    process(mw, html_response("http://a.example/coffee", dont_obey_robotstxt=True))
    assert stats(mw)["simhash/kept"] == 1


def test_statuses_are_configurable() -> None:
    mw = middleware(SIMHASH_HTTP_STATUSES=[200, 404])
    process(mw, html_response("http://a.example/missing", status=404))
    assert stats(mw)["simhash/kept"] == 1


def test_a_verdict_passed_on_to_the_same_url_is_not_the_unchecked_responses() -> None:
    # (a postback to the page's URL answered in text, with meta=response.meta): its items
    # must not be dropped for the page's verdict; other pages' verdicts are left to read
    mw = middleware()
    page = html_response("http://a.example/coffee")
    process(mw, page)
    verdict = {**page.request.meta["simhash"], "duplicate_of": "http://a.example/other", "unchanged": True}
    request = Request("http://a.example/coffee", meta={"simhash": verdict})
    answer = TextResponse("http://a.example/coffee", body=b"updated: 3 items", request=request)
    assert process(mw, answer) is answer and "simhash" not in request.meta
    elsewhere = Request("http://a.example/api", meta={"simhash": verdict})
    process(mw, TextResponse("http://a.example/api", body=b"{}", request=elsewhere))
    assert elsewhere.meta["simhash"] is verdict


def test_dont_simhash_skips_the_request() -> None:
    mw = middleware()
    process(mw, html_response("http://a.example/coffee"))
    copy = html_response("http://a.example/copy", dont_simhash=True)
    assert process(mw, copy) is copy
    assert "simhash" not in copy.request.meta
    assert stats(mw)["simhash/skipped/dont_simhash"] == 1


@pytest.mark.parametrize("scope", ["crawl", "domain"])
@pytest.mark.parametrize("where", ["a-file/index", "missing/../a-file/index"])
def test_an_index_path_that_cannot_be_a_directory_fails_naming_the_setting(
    tmp_path: Path, where: str, scope: str
) -> None:
    # With an index per host (opened with each host's first page) too: at the start, not at every page.
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ValueError, match="SIMHASH_INDEX=.*cannot open or create the index: Not a directory"):
        middleware(SIMHASH_INDEX=str(tmp_path / where), SIMHASH_SCOPE=scope)


@pytest.mark.parametrize("scope", ["crawl", "domain"])
def test_a_store_made_with_other_options_or_a_file_fails_the_start_naming_the_setting(
    tmp_path: Path, scope: str
) -> None:
    store = str(tmp_path / "store")
    first = middleware(SIMHASH_INDEX=store, SIMHASH_SCOPE=scope)
    process(first, html_response("http://a.example/coffee"))
    first._checker.spider_closed()
    with pytest.raises(ValueError, match=r"SIMHASH_INDEX='.*store'.*shingle_size 3 \(stored\) != 2 \(now\)"):
        middleware(SIMHASH_INDEX=store, SIMHASH_SCOPE=scope, SIMHASH_SHINGLE_SIZE=2)
    (tmp_path / "a-file").write_text("not a store")
    with pytest.raises(ValueError, match="SIMHASH_INDEX=.*a-file.*is a file"):
        middleware(SIMHASH_INDEX=str(tmp_path / "a-file"), SIMHASH_SCOPE=scope)


def test_host_indexes_share_one_disk_store_held_open_from_the_start(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    mw = middleware(SIMHASH_INDEX=store, SIMHASH_SCOPE="domain")
    assert "in use by another process" in _open_elsewhere(store)  # its lock is taken at the start
    assert re.fullmatch(r"scrapy_simhash\.index\.base\.SimhashIndexError: SIMHASH_INDEX='.*store': .*"
                        r" in use by another process \(one crawl at a time\)", _crawl_start_beside(store))
    for host in ("a.example", "b.example"):
        process(mw, html_response(f"http://{host}/coffee"))
    assert stats(mw)["simhash/kept"] == 2
    mw._checker.spider_closed()
    assert _open_elsewhere(store) == ""  # let go at the close


def _crawl_start_beside(store: str) -> str:
    """The error a second crawl starting on *store* ends with, from another process (a
    crawl's lock is its process's)."""
    starter = (
        "import sys\nfrom scrapy.utils.test import get_crawler\nfrom scrapy_simhash import SimhashMiddleware\n"
        "SimhashMiddleware.from_crawler(get_crawler(settings_dict={'SIMHASH_INDEX': sys.argv[1]}))"
    )
    run = subprocess.run([sys.executable, "-c", starter, store], capture_output=True, text=True)
    return run.stderr.strip().splitlines()[-1]


def _open_elsewhere(store: str) -> str:
    """What another process that opens *store* prints on stderr."""
    opener = "import sys\nfrom scrapy_simhash.index import DiskIndex\nDiskIndex(sys.argv[1]).close()"
    return subprocess.run([sys.executable, "-c", opener, store], capture_output=True, text=True).stderr


def test_a_host_index_that_cannot_be_opened_keeps_its_page_and_counts_an_index_error(
    own_redis_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # a.example's namespace holds fingerprints made with other options: its pages are kept
    # unchecked (one WARNING), other hosts' checked; never an error out of process_response
    mw = middleware(SIMHASH_INDEX=own_redis_server.url, SIMHASH_SCOPE="domain")
    other_options = FingerprintOptions(shingle_size=2).signature()
    open_index(own_redis_server.url, namespace=mw._checker._indexes._namespace("a.example"), signature=other_options).close()
    with caplog.at_level(logging.WARNING, logger="scrapy_simhash"):
        for url in ("http://a.example/coffee", "http://b.example/coffee", "http://a.example/tea"):
            page = html_response(url)
            assert process(mw, page) is page
    assert stats(mw)["simhash/index_error"] == 2 and stats(mw)["simhash/kept"] == 1
    [warning] = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert "host 'a.example'" in warning and "shingle_size" in warning
    mw._checker.spider_closed()


def test_a_host_index_that_cannot_be_opened_is_no_end_to_an_outage(own_redis_server: Any) -> None:
    # The first check past an outage's pause probes the index: a page of a host whose index
    # cannot be opened tells nothing of it, and the next page probes (they were all skipped).
    now = [0.0]
    mw = middleware(SIMHASH_INDEX=own_redis_server.url, SIMHASH_SCOPE="domain")
    mw._checker._outage = Outage(clock=lambda: now[0])
    process(mw, html_response("http://a.example/coffee"))
    own_redis_server.stop()
    process(mw, html_response("http://a.example/copy"))  # fails: an outage, its pause begins
    own_redis_server.start()  # (empty: it keeps nothing on disk)
    other_options = FingerprintOptions(shingle_size=2).signature()
    open_index(own_redis_server.url, namespace=mw._checker._indexes._namespace("bad.example"), signature=other_options).close()
    now[0] += 3600  # past the pause
    process(mw, html_response("http://bad.example/coffee"))  # the probe
    process(mw, html_response("http://c.example/coffee"))  # checked, not skipped
    assert stats(mw)["simhash/index_error"] == 2 and "simhash/index_error/skipped" not in stats(mw)
    assert stats(mw)["simhash/kept"] == 2
    mw._checker.spider_closed()


@pytest.mark.parametrize("scope", ["crawl", "domain"])
@pytest.mark.parametrize(("what", "password"), [("/99", ""), ("/0?no_such_argument=1", ":s3cret@")])
def test_a_redis_url_redis_refuses_fails_the_start_naming_the_setting(
    own_redis_server: Any, what: str, password: str, scope: str
) -> None:
    # (a database the server does not have; an argument redis-py does not take) - a
    # password never shown
    url = own_redis_server.url.rsplit("/", 1)[0].replace("//", f"//{password}") + what
    with pytest.raises(ValueError, match=r"^SIMHASH_INDEX='redis://(:\*\*\*@)?127\.0\.0\.1:\d+/") as error:
        middleware(SIMHASH_INDEX=url, SIMHASH_SCOPE=scope)
    assert "s3cret" not in str(error.value)


def test_an_unreachable_redis_fails_the_start_with_an_index_per_host_too(own_redis_server: Any) -> None:
    own_redis_server.stop()
    with pytest.raises(IndexUnavailableError):
        middleware(SIMHASH_INDEX=own_redis_server.url, SIMHASH_SCOPE="domain")


def test_a_sibling_goes_on_for_its_links_unless_a_dropped_page_led_to_it() -> None:
    """SIMHASH_FOLLOW_DROPPED = "siblings" (the default): a near-duplicate under another
    document name reaches the callback with its match; one step away only."""
    mw = middleware()
    process(mw, html_response("http://a.example/coffee"))
    sibling = html_response("http://a.example/coffee-beans")
    assert process(mw, sibling) is sibling
    assert sibling.request.meta["simhash"]["duplicate_of"] == "http://a.example/coffee"
    with pytest.raises(NearDuplicatePage):
        process(mw, html_response("http://a.example/coffee-cups", simhash_via_dropped=True))
    with pytest.raises(NearDuplicatePage):  # the same document name: a copy
        process(mw, html_response("http://b.example/shop/coffee"))
    assert stats(mw)["simhash/dropped"] == 3
    assert stats(mw)["simhash/dropped/followed"] == 1
    never = middleware(SIMHASH_FOLLOW_DROPPED="never")
    process(never, html_response("http://a.example/coffee"))
    with pytest.raises(NearDuplicatePage):
        process(never, html_response("http://a.example/coffee-beans"))


def test_without_the_spider_middleware_no_near_duplicate_is_followed(caplog: pytest.LogCaptureFixture) -> None:
    """A followed page's items would be kept: the middleware says so and drops siblings too."""
    with caplog.at_level(logging.WARNING, logger="scrapy_simhash"):
        mw = middleware(SPIDER_MIDDLEWARES={})
    assert any("SimhashSpiderMiddleware" in record.getMessage() for record in caplog.records)
    process(mw, html_response("http://a.example/coffee"))
    with pytest.raises(NearDuplicatePage):
        process(mw, html_response("http://a.example/coffee-beans"))
    assert "simhash/dropped/followed" not in stats(mw)


def test_only_the_first_drop_is_logged_without_debug(caplog: pytest.LogCaptureFixture) -> None:
    mw = middleware()
    process(mw, html_response("http://a.example/coffee"))
    caplog.clear()  # (the start may warn of Python stages: no C compiler at install)
    with caplog.at_level(logging.DEBUG, logger="scrapy_simhash"):
        for copy in ("http://a.example/coffee?sid=1", "http://a.example/coffee?sid=2"):
            with pytest.raises(NearDuplicatePage):
                process(mw, html_response(copy))
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("scrapy_simhash")]
    assert len(messages) == 1
    assert "http://a.example/coffee?sid=1 of http://a.example/coffee (distance 0, similarity 1.00)" in messages[0]
    assert "SIMHASH_DEBUG" in messages[0]
    assert caplog.records[0].levelno == logging.DEBUG


def test_simhash_debug_logs_every_drop(caplog: pytest.LogCaptureFixture) -> None:
    mw = middleware(SIMHASH_DEBUG=True)
    process(mw, html_response("http://a.example/coffee"))
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="scrapy_simhash"):
        for copy in ("http://a.example/coffee?sid=1", "http://a.example/coffee?sid=2"):
            with pytest.raises(NearDuplicatePage):
                process(mw, html_response(copy))
    assert len([r for r in caplog.records if r.name.startswith("scrapy_simhash")]) == 2


def test_opening_logs_the_index_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="scrapy_simhash"):
        middleware()
    [record] = [r for r in caplog.records if r.name.startswith("scrapy_simhash") and r.levelno == logging.INFO]
    assert "backend=memory" in record.getMessage() and "max_distance=3" in record.getMessage()


def test_fingerprinting_without_its_c_code_is_warned_of(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scrapy_simhash.core import content

    with caplog.at_level(logging.WARNING, logger="scrapy_simhash"):
        monkeypatch.setattr(content, "_extract", None)  # as if it was not built at install
        mw = middleware()
        SimhashPipeline.from_crawler(mw._checker._crawler)  # the add-on's other components: said once a crawl
    [record] = [r for r in caplog.records if r.name.startswith("scrapy_simhash")]
    assert "main-content extraction" in record.getMessage() and "twice as long" in record.getMessage()


def test_a_fingerprinting_bug_keeps_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    # A real page cannot make a correct core fail, so this one failure is simulated.
    mw = middleware()

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bug")

    monkeypatch.setattr(mw._checker.fingerprinter, "from_tree", broken)
    response = html_response("http://a.example/coffee")
    assert process(mw, response) is response
    assert stats(mw)["simhash/skipped/error"] == 1


def test_spider_closed_records_the_index_size() -> None:
    mw = middleware()
    process(mw, html_response("http://a.example/coffee"))
    mw._checker.spider_closed()
    assert stats(mw)["simhash/index_size/close"] == 1


# --- A shared Redis index that goes away (a real redis-server, stopped mid-run) --------------


def test_an_unreachable_index_at_start_fails_the_start(own_redis_server: Any) -> None:
    own_redis_server.stop()
    with pytest.raises(IndexUnavailableError):
        middleware(SIMHASH_INDEX=own_redis_server.url)


def test_host_indexes_on_one_redis_share_one_client(own_redis_server: Any) -> None:
    """SIMHASH_SCOPE = "domain": a namespace per host, one client (and pool) for them all."""
    import redis

    mw = middleware(SIMHASH_INDEX=own_redis_server.url, SIMHASH_SCOPE="domain")
    for host in range(5):
        process(mw, html_response(f"http://h{host}.example/coffee"))
    indexes = mw._checker._indexes.opened
    assert len(indexes) == 5 and len({id(index._client) for index in indexes}) == 1
    with redis.Redis.from_url(own_redis_server.url) as admin:
        clients = [c for c in admin.client_list() if c["cmd"] != "client|list"]
    assert len(clients) <= 2  # the pool's connections, not one per host
    # each host's copy of its log starts small, whatever SIMHASH_EXPECTED_SIZE says: a
    # thousand hosts must not each hold the buckets of a million pages (1 MB each)
    assert all(index.describe()["design"]["prefix_bits"] <= 8 for index in indexes)
    mw._checker.spider_closed()
    assert mw._checker._indexes._client is None


def test_index_errors_keep_pages_and_warn_once(own_redis_server: Any, caplog: pytest.LogCaptureFixture) -> None:
    mw = middleware(SIMHASH_INDEX=own_redis_server.url, SIMHASH_INDEX_RESET=True)
    process(mw, html_response("http://a.example/coffee"))
    own_redis_server.stop()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="scrapy_simhash"):
        for url in ("http://a.example/copy", "http://a.example/other"):
            response = html_response(url)
            assert process(mw, response) is response
    assert stats(mw)["simhash/index_error"] == 2
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


def test_index_errors_can_fail_the_request(own_redis_server: Any) -> None:
    mw = middleware(SIMHASH_INDEX=own_redis_server.url, SIMHASH_ON_INDEX_ERROR="fail")
    own_redis_server.stop()
    with pytest.raises(IgnoreRequest, match="SIMHASH_ON_INDEX_ERROR") as raised:
        process(mw, html_response("http://a.example/coffee"))
    assert not isinstance(raised.value, NearDuplicatePage)


# --- Scopes -------------------------------------------------------------------------------


def test_domain_scope_compares_pages_of_one_host_only() -> None:
    mw = middleware(SIMHASH_SCOPE="domain")
    process(mw, html_response("http://a.example/coffee"))
    process(mw, html_response("http://b.example/coffee"))
    with pytest.raises(NearDuplicatePage):
        process(mw, html_response("http://a.example/coffee?page=1"))
    assert stats(mw)["simhash/kept"] == 2


def test_in_memory_host_indexes_start_small() -> None:
    """Thousands of hosts must not cost a full-size bucket directory each."""
    mw = middleware(SIMHASH_SCOPE="domain")
    for host in range(3):
        process(mw, html_response(f"http://h{host}.example/coffee"))
    crawl_wide = MemoryIndex(expected_size=mw.config.expected_size).memory_usage()["index_bytes"]
    indexes = mw._checker._indexes.opened
    assert len(indexes) == 3
    for index in indexes:
        assert isinstance(index, MemoryIndex) and index.memory_usage()["index_bytes"] * 10 < crawl_wide


def test_crawl_scope_compares_pages_across_hosts() -> None:
    mw = middleware()
    process(mw, html_response("http://a.example/coffee"))
    with pytest.raises(NearDuplicatePage):
        process(mw, html_response("http://b.example/coffee"))


@pytest.mark.parametrize(("scope", "seen_by_other_spider"), [("crawl", 1), ("spider", 0)])
def test_spider_scope_keeps_spiders_apart_in_a_shared_store(
    tmp_path: Path, scope: str, seen_by_other_spider: int
) -> None:
    settings = {"SIMHASH_INDEX": str(tmp_path / "store"), "SIMHASH_SCOPE": scope}
    first = build_from_crawler(SimhashMiddleware, get_crawler(spider_named("one"), settings))
    process(first, html_response("http://a.example/coffee"))
    first._checker.spider_closed()
    second = build_from_crawler(SimhashMiddleware, get_crawler(spider_named("two"), settings))
    assert stats(second)["simhash/index_size/open"] == seen_by_other_spider
    second._checker.spider_closed()


def spider_named(name: str) -> type[Spider]:
    return type(f"Spider_{name}", (Spider,), {"name": name})


def test_meta_carries_the_wildcard_and_the_index_honours_it() -> None:
    mw = middleware(SIMHASH_WILDCARD_BITS=5)
    first = html_response("http://a.example/coffee")
    process(mw, first)
    meta = first.request.meta["simhash"]
    fingerprint, wildcard = from_hex(meta["fingerprint"]), from_hex(meta["wildcard"])
    assert wildcard.bit_count() == 5
    # A page whose fingerprint differs from the stored one in 3 wildcard bits and
    # 3 others is 6 bits away, yet within k = 3 outside its wildcard: a near-duplicate.
    index = mw._checker._indexes.for_host("")
    other_bits = [bit for bit in range(64) if not (wildcard >> bit) & 1][:3]
    wildcard_bits = [bit for bit in range(64) if (wildcard >> bit) & 1][:3]
    variant = fingerprint
    for bit in other_bits + wildcard_bits:
        variant ^= 1 << bit
    assert index.query(variant) == []
    assert [m.distance for m in index.query(variant, wildcard)] == [6]


def test_a_page_stored_by_an_earlier_crawl_is_unchanged_and_reaches_its_callback(tmp_path: Path) -> None:
    """Unchanged: not a near-duplicate (it goes on, for its links), flagged for its items."""
    store = str(tmp_path / "simhash.index")
    first_run = middleware(SIMHASH_INDEX=store)
    process(first_run, html_response("http://a.example/coffee"))
    first_run._checker.spider_closed()
    second_run = middleware(SIMHASH_INDEX=store)
    again = html_response("http://a.example/coffee")
    assert process(second_run, again) is again
    meta = again.request.meta["simhash"]
    assert meta["unchanged"] is True and meta["duplicate_of"] == "http://a.example/coffee" and meta["distance"] == 0
    with pytest.raises(NearDuplicatePage):
        process(second_run, html_response("http://b.example/mirror/coffee"))
    assert stats(second_run)["simhash/unchanged"] == 1
    assert stats(second_run)["simhash/dropped"] == 1
    assert "simhash/seen_again" not in stats(second_run)
    second_run._checker.spider_closed()
    with open_index(store) as index:
        assert len(index) == 1  # nothing added


def test_keep_unchanged_hands_a_refetched_page_on_as_new(tmp_path: Path) -> None:
    store = str(tmp_path / "simhash.index")
    first_run = middleware(SIMHASH_INDEX=store)
    process(first_run, html_response("http://a.example/coffee"))
    first_run._checker.spider_closed()
    second_run = middleware(SIMHASH_INDEX=store, SIMHASH_KEEP_UNCHANGED=True)
    again = html_response("http://a.example/coffee")
    assert process(second_run, again) is again
    assert again.request.meta["simhash"]["unchanged"] is False
    assert again.request.meta["simhash"]["duplicate_of"] is None
    assert stats(second_run)["simhash/unchanged"] == 1


def test_a_page_refetched_within_one_crawl_is_seen_again_not_unchanged(tmp_path: Path) -> None:
    """A retry, or a JOBDIR crawl resumed after a kill: the checked keys live in JOBDIR."""
    jobdir = str(tmp_path / "job")
    first_run = middleware(JOBDIR=jobdir)
    process(first_run, html_response("http://a.example/coffee"))
    again = html_response("http://a.example/coffee")
    assert process(first_run, again) is again and again.request.meta["simhash"]["unchanged"] is False
    assert stats(first_run)["simhash/seen_again"] == 1
    first_run._checker._indexes.for_host("").flush()  # killed: the index had written its record, nothing was closed
    resumed = middleware(JOBDIR=jobdir)
    after_kill = html_response("http://a.example/coffee")
    assert process(resumed, after_kill) is after_kill
    assert after_kill.request.meta["simhash"]["unchanged"] is False
    assert stats(resumed)["simhash/seen_again"] == 1
    assert "simhash/unchanged" not in stats(resumed)



def test_a_reopened_store_has_its_key_lookup_built_before_the_first_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """replace_if_new finds a page's earlier records by the CRCs of every key: built when
    the crawl opens the index, not by its first check, on the reactor (5 s at 10M pages)."""
    from scrapy_simhash.index import _key_lookup

    store = str(tmp_path / "simhash.index")
    with open_index(store) as index:
        index.add_many((n * 0x9E3779B97F4A7C15 % 2**64, f"http://a.example/{n}") for n in range(5000))
    mw = middleware(SIMHASH_INDEX=store)

    def no_crcs(*args: Any) -> list[int]:
        raise AssertionError("a check computed the keys' CRCs")

    monkeypatch.setattr(_key_lookup, "crcs_of_keys", no_crcs)
    page = html_response("http://a.example/17")
    assert process(mw, page) is page
    assert stats(mw)["simhash/changed"] == 1  # its record of the first run found, by key, and replaced
    mw._checker.spider_closed()


def test_a_hosts_stored_index_has_its_key_lookup_built_in_the_worker_thread_that_opens_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIMHASH_SCOPE = "domain": a host's index is opened, its key lookup built, off the
    reactor's thread; its first check computes no key's CRC."""
    from scrapy_simhash.index import _key_lookup

    store = str(tmp_path / "simhash.index")
    with open_index(store, namespace="a.example") as index:
        index.add_many((n * 0x9E3779B97F4A7C15 % 2**64, f"http://a.example/{n}") for n in range(5000))
    mw = middleware(SIMHASH_INDEX=store, SIMHASH_SCOPE="domain")
    on_main_thread: list[bool] = []
    real = _key_lookup.crcs_of_keys

    def crcs_of_keys(*args: Any) -> Any:
        on_main_thread.append(threading.current_thread() is threading.main_thread())
        return real(*args)

    monkeypatch.setattr(_key_lookup, "crcs_of_keys", crcs_of_keys)
    page = html_response("http://a.example/17")
    assert process(mw, page) is page
    assert stats(mw)["simhash/changed"] == 1  # its record of the first run found, by key, and replaced
    assert on_main_thread == [False]  # every key's CRC, once, in the worker thread
    mw._checker.spider_closed()
