"""CPU cost of scrapy-simhash in a real crawl of the dev corpus site, on 127.0.0.1.

    python benchmarks/bench_crawl_overhead.py                   # the whole site (2,642 pages), both spiders, 3 times each way
    python benchmarks/bench_crawl_overhead.py --repeat 5        # 5 crawls each way
    python benchmarks/bench_crawl_overhead.py --quick           # the first 500 pages, once each way
    python benchmarks/bench_crawl_overhead.py --spider minimal  # one spider: demo, minimal or both (default)

The site (``../shared/corpus/dev/site.tar.gz``) is unpacked to a temporary directory
and served by ``example_project/serve_demo.py`` in its own process, so its CPU is not
counted, on port 8000, where its absolute links point (another port if 8000 is taken).
Two spiders crawl it, following every link within the site: the example project's
``demo`` spider (a ``LinkExtractor`` per page, and the page's ``<title>``) and
:class:`MinimalSpider` (the page's ``<title>``, its ``<a href>`` links and one small item:
little more than the parse, which every spider pays anyway). Each crawl runs in a fresh
process, alternating three ways: without scrapy-simhash, with the middleware alone, and
with the add-on (middleware, spider middleware and item pipeline). The child measures
``time.process_time()`` from ``spider_opened`` to ``spider_closed`` (the crawl itself,
not Python and Scrapy start-up). ``SIMHASH_ACTION = "mark"`` keeps every page, so all
crawls of a spider fetch and parse the same pages.

Reported per spider and way, as the median and the spread [min, max] of ``--repeat``
crawls: the whole crawl's CPU seconds, the CPU per page (pages: the 200 responses, parsed
and fingerprinted; the crawl's ~2,500 404s count in its CPU, not as pages), and the CPU per
page *beyond the parse*: the difference per page with scrapy-simhash and without, in
milliseconds and as overhead in % (the middleware reads the tree of ``response.selector``,
which the spider's selectors reuse: the parse is paid once either way). Each crawl with
scrapy-simhash is compared with the median without it. Target: <= 10% more CPU with the
middleware. The last columns: the fingerprinting's CPU (the core's share, the parse
included) and the garbage collector's, per page. Then the add-on crawls' CPU per page by
stage (:mod:`crawl_stages`: the decode and the parse, which the spider pays anyway, and
scrapy-simhash's own stages), timed in those crawls only, so that the wrappers' ~10 us a
page stay out of the middleware's figure; the garbage collections that fall inside a stage
are taken out of it and reported apart (the crawl's GC column says whether the plugin
adds to them). ``--quick`` checks that it runs: a partial
crawl's mix of pages and 404s varies from crawl to crawl, so its figures vary by 10% and
more.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import HtmlResponse, Response

import crawl_stages  # (this script's folder is on sys.path)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_PROJECT = REPO / "example_project"
SITE_ARCHIVE = REPO.parent / "shared" / "corpus" / "dev" / "site.tar.gz"
TARGET_OVERHEAD = 0.10
#: The site's absolute links point to http://127.0.0.1:8000/ (its pages link to themselves,
#: ~250 pages): served on another port, ~700 URLs are refused, retried and logged.
SITE_PORT = 8000

#: The spiders compared: name -> what it does per page.
SPIDERS: dict[str, str] = {
    "demo": "the example project's, a LinkExtractor per page",
    "minimal": "<title>, <a href> links, one small item per page",
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="500 pages, one crawl each way")
    parser.add_argument("--pages", type=int, default=0, help="stop after this many pages (0: all)")
    parser.add_argument("--repeat", type=int, default=3, help="crawls each way")
    parser.add_argument("--spider", choices=[*SPIDERS, "both"], default="both", help="the spider(s) to crawl with")
    parser.add_argument("--child", nargs=3, metavar=("URL", "SPIDER", "MODE"), help=argparse.SUPPRESS)
    return parser.parse_args()


#: The crawls compared: label -> settings added to the child's.
MODES: dict[str, dict[str, Any]] = {
    "without scrapy-simhash": {},
    # "mark" keeps every page, so every crawl fetches and parses the same pages.
    "with the middleware (mark)": {
        "DOWNLOADER_MIDDLEWARES": {"scrapy_simhash.SimhashMiddleware": 540}, "SIMHASH_ACTION": "mark",
    },
    "with the add-on (mark)": {"ADDONS": {"scrapy_simhash.Addon": 300}, "SIMHASH_ACTION": "mark"},
}


#: The crawls whose stages are timed (crawl_stages): the add-on's, all of scrapy-simhash.
STAGED_MODE = "with the add-on (mark)"


class MinimalSpider(scrapy.Spider):
    """Follow every link of the site and yield the page's URL and title: the parse, little else."""

    name = "minimal"

    def __init__(self, start_url: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_url = start_url
        self.allowed_domains = [urlsplit(start_url).hostname or ""]  # stay on the site, as demo does

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.start_url)

    def parse(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, HtmlResponse):
            return
        yield {"url": response.url, "title": response.css("title::text").get()}
        for href in response.css("a::attr(href)").getall():
            if urlsplit(href.strip()).scheme in ("", "http", "https"):  # not mailto:, javascript:
                yield response.follow(href)


def spider_class(name: str) -> type[scrapy.Spider]:
    if name == "minimal":
        return MinimalSpider
    sys.path.insert(0, str(EXAMPLE_PROJECT))
    from demo.spiders.demo import DemoSpider

    return DemoSpider


def run_child(url: str, spider: str, mode: str, pages: int) -> None:
    """One crawl in this process; print its CPU seconds and counts as JSON."""
    from scrapy import signals
    from scrapy.crawler import AsyncCrawlerProcess

    settings: dict[str, Any] = {
        "LOG_LEVEL": "WARNING",
        "CONCURRENT_REQUESTS": 16,
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
    }
    settings.update(MODES[mode])
    fingerprinting = _time_fingerprinting()
    clock = crawl_stages.install() if mode == STAGED_MODE else None
    collections = crawl_stages.time_collections(clock)
    process = AsyncCrawlerProcess(settings)
    crawler = process.create_crawler(spider_class(spider))
    marks: dict[str, float] = {}

    def opened() -> None:
        marks["open"] = time.process_time()
        collections[0] = 0.0

    def closed() -> None:
        marks["close"] = time.process_time()
        marks["gc"] = collections[0]

    crawler.signals.connect(opened, signals.spider_opened)  # (signals hold weak references)
    crawler.signals.connect(closed, signals.spider_closed)
    _stop_after(crawler, pages)
    process.crawl(crawler, start_url=url)
    process.start()
    stats = crawler.stats.get_stats()
    print(json.dumps({
        "cpu": marks["close"] - marks["open"],
        "pages": stats.get("downloader/response_status_count/200", 0),  # parsed; the 404s are not
        "responses": stats.get("response_received_count", 0),
        "marked": stats.get("simhash/marked", 0),
        "fingerprinting": fingerprinting[0],
        "stages": clock.seconds if clock is not None else {},
        "gc_in_stages": clock.collecting if clock is not None else 0.0,
        "gc": marks["gc"],
    }))


def _stop_after(crawler: Crawler, pages: int) -> None:
    """Close the spider at its *pages*-th page (200 response; 0: never), as
    ``CLOSESPIDER_PAGECOUNT`` does but without counting the site's 404s."""
    from scrapy import signals
    from scrapy.utils.defer import deferred_from_coro

    seen = [0]

    def received(response: Response) -> None:
        if response.status == 200:
            seen[0] += 1
            if seen[0] == pages:
                deferred_from_coro(crawler.engine.close_spider_async(reason="closespider_pagecount"))

    crawler.signals.connect(received, signals.response_received, weak=False)


def _time_fingerprinting() -> list[float]:
    """Wrap the Fingerprinter's entry points to add up their CPU time: the core's share of
    the overhead (``from_tree`` calls ``from_html`` when it parses the page itself)."""
    from scrapy_simhash.core.fingerprinter import Fingerprinter

    total = [0.0]
    depth = [0]

    def timed(method: Any) -> Any:
        def wrapper(self: Fingerprinter, *args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            depth[0] += 1
            try:
                return method(self, *args, **kwargs)
            finally:
                depth[0] -= 1
                if not depth[0]:
                    total[0] += time.process_time() - start

        return wrapper

    Fingerprinter.from_html = timed(Fingerprinter.from_html)  # type: ignore[method-assign]
    Fingerprinter.from_tree = timed(Fingerprinter.from_tree)  # type: ignore[method-assign]
    return total


def crawl(url: str, spider: str, mode: str, pages: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", url, spider, mode, "--pages", str(pages)]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    lines = result.stderr.rstrip().splitlines()
    if lines:  # warnings, errors: say so, the figures may not be comparable
        more = f"\n({len(lines) - 20} more lines)" if len(lines) > 20 else ""
        print(f"{spider}, {mode}: the crawl logged\n" + "\n".join(lines[:20]) + more, file=sys.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def serve(site: Path, port: int = SITE_PORT) -> tuple[subprocess.Popen[str], str]:
    """Serve *site* on 127.0.0.1:*port* (any free port if that one is taken)."""
    server = subprocess.Popen(
        [sys.executable, str(EXAMPLE_PROJECT / "serve_demo.py"), str(site), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    if " on " not in line:  # the port is taken: the server stopped
        server.wait()
        server.stdout.close()
        if not port:
            raise RuntimeError("the site's server did not start")
        print(f"port {port} is taken: serving on another one, where the site's links to"
              f" 127.0.0.1:{port} fail (retried, logged): crawls spend more CPU", file=sys.stderr)
        return serve(site, 0)
    return server, line.split(" on ", 1)[1].split(" ", 1)[0]


@contextlib.contextmanager
def dev_site() -> Iterator[str]:
    """The dev corpus site unpacked to a temporary directory and served (:func:`serve`),
    for as long as the block runs: its URL."""
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(SITE_ARCHIVE) as archive:
            archive.extractall(tmp, filter="data")
        server, url = serve(Path(tmp, "site"))
        try:
            yield url
        finally:
            server.terminate()
            server.wait()
            server.stdout.close()  # type: ignore[union-attr]


def main() -> None:
    args = parse_args()
    if args.child:
        run_child(*args.child, args.pages)
        return
    pages, repeat = (args.pages or 500, 1) if args.quick else (args.pages, args.repeat)
    spiders = list(SPIDERS) if args.spider == "both" else [args.spider]
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {spider: {mode: [] for mode in MODES} for spider in spiders}
    with dev_site() as url:
        # Round after round, every spider and way in turn: a slow spell of the machine
        # falls on all of them, not on one.
        for round_ in range(1, repeat + 1):
            for spider in spiders:
                for mode in MODES:
                    run = crawl(url, spider, mode, pages)
                    runs[spider][mode].append(run)
                    print(f"[{round_}/{repeat}] {spider}, {mode}: {run['cpu']:.2f} s CPU,"
                          f" {run['pages']} pages", file=sys.stderr, flush=True)
    for spider in spiders:
        report(spider, runs[spider])


def spread(values: list[float], form: str) -> str:
    """``median [min, max]`` (the median alone for a single value)."""
    median = format(statistics.median(values), form)
    if len(values) == 1:
        return median
    return f"{median} [{min(values):{form}}, {max(values):{form}}]"


def report(spider: str, runs: dict[str, list[dict[str, Any]]]) -> None:
    baseline, *compared = runs
    per_page = {mode: [run["cpu"] / run["pages"] for run in mode_runs] for mode, mode_runs in runs.items()}
    base = statistics.median(per_page[baseline])
    count = len(runs[baseline])
    print(f"\n{spider} spider ({SPIDERS[spider]}): {count} crawl{'s' * (count > 1)} each way"
          f"{', median [min, max]' if count > 1 else ''}")
    print(f"{'crawl':<28}{'pages':>6}{'responses':>10}{'marked':>7}{'CPU s':>22}{'CPU ms/page':>22}"
          f"{'beyond the parse ms/page':>26}{'overhead':>24}{'fingerprinting ms/page':>24}{'GC ms/page':>12}")
    for mode, mode_runs in runs.items():
        pages = round(statistics.median(run["pages"] for run in mode_runs))
        responses = round(statistics.median(run["responses"] for run in mode_runs))
        marked = round(statistics.median(run["marked"] for run in mode_runs))
        core = statistics.median(run["fingerprinting"] / run["pages"] for run in mode_runs)
        collecting = statistics.median(run["gc"] / run["pages"] for run in mode_runs)
        beyond = overhead = "-"
        if mode in compared:  # each crawl against the median without scrapy-simhash
            beyond = spread([1000 * (cpu - base) for cpu in per_page[mode]], "+.2f")
            overhead = spread([100 * (cpu / base - 1) for cpu in per_page[mode]], "+.1f") + " %"
        print(f"{mode:<28}{pages:>6}{responses:>10}{marked:>7}{spread([run['cpu'] for run in mode_runs], '.2f'):>22}"
              f"{spread([1000 * cpu for cpu in per_page[mode]], '.2f'):>22}{beyond:>26}{overhead:>24}"
              f"{1000 * core:>24.2f}{1000 * collecting:>12.2f}")
    report_stages(runs[STAGED_MODE])
    middleware = statistics.median(per_page["with the middleware (mark)"]) / base - 1
    verdict = "ok" if middleware <= TARGET_OVERHEAD else "over target"
    print(f"{spider}: middleware overhead {middleware:+.1%} CPU per page (target <= {TARGET_OVERHEAD:.0%}: {verdict});"
          " fingerprinting is the core's share, the rest is the glue (index, stats, meta) and run-to-run noise")


def report_stages(runs: list[dict[str, Any]]) -> None:
    """CPU ms per page of each stage in the add-on crawls, median [min, max]."""
    per_page = {
        stage: [1000 * run["stages"][stage] / run["pages"] for run in runs] for stage in crawl_stages.STAGES
    }
    own = [sum(run["stages"][stage] for stage in crawl_stages.OWN_STAGES) * 1000 / run["pages"] for run in runs]
    collecting = [1000 * run["gc_in_stages"] / run["pages"] for run in runs]
    print(f"CPU ms per page by stage ({STAGED_MODE}): "
          + ", ".join(f"{stage} {spread(values, '.3f')}" for stage, values in per_page.items())
          + f"; scrapy-simhash's own (all but the parse): {spread(own, '.3f')}"
          + f"; the crawl's garbage collections that fell inside these stages, left out of them:"
            f" {spread(collecting, '.3f')}")


if __name__ == "__main__":
    main()
