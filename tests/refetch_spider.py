"""A crawl run in its own process by ``test_refetch.py``, so that it can be killed with SIGKILL.

    python refetch_spider.py START_URL JOBDIR STATS_FILE [--kill-at URL] [--only URL] [-s NAME=VALUE ...]

It crawls the demo site with the add-on and ``JOBDIR``. ``--kill-at``: the process kills
itself (``kill -9``) when that page reaches the callback, before its item is yielded.
``--only``: fetch that one page again (``dont_filter``), as a resumed crawl re-downloads
a request that was in flight. The crawl's stats are written to STATS_FILE as JSON, and
the URL of each item, as it is scraped, to STATS_FILE with ``.items`` added.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import CrawlerProcess

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "example_project"))

from demo.spiders.demo import DemoSpider  # noqa: E402


class RefetchSpider(DemoSpider):
    name = "refetch"

    def __init__(self, kill_at: str = "", only: str = "", items_file: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kill_at, self.only = kill_at, only
        self.items_file = open(items_file, "a", buffering=1)  # noqa: SIM115  (a line at a time: a kill loses none)

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> RefetchSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.item_scraped, signal=signals.item_scraped)
        return spider

    def item_scraped(self, item: Any) -> None:
        self.items_file.write(item["url"] + "\n")

    async def start(self) -> Any:
        if self.only:
            yield Request(self.only, dont_filter=True, errback=self.dropped)
            return
        async for request in super().start():
            yield request

    def parse(self, response: Any) -> Any:
        if self.kill_at and response.url == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        yield from super().parse(response)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("start_url")
    parser.add_argument("jobdir")
    parser.add_argument("stats_file")
    parser.add_argument("--kill-at", default="")
    parser.add_argument("--only", default="")
    parser.add_argument("-s", action="append", default=[], help="NAME=VALUE")
    args = parser.parse_args()
    settings = {
        "ADDONS": {"scrapy_simhash.Addon": 300},
        "JOBDIR": args.jobdir,
        "CONCURRENT_REQUESTS": 1,
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        **dict(setting.split("=", 1) for setting in args.s),
    }
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(RefetchSpider)
    process.crawl(crawler, start_url=args.start_url, kill_at=args.kill_at, only=args.only,
                  items_file=args.stats_file + ".items")
    process.start()
    Path(args.stats_file).write_text(json.dumps(crawler.stats.get_stats(), default=str))


if __name__ == "__main__":
    main()
