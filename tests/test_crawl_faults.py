"""Faults in real crawls: a crawl killed with SIGKILL and run again over its on-disk
index; Redis stopped in the middle of a crawl and started again."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import CRAWL_SETTINGS, EXAMPLE_PROJECT, CorpusSample, RecordingSpider, crawl
from redis_server import RedisServer, own_redis_server  # noqa: F401  (fixture)
from scrapy import signals
from scrapy.utils.test import get_crawler

from scrapy_simhash import _outage
from scrapy_simhash._glue import NearDuplicateChecker
from scrapy_simhash.config import SimhashSettings
from scrapy_simhash.index import DiskIndex

# A crawl by the demo spider (start URL, settings as JSON, example project's path), in
# the tests' order; prints each page's URL once the middleware has kept (recorded) it.
_CRAWL = """
import json, sys
sys.path.insert(0, sys.argv[3])
from demo.spiders.demo import DemoSpider
from scrapy import signals
from scrapy.crawler import AsyncCrawlerProcess

process = AsyncCrawlerProcess({**json.loads(sys.argv[2]), "LOG_LEVEL": "ERROR"})
crawler = process.create_crawler(DemoSpider)

def kept(item):
    print(item["url"], flush=True)

crawler.signals.connect(kept, signals.item_scraped)  # (a weak reference: not a lambda)
process.crawl(crawler, start_url=sys.argv[1])
process.start()
"""


def _crawl_until_killed(url: str, settings: dict[str, Any], pages: int) -> set[str]:
    """Crawl in a child process; SIGKILL it once it has kept *pages* pages; return them."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CRAWL, url, json.dumps({**CRAWL_SETTINGS, **settings}), str(EXAMPLE_PROJECT)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    kept = {child.stdout.readline().strip() for _ in range(pages)}
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stdout.close()
    assert "" not in kept, "the crawl ended before it was killed"
    return kept


def _stored_keys(index: Path) -> set[str]:
    with DiskIndex(index) as opened:
        return {key for _, key in opened.items()}


def test_a_crawl_killed_with_sigkill_loses_nothing_and_resumes(corpus_sample: CorpusSample, tmp_path: Path) -> None:
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    settings = {"SIMHASH_INDEX": str(killed), "DEPTH_LIMIT": 1}
    kept_before_kill = _crawl_until_killed(corpus_sample.url, settings, 40)
    assert kept_before_kill <= _stored_keys(killed)  # the store opens and holds every page it kept

    resumed = crawl(RecordingSpider, settings, start_url=corpus_sample.url)
    crawl(RecordingSpider, {**settings, "SIMHASH_INDEX": str(clean)}, start_url=corpus_sample.url)
    # Without JOBDIR the next crawl is a repeat crawl: the pages kept before the kill come
    # back unchanged (their links followed), never dropped as their own copy...
    assert resumed.stats.get_value("simhash/unchanged", 0) >= len(kept_before_kill)
    assert not {drop.url for drop in resumed.spider.dropped_pages} & kept_before_kill
    # ...and the two runs together keep what one uninterrupted crawl keeps.
    assert _stored_keys(killed) == _stored_keys(clean)


def _crawl_signalling_redis(
    url: str, server: RedisServer, at: dict[int, signal.Signals], **settings: Any
) -> tuple[Any, list[str]]:
    """The demo crawl on *server*, which is sent ``at[n]`` once n responses came (SIGSTOP:
    it hangs, its connections open; SIGCONT: it answers again), and let go on at the end;
    the crawler, and the URLs fetched in order."""
    fetched: list[str] = []

    def on_response(response: Any, request: Any, spider: Any) -> None:
        fetched.append(response.url)
        if len(fetched) in at:
            os.kill(server.pid, at[len(fetched)])

    try:
        crawler = crawl(RecordingSpider, {"SIMHASH_INDEX": server.url, **settings},
                        handlers={signals.response_downloaded: on_response}, start_url=url)
    finally:
        os.kill(server.pid, signal.SIGCONT)
    return crawler, fetched


def test_redis_stopped_mid_crawl_keeps_pages_then_recovers(
    demo_url: str, own_redis_server: RedisServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With SIMHASH_ON_INDEX_ERROR = "keep" (the default), pages fetched while Redis is
    down are kept unchecked and counted, one WARNING says so, and once Redis is back
    (empty: it had no persistence) the crawl finds near-duplicates again."""
    # The demo crawl takes less than the first pause after a failure: ask at every page.
    monkeypatch.setattr(_outage, "FIRST_PAUSE", 0.0)
    fetched: list[str] = []

    def outage(response: Any, request: Any, spider: Any) -> None:
        fetched.append(response.url)
        if len(fetched) == 2:
            own_redis_server.stop()
        elif len(fetched) == 5:
            own_redis_server.start()

    caplog.set_level(logging.INFO, logger="scrapy_simhash")
    crawler = crawl(
        RecordingSpider,
        {"SIMHASH_INDEX": own_redis_server.url},
        handlers={signals.response_downloaded: outage},
        start_url=demo_url,
    )
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "finished"
    assert stats["simhash/index_error"] >= 1
    messages = [(record.levelno, record.getMessage()) for record in caplog.records]
    assert len([text for level, text in messages if level == logging.WARNING and "index unavailable" in text]) == 1
    assert any("available again" in text for _, text in messages)
    after_restart = set(fetched[5:])
    drops = crawler.spider.dropped_pages
    assert drops and all(drop.url in after_restart for drop in drops)


def test_a_hung_redis_costs_one_timeout_per_pause_not_one_per_page(
    demo_url: str, own_redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis stops answering (SIGSTOP: connections open, no replies) after 2 pages: the
    first check waits out the socket timeout, the pages after it are kept unchecked at
    once, without asking Redis, and the crawl finishes."""
    caplog.set_level(logging.INFO, logger="scrapy_simhash")
    crawler, fetched = _crawl_signalling_redis(demo_url, own_redis_server, {2: signal.SIGSTOP})
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "finished"
    waited = stats["simhash/index_error"] - stats.get("simhash/index_error/skipped", 0)
    # One call waits out the timeout (5 s), then one after each pause (1 s, 2 s, ...):
    # the other pages do not wait (one request at a time, ~15 pages).
    assert 1 <= waited <= 3 and stats["simhash/index_error/skipped"] >= 5
    assert "Timeout" in caplog.text or "timed out" in caplog.text
    assert len(crawler.spider.items) == len(fetched) - 2  # every page reached its callback (robots.txt aside)


def test_a_hung_redis_with_fail_fails_the_pages_without_waiting_each(
    demo_url: str, own_redis_server: RedisServer
) -> None:
    """``SIMHASH_ON_INDEX_ERROR = "fail"``: Redis hangs after 4 responses; the first check
    waits out the socket timeout and fails its request, the pages after it fail at once
    (not asked for the pause), and the crawl finishes."""
    crawler, _ = _crawl_signalling_redis(demo_url, own_redis_server, {4: signal.SIGSTOP},
                                         SIMHASH_ON_INDEX_ERROR="fail")
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "finished"
    skipped = stats.get("simhash/index_error/skipped", 0)
    assert 1 <= stats["simhash/index_error"] - skipped <= 3 and skipped >= 3  # waited, failed at once
    failed = [exc for exc in crawler.spider.dropped_pages if "SIMHASH_ON_INDEX_ERROR" in str(exc)]
    assert len(failed) == stats["simhash/index_error"]
    assert len(crawler.spider.items) <= 3  # the pages checked before the hang (robots.txt aside)


def test_a_hung_redis_that_answers_again_is_used_again(
    demo_url: str, own_redis_server: RedisServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis hangs (SIGSTOP) after 2 responses and answers again (SIGCONT) at the next
    one: one check waits out the timeout and keeps its page, the next asks Redis again,
    an INFO line says the index is back, and near-duplicates are dropped again."""
    monkeypatch.setattr(_outage, "FIRST_PAUSE", 0.0)  # (the demo crawl is shorter than the first pause)
    caplog.set_level(logging.INFO, logger="scrapy_simhash")
    crawler, fetched = _crawl_signalling_redis(demo_url, own_redis_server, {2: signal.SIGSTOP, 3: signal.SIGCONT})
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "finished"
    assert stats["simhash/index_error"] == 1
    messages = [(record.levelno, record.getMessage()) for record in caplog.records]
    assert len([text for level, text in messages if level == logging.WARNING and "index unavailable" in text]) == 1
    assert any("available again, after 1 failed checks" in text for _, text in messages)
    drops = crawler.spider.dropped_pages
    assert drops and all(drop.url in fetched[2:] for drop in drops)


def test_checks_queued_for_a_thread_behind_a_hung_redis_do_not_ask_it_in_turn(
    own_redis_server: RedisServer,
) -> None:
    """Checks let through before Redis was seen to hang wait for a worker thread behind
    those waiting out the socket timeout: once one of those failed, the rest leave Redis
    alone when their thread takes them up, instead of each waiting out the timeout in
    turn (the last items of a crawl passed its pipeline at about one a second)."""
    crawler = get_crawler(settings_dict={"SIMHASH_INDEX": own_redis_server.url})
    checker = NearDuplicateChecker(crawler, SimhashSettings.from_settings(crawler.settings), kind="item",
                                   stats_prefix="simhash/items", logger=logging.getLogger(__name__))
    threads, checks = 2, 8
    asked: list[str] = []
    replace_if_new = checker._replace_if_new

    def asking(fingerprint: int, key: str, *args: Any) -> Any:
        asked.append(key)
        return replace_if_new(fingerprint, key, *args)

    checker._replace_if_new = asking  # type: ignore[method-assign]

    async def check_all() -> list[Any]:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(threads))
        return await asyncio.gather(*(checker.check(0x9E37_79B9_7F4A_7C15 * n % 2**64, f"http://h/{n}")
                                      for n in range(1, checks + 1)))

    os.kill(own_redis_server.pid, signal.SIGSTOP)
    try:
        results = asyncio.run(check_all())
    finally:
        os.kill(own_redis_server.pid, signal.SIGCONT)
    checker.spider_closed()
    stats = crawler.stats.get_stats()
    assert results == [None] * checks  # all kept, unchecked
    assert asked == ["http://h/1", "http://h/2"]  # one call a thread asked Redis and waited
    assert stats["simhash/items/index_error"] == checks
    assert stats["simhash/items/index_error/skipped"] == checks - threads


def test_the_pause_after_a_failure_doubles_up_to_its_bound_and_ends_with_a_success() -> None:
    now = [100.0]
    outage = _outage.Outage(clock=lambda: now[0])
    assert not outage.skipping()
    pauses = []
    for _ in range(8):
        outage.failed()
        pauses.append(outage.pause)
        assert outage.skipping()
        now[0] += outage.pause  # the pause is over: the next call asks the index
        assert not outage.skipping()
    assert pauses == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    outage.recovered()
    outage.failed()
    assert outage.pause == _outage.FIRST_PAUSE


def test_past_the_pause_one_call_probes_the_index_and_the_others_skip_until_it_ends() -> None:
    """A hung Redis holds its probe for the socket timeout: the pages checked meanwhile
    must not wait with it (16 in flight with Scrapy's default concurrency)."""
    now = [100.0]
    outage = _outage.Outage(clock=lambda: now[0])
    outage.failed()
    now[0] += outage.pause
    assert [outage.skipping() for _ in range(4)] == [False, True, True, True]  # one probe
    outage.failed()  # the probe timed out: a longer pause, then one probe again
    assert outage.pause == 2 * _outage.FIRST_PAUSE and outage.skipping()
    now[0] += outage.pause
    assert [outage.skipping() for _ in range(3)] == [False, True, True]
    outage.probe_over()  # the probe ended in another error: the next call probes
    assert [outage.skipping() for _ in range(2)] == [False, True]
    outage.recovered()
    assert not any(outage.skipping() for _ in range(3))  # no outage: every call asks


def test_a_call_let_through_before_an_outage_began_leaves_the_index_alone_when_taken_up() -> None:
    """A call waits for a worker thread after it is let through: when its thread takes it
    up, it asks the index only if no outage began meanwhile (or that outage is over)."""
    now = [100.0]
    outage = _outage.Outage(clock=lambda: now[0])
    let_through = outage.failures
    assert not outage.began_since(let_through)
    outage.failed()  # another call, taken up earlier, waited out the timeout
    assert outage.began_since(let_through)
    now[0] += outage.pause
    assert not outage.skipping()  # the probe, let through after the failure, asks
    assert not outage.began_since(outage.failures)
    outage.recovered()
    assert not outage.began_since(let_through)  # the outage is over: a call still waiting asks
