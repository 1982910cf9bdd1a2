"""Shared fixtures: the demo site served on 127.0.0.1, and real crawls run in-process."""

from __future__ import annotations

import asyncio
import gzip
import html
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.spiders import Spider
from scrapy.utils.test import get_crawler

from scrapy_simhash import NearDuplicatePage, from_hex

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_PROJECT = REPO / "example_project"
DEMO_SITE = EXAMPLE_PROJECT / "demo_site"
CORPUS = REPO.parent / "shared" / "corpus" / "dev"
#: For tests that read the dev corpus: skipped, saying why, in a checkout without it.
needs_corpus = pytest.mark.skipif(
    not (CORPUS / "pages.jsonl.gz").exists(), reason=f"the dev corpus is not at {CORPUS}"
)

# The example project is not a package of this repo: import its server and spider from it.
sys.path.insert(0, str(EXAMPLE_PROJECT))

from demo.spiders.demo import DemoSpider  # noqa: E402
from serve_demo import start_server  # noqa: E402

#: Quiet, deterministic crawls: one request at a time, breadth-first.
CRAWL_SETTINGS: dict[str, Any] = {
    "ADDONS": {"scrapy_simhash.Addon": 300},
    "ROBOTSTXT_OBEY": True,
    "CONCURRENT_REQUESTS": 1,
    "DEPTH_PRIORITY": 1,
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    "LOG_LEVEL": "INFO",
}


@pytest.fixture(scope="session")
def demo_url() -> Iterator[str]:
    """The demo site of ``example_project/``, served from a thread."""
    server = start_server(DEMO_SITE)
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


class RecordingSpider(DemoSpider):
    """The demo spider, keeping what its errback and the pipeline saw."""

    name = "demo"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dropped_pages: list[Any] = []
        self.items: list[dict[str, Any]] = []
        self.dropped_items: list[Any] = []
        #: The near-duplicates SIMHASH_FOLLOW_DROPPED handed to the callback, for their links.
        self.followed_drops: list[NearDuplicatePage] = []

    def parse(self, response: Any) -> Iterator[Any]:
        match = response.meta.get("simhash") or {}
        if match.get("duplicate_of") and not match["unchanged"]:
            self.followed_drops.append(NearDuplicatePage(
                response.url, from_hex(match["fingerprint"]), match["duplicate_of"], match["distance"],
                match["similarity"],
            ))
        yield from super().parse(response)

    def dropped(self, failure: Any) -> None:
        self.dropped_pages.append(failure.value)
        super().dropped(failure)

    def all_drops(self) -> list[NearDuplicatePage]:
        """Every near-duplicate, whether its links were followed or not."""
        return [drop for drop in self.dropped_pages if isinstance(drop, NearDuplicatePage)] + self.followed_drops


def crawl(
    spidercls: type[Spider],
    settings: dict[str, Any] | None = None,
    *,
    handlers: dict[object, Callable[..., Any]] | None = None,
    **spider_kwargs: Any,
) -> Crawler:
    """Run a real crawl to the end (no reactor: Scrapy's asyncio-only mode) and return the crawler.

    *handlers* maps Scrapy signals to functions connected for the crawl.
    """
    crawler = get_crawler(spidercls, {**CRAWL_SETTINGS, **(settings or {})})
    for signal, handler in (handlers or {}).items():
        crawler.signals.connect(handler, signal=signal)

    def item_scraped(item: Any) -> None:
        crawler.spider.items.append(item)

    def item_dropped(item: Any, exception: BaseException) -> None:
        crawler.spider.dropped_items.append(exception)

    if issubclass(spidercls, RecordingSpider):
        crawler.signals.connect(item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(item_dropped, signal=signals.item_dropped)
    asyncio.run(crawler.crawl_async(**spider_kwargs))
    return crawler


# --- A sample of the dev corpus, served as a site -------------------------------------------

#: Pages from near-duplicate clusters, and pages that duplicate nothing.
CLUSTER_PAGES, LONE_PAGES = 100, 50
_MAX_CLUSTER = 4


@dataclass(frozen=True)
class CorpusSample:
    url: str  # the sample site's index page, linking every page
    ids: dict[str, str]  # local URL (path;params?query) -> page id
    labels: dict[frozenset[str], str]  # {id_a, id_b} -> dup / ambiguous (unlisted pairs are distinct)


def local_url(url: str) -> str:
    """The URL without scheme and host (servers' ports change between runs)."""
    parts = urlparse(url)
    return unquote(parts.path) + (f";{parts.params}" if parts.params else "") + (f"?{parts.query}" if parts.query else "")


def _read_jsonl(name: str) -> list[dict[str, Any]]:
    with gzip.open(CORPUS / name, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def _sample_ids(pairs: list[dict[str, Any]], all_ids: list[str]) -> list[str]:
    """Whole near-duplicate clusters (up to CLUSTER_PAGES pages), then lone pages."""
    clusters: dict[str, set[str]] = {}
    for pair in pairs:
        if pair["label"] == "dup":
            merged = clusters.get(pair["id_a"], {pair["id_a"]}) | clusters.get(pair["id_b"], {pair["id_b"]})
            for page_id in merged:
                clusters[page_id] = merged
    chosen: list[str] = []
    for cluster in sorted({frozenset(c) for c in clusters.values()}, key=min):
        if len(cluster) <= _MAX_CLUSTER and len(chosen) + len(cluster) <= CLUSTER_PAGES:
            chosen.extend(sorted(cluster))
    paired = {page_id for pair in pairs for page_id in (pair["id_a"], pair["id_b"]) if pair["label"] != "distinct"}
    lone = [page_id for page_id in all_ids if page_id not in paired]
    return chosen + lone[:: max(1, len(lone) // LONE_PAGES)][:LONE_PAGES]


def build_corpus_sample(site: Path) -> tuple[dict[str, str], dict[frozenset[str], str]]:
    """Write the sample site into *site*; return its local URLs -> ids, and the pair labels."""
    pairs = _read_jsonl("pairs.jsonl.gz")
    pages = {page["id"]: page for page in _read_jsonl("pages.jsonl.gz")}
    ids = {local_url(pages[page_id]["url"]): page_id for page_id in _sample_ids(pairs, sorted(pages))}
    routes = {}
    for url, page_id in ids.items():
        target = site / "pages" / f"{page_id}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(pages[page_id]["html"], encoding="utf-8")
        routes[url] = f"pages/{page_id}.html"
    (site / "_routes.json").write_text(json.dumps(routes), encoding="utf-8")
    links = "".join(f'<li><a href="{html.escape(url)}">{ids[url]}</a></li>' for url in sorted(ids))
    (site / "index.html").write_text(f"<html><body><ul>{links}</ul></body></html>", encoding="utf-8")
    labels = {frozenset((p["id_a"], p["id_b"])): p["label"] for p in pairs if p["label"] != "distinct"}
    return ids, labels


@pytest.fixture(scope="session")
def corpus_sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CorpusSample]:
    if not (CORPUS / "pages.jsonl.gz").exists():
        pytest.skip(f"the dev corpus is not at {CORPUS}")
    site = tmp_path_factory.mktemp("corpus_site")
    ids, labels = build_corpus_sample(site)
    server = start_server(site)
    yield CorpusSample(f"http://127.0.0.1:{server.server_address[1]}/index.html", ids, labels)
    server.shutdown()
