"""What a hung Redis costs a crawl: the dev corpus site crawled with Redis up, and with Redis
stopped (SIGSTOP: its connections stay open, no replies) a third of the way through.

    python benchmarks/bench_redis_hang.py               # drop and mark, Redis up and hung, once each
    python benchmarks/bench_redis_hang.py --repeat 3    # medians of 3 crawls each way
    python benchmarks/bench_redis_hang.py --actions mark --trace   # mark only, a timeline of each crawl

The site (``../shared/corpus/dev/site.tar.gz``) is served by the example project's
``serve_demo.py`` on 127.0.0.1:8000, a throwaway ``redis-server`` is started as the tests
start theirs, and each crawl runs in a fresh process: the example project's ``demo``
spider (``CONCURRENT_REQUESTS = 16``) with the add-on and ``SIMHASH_INDEX`` on that Redis
(a namespace of its own per crawl, ``SIMHASH_ON_INDEX_ERROR = "keep"``, the default). In a
"hung" crawl the child stops the Redis server at the response that is a third of those of
the crawl with Redis up, and the parent lets it go on once the crawl is over.

Reported per action and state: the crawl's wall time (``spider_opened`` to
``spider_closed``), its responses, milliseconds a response, the checks that waited out the
socket timeout (``simhash/index_error`` less ``.../skipped``) and those skipped during the
pauses, and the hung crawl's time against the crawl with Redis up (the target: at most 1.5x).
With ``SIMHASH_ACTION = "drop"`` the hung crawl keeps the copies it can no longer check and
follows their links, so it fetches more than the crawl with Redis up; with ``"mark"`` both
fetch the same pages, and the ratio is the hang's own cost. Each crawl's line on stderr also
gives the items' checks (the pipeline's, in mark mode) that waited and were skipped.
``--trace`` prints every half second the seconds since the hang, responses, items, the
checks that failed and the calls queued for a worker thread of the event loop's executor.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_crawl_overhead import EXAMPLE_PROJECT, dev_site  # sibling

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from redis_server import RedisServer, find_redis_server  # noqa: E402

TARGET_RATIO = 1.5
ACTIONS = ("drop", "mark")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=1, help="crawls each way")
    parser.add_argument("--actions", default=",".join(ACTIONS),
                        help="SIMHASH_ACTION values to crawl with, comma-separated (default: drop,mark)")
    parser.add_argument("--trace", action="store_true",
                        help="each crawl prints a timeline to stderr every half second: responses, items,"
                             " checks waited and skipped, calls queued for a worker thread")
    parser.add_argument("--child", nargs=5, metavar=("URL", "REDIS", "NAMESPACE", "ACTION", "HANG_AT"),
                        help=argparse.SUPPRESS)
    return parser.parse_args()


def run_child(url: str, redis_url: str, namespace: str, action: str, hang_at: str) -> None:
    """One crawl in this process; stop the Redis server (pid in $REDIS_PID) at response
    *hang_at* (0: never); print the wall time and counts as JSON."""
    from scrapy import signals
    from scrapy.crawler import AsyncCrawlerProcess

    sys.path.insert(0, str(EXAMPLE_PROJECT))
    from demo.spiders.demo import DemoSpider

    process = AsyncCrawlerProcess({
        "LOG_LEVEL": "ERROR",
        "CONCURRENT_REQUESTS": 16,
        "TELNETCONSOLE_ENABLED": False,
        "ADDONS": {"scrapy_simhash.Addon": 300},
        "SIMHASH_INDEX": redis_url,
        "SIMHASH_NAMESPACE": namespace,
        "SIMHASH_ACTION": action,
    })
    crawler = process.create_crawler(DemoSpider)
    marks: dict[str, float] = {}
    responses = [0]
    hang = int(hang_at)

    def opened() -> None:
        marks["open"] = time.monotonic()

    def closed() -> None:
        marks["close"] = time.monotonic()

    def received() -> None:
        responses[0] += 1
        if responses[0] == hang:
            os.kill(int(os.environ["REDIS_PID"]), signal.SIGSTOP)
            marks["hung"] = time.monotonic()

    crawler.signals.connect(opened, signals.spider_opened)  # (signals hold weak references)
    crawler.signals.connect(closed, signals.spider_closed)
    crawler.signals.connect(received, signals.response_received)
    if os.environ.get("BENCH_TRACE"):
        trace_crawl(crawler, marks)
    process.crawl(crawler, start_url=url)
    process.start()
    stats = crawler.stats.get_stats()
    errors = stats.get("simhash/index_error", 0)
    skipped = stats.get("simhash/index_error/skipped", 0)
    print(json.dumps({
        "seconds": marks["close"] - marks["open"],
        "responses": stats.get("response_received_count", 0),
        "waited": errors - skipped,
        "skipped": skipped,
        "dropped": stats.get("simhash/dropped", 0),
        "marked": stats.get("simhash/marked", 0),
        "items_waited": stats.get("simhash/items/index_error", 0) - stats.get("simhash/items/index_error/skipped", 0),
        "items_skipped": stats.get("simhash/items/index_error/skipped", 0),
    }))


def trace_crawl(crawler: Any, marks: dict[str, float]) -> None:
    """Print to stderr, every half second from ``spider_opened``: the seconds since the
    hang, responses, items scraped, the pages' and items' checks that failed (waited or
    skipped), and the calls queued for a worker thread of the event loop's executor."""
    import asyncio

    from scrapy import signals
    from twisted.internet.task import LoopingCall

    def line() -> None:
        stats = crawler.stats.get_stats()
        executor = asyncio.get_running_loop()._default_executor  # (private: a diagnostic)
        queued = executor._work_queue.qsize() if executor else 0
        threads = len(executor._threads) if executor else 0
        now = time.monotonic()
        since = now - marks.get("hung", now)
        print(f"trace {since:7.1f} s responses {stats.get('response_received_count', 0):5d}"
              f" items {stats.get('item_scraped_count', 0) + stats.get('item_dropped_count', 0):5d}"
              f" page errors {stats.get('simhash/index_error', 0):5d} (skipped {stats.get('simhash/index_error/skipped', 0):5d})"
              f" item errors {stats.get('simhash/items/index_error', 0):5d}"
              f" (skipped {stats.get('simhash/items/index_error/skipped', 0):5d})"
              f" queued {queued:4d} threads {threads}", file=sys.stderr, flush=True)

    looping = LoopingCall(line)

    def opened() -> None:
        looping.start(0.5)  # (its Deferred not returned: the signal would wait for the loop's end)

    def closed() -> None:
        looping.stop()

    crawler.signals.connect(opened, signals.spider_opened, weak=False)
    crawler.signals.connect(closed, signals.spider_closed, weak=False)


def crawl(url: str, server: RedisServer, namespace: str, action: str, hang_at: int, trace: bool) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", url, server.url, namespace, action, str(hang_at)]
    env = {**os.environ, "REDIS_PID": str(server.pid), **({"BENCH_TRACE": "1"} if trace else {})}
    try:  # (the child's stderr, its trace and errors, goes to ours)
        result = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True, env=env)
    finally:
        os.kill(server.pid, signal.SIGCONT)  # the hung crawl's Redis goes on
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    args = parse_args()
    if args.child:
        run_child(*args.child)
        return
    actions = [action for action in args.actions.split(",") if action]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    server = RedisServer(find_redis_server() or sys.exit("no redis-server found"))
    server.start()
    try:
        with dev_site() as url:
            for round_ in range(1, args.repeat + 1):
                for action in actions:
                    up = crawl(url, server, f"hang-{action}-{round_}-up", action, 0, args.trace)
                    hung = crawl(url, server, f"hang-{action}-{round_}-hung", action, max(1, up["responses"] // 3),
                                 args.trace)
                    for state, run in (("up", up), ("hung", hung)):
                        runs.setdefault((action, state), []).append(run)
                        print(f"[{round_}/{args.repeat}] {action}, Redis {state}: {run['seconds']:.1f} s,"
                              f" {run['responses']} responses, {run['waited']} waited, {run['skipped']} skipped;"
                              f" items: {run['items_waited']} waited, {run['items_skipped']} skipped",
                              file=sys.stderr, flush=True)
    finally:
        server.close()
    report(runs, actions)


def report(runs: dict[tuple[str, str], list[dict[str, Any]]], actions: list[str]) -> None:
    def median(action: str, state: str, field: str) -> float:
        return statistics.median(run[field] for run in runs[action, state])

    print(f"{'action':<7}{'Redis':<7}{'seconds':>9}{'responses':>11}{'ms/response':>13}{'waited':>8}"
          f"{'skipped':>9}{'dropped':>9}{'marked':>8}{'time vs up':>12}")
    for action in actions:
        for state in ("up", "hung"):
            seconds, responses = median(action, state, "seconds"), median(action, state, "responses")
            ratio = seconds / median(action, "up", "seconds")
            print(f"{action:<7}{state:<7}{seconds:>9.1f}{responses:>11.0f}{1000 * seconds / responses:>13.1f}"
                  f"{median(action, state, 'waited'):>8.0f}{median(action, state, 'skipped'):>9.0f}"
                  f"{median(action, state, 'dropped'):>9.0f}{median(action, state, 'marked'):>8.0f}{ratio:>11.2f}x")
    for action in actions:
        ratio = median(action, "hung", "seconds") / median(action, "up", "seconds")
        verdict = "ok" if ratio <= TARGET_RATIO else "over target"
        print(f"{action}: Redis hung a third of the way through: {ratio:.2f}x the time with Redis up"
              f" (target <= {TARGET_RATIO}x: {verdict})")


if __name__ == "__main__":
    main()
