"""The index in a real 3-master Redis Cluster: the same answers as brute force, the
records spread over the nodes, nothing held per record in the crawler, and what Redis
holds is what is reported after a node restarts from an older snapshot."""

from __future__ import annotations

import random
import tracemalloc
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

redis = pytest.importorskip("redis")

from redis_cluster import RedisCluster, cluster_url, redis_cluster, start_cluster_or_skip  # noqa: E402,F401
from test_index_redis import make_sketch, sketch_specs, sorted_entries  # noqa: E402

from scrapy_simhash.core.sketch import SKETCH_BYTES, page_sketch  # noqa: E402
from scrapy_simhash.index import IndexUnavailableError, open_index  # noqa: E402
from scrapy_simhash.index.brute import BruteForceIndex  # noqa: E402
from scrapy_simhash.index.redis._client import connect_cluster  # noqa: E402
from scrapy_simhash.index.redis.cluster import ClusterIndex  # noqa: E402

BASES = [0, 2**64 - 1, 0x0123_4567_89AB_CDEF, 0xF0F0_F0F0_0F0F_0F0F]
SPREAD_WILDCARD = sum(1 << bit for bit in range(0, 60, 5))  # 12 bits, 3 a table: 8 buckets each


def test_any_nodes_url_opens_the_cluster_index(redis_cluster: RedisCluster, cluster_url: str) -> None:
    with open_index(cluster_url, namespace="a") as first:
        assert isinstance(first, ClusterIndex) and first.describe()["nodes"] == 3
        assert first.add_if_new(BASES[2], "page") is None
        with open_index(redis_cluster.nodes[2].url, namespace="a") as other:
            assert other.add_if_new(BASES[2] ^ 1, "copy").key == "page"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(st.tuples(st.sampled_from(["add_if_new", "replace_if_new", "add", "remove", "remove_key", "query"]),
                           st.booleans(), st.integers(0, 63), st.integers(0, 3), sketch_specs), max_size=30),
    max_distance=st.integers(0, 4),
    min_similarity=st.sampled_from([0.0, 0.7, 1.0]),
    wildcard_bits=st.lists(st.integers(0, 63), max_size=14),
)
def test_two_crawlers_match_one_brute_force_index(cluster_url: str, ops, max_distance: int, min_similarity: float,
                                                  wildcard_bits: list[int]) -> None:
    """Two crawlers, wildcard bits (up to 14) and sketches: the answers of one brute-force index."""
    wildcard = sum({1 << bit for bit in wildcard_bits})
    reference = BruteForceIndex(max_distance, min_similarity=min_similarity)
    options = {"expected_size": 1000, "namespace": uuid.uuid4().hex, "min_similarity": min_similarity}
    with ClusterIndex(cluster_url, max_distance, **options) as a, ClusterIndex(cluster_url, max_distance, **options) as b:
        for step, (op, first, bit, base, spec) in enumerate(ops):
            index = a if first else b
            fingerprint, sketch = BASES[base] ^ (1 << bit) ^ (1 << (bit * 7 % 64)), make_sketch(spec)
            if op == "remove":
                assert index.remove(fingerprint) == reference.remove(fingerprint)
            elif op == "remove_key":
                assert index.remove_key(f"a{base}") == reference.remove_key(f"a{base}")
            elif op == "query":
                assert index.query(fingerprint, wildcard, sketch) == reference.query(fingerprint, wildcard, sketch)
            elif op == "add":
                index.add(fingerprint, f"a{base}", sketch)
                reference.add(fingerprint, f"a{base}", sketch)
            else:  # few keys for replace_if_new: pages fetched again, changed or not
                key = f"k{step}" if op == "add_if_new" else f"a{base}"
                assert (getattr(index, op)(fingerprint, key, wildcard, sketch)
                        == getattr(reference, op)(fingerprint, key, wildcard, sketch))
        assert sorted_entries(b.entries()) == sorted_entries(reference.entries())
        assert len(a) == len(reference)


def test_the_index_is_spread_over_the_nodes(redis_cluster: RedisCluster, cluster_url: str) -> None:
    rng = random.Random(4)
    with ClusterIndex(cluster_url, expected_size=100_000, namespace="spread") as index:
        index.add_many((rng.getrandbits(64), f"https://example.com/{n}") for n in range(3000))
    keys = []
    for node in redis_cluster.nodes:
        with redis.Redis(host="127.0.0.1", port=node.port) as client:
            keys.append(client.dbsize())
    # 4 tables of 2**13 buckets (the design for 100k) and 3000 keys' records: each node a third
    assert all(0.25 < count / sum(keys) < 0.42 for count in keys), keys


def test_a_crawler_holds_no_copy_of_the_index(cluster_url: str) -> None:
    """Its memory does not grow with the index: the same opening and checks take the same
    memory over 10,000 records as over none."""
    rng = random.Random(5)
    with ClusterIndex(cluster_url, expected_size=100_000, namespace="big") as writer:
        writer.add_many((rng.getrandbits(64), f"https://example.com/{n}") for n in range(10_000))
    client = connect_cluster(cluster_url)  # (its slot table and connections are not the index's)
    try:
        peaks = [crawler_peak(client, namespace) for namespace in ("empty", "empty", "big")]
    finally:
        client.close()
    assert peaks[2] - peaks[1] < 50_000, peaks  # a copy of 10,000 records: 330 KB at 33 bytes each


def crawler_peak(client: object, namespace: str) -> int:
    """Peak bytes allocated to open *namespace* and check 20 new pages."""
    rng = random.Random(7)
    tracemalloc.start()
    try:
        with ClusterIndex("redis://cluster", namespace=namespace, client=client) as crawler:
            for n in range(20):
                crawler.replace_if_new(rng.getrandbits(64), f"new{n}", wildcard=SPREAD_WILDCARD)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_node_restarted_from_an_older_snapshot(tmp_path) -> None:
    cluster = start_cluster_or_skip()
    try:
        rng = random.Random(6)
        pages = [(rng.getrandbits(64), f"https://a.example/{n}") for n in range(50)]
        lost = rng.getrandbits(64)
        with ClusterIndex(cluster.url, namespace="lost") as crawler:
            crawler.add_many(pages)
            for node in cluster.nodes:
                with redis.Redis(host="127.0.0.1", port=node.port) as client:
                    client.save()  # the snapshots: the first 50 pages
            assert crawler.replace_if_new(lost, "https://b.example/page").match is None
            for node in cluster.nodes:
                node.stop()
                node.start()  # (its snapshot and its nodes.conf are in its directory)
            cluster.wait_until_ready()
            # the lost page is not reported; every page Redis holds is
            assert crawler.replace_if_new(lost ^ 1, "https://b.example/copy").match is None
            assert [m.key for m in crawler.query(pages[3][0] ^ 2)] == [pages[3][1]]
            assert len(crawler) == 51
    finally:
        cluster.close()


def test_a_node_down_is_unavailable_then_recovers() -> None:
    cluster = start_cluster_or_skip()
    try:
        with ClusterIndex(cluster.url, namespace="down") as crawler:
            assert crawler.add_if_new(BASES[3], "page") is None
            cluster.nodes[1].stop()
            with pytest.raises(IndexUnavailableError):
                for n in range(20):  # a check whose buckets are all on the nodes up succeeds
                    crawler.add_if_new(random.Random(n).getrandbits(64), f"p{n}")
            cluster.nodes[1].start()
            cluster.wait_until_ready()
            assert crawler.add_if_new(BASES[3] ^ 4, "copy").key == "page"
    finally:
        cluster.close()


def test_a_cluster_1_namespace_is_still_read_and_written_without_shingles(cluster_url: str) -> None:
    """Its crawlers read 53-byte headers: a short page's sketch is stored there without its
    shingles, and confirmed by its 32 bytes."""
    page = np.random.default_rng(8).integers(0, 2**64 - 1, 50, dtype=np.uint64)
    sketch, query = page_sketch(page), page_sketch(page[:45])  # 45 of 50 shingles: 0.9; the sketches, 0.891
    client = connect_cluster(cluster_url)
    try:
        ClusterIndex(cluster_url, namespace="c1").close()
        meta = "simhash:c1:meta"
        assert client.hget(meta, "format") == b"cluster-2"
        client.hset(meta, "format", "cluster-1")  # as the previous version made it
        with ClusterIndex(cluster_url, namespace="c1") as index:
            assert index.add_if_new(BASES[2], "old", sketch=sketch) is None
            assert list(index.entries()) == [(BASES[2], "old", sketch[:SKETCH_BYTES])]
            assert [m.similarity for m in index.query(BASES[2] ^ 1, sketch=query)] == [0.891]
        with ClusterIndex(cluster_url, namespace="new") as index:  # a new namespace: exact
            index.add(BASES[2], "page", sketch)
            assert [m.similarity for m in index.query(BASES[2] ^ 1, sketch=query)] == [0.9]
    finally:
        client.close()
