"""Real crawls of the demo site (example_project/demo_site) on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_PROJECT, CorpusSample, RecordingSpider, crawl, local_url
from redis_cluster import cluster_url, redis_cluster  # noqa: F401  (fixtures)
from redis_server import redis_url, shared_redis_server  # noqa: F401  (fixtures)

from scrapy_simhash import NearDuplicateItem, NearDuplicatePage, from_hex, hamming_distance
from scrapy_simhash._indexes import ComponentIndexes
from scrapy_simhash.config import JOBDIR_INDEX_NAME

#: The copies in the demo site, each with its original (order-free: either may come first).
DEMO_NEAR_DUPLICATES = {
    frozenset({"/", "/index.html"}),  # the home page under two URLs
    frozenset({"/articles/coffee-roasting.html", "/mirror/coffee-roasting.html"}),  # mirror
    frozenset({"/articles/tide-pools.html", "/articles/tide-pools.html?print=1"}),  # print version
    frozenset({"/articles/bread-starter.html", "/articles/bread-starter.html;jsessionid=4F2A9C71E05B"}),
    frozenset({"/articles/bike-chain.html", "/articles/bike-chain.html?utm_source=newsletter&utm_medium=email"}),
}



def test_demo_crawl_drops_exactly_the_copies(demo_url: str) -> None:
    crawler = crawl(RecordingSpider, start_url=demo_url)
    drops = crawler.spider.dropped_pages
    assert all(isinstance(drop, NearDuplicatePage) for drop in drops)
    assert {frozenset({local_url(d.url), local_url(d.duplicate_of)}) for d in drops} == DEMO_NEAR_DUPLICATES
    # Full Hamming distances: k = 3 counts only outside the page's 14 wildcard bits.
    assert all(0 <= drop.distance <= 3 + 14 for drop in drops)
    assert any(drop.distance > 0 for drop in drops)  # the print version: a near, not exact, copy
    stats = crawler.stats.get_stats()
    assert stats["simhash/dropped"] == len(DEMO_NEAR_DUPLICATES)
    assert stats["simhash/kept"] == stats["simhash/checked"] - stats["simhash/dropped"]
    assert stats.get("simhash/exact", 0) + stats.get("simhash/near", 0) == stats["simhash/dropped"]
    assert stats["simhash/skipped/robots_txt"] == 1
    assert stats["simhash/skipped/not_html"] == 1  # api/articles.json
    assert stats["simhash/index_size/close"] == stats["simhash/kept"]


def test_dropped_pages_are_not_parsed(demo_url: str) -> None:
    crawler = crawl(RecordingSpider, start_url=demo_url)
    parsed = {local_url(item["url"]) for item in crawler.spider.items}
    dropped = {local_url(drop.url) for drop in crawler.spider.dropped_pages}
    assert dropped and not parsed & dropped


def test_mark_mode_parses_every_page_and_the_pipeline_drops_the_copies(demo_url: str) -> None:
    crawler = crawl(RecordingSpider, {"SIMHASH_ACTION": "mark"}, start_url=demo_url)
    spider = crawler.spider
    assert spider.dropped_pages == []
    dropped_items = spider.dropped_items
    assert all(isinstance(drop, NearDuplicateItem) for drop in dropped_items)
    assert {frozenset({local_url(d.key), local_url(d.duplicate_of)}) for d in dropped_items} == DEMO_NEAR_DUPLICATES
    kept = {local_url(item["url"]) for item in spider.items}
    assert not any(pair <= kept for pair in DEMO_NEAR_DUPLICATES)
    stats = crawler.stats.get_stats()
    assert stats["simhash/marked"] == len(DEMO_NEAR_DUPLICATES)
    assert stats["simhash/items/dropped"] == len(DEMO_NEAR_DUPLICATES)


def test_dont_simhash_lets_a_request_through(demo_url: str) -> None:
    class Spider(RecordingSpider):
        async def start(self):  # type: ignore[no-untyped-def]
            for url in ("articles/coffee-roasting.html", "mirror/coffee-roasting.html"):
                yield self.request(url)

        def request(self, path: str):  # type: ignore[no-untyped-def]
            from scrapy import Request

            return Request(self.start_url + path, meta={"dont_simhash": True}, errback=self.dropped)

        def parse(self, response):  # type: ignore[no-untyped-def]
            self.items.append({"url": response.url, "simhash": response.meta.get("simhash")})
            return []

    crawler = crawl(Spider, start_url=demo_url)
    assert len(crawler.spider.items) == 2
    assert all(item["simhash"] is None for item in crawler.spider.items)
    assert crawler.stats.get_value("simhash/checked") is None


@pytest.mark.parametrize("scope", ["crawl", "spider", "domain"])
def test_every_scope_finds_the_same_copies(demo_url: str, scope: str) -> None:
    crawler = crawl(RecordingSpider, {"SIMHASH_SCOPE": scope}, start_url=demo_url)
    drops = crawler.spider.dropped_pages
    assert {frozenset({local_url(d.url), local_url(d.duplicate_of)}) for d in drops} == DEMO_NEAR_DUPLICATES


@pytest.mark.parametrize("store", ["disk", "redis"])
def test_a_hosts_index_opens_off_the_reactor(
    demo_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, store: str
) -> None:
    """SIMHASH_SCOPE = "domain" on a disk store or Redis: a host's index reads the store
    (its namespace's log) when its first page comes, in a worker thread, while the reactor
    thread checks other pages."""
    opened_in: list[str] = []
    open_index = ComponentIndexes._open_index

    def recording(self: ComponentIndexes, namespace: str, host: str) -> Any:
        opened_in.append(threading.current_thread().name)
        return open_index(self, namespace, host)

    monkeypatch.setattr(ComponentIndexes, "_open_index", recording)
    index = str(tmp_path / "store") if store == "disk" else request.getfixturevalue("redis_url")
    settings = {"SIMHASH_SCOPE": "domain", "SIMHASH_INDEX": index, "SIMHASH_NAMESPACE": f"off-reactor-{tmp_path.name}"}
    crawler = crawl(RecordingSpider, settings, start_url=demo_url)
    drops = crawler.spider.dropped_pages
    assert {frozenset({local_url(d.url), local_url(d.duplicate_of)}) for d in drops} == DEMO_NEAR_DUPLICATES
    assert opened_in and threading.main_thread().name not in opened_in


def test_a_disk_index_writes_and_fsyncs_off_the_reactor(
    demo_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With SIMHASH_FSYNC, a disk index's checks write and fsync its log in worker threads,
    one call at a time: the reactor thread waits on the disk only to open and close the
    store, never in a check."""
    in_checks: list[str] = []  # the threads of the fsyncs made by checks
    fsync = os.fsync

    def recording(fd: int) -> None:
        if any(frame.name == "replace_if_new" for frame in traceback.extract_stack()):
            in_checks.append(threading.current_thread().name)
        fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)
    settings = {"SIMHASH_INDEX": str(tmp_path / "store"), "SIMHASH_FSYNC": "always"}
    crawler = crawl(RecordingSpider, settings, start_url=demo_url)
    drops = crawler.spider.dropped_pages
    assert {frozenset({local_url(d.url), local_url(d.duplicate_of)}) for d in drops} == DEMO_NEAR_DUPLICATES
    assert len(in_checks) >= crawler.stats.get_value("simhash/kept")  # (an fsync a write)
    assert threading.main_thread().name not in in_checks


def test_a_sample_of_the_dev_corpus_is_deduplicated(corpus_sample: CorpusSample) -> None:
    """Scored against the corpus's labels; the bounds are the project's targets less a
    margin for a sample this small (the full measure: ``scrapy-simhash evaluate``)."""
    crawler = crawl(RecordingSpider, {"DEPTH_LIMIT": 1, "CONCURRENT_REQUESTS": 8}, start_url=corpus_sample.url)
    drops = [
        (corpus_sample.ids.get(local_url(d.url)), corpus_sample.ids.get(local_url(d.duplicate_of)))
        for d in crawler.spider.all_drops()
    ]
    assert all(page_id and original for page_id, original in drops), "a drop outside the sample"
    labels = [corpus_sample.labels.get(frozenset(pair), "distinct") for pair in drops]
    correct, wrong = labels.count("dup"), labels.count("distinct")
    possible = _droppable(corpus_sample)
    assert crawler.stats.get_value("downloader/response_status_count/200") > len(corpus_sample.ids)
    assert wrong <= 0.03 * max(1, correct + wrong), f"{wrong} distinct pages dropped, {correct} copies"
    assert correct >= 0.9 * possible, f"{correct} of {possible} copies dropped"


def _droppable(sample: CorpusSample) -> int:
    """Pages that duplicate another sampled page, less one per cluster (its first page is kept)."""
    pages = set(sample.ids.values())
    parent = {page: page for page in pages}

    def root(page: str) -> str:
        while parent[page] != page:
            page = parent[page]
        return page

    for pair, label in sample.labels.items():
        if label == "dup" and pair <= pages:
            first, second = sorted(pair)
            parent[root(second)] = root(first)
    return len(pages) - len({root(page) for page in pages})


def test_jobdir_pause_and_resume_remembers_the_pages_seen(demo_url: str, tmp_path: Path) -> None:
    """Stop half-way, resume with the same JOBDIR: nothing kept before is kept again."""
    settings = {"JOBDIR": str(tmp_path / "job")}
    first = crawl(RecordingSpider, {**settings, "CLOSESPIDER_PAGECOUNT": 6}, start_url=demo_url)
    assert first.stats.get_value("finish_reason") == "closespider_pagecount"
    assert (tmp_path / "job" / JOBDIR_INDEX_NAME).exists()
    second = crawl(RecordingSpider, settings, start_url=demo_url)
    kept_before = first.stats.get_value("simhash/index_size/close")
    assert kept_before > 0
    assert second.stats.get_value("simhash/index_size/open") == kept_before

    before, after = _fingerprints(first.spider.items), _fingerprints(second.spider.items)
    assert before and after
    assert all(hamming_distance(a, b) > 3 for a in before for b in after)
    first_urls = {local_url(item["url"]) for item in first.spider.items}
    assert any(local_url(drop.duplicate_of) in first_urls for drop in second.spider.dropped_pages)
    drops = first.spider.dropped_pages + second.spider.dropped_pages
    assert {frozenset({local_url(d.url), local_url(d.duplicate_of)}) for d in drops} <= DEMO_NEAR_DUPLICATES


def _fingerprints(items: list[dict[str, Any]]) -> list[int]:
    """The fingerprints of the pages kept (short pages, skipped, have none)."""
    return [from_hex(item["simhash"]["fingerprint"]) for item in items if item["simhash"]]


@pytest.mark.parametrize("server", ["redis_url", "cluster_url"], ids=["redis", "redis-cluster"])
def test_a_shared_redis_index_finds_the_same_copies(demo_url: str, server: str, request: pytest.FixtureRequest) -> None:
    """Redis calls run in worker threads; the crawl's result is the same (one server, or
    the URL of a node of a Redis Cluster)."""
    url = request.getfixturevalue(server)
    crawler = crawl(RecordingSpider, {"SIMHASH_INDEX": url, "CONCURRENT_REQUESTS": 4}, start_url=demo_url)
    drops = crawler.spider.dropped_pages
    assert {frozenset({local_url(d.url), local_url(d.duplicate_of)}) for d in drops} == DEMO_NEAR_DUPLICATES


def test_projects_sharing_a_redis_database_do_not_share_pages(demo_url: str, redis_url: str) -> None:
    """The namespace is the project's own (BOT_NAME) unless SIMHASH_NAMESPACE names one."""
    import redis

    for bot in ("shop", "news"):
        crawler = crawl(RecordingSpider, {"SIMHASH_INDEX": redis_url, "BOT_NAME": bot}, start_url=demo_url)
        assert crawler.stats.get_value("simhash/dropped") == len(DEMO_NEAR_DUPLICATES)
        assert crawler.stats.get_value("simhash/index_size/open") == 0  # not the other project's pages
    crawler = crawl(RecordingSpider, {"SIMHASH_INDEX": redis_url, "BOT_NAME": "other",
                                      "SIMHASH_NAMESPACE": "shop"}, start_url=demo_url)
    assert crawler.stats.get_value("simhash/index_size/open") > 0  # the namespace named, shared on purpose
    with redis.Redis.from_url(redis_url) as client:
        prefixes = {key.split(b":")[1] for key in client.keys("simhash:*")}
    assert prefixes == {b"shop", b"news"}


def test_the_example_project_runs_in_one_command() -> None:
    """``python example_project/run_demo.py``: Scrapy's own command, with the asyncio reactor."""
    result = subprocess.run(
        [sys.executable, str(EXAMPLE_PROJECT / "run_demo.py"), "-s", "SIMHASH_DEBUG=True", "-s", "LOG_LEVEL=DEBUG"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    log = result.stderr
    assert "AsyncioSelectorReactor" in log
    assert "Simhash page index opened: backend=memory" in log
    dropped = [line for line in log.splitlines() if "near-duplicate of" in line and "[demo] INFO: Dropped" in line]
    assert len(dropped) == len(DEMO_NEAR_DUPLICATES)
    assert f"'simhash/dropped': {len(DEMO_NEAR_DUPLICATES)}" in log


def test_follow_dropped_hands_copies_on_for_their_links_and_drops_their_items(demo_url: str) -> None:
    default = crawl(RecordingSpider, start_url=demo_url)
    followed = crawl(RecordingSpider, {"SIMHASH_FOLLOW_DROPPED": True}, start_url=demo_url)
    dropped = default.stats.get_value("simhash/dropped")
    assert followed.stats.get_value("simhash/dropped") == dropped > 0
    assert followed.stats.get_value("simhash/dropped/items_dropped") == dropped  # one item a page
    assert followed.spider.dropped_pages == []  # no NearDuplicatePage: they reached their callback
    assert sorted(item["url"] for item in followed.spider.items) == sorted(item["url"] for item in default.spider.items)
    assert followed.stats.get_value("response_received_count") >= default.stats.get_value("response_received_count")
