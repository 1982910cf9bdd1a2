"""Redis index: check-and-insert/s per client, p50/p99, memory per fingerprint, batched queries/s.

    python benchmarks/bench_redis.py                 # 1M fingerprints
    python benchmarks/bench_redis.py --quick         # 100k
    python benchmarks/bench_redis.py --url redis://127.0.0.1:6379/15   # an existing server (flushes that db)

Without --url it starts a throwaway redis-server as the tests do (tests/redis_server.py).
Memory is INFO memory's used_memory after minus before loading; "index bytes/fp"
leaves out the key bytes themselves (keys here are ~50-byte URLs).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import redis

from bench_disk import add_latencies, print_table, queries_per_second, random_fingerprints, url  # sibling
from scrapy_simhash.index.redis import RedisIndex

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from redis_server import RedisServer, find_redis_server  # noqa: E402

_PROBES = 10_000
_BATCH = 1000
_LOAD_CHUNK = 10_000


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def load(index: RedisIndex, size: int) -> tuple[float, int]:
    """Seconds to add *size* entries (pipelined add_many) and their key bytes."""
    fingerprints = random_fingerprints(size, seed=1).tolist()
    started = time.perf_counter()
    for start in range(0, size, _LOAD_CHUNK):
        chunk = fingerprints[start : start + _LOAD_CHUNK]
        index.add_many(zip(chunk, map(url, range(start, start + len(chunk)))))
    return time.perf_counter() - started, sum(len(url(i)) for i in range(size))


def run(redis_url: str, size: int) -> dict[str, str]:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    before = used_memory(client)
    with RedisIndex(redis_url, expected_size=size, namespace="bench") as index:
        load_seconds, key_bytes = load(index, size)
        memory = used_memory(client) - before
        latencies = add_latencies(index, _PROBES)
        qps = queries_per_second(index, _BATCH, _PROBES)
        design = index.design.describe()
    client.flushdb()
    return {
        "size": f"{size:,}",
        "tables/prefix": f"{design['tables']}/{design['prefix_bits']}",
        "bulk adds/s": f"{size / load_seconds:,.0f}",
        "add_if_new/s": f"{len(latencies) / latencies.sum():,.0f}",
        "p50 us": f"{np.percentile(latencies, 50) * 1e6:.0f}",
        "p99 us": f"{np.percentile(latencies, 99) * 1e6:.0f}",
        "batched queries/s": f"{qps:,.0f}",
        "bytes/fp": f"{memory / size:.1f}",
        "index bytes/fp": f"{(memory - key_bytes) / size:.1f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k fingerprints")
    parser.add_argument("--sizes", type=int, nargs="*", help="sizes to measure (default: 1M)")
    parser.add_argument("--url", help="an existing Redis database to use (it is flushed)")
    args = parser.parse_args()
    sizes = args.sizes or ([100_000] if args.quick else [1_000_000])
    server = None
    if args.url is None:
        server = RedisServer(find_redis_server() or sys.exit("no redis-server found"))
        server.start()
    try:
        rows = [run(args.url or server.url, size) for size in sizes]  # type: ignore[union-attr]
    finally:
        if server is not None:
            server.close()
    print_table(rows)


if __name__ == "__main__":
    main()
