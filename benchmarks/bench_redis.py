"""Redis index: check-and-insert/s per client (p50/p99), Redis time, reopen, bytes per fingerprint.

    python benchmarks/bench_redis.py                 # 1M fingerprints, wildcard bits 14 and 0
    python benchmarks/bench_redis.py --quick         # 100k
    python benchmarks/bench_redis.py --sizes 100000 1000000 --clients 1 4 --threads 1 4
    python benchmarks/bench_redis.py --url redis://127.0.0.1:6379/15   # an existing server (flushes that db)

Each check is ``replace_if_new`` (what a crawl calls) of a new page with a (random) 32-byte sketch, whose mask has
--wildcard-bits random bits, spread as a page's are (default: FingerprintOptions.wildcard_bits'),
so it is stored: the write path, one round trip. With --clients N, N processes (each its own RedisIndex, its own
mirror) check at once, each from --threads T threads sharing its index (as the Scrapy
glue's worker threads do): "checks/s" is per client, "all clients/s" their sum.
"redis us" is the time Redis spends in the script per check (INFO commandstats);
"client cpu us" the CPU time a client process spends per check (its own work, the
mirror's probe, and the kernel's for the socket).

Without --url it starts a throwaway redis-server as the tests do (tests/redis_server.py).
Memory is INFO memory's used_memory after minus before loading, every entry with a
sketch and each shape of key in turn: ~54-byte URLs ("bytes/fp":
https://www.example.com/section-45/article/204567.html), the same without "www."
("no-www B/fp"), ~100-byte URLs with none of the pieces the key coding shortens but the
scheme ("long-URL B/fp", see long_url) and empty keys ("no-URL B/fp"); and the ~54-byte
URLs stored without sketches ("no-sketch B/fp": a sketch is 32 bytes of it);
"mirror bytes/fp" is the RAM each client's local copy takes. "reopen s": opening
the index (reading the log into the mirror).
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import redis

from bench_disk import print_table, random_fingerprints, url  # sibling
from scrapy_simhash.core.fingerprint import weakest_bits
from scrapy_simhash.core.fingerprinter import FingerprintOptions
from scrapy_simhash.core.sketch import SKETCH_BYTES
from scrapy_simhash.index.redis import RedisIndex

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from redis_server import RedisServer, find_redis_server  # noqa: E402

_PROBES = 10_000
_LOAD_CHUNK = 10_000
_WILDCARD_BITS = (FingerprintOptions().wildcard_bits, 0)  # the default, and none


def random_wildcards(count: int, bits: int, seed: int) -> list[int]:
    """*count* masks of *bits* bits each, chosen as a page's are (the weakest of random margins)."""
    rng = np.random.default_rng(seed)
    return [weakest_bits(rng.random(64), bits) for _ in range(count)]


def random_sketches(count: int, seed: int) -> list[bytes]:
    """*count* random sketches (to Redis, any 32 bytes are alike: stored, and compared
    only with the candidates' within k)."""
    data = np.random.default_rng(seed).bytes(count * SKETCH_BYTES)
    return [data[start : start + SKETCH_BYTES] for start in range(0, len(data), SKETCH_BYTES)]


def url_without_www(i: int) -> str:
    return url(i).replace("https://www.", "https://", 1)


def long_url(i: int) -> str:
    """~100 bytes, like a news article's URL (a path of date and headline words)."""
    return (f"https://news.example-site.co.uk/world/europe/{2000 + i % 25}/{i % 12 + 1:02d}/"
            f"{i % 28 + 1:02d}/a-long-headline-slug-of-some-ten-words-{i}")


def no_key(i: int) -> str:
    return ""


# Column name -> the key of entry i, and whether entries have sketches; the first is
# the one the checks run against.
_LOADS: dict[str, tuple[Callable[[int], str], bool]] = {
    "bytes/fp": (url, True), "no-sketch B/fp": (url, False), "no-www B/fp": (url_without_www, True),
    "long-URL B/fp": (long_url, True), "no-URL B/fp": (no_key, True),
}


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def load(redis_url: str, namespace: str, size: int, key: Callable[[int], str],
         with_sketches: bool) -> tuple[float, int]:
    """Seconds to add *size* entries (add_entries) and the bytes Redis' memory grew by."""
    client = redis.Redis.from_url(redis_url)
    before = used_memory(client)
    fingerprints = random_fingerprints(size, seed=1).tolist()
    sketches = random_sketches(size, seed=1) if with_sketches else [None] * size
    started = time.perf_counter()
    with RedisIndex(redis_url, expected_size=size, namespace=namespace) as index:
        for start in range(0, size, _LOAD_CHUNK):
            stop = min(start + _LOAD_CHUNK, size)
            index.add_entries(zip(fingerprints[start:stop], map(key, range(start, stop)), sketches[start:stop]))
    seconds = time.perf_counter() - started
    grown = used_memory(client) - before
    client.close()
    return seconds, grown


def check_latencies(index: RedisIndex, wildcard_bits: int, seed: int, count: int) -> np.ndarray:
    """Latency (s) of replace_if_new of *count* new fingerprints, each with its wildcard mask and sketch."""
    fingerprints = random_fingerprints(count, seed=seed).tolist()
    wildcards = random_wildcards(count, wildcard_bits, seed=seed)
    sketches = random_sketches(count, seed=seed)
    latencies = np.empty(count)
    for i, (fingerprint, wildcard, sketch) in enumerate(zip(fingerprints, wildcards, sketches)):
        started = time.perf_counter()
        index.replace_if_new(fingerprint, url(10**9 + seed * _PROBES + i), wildcard, sketch)
        latencies[i] = time.perf_counter() - started
    return latencies


def client_process(redis_url: str, size: int, wildcard_bits: int, seed: int, threads: int,
                   start: object, results: multiprocessing.Queue) -> None:
    """One client of a run: open, wait for the others, check from *threads* threads
    sharing the index (as the Scrapy glue's worker threads do)."""
    with RedisIndex(redis_url, expected_size=size, namespace="bench") as index:
        start.wait()  # type: ignore[attr-defined]  # a Barrier
        began, cpu = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(threads) as pool:
            parts = pool.map(lambda n: check_latencies(index, wildcard_bits, seed * 100 + n, _PROBES // threads),
                             range(threads))
            latencies = np.concatenate(list(parts))
        results.put((began, time.perf_counter(), latencies, time.process_time() - cpu))


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
    latencies = np.concatenate([lat for _, _, lat, _ in outcomes])
    wall = max(end for _, end, _, _ in outcomes) - min(began for began, _, _, _ in outcomes)
    return {
        "clients x threads": f"{clients} x {threads}",
        "wildcard bits": str(wildcard_bits),
        "checks/s": f"{np.mean([len(lat) / (end - began) for began, end, lat, _ in outcomes]):,.0f}",
        "p50 us": f"{np.percentile(latencies, 50) * 1e6:.0f}",
        "p99 us": f"{np.percentile(latencies, 99) * 1e6:.0f}",
        "all clients/s": f"{len(latencies) / wall:,.0f}",
        "redis us": f"{float(stats.get('usec_per_call', 0.0)):.0f}",
        "client cpu us": f"{sum(cpu for *_, cpu in outcomes) / len(latencies) * 1e6:.0f}",
    }


def run(redis_url: str, size: int, wildcard_bits: list[int], clients: list[int],
        threads: list[int]) -> list[dict[str, str]]:
    """One row per (clients, wildcard width), all on one index of *size* entries."""
    client = redis.Redis.from_url(redis_url)
    grown = {}
    for column, (key, with_sketches) in reversed(_LOADS.items()):  # the checks' load last: it stays
        client.flushdb()
        load_seconds, grown[column] = load(redis_url, "bench", size, key, with_sketches)
    started = time.perf_counter()
    with RedisIndex(redis_url, expected_size=size, namespace="bench") as index:
        reopen_seconds = time.perf_counter() - started
        mirror = index.describe()["mirror"]
    client.close()
    common = {
        "size": f"{size:,}",
        "bulk adds/s": f"{size / load_seconds:,.0f}",
        "reopen s": f"{reopen_seconds:.2f}",
        **{column: f"{grown[column] / size:.1f}" for column in _LOADS},
        "mirror bytes/fp": f"{mirror['index_bytes_per_fingerprint'] + mirror['key_bytes_per_fingerprint'] + mirror['key_crc_bytes_per_record']:.1f}",
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
                        help="wildcard bits per check, 0-32 (default: %(default)s); one row each")
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
