"""Work that grows faster than the crawl: each case at growing sizes, so that a line that is
not flat shows.

    python benchmarks/bench_hot_spots.py                  # every case (~1 minute)
    python benchmarks/bench_hot_spots.py --cases refetch,digests

* ``refetch``: one URL whose page changes at every fetch (a form posted to one URL, a
  polled page), ``replace_if_new`` beside ``--others`` pages: the mean CPU time of its last
  50 checks after 100 ... 20,000 versions. Each version leaves a removed row until a
  compaction; the key lookup must not read them all.
* ``digests``: a page of thumbnails, each a link without text into an anchor of one of many
  other documents (20+ links each), then prose, from 0.1 to 4 MB: ``from_html`` and
  ``from_tree`` CPU time, ms per MB. The digest search judges each document's group of
  links in the <div> they share: once a part, not once a group.
* ``cluster``: pages within k of each other whose sketches tell them apart, so all are
  stored and all are a check's candidates: the mean CPU time of a check at 1,000 ... 30,000
  of them (linear in their number, as an exact index must be; the constant is the case).
* ``attributes``: pages that each carry a 200 KB ``data-page`` attribute (an app's state):
  the process's RSS after 500 ... 2,000 pages (run it alone to read it) (the verdicts on attributes are remembered
  across pages, not such ones).

CPU time is ``time.process_time``; pages and fingerprints come from a fixed seed.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from scrapy.http import HtmlResponse

from bench_index import rss_bytes
from scrapy_simhash.core.fingerprinter import Fingerprinter
from scrapy_simhash.index import open_index

CASES = ("refetch", "digests", "cluster", "attributes")
PROSE = "<p>A paragraph of the page's own prose, with a few words in it, {}.</p>"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--others", type=int, default=200_000, help="refetch: other pages in the index")
    return parser.parse_args()


def refetch(others: int) -> None:
    rng = random.Random(4)
    index = open_index("memory")
    for n in range(others):
        index.replace_if_new(rng.getrandbits(64), f"https://bg.example/{n}", 0, rng.randbytes(32))
    key, spent = "https://shop.example/Products/List.aspx?category=42", []
    for version in range(1, 20_001):
        started = time.process_time()
        index.replace_if_new(rng.getrandbits(64), key, 0, rng.randbytes(32))
        spent.append(time.process_time() - started)
        if version in (100, 1_000, 3_000, 10_000, 20_000):
            print(f"refetch: {version:6d} versions, a check {sum(spent[-50:]) / 50 * 1e3:6.3f} ms")


def digest_page(size: int) -> bytes:
    """Thumbnails linking into anchors of other documents (25 links each), then prose."""
    links = size * 3 // 4 // 50
    documents = max(1, links // 25)
    grid = "".join(f'<a href="/d{n % documents}.html#a{n}"><img src=i.png></a>' for n in range(links))
    prose = "".join(PROSE.format(n) for n in range(size // 4 // 70))
    return f"<html><head><title>t</title></head><body><div>{grid}</div>{prose}</body></html>".encode()


def digests() -> None:
    fingerprinter, url = Fingerprinter(), "https://example.com/docs/page.html"
    for size in (100_000, 500_000, 1_000_000, 2_000_000, 4_000_000):
        body = digest_page(size)
        response = HtmlResponse(url=url, body=body, encoding="utf-8")
        root, text = response.selector.root, response.text
        parsed = best(lambda: fingerprinter.from_html(body, url=url))
        shared = best(lambda: fingerprinter.from_tree(lambda: root, text, url=url))
        megabytes = len(body) / 1e6
        print(f"digests: {megabytes:5.2f} MB, from_html {parsed * 1e3:7.1f} ms ({parsed * 1e3 / megabytes:5.1f} ms/MB),"
              f" from_tree {shared * 1e3:7.1f} ms")


def best(call: Callable[[], object], rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        started = time.process_time()
        call()
        times.append(time.process_time() - started)
    return min(times)


def cluster() -> None:
    rng = random.Random(1)
    index, centre = open_index("memory"), rng.getrandbits(64)
    stored = 0
    for size in (1_000, 3_000, 10_000, 30_000):
        while stored < size:
            index.replace_if_new(centre ^ (1 << rng.randrange(64)), f"https://s.example/{stored}", 0, rng.randbytes(32))
            stored += 1
        started = time.process_time()
        for n in range(50):  # (each stored too: 50 more for the next size)
            index.replace_if_new(centre, f"https://q.example/{size}/{n}", 0, rng.randbytes(32))
        stored += 50
        print(f"cluster: {size:6d} pages within k, a check {(time.process_time() - started) / 50 * 1e3:6.3f} ms")


def attributes() -> None:
    fingerprinter, rng = Fingerprinter(), random.Random(2)
    for pages in range(1, 2_001):
        state = rng.randbytes(100_000).hex()  # 200 KB, another on each page
        html = (f"<html><body><div id='app' data-page='{state}'><main><h1>Page {pages}</h1>"
                f"{PROSE.format(pages) * 5}</main></div></body></html>")
        fingerprinter.from_html(html, url=f"https://app.example/{pages}")
        if pages % 500 == 0:
            print(f"attributes: {pages:5d} pages of 200 KB attributes, RSS {rss_bytes() / 2**20:6.0f} MB")


def main() -> None:
    args = parse_args()
    cases = {"refetch": lambda: refetch(args.others), "digests": digests, "cluster": cluster, "attributes": attributes}
    for name in args.cases.split(","):
        if name not in cases:
            raise SystemExit(f"unknown case {name!r}: choose among {', '.join(CASES)}")
        cases[name]()


if __name__ == "__main__":
    main()
