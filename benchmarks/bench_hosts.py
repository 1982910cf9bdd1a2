"""SIMHASH_SCOPE = "domain": the crawler RAM of one index per host, for many hosts.

    python benchmarks/bench_hosts.py                        # 1,000 hosts, 20 pages each, every backend
    python benchmarks/bench_hosts.py --hosts 300 --pages 100 --backends redis

Opens an index per host as the Scrapy glue does (``ComponentIndexes``, default settings,
``SIMHASH_EXPECTED_SIZE`` 1M) and checks --pages new pages in each (``replace_if_new``).
"traced MB" is what Python allocated meanwhile (``tracemalloc``: the indexes, their keys,
the Redis workers' copies of their logs), "max RSS MB" the process's peak. Redis: a
throwaway ``redis-server`` as the tests start it.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import tracemalloc
from pathlib import Path

from scrapy.settings import Settings

from bench_disk import print_table  # sibling
from scrapy_simhash._indexes import ComponentIndexes
from scrapy_simhash.config import SimhashSettings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from redis_server import RedisServer, find_redis_server  # noqa: E402


def measure(index_spec: str | None, hosts: int, pages: int) -> tuple[float, int]:
    settings = {"SIMHASH_SCOPE": "domain", **({"SIMHASH_INDEX": index_spec} if index_spec else {})}
    indexes = ComponentIndexes(SimhashSettings.from_settings(Settings(settings)), "page", "bench")
    tracemalloc.start()
    try:
        for host in range(hosts):
            index = indexes.for_host(f"host{host}.example")
            for page in range(pages):
                fingerprint = (host * 7919 + page * 104729) * 0x9E3779B97F4A7C15 % 2**64
                index.replace_if_new(fingerprint, f"https://host{host}.example/{page}.html")
        traced = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        indexes.close()
    return traced / 1e6, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--pages", type=int, default=20, help="pages checked in each host's index")
    parser.add_argument("--backends", nargs="*", default=["memory", "disk", "redis"])
    args = parser.parse_args()
    rows = []
    for backend in args.backends:
        server = None
        if backend == "redis":
            server = RedisServer(find_redis_server() or sys.exit("no redis-server found"))
            server.start()
        spec = {"memory": None, "disk": tempfile.mkdtemp(prefix="bench-hosts-"),
                "redis": server.url if server else None}[backend]
        try:
            traced, rss = measure(spec, args.hosts, args.pages)
        finally:
            if server is not None:
                server.close()
        rows.append({"backend": backend, "hosts": f"{args.hosts:,}", "pages each": str(args.pages),
                     "traced MB": f"{traced:.1f}", "max RSS MB": str(rss)})
    print_table(rows)


if __name__ == "__main__":
    main()
