"""How much of a big real site a Scrapy crawl with scrapy-simhash still reaches.

    python benchmarks/bench_scale_crawl.py [--site statsmodels] [--max-pages 5000] [--set SIMHASH_MIN_SIMILARITY=0.85]

A false drop costs more than the page: the middleware does not follow a copy's links
(``SIMHASH_FOLLOW_DROPPED = "siblings"`` follows those of a near-duplicate under another
document name, one step), so the pages only it links to can be lost too. This serves one site of
``scale_data.py`` on 127.0.0.1 (a threaded HTTP server over its ``pages.jsonl.gz``, the
first ``--max-pages`` pages in crawl order; its redirects answered with 301, anything else
404) and crawls it twice, each crawl in a fresh process: without scrapy-simhash (what links
reach at all) and with ``ADDONS = {"scrapy_simhash.Addon": 300}`` and default settings (drop
mode). The spider starts at the site's start page, follows every link within the site
(breadth-first: ``DEPTH_PRIORITY = 1``, FIFO queues) and yields one item per page.
``--set NAME=VALUE`` (repeatable) adds a setting to the crawls with the add-on (a JSON value,
or else a string).

A page is *distinct* when no other served page has J >= 0.8 with it (the 5-token shingles of
the reference main texts, as in ``bench_scale.py``); it is *reached* when the spider's
callback got it. The report: the share of distinct pages each crawl reached, and the
distinct pages the add-on lost, each either dropped (with the page it was taken for and
their J) or never requested (no page the crawl kept links to it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import bench_scale
import numpy as np
import scale_data

MODES: dict[str, dict[str, Any]] = {
    "without scrapy-simhash": {},
    "with the add-on (drop)": {"ADDONS": {"scrapy_simhash.Addon": 300}},
    # --follow-dropped: every near-duplicate reaches the callback for its links, its items dropped
    "with the add-on (drop, follow)": {"ADDONS": {"scrapy_simhash.Addon": 300}, "SIMHASH_FOLLOW_DROPPED": "always"},
}


# -- the site and its server -----------------------------------------------------------


class SitePages:
    """The served pages of one site: path -> html, its redirects, links and shingle sets."""

    def __init__(self, site_dir: Path, max_pages: int) -> None:
        info = json.loads((site_dir / "site.json").read_text(encoding="utf-8"))
        self.name, self.host, self.start = str(info["site"]), str(info["host"]), str(info["start"])
        self.redirects: dict[str, str] = dict(info["redirects"])
        self.html: dict[str, bytes] = {}
        self.sets: dict[str, np.ndarray] = {}
        vocabulary: dict[str, int] = {}
        for number, page in enumerate(scale_data.read_pages(site_dir / "pages.jsonl.gz")):
            if number == max_pages:
                break
            path = urlsplit(str(page["url"])).path.lstrip("/")
            self.html[path] = str(page["html"]).encode("utf-8")
            self.sets[path] = scale_data.shingles(str(page["main_text"]), vocabulary)

    def distinct(self) -> set[str]:
        """The pages no other page has J >= 0.8 with."""
        paths = list(self.sets)
        similar = bench_scale.earlier_similar([self.sets[path] for path in paths])
        paired = {paths[number] for number, earlier in enumerate(similar) if earlier}
        paired.update(paths[other] for earlier in similar for other in earlier)
        return set(paths) - paired

    def linked_from(self) -> dict[str, set[str]]:
        """Which served pages link to each path (after redirects)."""
        import lxml.html

        inlinks: dict[str, set[str]] = defaultdict(set)
        for path, html in self.html.items():
            for href in lxml.html.document_fromstring(html).xpath("//a/@href"):
                target = scale_data.resolve(path, str(href), self.host)
                target = scale_data.follow(target, self.redirects) if target else None
                if target and target != path:
                    inlinks[target].add(path)
        return inlinks


class PageHandler(BaseHTTPRequestHandler):
    def __init__(self, *args: Any, pages: SitePages, **kwargs: Any) -> None:
        self.pages = pages
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        path = unquote(urlsplit(self.path).path).lstrip("/")
        if not path or path.endswith("/"):
            path += "index.html"
        if path in self.pages.redirects:
            self.send_response(301)
            self.send_header("Location", "/" + self.pages.redirects[path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self.pages.html.get(path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the report is the show
        pass


def start_server(pages: SitePages) -> ThreadingHTTPServer:
    """Serve *pages* from a daemon thread on a free port of 127.0.0.1."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(PageHandler, pages=pages))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# -- one crawl, in a child process ----------------------------------------------------------


def run_child(start_url: str, mode: str) -> None:
    """Crawl the site from *start_url*; print what reached the callback and what was dropped."""
    import scrapy
    from scrapy.crawler import CrawlerProcess
    from scrapy.http import HtmlResponse, Response
    from scrapy.linkextractors import LinkExtractor
    from twisted.python.failure import Failure

    from scrapy_simhash import NearDuplicatePage

    host = urlsplit(start_url).netloc

    class SiteSpider(scrapy.Spider):
        name = "site"

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.allowed_domains = ["127.0.0.1"]
            self.link_extractor = LinkExtractor()  # (allowed_domains keeps the crawl on the site)
            self.reached: list[str] = []
            self.dropped: dict[str, tuple[str, int]] = {}

        async def start(self) -> AsyncIterator[scrapy.Request]:
            yield scrapy.Request(start_url, errback=self.failed)

        def parse(self, response: Response) -> Iterator[Any]:
            if not isinstance(response, HtmlResponse) or urlsplit(response.url).netloc != host:
                return
            match = response.meta.get("simhash") or {}
            if match.get("duplicate_of") is not None:  # SIMHASH_FOLLOW_DROPPED: dropped, links followed
                self.dropped[_path(response.url)] = (_path(match["duplicate_of"]), match["distance"])
            else:
                self.reached.append(_path(response.url))
            yield {"url": response.url}
            for link in self.link_extractor.extract_links(response):
                yield response.follow(link, errback=self.failed)

        def failed(self, failure: Failure) -> None:
            if failure.check(NearDuplicatePage):
                error = failure.value
                self.dropped[_path(error.url)] = (_path(error.duplicate_of), error.distance)

    settings: dict[str, Any] = {
        "ROBOTSTXT_OBEY": False, "LOG_LEVEL": "INFO", "CONCURRENT_REQUESTS": 32,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 32, "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "DEPTH_PRIORITY": 1, "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue", **MODES[mode],
    }
    if MODES[mode]:
        settings.update(json.loads(os.environ.get(_EXTRA_SETTINGS, "{}")))
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler)
    process.start()
    spider = crawler.spider
    print(json.dumps({"reached": spider.reached, "dropped": spider.dropped,
                      "stats": {k: v for k, v in crawler.stats.get_stats().items() if k.startswith("simhash/")}},
                     default=str))


def _path(url: str) -> str:
    return unquote(urlsplit(url).path).lstrip("/")


#: Where a crawl's process finds the --set settings (JSON).
_EXTRA_SETTINGS = "BENCH_SCALE_CRAWL_SETTINGS"


def crawl(start_url: str, mode: str, extra: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """One crawl in a fresh process: its answer and its wall time."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, __file__, "--child", start_url, mode], capture_output=True, text=True,
                          check=True, env={**os.environ, _EXTRA_SETTINGS: json.dumps(extra)})
    return json.loads(done.stdout.strip().splitlines()[-1]), time.monotonic() - started


# -- report ------------------------------------------------------------------------------


def report(
    pages: SitePages, distinct: set[str], crawls: dict[str, tuple[dict[str, Any], float]], show: int
) -> dict[str, Any]:
    print(f"{'crawl':<24} {'reached':>8} {'distinct':>9} {'share':>7} {'dropped':>8} {'time':>7}")
    summary: dict[str, Any] = {"site": pages.name, "pages": len(pages.html), "distinct": len(distinct), "crawls": {}}
    for mode, (answer, seconds) in crawls.items():
        reached = set(answer["reached"])
        share = len(reached & distinct) / max(len(distinct), 1)
        print(f"{mode:<24} {len(reached):>8} {len(reached & distinct):>9} {share:>7.3f} "
              f"{len(answer['dropped']):>8} {seconds:>6.0f}s")
        summary["crawls"][mode] = {"reached": len(reached), "distinct_reached": len(reached & distinct),
                                   "share": share, "dropped": len(answer["dropped"]), "seconds": seconds,
                                   "stats": answer["stats"]}
    baseline, with_addon = crawls["without scrapy-simhash"][0], crawls["with the add-on (drop)"][0]
    lost = sorted((set(baseline["reached"]) - set(with_addon["reached"])) & distinct)
    dropped = [path for path in lost if path in with_addon["dropped"]]
    unlinked = [path for path in lost if path not in with_addon["dropped"]]
    print(f"distinct pages lost with the add-on: {len(lost)} ({len(dropped)} dropped as near-duplicates, "
          f"{len(unlinked)} never requested: no kept page links to them)")
    for path in dropped[:show]:
        original, distance = with_addon["dropped"][path]
        similarity = scale_data.jaccard(pages.sets[path], pages.sets[original]) if original in pages.sets else 0.0
        print(f"  dropped  {path}  repeats {original} (J={similarity:.3f}, distance {distance})")
    inlinks = pages.linked_from()
    for path in unlinked[:show]:
        linkers = sorted(inlinks.get(path, ()))
        print(f"  unlinked {path}  linked from {len(linkers)} page(s), e.g. "
              f"{', '.join(f'{p} [dropped]' if p in with_addon['dropped'] else p for p in linkers[:3])}")
    summary.update(lost=lost, lost_dropped=len(dropped), lost_unlinked=len(unlinked))
    return summary


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", default="statsmodels", choices=list(scale_data.SITES))
    parser.add_argument("--max-pages", type=int, default=5_000, help="serve the first N pages in crawl order")
    parser.add_argument("--data", type=Path, default=bench_scale.DEFAULT_DATA, help="the sites scale_data.py wrote")
    parser.add_argument("--show", type=int, default=10, help="lost pages listed of each kind")
    parser.add_argument("--follow-dropped", action="store_true",
                        help='also crawl with SIMHASH_FOLLOW_DROPPED = "always" (a third crawl)')
    parser.add_argument("--json", type=Path, help="write the numbers and the lost pages to this file")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting of the crawls with the add-on, e.g. SIMHASH_MIN_SIMILARITY=0.85")
    parser.add_argument("--child", nargs=2, metavar=("URL", "MODE"), help=argparse.SUPPRESS)
    return parser.parse_args()


def extra_settings(assignments: list[str]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs as settings: VALUE as JSON when it parses, else as a string."""
    settings: dict[str, Any] = {}
    for assignment in assignments:
        name, equals, value = assignment.partition("=")
        if not equals or not name:
            raise SystemExit(f"--set {assignment!r}: expected NAME=VALUE")
        try:
            settings[name] = json.loads(value)
        except json.JSONDecodeError:
            settings[name] = value
    return settings


def main() -> None:
    args = parse_args()
    if args.child:
        run_child(*args.child)
        return
    pages = SitePages(args.data / args.site, args.max_pages)
    distinct = pages.distinct()
    server = start_server(pages)
    start_url = f"http://127.0.0.1:{server.server_address[1]}/{pages.start}"
    print(f"{pages.name}: {len(pages.html)} pages served on {start_url}, {len(distinct)} distinct "
          f"(no other page with J >= {bench_scale.DUP})")
    modes = [mode for mode in MODES if args.follow_dropped or "follow" not in mode]
    crawls = {mode: crawl(start_url, mode, extra_settings(args.set)) for mode in modes}
    server.shutdown()
    summary = report(pages, distinct, crawls, args.show)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
