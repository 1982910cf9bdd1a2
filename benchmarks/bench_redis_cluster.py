"""Redis Cluster index: memory per page per node, checks/s per crawler, Redis CPU per check.

    python benchmarks/bench_redis_cluster.py               # 1M pages on a fresh 3-master cluster
    python benchmarks/bench_redis_cluster.py --size 100000 --checks 500

Starts a throwaway 3-master cluster as the tests do (tests/redis_cluster.py), loads --size
pages with ~54-byte URLs and sketches (add_entries), then runs --checks ``replace_if_new``
of new pages from one client (what a crawl calls), with 14 wildcard bits and with none.
"bytes/page" is INFO memory's used_memory grown, per node and in all; "by key kind" is
MEMORY USAGE of a sample of each kind of key, per entry (a bucket of tables 1.., a home:
table 0's bucket and the records' headers and keys, a key's records). "redis cpu us" is
INFO cpu's used_cpu_user + used_cpu_sys grown on all nodes, per check; "gets" the buckets
a check reads. The README's sizing table is computed from these (README, "Redis Cluster").
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import redis

from bench_disk import random_fingerprints, url  # sibling
from bench_redis import random_sketches, random_wildcards  # sibling
from scrapy_simhash.index.redis.cluster import ClusterIndex

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from redis_cluster import start_cluster_or_skip  # noqa: E402

_LOAD_CHUNK = 10_000
_SAMPLE = 300


def node_stats(ports: list[int]) -> list[tuple[int, float]]:
    """(used_memory, CPU seconds) of each node."""
    stats = []
    for port in ports:
        with redis.Redis(host="127.0.0.1", port=port) as client:
            memory, cpu = client.info("memory"), client.info("cpu")
            stats.append((int(memory["used_memory"]), float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])))
    return stats


def bytes_by_kind(ports: list[int], size: int) -> dict[str, float]:
    """MEMORY USAGE per entry of sampled keys of each kind, times keys of the kind / size."""
    totals: dict[str, list[float]] = {"bucket": [0, 0, 0], "home": [0, 0, 0], "key records": [0, 0, 0]}
    for port in ports:
        with redis.Redis(host="127.0.0.1", port=port) as client:
            for kind, pattern in (("bucket", "*{[1-9].*}f"), ("home", "*{0.*}[frk]"), ("key records", "*{u.*}")):
                names = [name for _, name in zip(range(_SAMPLE), client.scan_iter(match=pattern, count=1000))]
                count = sum(1 for _ in client.scan_iter(match=pattern, count=10_000))
                usage = sum(client.memory_usage(name, samples=0) or 0 for name in names)
                totals[kind][0] += count
                totals[kind][1] += usage
                totals[kind][2] += len(names)
    return {kind: count * usage / max(sampled, 1) / size for kind, (count, usage, sampled) in totals.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--checks", type=int, default=2000)
    args = parser.parse_args()
    cluster = start_cluster_or_skip()
    ports = [node.port for node in cluster.nodes]
    try:
        before = node_stats(ports)
        fingerprints = random_fingerprints(args.size, seed=1).tolist()
        sketches = random_sketches(args.size, seed=1)
        started = time.perf_counter()
        with ClusterIndex(cluster.url, expected_size=args.size, namespace="bench") as index:
            for start in range(0, args.size, _LOAD_CHUNK):
                stop = min(start + _LOAD_CHUNK, args.size)
                index.add_entries(zip(fingerprints[start:stop], map(url, range(start, stop)), sketches[start:stop]))
            print(f"loaded {args.size:,} in {time.perf_counter() - started:.1f} s; design {index.design.describe()}")
            after = node_stats(ports)
            grown = [a[0] - b[0] for a, b in zip(after, before)]
            print("bytes/page by node:", [round(g / args.size, 1) for g in grown], "all:", round(sum(grown) / args.size, 1))
            print("bytes/page by key kind:", {k: round(v, 1) for k, v in bytes_by_kind(ports, args.size).items()})
            for bits in (14, 0):
                measure_checks(index, ports, args.checks, bits)
    finally:
        cluster.close()


def measure_checks(index: ClusterIndex, ports: list[int], count: int, bits: int) -> None:
    fingerprints = random_fingerprints(count, seed=bits + 7).tolist()
    wildcards = random_wildcards(count, bits, seed=bits + 7)
    sketches = random_sketches(count, seed=bits + 7)
    gets = sum(len(index._run.reader.probe_commands(fp, w)) for fp, w in zip(fingerprints, wildcards)) / count
    before, cpu_started, started = node_stats(ports), time.process_time(), time.perf_counter()
    for n, (fingerprint, wildcard, sketch) in enumerate(zip(fingerprints, wildcards, sketches)):
        index.replace_if_new(fingerprint, url(10**9 + bits * count + n), wildcard, sketch)
    seconds, client_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    after = node_stats(ports)
    per_node = [(a[1] - b[1]) / count * 1e6 for a, b in zip(after, before)]
    print(f"wildcard bits {bits}: {count / seconds:,.0f} checks/s ({seconds / count * 1e3:.2f} ms), "
          f"client cpu {client_cpu / count * 1e6:.0f} us, gets {gets:.1f}, redis cpu us per check by node "
          f"{[round(c, 1) for c in per_node]}, all {sum(per_node):.1f}")


if __name__ == "__main__":
    main()
