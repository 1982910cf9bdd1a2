"""Redis index: check-and-insert/s per client (p50/p99), Redis time, reopen, bytes per fingerprint.

    python benchmarks/bench_redis.py                 # 1M fingerprints, wildcard bits 12 and 0
    python benchmarks/bench_redis.py --quick         # 100k
    python benchmarks/bench_redis.py --sizes 100000 1000000 --clients 1 4 --threads 1 4
    python benchmarks/bench_redis.py --url redis://127.0.0.1:6379/15   # an existing server (flushes that db)

Each check is ``add_if_new`` of a new page whose mask has --wildcard-bits random
bits (12 is FingerprintOptions.wildcard_bits' default), so it is stored: the write
path, one round trip. With --clients N, N processes (each its own RedisIndex, its own
mirror) check at once, each from --threads T threads sharing its index (as the Scrapy
glue's worker threads do): "checks/s" is per client, "all clients/s" their sum.
"redis us" is the time Redis spends in the script per check (INFO commandstats).

Without --url it starts a throwaway redis-server as the tests do (tests/redis_server.py).
Memory is INFO memory's used_memory after minus before loading, once with ~50-byte
URLs as keys ("bytes/fp") and once with empty keys ("no-URL bytes/fp");
"mirror bytes/fp" is the RAM each client's local copy takes. "reopen s": opening
the index (reading the log into the mirror).
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import redis

from bench_disk import print_table, random_fingerprints, url  # sibling
from scrapy_simhash.index.redis import RedisIndex

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from redis_server import RedisServer, find_redis_server  # noqa: E402

_PROBES = 10_000
_LOAD_CHUNK = 10_000
_WILDCARD_BITS = (12, 0)  # FingerprintOptions.wildcard_bits' default, and none


def random_wildcards(count: int, bits: int, seed: int) -> list[int]:
    """*count* masks of *bits* random bit positions each (like a page's weakest bits)."""
    rng = np.random.default_rng(seed)
    positions = (rng.choice(64, size=bits, replace=False) for _ in range(count))
    return [sum(1 << int(b) for b in chosen) for chosen in positions]


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def load(redis_url: str, namespace: str, size: int, with_urls: bool) -> tuple[float, int]:
    """Seconds to add *size* entries (add_many) and the bytes Redis' memory grew by."""
    client = redis.Redis.from_url(redis_url)
    before = used_memory(client)
    fingerprints = random_fingerprints(size, seed=1).tolist()
    started = time.perf_counter()
    with RedisIndex(redis_url, expected_size=size, namespace=namespace) as index:
        for start in range(0, size, _LOAD_CHUNK):
            chunk = fingerprints[start : start + _LOAD_CHUNK]
            keys = map(url, range(start, start + len(chunk))) if with_urls else [""] * len(chunk)
            index.add_many(zip(chunk, keys))
    seconds = time.perf_counter() - started
    grown = used_memory(client) - before
    client.close()
    return seconds, grown


def check_latencies(index: RedisIndex, wildcard_bits: int, seed: int, count: int) -> np.ndarray:
    """Latency (s) of add_if_new of *count* new fingerprints, each with its wildcard mask."""
    fingerprints = random_fingerprints(count, seed=seed).tolist()
    wildcards = random_wildcards(count, wildcard_bits, seed=seed)
    latencies = np.empty(count)
    for i, (fingerprint, wildcard) in enumerate(zip(fingerprints, wildcards)):
        started = time.perf_counter()
        index.add_if_new(fingerprint, url(10**9 + seed * _PROBES + i), wildcard)
        latencies[i] = time.perf_counter() - started
    return latencies


def client_process(redis_url: str, size: int, wildcard_bits: int, seed: int, threads: int,
                   start: object, results: multiprocessing.Queue) -> None:
    """One client of a run: open, wait for the others, check from *threads* threads
    sharing the index (as the Scrapy glue's worker threads do)."""
    with RedisIndex(redis_url, expected_size=size, namespace="bench") as index:
        start.wait()  # type: ignore[attr-defined]  # a Barrier
        began = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            parts = pool.map(lambda n: check_latencies(index, wildcard_bits, seed * 100 + n, _PROBES // threads),
                             range(threads))
            latencies = np.concatenate(list(parts))
        results.put((began, time.perf_counter(), latencies))


def run_clients(redis_url: str, size: int, clients: int, threads: int, wildcard_bits: int,
                seed: int) -> dict[str, str]:
    """*clients* processes checking at once: per-client and aggregate rates, Redis time."""
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(clients + 1), context.Queue()
    workers = [context.Process(target=client_process,
                               args=(redis_url, size, wildcard_bits, seed + n, threads, start, results))
               for n in range(clients)]
    for worker in workers:
        worker.start()
    start.wait()
    with redis.Redis.from_url(redis_url) as client:
        client.config_resetstat()
        outcomes = [results.get() for _ in workers]
        stats = client.info("commandstats").get("cmdstat_evalsha", {})
    for worker in workers:
        worker.join()
    latencies = np.concatenate([lat for _, _, lat in outcomes])
    wall = max(end for _, end, _ in outcomes) - min(began for began, _, _ in outcomes)
    return {
        "clients x threads": f"{clients} x {threads}",
        "wildcard bits": str(wildcard_bits),
        "checks/s": f"{np.mean([len(lat) / (end - began) for began, end, lat in outcomes]):,.0f}",
        "p50 us": f"{np.percentile(latencies, 50) * 1e6:.0f}",
        "p99 us": f"{np.percentile(latencies, 99) * 1e6:.0f}",
        "all clients/s": f"{len(latencies) / wall:,.0f}",
        "redis us": f"{float(stats.get('usec_per_call', 0.0)):.0f}",
    }


def run(redis_url: str, size: int, wildcard_bits: list[int], clients: list[int],
        threads: list[int]) -> list[dict[str, str]]:
    """One row per (clients, wildcard width), all on one index of *size* entries."""
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    _, bare_bytes = load(redis_url, "bare", size, with_urls=False)
    client.flushdb()
    load_seconds, url_bytes = load(redis_url, "bench", size, with_urls=True)
    started = time.perf_counter()
    with RedisIndex(redis_url, expected_size=size, namespace="bench") as index:
        reopen_seconds = time.perf_counter() - started
        mirror = index.describe()["mirror"]
    client.close()
    common = {
        "size": f"{size:,}",
        "bulk adds/s": f"{size / load_seconds:,.0f}",
        "reopen s": f"{reopen_seconds:.2f}",
        "bytes/fp": f"{url_bytes / size:.1f}",
        "no-URL bytes/fp": f"{bare_bytes / size:.1f}",
        "mirror bytes/fp": f"{mirror['index_bytes_per_fingerprint'] + mirror['key_bytes_per_fingerprint']:.1f}",
    }
    runs = [(n, t, bits) for n in clients for t in threads for bits in wildcard_bits]
    rows = [run_clients(redis_url, size, n, t, bits, seed=10 + 10 * i) for i, (n, t, bits) in enumerate(runs)]
    return [{**common, **row} for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k fingerprints")
    parser.add_argument("--sizes", type=int, nargs="*", help="sizes to measure (default: 1M)")
    parser.add_argument("--url", help="an existing Redis database to use (it is flushed)")
    parser.add_argument("--wildcard-bits", type=int, nargs="*", default=list(_WILDCARD_BITS),
                        help="wildcard bits per check, 0-32 (default: 12 0); one row each")
    parser.add_argument("--clients", type=int, nargs="*", default=[1],
                        help="client processes checking at once (default: 1); one row each")
    parser.add_argument("--threads", type=int, nargs="*", default=[1],
                        help="threads per client sharing its index (default: 1); one row each")
    args = parser.parse_args()
    sizes = args.sizes or ([100_000] if args.quick else [1_000_000])
    server = None
    if args.url is None:
        server = RedisServer(find_redis_server() or sys.exit("no redis-server found"))
        server.start()
    try:
        target = args.url or server.url  # type: ignore[union-attr]
        rows = [row for size in sizes for row in run(target, size, args.wildcard_bits, args.clients, args.threads)]
    finally:
        if server is not None:
            server.close()
    print_table(rows)


if __name__ == "__main__":
    main()
