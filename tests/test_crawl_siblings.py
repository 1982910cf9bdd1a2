"""A real crawl of a site of short sibling pages: one template, one vocabulary, most of their
text shared, each under the near-duplicate line (issue 19, "Precision at scale").

Short pages are confirmed on their exact shingles, on every backend: every sibling is
kept, whatever the crawl order and the index, and only the real copies are dropped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import RecordingSpider, crawl, local_url
from redis_cluster import cluster_url, redis_cluster  # noqa: F401  (fixtures)
from redis_server import redis_url, shared_redis_server  # noqa: F401  (fixtures)
from serve_demo import start_server

from scrapy_simhash import Fingerprinter, hamming_distance
from scrapy_simhash.core.sketch import SKETCH_BYTES, Confirmation, similarity

SIBLINGS = 40
#: The help text every sibling shares (a help system's standard paragraphs).
SHARED = ("Choose the command from the menu to open its dialog. The dialog lists the options of "
          "the selected object, and the changes take effect when you close it with the OK button. "
          "Press Cancel to close the dialog without applying the changes you made. Every option "
          "has a tooltip that explains what it does; hover over a field to read it.")
WORDS = ("format cells rows columns sheets charts styles fields ranges names borders filters "
         "notes links frames macros").split()


def sibling_page(number: int, rng: np.random.Generator) -> str:
    """A help page: its own title and lead, then the shared paragraphs."""
    own = " ".join(rng.choice(WORDS, 3))
    return (f"<html><head><title>Help: topic {number}</title></head><body>"
            "<nav><a href='index.html'>Help home</a> <a href='index.html#topics'>Topics</a></nav>"
            f"<main><h1>Topic {number}: {own}</h1><p>Use this to change the {own}.</p>"
            f"<p>{SHARED}</p></main><footer>Help system 7.4</footer></body></html>")


@pytest.fixture(scope="module")
def sibling_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    """The site's URL, and each page's copy (under another URL) by the page it copies."""
    site = tmp_path_factory.mktemp("siblings")
    rng = np.random.default_rng(19)
    links = []
    copies = {}
    for number in range(SIBLINGS):
        page = sibling_page(number, rng)
        (site / f"topic{number}.html").write_text(page)
        links.append(f"<li><a href='topic{number}.html'>Topic {number}</a></li>")
        if number % 8 == 0:  # a print version: the same text in another template
            copy = page.replace("<footer>Help system 7.4</footer>", "<footer>Printed 2024-06-13</footer>")
            (site / f"print{number}.html").write_text(copy)
            links.append(f"<li><a href='print{number}.html'>Print topic {number}</a></li>")
            copies[f"/print{number}.html"] = f"/topic{number}.html"
    (site / "index.html").write_text(f"<html><body><h1>Help</h1><ul>{''.join(links)}</ul></body></html>")
    copies["/index.html"] = "/"  # the home page under two URLs (the pages link to index.html)
    server = start_server(site)
    yield f"http://127.0.0.1:{server.server_address[1]}/", copies
    server.shutdown()


def test_the_siblings_are_under_the_line_where_their_sketches_alone_would_drop_some(
    sibling_site: tuple[str, dict[str, str]],
) -> None:
    """The premise: short pages, alike (many within k of each other) but all under 0.8,
    where 256-bit sketches alone would have confirmed some pairs (their error on short
    pages), so that a crawl keeping them all shows the exact comparison at work."""
    rng = np.random.default_rng(19)
    pages = [Fingerprinter().from_html(sibling_page(number, rng)) for number in range(SIBLINGS)]
    assert all(page.sketch is not None and len(page.sketch) > SKETCH_BYTES for page in pages)
    pairs = [(a, b) for i, a in enumerate(pages) for b in pages[i + 1 :]]
    assert 0.7 < max(similarity(a.sketch, b.sketch) for a, b in pairs) < 0.8  # type: ignore[arg-type]
    within_k = [(a, b) for a, b in pairs if hamming_distance(a.fingerprint, b.fingerprint, ignoring=b.wildcard) <= 3]
    sketches_alone = Confirmation(0.8)
    assert any(sketches_alone.similarity(a.sketch[:SKETCH_BYTES], b.sketch[:SKETCH_BYTES]) for a, b in within_k)  # type: ignore[index]


@pytest.mark.parametrize("backend", ["memory", "disk", "redis_url", "cluster_url"])
def test_a_crawl_keeps_every_sibling_and_drops_the_copies(
    sibling_site: tuple[str, dict[str, str]], backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url, copies = sibling_site
    settings = {"CONCURRENT_REQUESTS": 4}
    if backend == "disk":
        settings["SIMHASH_INDEX"] = str(tmp_path / "index")
    elif backend != "memory":
        settings["SIMHASH_INDEX"] = request.getfixturevalue(backend)
    crawler = crawl(RecordingSpider, settings, start_url=url)
    kept = {local_url(item["url"]) for item in crawler.spider.items}
    copied = set(copies.values())
    assert {f"/topic{number}.html" for number in range(SIBLINGS)} - copied <= kept
    # Of a page and its copy, whichever came first is kept (4 requests at a time).
    pairs = {frozenset(pair) for pair in copies.items()}
    drops = crawler.spider.all_drops()  # (the print versions, other documents, followed)
    assert {frozenset({local_url(drop.url), local_url(drop.duplicate_of)}) for drop in drops} == pairs
    assert all(len(pair & kept) == 1 for pair in pairs)
    assert all(drop.similarity == 1.0 for drop in drops)
