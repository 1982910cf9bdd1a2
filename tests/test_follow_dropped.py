"""SIMHASH_FOLLOW_DROPPED: which near-duplicates still reach their callback for their links,
in real crawls of a small site on 127.0.0.1."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import RecordingSpider, crawl, local_url
from scrapy.crawler import Crawler
from serve_demo import start_server

from scrapy_simhash import NearDuplicatePage
from scrapy_simhash.middlewares import document_name

WORDS = [f"{consonant}{vowel}{end}" for consonant in "bdfgklmnprstvz" for vowel in "aeiou" for end in "nrstl"]


def prose(seed: int, words: int = 400) -> str:
    rng = random.Random(seed)
    sentences = [" ".join(rng.choice(WORDS) for _ in range(12)) + "." for _ in range(words // 12)]
    return "".join(f"<p>{' '.join(sentences[i:i + 4])}</p>" for i in range(0, len(sentences), 4))


def page(title: str, body: str, links: list[str]) -> str:
    anchors = "".join(f"<li><a href='/{path}'>{path}</a></li>" for path in links)
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{body}<ul>{anchors}</ul></body></html>"


#: path -> (the seed of its text, its links). Pages of one seed are near-duplicates.
SITE = {
    "index.html": (1, ["solver-cg.html", "solver-bicg.html", "mirror/solver-cg.html"]),
    "solver-cg.html": (2, ["solver-cg-members.html"]),
    # A sibling: another document that shares (nearly) all of solver-cg.html's text.
    "solver-bicg.html": (2, ["solver-bicg-members.html", "solver-gmres.html"]),
    # A sibling reached only through a followed sibling: not followed in turn.
    "solver-gmres.html": (2, ["solver-gmres-members.html"]),
    # A mirror: the same document name, another directory.
    "mirror/solver-cg.html": (2, ["mirror/only-here.html"]),
    "solver-cg-members.html": (3, []),
    "solver-bicg-members.html": (4, []),
    "solver-gmres-members.html": (5, []),
    "mirror/only-here.html": (6, []),
}


@pytest.fixture(scope="module")
def sibling_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    site = tmp_path_factory.mktemp("siblings")
    for path, (seed, links) in SITE.items():
        (site / path).parent.mkdir(exist_ok=True)
        (site / path).write_text(page("Solvers", prose(seed), links))
    server = start_server(site)
    yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    server.shutdown()


def _crawl(url: str, follow: object | None) -> tuple[Crawler, set[str], set[str]]:
    """The crawl, the paths whose items were scraped, and those dropped with NearDuplicatePage."""
    settings = {} if follow is None else {"SIMHASH_FOLLOW_DROPPED": follow}
    crawler = crawl(RecordingSpider, settings, start_url=url)  # one request at a time, breadth-first
    items = {local_url(item["url"]).lstrip("/") for item in crawler.spider.items}
    drops = {local_url(drop.url).lstrip("/") for drop in crawler.spider.dropped_pages
             if isinstance(drop, NearDuplicatePage)}
    return crawler, items, drops


def test_by_default_a_sibling_is_followed_once_and_a_copy_not_at_all(sibling_site: str) -> None:
    crawler, items, drops = _crawl(sibling_site, None)
    assert {"solver-cg.html", "solver-cg-members.html", "solver-bicg-members.html"} <= items
    assert "solver-bicg.html" not in items and "solver-bicg.html" not in drops  # followed, its item dropped
    assert drops == {"solver-gmres.html", "mirror/solver-cg.html"}
    assert not {"solver-gmres-members.html", "mirror/only-here.html"} & items
    stats = crawler.stats.get_stats()
    assert stats["simhash/dropped"] == 3
    assert stats["simhash/dropped/followed"] == 1
    assert stats["simhash/dropped/items_dropped"] == 1


def test_never_follows_no_near_duplicate(sibling_site: str) -> None:
    crawler, items, drops = _crawl(sibling_site, "never")
    assert drops == {"solver-bicg.html", "mirror/solver-cg.html"}
    assert not {"solver-bicg-members.html", "solver-gmres.html", "mirror/only-here.html"} & items
    assert "simhash/dropped/followed" not in crawler.stats.get_stats()


def test_always_follows_every_near_duplicate(sibling_site: str) -> None:
    crawler, items, drops = _crawl(sibling_site, True)
    assert drops == set()
    assert set(SITE) - items == {"solver-bicg.html", "solver-gmres.html", "mirror/solver-cg.html"}
    assert crawler.stats.get_value("simhash/dropped/followed") == 3


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("http://h/a/b.html", "b.html"),
        ("http://h/a/b/", "b"),
        ("http://h/a/b/index.html", "b"),
        ("http://h/a/b/Default.aspx", "b"),
        ("http://h/a/b/index-of-terms.html", "index-of-terms.html"),
        ("http://h/index.html", ""),
        ("http://h/a/b.html?print=1#top", "b.html"),
        ("http://h/a/b.html;jsessionid=4F2A", "b.html"),
        ("http://h/a/caf%C3%A9.html", "café.html"),
        ("http://h/", ""),
        ("http://h", ""),
    ],
)
def test_document_name(url: str, name: str) -> None:
    assert document_name(url) == name



@pytest.fixture(scope="module")
def calendar_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A crawler trap: 40 day pages of an empty calendar, each linking to the next, each a
    near-duplicate of the one before under another name."""
    site = tmp_path_factory.mktemp("calendar")
    for day in range(40):
        (site / f"day-{day}.html").write_text(page(f"Day {day}", prose(7), [f"day-{day + 1}.html"]))
    server = start_server(site)
    yield f"http://127.0.0.1:{server.server_address[1]}/day-0.html"
    server.shutdown()


def test_a_chain_of_siblings_is_followed_one_step_only(calendar_site: str) -> None:
    crawler, items, drops = _crawl(calendar_site, None)
    assert items == {"day-0.html"}
    assert drops == {"day-2.html"}  # reached through day 1, a followed sibling: not followed
    assert crawler.stats.get_value("simhash/dropped/followed") == 1
    assert crawler.stats.get_value("response_received_count") == 3
    everything, _, _ = _crawl(calendar_site, "always")
    assert everything.stats.get_value("simhash/dropped/followed") == 39  # the whole trap


class MetaPassingSpider(RecordingSpider):
    """Follows the links of HTML pages, and from each asks its ``data.json`` with
    ``meta=response.meta``, as spiders pass context on: an item per JSON response."""

    def parse(self, response: Any) -> Iterator[Any]:
        yield from super().parse(response)
        yield response.follow(f"{response.url}.json", callback=self.parse_data, meta=response.meta)

    def parse_data(self, response: Any) -> Iterator[dict[str, str]]:
        # (the page's verdict, passed on, is still there to read)
        yield {"url": response.url, "data": response.text, "page": response.meta["simhash"]["url"]}


def test_a_verdict_passed_on_in_meta_is_not_another_responses(tmp_path: Path) -> None:
    # solver-bicg.html is a followed sibling: its meta says "duplicate of solver-cg.html".
    # Its data.json was never checked (not HTML): its item is kept, not dropped for it.
    site = tmp_path / "site"
    for path, (seed, links) in SITE.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(page("Solvers", prose(seed), links))
        (site / f"{path}.json").write_text(f'{{"page": "{path}"}}')
    server = start_server(site)
    try:
        crawler = crawl(MetaPassingSpider, start_url=f"http://127.0.0.1:{server.server_address[1]}/index.html")
    finally:
        server.shutdown()
    data_items = {local_url(item["url"]) for item in crawler.spider.items if "data" in item}
    assert "/solver-bicg.html.json" in data_items  # from the followed sibling
    assert len(data_items) == crawler.stats.get_value("simhash/skipped/not_html")
    assert crawler.stats.get_value("simhash/dropped/items_dropped") == 1  # solver-bicg.html's own item only
