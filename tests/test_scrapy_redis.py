"""The README's scrapy-redis recipe: its scheduler and dupefilter for 3 workers, one Redis
for the request queue and the near-duplicate index."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytest.importorskip("scrapy_redis")

from conftest import EXAMPLE_PROJECT, RecordingSpider, crawl  # noqa: E402
from redis_server import redis_url, shared_redis_server  # noqa: E402,F401  (fixtures)

WORKERS = 3
#: The recipe, as the README gives it (REDIS_URL and SIMHASH_INDEX: the same Redis).
RECIPE = {
    "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
    "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
    "SCHEDULER_PERSIST": "True",
}


def _stat(name: str, log: str) -> int:
    found = re.search(rf"'{re.escape(name)}': (\d+)", log)
    return int(found.group(1)) if found else 0


def test_three_scrapy_redis_workers_share_the_queue_and_the_index(redis_url: str, demo_url: str) -> None:
    alone = crawl(RecordingSpider, start_url=demo_url)
    settings = {**RECIPE, "REDIS_URL": redis_url, "SIMHASH_INDEX": redis_url, "LOG_LEVEL": "INFO"}
    command = [sys.executable, "-m", "scrapy", "crawl", "demo", "-a", f"start_url={demo_url}",
               *(arg for name, value in settings.items() for arg in ("-s", f"{name}={value}"))]
    workers = [subprocess.Popen(command, cwd=EXAMPLE_PROJECT, stderr=subprocess.PIPE, text=True)
               for _ in range(WORKERS)]
    logs = [worker.communicate(timeout=300)[1] for worker in workers]
    assert all(worker.returncode == 0 for worker in workers), logs[0][-2000:]
    import redis

    with redis.Redis.from_url(redis_url) as client:  # the queue's dupefilter and the index, in one Redis
        assert client.scard("demo:dupefilter") >= len(alone.spider.items)
        assert client.exists("simhash:demo:meta")
    # Each page fetched by one worker (the shared dupefilter), each copy dropped once
    # (the shared index), each kept page's item scraped once.
    assert sum(_stat("simhash/kept", log) for log in logs) == alone.stats.get_value("simhash/kept")
    assert sum(_stat("simhash/dropped", log) for log in logs) == alone.stats.get_value("simhash/dropped")
    assert sum(_stat("item_scraped_count", log) for log in logs) == len(alone.spider.items)
    assert sum(_stat("simhash/unchanged", log) for log in logs) == 0  # no page fetched twice
