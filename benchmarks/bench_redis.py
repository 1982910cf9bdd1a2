"""Redis index: check-and-insert/s per client, p50/p99, memory per fingerprint, batched queries/s.

    python benchmarks/bench_redis.py                 # 1M fingerprints
    python benchmarks/bench_redis.py --quick         # 100k
    python benchmarks/bench_redis.py --url redis://127.0.0.1:6379/15   # an existing server (flushes that db)
    python benchmarks/bench_redis.py --wildcard-bits 0   # checks without wildcard bits

Each check carries a random mask of --wildcard-bits bits (default 12, as
FingerprintOptions.wildcard_bits), so it probes every bucket those bits can spell.
"buckets/check" is the mean number of buckets a check probes; "redis us" is the
time Redis spends in the script per check (INFO commandstats), the rest of the
latency is the client and the round trip.

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

from bench_disk import print_table, queries_per_second, random_fingerprints, url  # sibling
from scrapy_simhash.index.redis import RedisIndex

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from redis_server import RedisServer, find_redis_server  # noqa: E402

_PROBES = 10_000
_BATCH = 1000
_LOAD_CHUNK = 10_000
_WILDCARD_BITS = 12  # FingerprintOptions.wildcard_bits' default


def random_wildcards(count: int, bits: int, seed: int) -> list[int]:
    """*count* masks of *bits* random bit positions each (like a page's weakest bits)."""
    rng = np.random.default_rng(seed)
    positions = (rng.choice(64, size=bits, replace=False) for _ in range(count))
    return [sum(1 << int(b) for b in chosen) for chosen in positions]


def check_latencies(index: RedisIndex, fingerprints: list[int], wildcards: list[int]) -> np.ndarray:
    """Latency (s) of add_if_new of new fingerprints, each with its wildcard mask."""
    latencies = np.empty(len(fingerprints))
    for i, (fingerprint, wildcard) in enumerate(zip(fingerprints, wildcards)):
        started = time.perf_counter()
        index.add_if_new(fingerprint, url(i), wildcard)
        latencies[i] = time.perf_counter() - started
    return latencies


def script_usec_per_call(client: redis.Redis) -> float:
    """Mean microseconds Redis spent per EVALSHA since the last CONFIG RESETSTAT."""
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return float(stats.get("usec_per_call", 0.0))


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


def checks(index: RedisIndex, client: redis.Redis, wildcard_bits: int, seed: int) -> dict[str, str]:
    """Check-and-insert of new pages with *wildcard_bits*-bit masks: rate, latency, Redis time."""
    fingerprints = random_fingerprints(_PROBES, seed=seed).tolist()
    wildcards = random_wildcards(_PROBES, wildcard_bits, seed=seed)
    probes = (index.design.probe_keys(fp, w) for fp, w in zip(fingerprints, wildcards))
    buckets = np.mean([sum(map(len, tables)) for tables in probes])
    client.config_resetstat()
    latencies = check_latencies(index, fingerprints, wildcards)
    return {
        "wildcard bits": str(wildcard_bits),
        "buckets/check": f"{buckets:.1f}",
        "add_if_new/s": f"{len(latencies) / latencies.sum():,.0f}",
        "p50 us": f"{np.percentile(latencies, 50) * 1e6:.0f}",
        "p99 us": f"{np.percentile(latencies, 99) * 1e6:.0f}",
        "redis us": f"{script_usec_per_call(client):.0f}",
    }


def run(redis_url: str, size: int, wildcard_bits: list[int]) -> list[dict[str, str]]:
    """One row per wildcard width, all on one index of *size* entries."""
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    before = used_memory(client)
    with RedisIndex(redis_url, expected_size=size, namespace="bench") as index:
        load_seconds, key_bytes = load(index, size)
        memory = used_memory(client) - before
        qps = queries_per_second(index, _BATCH, _PROBES)
        design = index.design.describe()
        rows = [checks(index, client, bits, seed=10 + i) for i, bits in enumerate(wildcard_bits)]
    client.flushdb()
    common = {
        "size": f"{size:,}",
        "tables/prefix": f"{design['tables']}/{design['prefix_bits']}",
        "bulk adds/s": f"{size / load_seconds:,.0f}",
        "batched queries/s": f"{qps:,.0f}",
        "bytes/fp": f"{memory / size:.1f}",
        "index bytes/fp": f"{(memory - key_bytes) / size:.1f}",
    }
    return [{**common, **row} for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k fingerprints")
    parser.add_argument("--sizes", type=int, nargs="*", help="sizes to measure (default: 1M)")
    parser.add_argument("--url", help="an existing Redis database to use (it is flushed)")
    parser.add_argument("--wildcard-bits", type=int, nargs="*", default=[_WILDCARD_BITS],
                        help="wildcard bits per check, 0-32 (default: 12); several: one row each")
    args = parser.parse_args()
    sizes = args.sizes or ([100_000] if args.quick else [1_000_000])
    server = None
    if args.url is None:
        server = RedisServer(find_redis_server() or sys.exit("no redis-server found"))
        server.start()
    try:
        target = args.url or server.url  # type: ignore[union-attr]
        rows = [row for size in sizes for row in run(target, size, args.wildcard_bits)]
    finally:
        if server is not None:
            server.close()
    print_table(rows)


if __name__ == "__main__":
    main()
