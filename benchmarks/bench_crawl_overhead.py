"""CPU cost of SimhashMiddleware in a real crawl of the dev corpus site, on 127.0.0.1.

    python benchmarks/bench_crawl_overhead.py            # the whole site (~2,600 pages), 3 times each way
    python benchmarks/bench_crawl_overhead.py --quick    # the first 500 pages, once each way

The site (``../shared/corpus/dev/site.tar.gz``) is unpacked to a temporary directory
and served by ``example_project/serve_demo.py`` in its own process, so its CPU is not
counted. Each crawl runs in a fresh process (the example project's ``demo`` spider,
following every link), alternating three ways: without scrapy-simhash, with the
middleware alone, and with the add-on (middleware and item pipeline). The child measures
``time.process_time()`` from ``spider_opened`` to ``spider_closed`` (the crawl itself,
not Python and Scrapy start-up). ``SIMHASH_ACTION = "mark"`` keeps every page, so all
crawls fetch and parse the same pages; overhead is CPU per page. Target: <= 10% more
CPU with the middleware.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_PROJECT = REPO / "example_project"
SITE_ARCHIVE = REPO.parent / "shared" / "corpus" / "dev" / "site.tar.gz"
TARGET_OVERHEAD = 0.10


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="500 pages, one crawl each way")
    parser.add_argument("--pages", type=int, default=0, help="stop after this many pages (0: all)")
    parser.add_argument("--repeat", type=int, default=3, help="crawls each way")
    parser.add_argument("--child", nargs=2, metavar=("URL", "MODE"), help=argparse.SUPPRESS)
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


def run_child(url: str, mode: str, pages: int) -> None:
    """One crawl in this process; print its CPU seconds and counts as JSON."""
    sys.path.insert(0, str(EXAMPLE_PROJECT))
    from demo.spiders.demo import DemoSpider
    from scrapy import signals
    from scrapy.crawler import AsyncCrawlerProcess

    settings: dict[str, Any] = {
        "LOG_LEVEL": "WARNING",
        "CONCURRENT_REQUESTS": 16,
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "CLOSESPIDER_PAGECOUNT": pages,
    }
    settings.update(MODES[mode])
    fingerprinting = _time_fingerprinting()
    process = AsyncCrawlerProcess(settings)
    crawler = process.create_crawler(DemoSpider)
    marks: dict[str, float] = {}

    def opened() -> None:
        marks["open"] = time.process_time()

    def closed() -> None:
        marks["close"] = time.process_time()

    crawler.signals.connect(opened, signals.spider_opened)  # (signals hold weak references)
    crawler.signals.connect(closed, signals.spider_closed)
    process.crawl(crawler, start_url=url)
    process.start()
    stats = crawler.stats.get_stats()
    print(json.dumps({
        "cpu": marks["close"] - marks["open"],
        "pages": stats.get("response_received_count", 0),
        "marked": stats.get("simhash/marked", 0),
        "fingerprinting": fingerprinting[0],
    }))


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


def crawl(url: str, mode: str, pages: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", url, mode, "--pages", str(pages)]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def serve(site: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, str(EXAMPLE_PROJECT / "serve_demo.py"), str(site), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    url = server.stdout.readline().split(" on ", 1)[1].split(" ", 1)[0]
    return server, url


def main() -> None:
    args = parse_args()
    if args.child:
        run_child(args.child[0], args.child[1], args.pages)
        return
    pages, repeat = (args.pages or 500, 1) if args.quick else (args.pages, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(SITE_ARCHIVE) as archive:
            archive.extractall(tmp, filter="data")
        server, url = serve(Path(tmp, "site"))
        try:
            runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
            for _ in range(repeat):
                for mode in MODES:
                    runs[mode].append(crawl(url, mode, pages))
        finally:
            server.terminate()
            server.wait()
    report(runs)


def report(runs: dict[str, list[dict[str, Any]]]) -> None:
    cpu = {mode: statistics.median(run["cpu"] for run in mode_runs) for mode, mode_runs in runs.items()}
    baseline, *compared = runs
    print(f"{'crawl':<28}{'pages':>7}{'marked':>8}{'CPU s (median)':>16}{'CPU ms/page':>13}"
          f"{'overhead':>10}{'fingerprinting ms/page':>24}")
    for mode, mode_runs in runs.items():
        pages = mode_runs[0]["pages"]
        core = statistics.median(run["fingerprinting"] for run in mode_runs) / pages
        overhead = f"{cpu[mode] / cpu[baseline] - 1:+.1%}" if mode in compared else "-"
        print(f"{mode:<28}{pages:>7}{mode_runs[0]['marked']:>8}{cpu[mode]:>16.2f}"
              f"{1000 * cpu[mode] / pages:>13.2f}{overhead:>10}{1000 * core:>24.2f}")
    if len(runs[baseline]) > 1:
        # Single crawls vary by a few %: the spread of the overheads, each crawl against
        # the median without scrapy-simhash.
        for mode in compared:
            spread = [run["cpu"] / cpu[baseline] - 1 for run in runs[mode]]
            print(f"{mode}: single crawls {min(spread):+.1%} to {max(spread):+.1%}")
    middleware = cpu["with the middleware (mark)"] / cpu[baseline] - 1
    verdict = "ok" if middleware <= TARGET_OVERHEAD else "over target"
    print(f"middleware overhead: {middleware:+.1%} CPU (target <= {TARGET_OVERHEAD:.0%}: {verdict});"
          " fingerprinting is the core's share, the rest is the glue (index, stats, meta) and run-to-run noise")


if __name__ == "__main__":
    main()
