"""Redis time of one check, by how many records other workers stored since this worker's last call.

    python benchmarks/bench_redis_tail.py                       # index of 1M, behind 0 .. 10,000
    python benchmarks/bench_redis_tail.py --size 100000 --behind 0 100 1000
    python benchmarks/bench_redis_tail.py --url redis://127.0.0.1:6379/15   # an existing server (flushed)

A worker checks (``replace_if_new``, as a crawl does: 14 wildcard bits, a sketch) right
after another worker stored --behind records. "redis us" is the time Redis spent on all
the calls of that check (``INFO commandstats``, reset just before it: the catch-up reads and
the check script), "calls" how many there were, "wall us" the check's time as the worker
sees it, each the mean of --repeat checks; "longest call us" the longest single call of
them all (``SLOWLOG``). Redis serves no one else while it runs a
script, so this is what one worker's check costs the whole fleet.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import redis

from bench_disk import print_table, random_fingerprints, url  # sibling
from bench_redis import load, random_sketches, random_wildcards  # sibling
from scrapy_simhash.core.fingerprinter import FingerprintOptions
from scrapy_simhash.index.redis import RedisIndex

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from redis_server import RedisServer, find_redis_server  # noqa: E402

_NAMESPACE = "bench-tail"


def one_check(
    crawler: RedisIndex, other: RedisIndex, client: redis.Redis, behind: int, seed: int
) -> tuple[float, int, float, float]:
    """(Redis us, calls, wall us, longest call us) of one check made after *other* stored
    *behind* records."""
    if behind:
        fingerprints = random_fingerprints(behind, seed=seed).tolist()
        keys = (url(10**8 + seed * 100_000 + n) for n in range(behind))
        other.add_entries(zip(fingerprints, keys, random_sketches(behind, seed=seed)))
    [fingerprint] = random_fingerprints(1, seed=seed + 1).tolist()
    [wildcard] = random_wildcards(1, FingerprintOptions().wildcard_bits, seed=seed)
    [sketch] = random_sketches(1, seed=seed + 1)
    client.config_resetstat()
    client.slowlog_reset()
    started = time.perf_counter()
    crawler.replace_if_new(fingerprint, url(10**9 + seed), wildcard, sketch)
    wall = time.perf_counter() - started
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    longest = max((entry["duration"] for entry in client.slowlog_get(128)
                   if entry["command"].startswith(b"EVALSHA")), default=0)
    return float(stats.get("usec", 0)), int(stats.get("calls", 0)), wall * 1e6, float(longest)


def run(redis_url: str, size: int, behinds: list[int], repeat: int) -> list[dict[str, str]]:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    client.config_set("slowlog-log-slower-than", 0)  # every call, to find the longest
    load(redis_url, _NAMESPACE, size, url, True)
    rows = []
    with RedisIndex(redis_url, expected_size=size, namespace=_NAMESPACE) as crawler, \
            RedisIndex(redis_url, expected_size=size, namespace=_NAMESPACE) as other:
        for behind in behinds:
            runs = [one_check(crawler, other, client, behind, seed=1000 * behind + n) for n in range(repeat)]
            redis_us, calls, wall_us, _ = (statistics.mean(values) for values in zip(*runs))
            rows.append({"index size": f"{size:,}", "behind": f"{behind:,}", "redis us": f"{redis_us:.0f}",
                         "calls": f"{calls:.1f}", "longest call us": f"{max(run[3] for run in runs):.0f}",
                         "wall us": f"{wall_us:.0f}"})
    client.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="records in the index first (default: 1M)")
    parser.add_argument("--behind", type=int, nargs="*", default=[0, 100, 1000, 2000, 5000, 10_000],
                        help="records other workers store before each check (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=20, help="checks measured per row")
    parser.add_argument("--url", help="an existing Redis database to use (it is flushed)")
    args = parser.parse_args()
    server = None
    if args.url is None:
        server = RedisServer(find_redis_server() or sys.exit("no redis-server found"))
        server.start()
    try:
        print_table(run(args.url or server.url, args.size, args.behind, args.repeat))  # type: ignore[union-attr]
    finally:
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
