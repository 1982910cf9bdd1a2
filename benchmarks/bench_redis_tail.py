"""Redis time of one check, by how many records other workers stored since this worker's last call.

    python benchmarks/bench_redis_tail.py                       # index of 1M, behind 0 .. 10,000
    python benchmarks/bench_redis_tail.py --size 10000000 --repeat 10
    python benchmarks/bench_redis_tail.py --size 100000 --behind 0 100 1000
    python benchmarks/bench_redis_tail.py --url redis://127.0.0.1:6379/15   # an existing server (flushed)

A worker checks (``replace_if_new``, as a crawl does: 14 wildcard bits, a sketch) right
after another worker stored --behind records (``add_entries``). "redis us" is the time Redis
spent on every command the check sent, by its own clock: scripts, transactions and plain
reads alike. It is read from Redis' slow log, set to log every command that takes 1 us or
more while the check runs (Redis 7: a transaction's commands are logged one by one, a
script as one command, the commands a script calls apart, which are left out here since
the script's time holds them; a command under 1 us counts 0). "redis cpu us" is the CPU
time of Redis' main thread meanwhile (``INFO cpu``, less what two INFO calls cost with
nothing between them), which also counts reading the commands and writing the replies;
"median" and "worst" are those of a single check's Redis time, "worst cpu" the most of its
CPU, "scripts" how many scripts ran, "wall us" the check's time as the worker sees it (its
mirror's update included); the others are means of --repeat checks. Redis serves no one
else while it runs a command, a script or a transaction, so this is what one worker's
check costs the whole fleet. (Redis' own periodic work, ~10 times a second, falls into a
check's CPU now and then: often at 10M, whose checks far behind take the worker ~0.5 s.)
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
# Redis' default slow log threshold (us), restored after each check; entries kept meanwhile.
_SLOWLOG_DEFAULT = 10_000
_SLOWLOG_ENTRIES = 10_000
#: The slow log's client address of the commands a script calls (their time is the script's).
_SCRIPT_CLIENT = b"?:0"
#: The benchmark's own commands, not the check's.
_OURS = (b"SLOWLOG", b"INFO", b"CONFIG")


def one_check(
    crawler: RedisIndex, other: RedisIndex, client: redis.Redis, behind: int, seed: int, idle_us: float
) -> tuple[float, float, int, float]:
    """(Redis us of the check's commands, Redis CPU us, scripts run, wall us) of one check
    made after *other* stored *behind* records."""
    if behind:
        fingerprints = random_fingerprints(behind, seed=seed).tolist()
        keys = (url(10**8 + seed * 100_000 + n) for n in range(behind))
        other.add_entries(zip(fingerprints, keys, random_sketches(behind, seed=seed)))
    [fingerprint] = random_fingerprints(1, seed=seed + 1).tolist()
    [wildcard] = random_wildcards(1, FingerprintOptions().wildcard_bits, seed=seed)
    [sketch] = random_sketches(1, seed=seed + 1)
    client.config_resetstat()
    client.slowlog_reset()
    client.config_set("slowlog-log-slower-than", 1)
    busy = redis_cpu_us(client)
    started = time.perf_counter()
    crawler.replace_if_new(fingerprint, url(10**9 + seed), wildcard, sketch)
    wall = time.perf_counter() - started
    busy = redis_cpu_us(client) - busy - idle_us
    client.config_set("slowlog-log-slower-than", _SLOWLOG_DEFAULT)
    usec = sum(entry["duration"] for entry in client.slowlog_get(_SLOWLOG_ENTRIES)
               if entry["client_address"] != _SCRIPT_CLIENT and not entry["command"].startswith(_OURS))
    scripts = int(client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))
    return usec, busy, scripts, wall * 1e6


def redis_cpu_us(client: redis.Redis) -> float:
    """The CPU time of Redis' main thread so far (user + system)."""
    cpu = client.info("cpu")
    return (cpu["used_cpu_user_main_thread"] + cpu["used_cpu_sys_main_thread"]) * 1e6


def idle_cpu_us(client: redis.Redis, samples: int = 50) -> float:
    """What :func:`redis_cpu_us` measures between two calls with nothing in between (the
    INFO command's own time): taken off each check."""
    deltas = []
    for _ in range(samples):
        before = redis_cpu_us(client)
        deltas.append(redis_cpu_us(client) - before)
    return statistics.median(deltas)


def run(redis_url: str, size: int, behinds: list[int], repeat: int) -> list[dict[str, str]]:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    client.config_set("slowlog-max-len", _SLOWLOG_ENTRIES)
    load(redis_url, _NAMESPACE, size, url, True)
    idle_us = idle_cpu_us(client)
    rows = []
    with RedisIndex(redis_url, expected_size=size, namespace=_NAMESPACE) as crawler, \
            RedisIndex(redis_url, expected_size=size, namespace=_NAMESPACE) as other:
        for behind in behinds:
            runs = [one_check(crawler, other, client, behind, 1000 * behind + n, idle_us) for n in range(repeat)]
            redis_us, cpu_us, scripts, wall_us = (statistics.mean(values) for values in zip(*runs))
            rows.append({"index size": f"{size:,}", "behind": f"{behind:,}", "redis us": f"{redis_us:.0f}",
                         "median": f"{statistics.median(run[0] for run in runs):.0f}",
                         "worst": f"{max(run[0] for run in runs):.0f}", "redis cpu us": f"{cpu_us:.0f}",
                         "worst cpu": f"{max(run[1] for run in runs):.0f}", "scripts": f"{scripts:.1f}",
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
