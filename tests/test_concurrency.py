"""Many workers, one Redis index: each near-duplicate cluster is kept exactly once.

A cluster's variants are within k of each other; their sketches split them into
groups (pages that SimHash alone would call copies, but whose shingles differ), and
exactly one page of each group is kept, whoever is first.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("redis")

from conftest import EXAMPLE_PROJECT, RecordingSpider, crawl  # noqa: E402
from redis_cluster import cluster_url, redis_cluster  # noqa: E402,F401  (fixtures)
from redis_server import redis_url, shared_redis_server  # noqa: E402,F401  (fixtures)

from scrapy_simhash.index import Match, open_index  # noqa: E402
from scrapy_simhash.index.redis._client import is_cluster  # noqa: E402

WORKERS = 4
CLUSTERS = 150
VARIANTS = 6
GROUPS = 2  # of variants per cluster whose sketches confirm each other (and not the others')
SKETCH_NOISE = 6  # bits of a group's sketch each variant flips: within a group, <= 12 apart

# Waits for the go file, then offers every variant in its own order; prints what it kept.
_WORKER = """
import json, os, random, sys, time
from scrapy_simhash.index import open_index
url, go, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
variants = json.loads(sys.stdin.read())
random.Random(seed).shuffle(variants)
index = open_index(url, expected_size=10000, namespace="crowd")
while not os.path.exists(go):
    time.sleep(0.01)
kept = [key for fingerprint, key, sketch in variants
        if index.add_if_new(fingerprint, key, sketch=bytes.fromhex(sketch)) is None]
print(json.dumps(kept))
"""


def near_duplicate_clusters(seed: int = 0, clusters: int = CLUSTERS) -> list[tuple[int, str, bytes]]:
    """CLUSTERS random centres, VARIANTS each one bit off (pairwise distance <= 2), each
    variant in one of GROUPS groups: a random sketch (~128 bits from the others) with
    SKETCH_NOISE bits flipped. Keys are ``c<cluster>g<group>/v<variant>``."""
    rng = random.Random(seed)
    variants = []
    for cluster in range(clusters):
        centre = rng.getrandbits(64)
        groups = [rng.getrandbits(256) for _ in range(GROUPS)]
        for i, bit in enumerate(rng.sample(range(64), VARIANTS)):
            group = i % GROUPS
            sketch = groups[group] ^ sum(1 << b for b in rng.sample(range(256), SKETCH_NOISE))
            variants.append((centre ^ (1 << bit), f"c{cluster}g{group}/v{i}", sketch.to_bytes(32, "little")))
    return variants


def kept_groups(kept: list[str]) -> list[str]:
    """The groups of the kept keys, sorted: each should be there once."""
    return sorted(key.split("/")[0] for key in kept)


def all_groups(clusters: int) -> list[str]:
    return sorted(f"c{cluster}g{group}" for cluster in range(clusters) for group in range(GROUPS))


@pytest.fixture(params=["redis", "redis-cluster"])
def shared_url(request: pytest.FixtureRequest) -> str:
    """One Redis server's URL, or a node's of a 3-master Redis Cluster."""
    return request.getfixturevalue("redis_url" if request.param == "redis" else "cluster_url")


def races(url: str) -> int:
    """Near-duplicate clusters raced for: fewer in a cluster, whose checks take ~10x longer."""
    return CLUSTERS // 3 if is_cluster(url) else CLUSTERS


def test_workers_racing_on_the_same_clusters_keep_one_each(shared_url: str, tmp_path: Path) -> None:
    redis_url, clusters = shared_url, races(shared_url)
    variants = near_duplicate_clusters(clusters=clusters)
    open_index(redis_url, expected_size=10000, namespace="crowd").close()  # one design for all
    go = tmp_path / "go"
    workers = [
        subprocess.Popen([sys.executable, "-c", _WORKER, redis_url, str(go), str(seed)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for seed in range(WORKERS)
    ]
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write(json.dumps([(fp, key, sketch.hex()) for fp, key, sketch in variants]))
        worker.stdin.close()
    go.touch()
    kept = [key for worker in workers for key in json.loads(_output_of(worker))]
    assert kept_groups(kept) == all_groups(clusters)
    with open_index(redis_url, namespace="crowd") as index:
        sketches = {key: sketch for _, key, sketch in variants}
        assert sorted(index.entries()) == sorted((fp, key, sketches[key]) for fp, key, _ in variants if key in kept)


def test_threads_sharing_one_index_object_keep_one_each(shared_url: str) -> None:
    """The Scrapy glue calls one index from several worker threads at once."""
    clusters = races(shared_url)
    variants = near_duplicate_clusters(seed=1, clusters=clusters)
    orders = [random.Random(seed).sample(variants, len(variants)) for seed in range(WORKERS)]
    with open_index(shared_url, expected_size=10000, namespace="threads") as index:
        with ThreadPoolExecutor(WORKERS) as pool:
            kept_lists = pool.map(
                lambda order: [key for fp, key, sketch in order if index.add_if_new(fp, key, sketch=sketch) is None],
                orders,
            )
            kept = [key for keys in kept_lists for key in keys]
        assert kept_groups(kept) == all_groups(clusters)
        assert sorted(key for _, key in index.items()) == sorted(kept)


def _output_of(worker: subprocess.Popen[str]) -> str:
    assert worker.stdout is not None
    output = worker.stdout.read()
    assert worker.wait() == 0
    return output


CRAWLERS = 4
_KEPT_STAT = re.compile(r"'simhash/kept': (\d+)")
_ITEMS_STAT = re.compile(r"'item_scraped_count': (\d+)")


def test_crawlers_sharing_redis_keep_each_page_once(shared_url: str, demo_url: str) -> None:
    """4 real ``scrapy crawl`` processes on the same site at once, one Redis index."""
    redis_url = shared_url
    alone_crawl = crawl(RecordingSpider, start_url=demo_url)
    alone = alone_crawl.stats.get_value("simhash/kept")
    unchecked = sum(item["simhash"] is None for item in alone_crawl.spider.items)  # short pages: not fingerprinted
    command = [sys.executable, "-m", "scrapy", "crawl", "demo", "-a", f"start_url={demo_url}",
               "-s", f"SIMHASH_INDEX={redis_url}", "-s", "LOG_LEVEL=INFO"]
    crawlers = [subprocess.Popen(command, cwd=EXAMPLE_PROJECT, stderr=subprocess.PIPE, text=True)
                for _ in range(CRAWLERS)]
    logs = [crawler.communicate(timeout=300)[1] for crawler in crawlers]
    assert all(crawler.returncode == 0 for crawler in crawlers), logs[0][-2000:]
    assert all("Dumping Scrapy stats" in log for log in logs)
    # a crawl that kept nothing (the others were always first) has no such stat
    kept_per_crawl = [int(found.group(1)) if (found := _KEPT_STAT.search(log)) else 0 for log in logs]
    with open_index(redis_url, namespace="demo") as index:  # the namespace of BOT_NAME
        stored = list(index.entries())
        # every stored page is its own only confirmed match: no near-duplicate kept twice
        for fingerprint, key, sketch in stored:
            itself = Match(key, fingerprint, 0, None if sketch is None else 1.0)
            assert index.query(fingerprint, sketch=sketch) == [itself]
    assert sum(kept_per_crawl) == len(stored) == alone
    # each page reaches the items once in total: another crawler's pages are unchanged
    items = sum(int(found.group(1)) for log in logs if (found := _ITEMS_STAT.search(log)))
    assert items == alone + CRAWLERS * unchecked


THREADS = 8


def test_eight_threads_on_one_client_keep_one_each_and_raise_nothing_else(redis_url: str) -> None:
    """8 threads check through two namespaces that share one client and its pool (as a
    crawl's hosts do with ``SIMHASH_SCOPE = "domain"``) while another worker keeps storing
    pages, so that checks also read ahead and catch up: the connections are redis-py's
    pool's, nothing but a verdict comes back (the hand-driven connections of earlier
    versions raised ``IndexError`` here), and each group is kept once per namespace."""
    from scrapy_simhash.index.redis import RedisIndex
    from scrapy_simhash.index.redis._client import connect

    variants = near_duplicate_clusters(seed=2, clusters=60)
    client = connect(redis_url)
    hosts = [RedisIndex(redis_url, expected_size=10000, namespace=f"host-{n}", client=client) for n in range(2)]
    other = RedisIndex(redis_url, expected_size=10000, namespace="host-0")
    rng = random.Random(3)
    noise = [(rng.getrandbits(64), f"noise/{n}") for n in range(4000)]

    def offer(seed: int) -> list[tuple[int, str]]:
        order = random.Random(seed).sample([(n, v) for n in range(2) for v in variants], 2 * len(variants))
        return [(n, key) for n, (fp, key, sketch) in order if hosts[n].add_if_new(fp, key, sketch=sketch) is None]

    try:
        with ThreadPoolExecutor(THREADS + 1) as pool:
            writes = pool.submit(lambda: [other.add_many(noise[i : i + 40]) for i in range(0, len(noise), 40)])
            kept = [pair for pairs in pool.map(offer, range(THREADS)) for pair in pairs]
            writes.result()
        for n, host in enumerate(hosts):
            assert kept_groups([key for m, key in kept if m == n]) == all_groups(60)
            assert sorted(key for _, key in host.items() if not key.startswith("noise/")) == sorted(
                key for m, key in kept if m == n)
    finally:
        for index in (*hosts, other):
            index.close()
        client.close()
