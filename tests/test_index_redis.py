from __future__ import annotations

import random
import time
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

redis = pytest.importorskip("redis")

from redis_server import redis_url, shared_redis_server, start_or_skip  # noqa: E402,F401  (fixtures)

from scrapy_simhash.index import IndexFormatError, IndexUnavailableError, open_index  # noqa: E402
from scrapy_simhash.index.brute import BruteForceIndex  # noqa: E402
from scrapy_simhash.index._redis_client import safe_url  # noqa: E402
from scrapy_simhash.index.redis import RedisIndex  # noqa: E402

EDGE_FINGERPRINTS = [0, 1, 2**63, 2**64 - 1, 2**63 + 1, 0x8000_0001_8000_0001, 2**53 + 1]


def test_open_index_routes_redis_urls(redis_url: str) -> None:
    with open_index(redis_url, namespace="spider") as index:
        assert isinstance(index, RedisIndex) and index.blocking_io


def test_fingerprints_are_stored_exactly(redis_url: str) -> None:
    with RedisIndex(redis_url) as index:
        for fingerprint in EDGE_FINGERPRINTS:
            index.add(fingerprint, hex(fingerprint))
        assert sorted(index.items()) == sorted((fp, hex(fp)) for fp in EDGE_FINGERPRINTS)
        for fingerprint in EDGE_FINGERPRINTS:
            assert index.query(fingerprint)[0].fingerprint == fingerprint


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["add_if_new", "add", "remove", "remove_key", "query"]), st.integers(0, 63), st.integers(0, 3)),
        max_size=40,
    ),
    max_distance=st.integers(0, 4),
    wildcard_bits=st.lists(st.integers(0, 63), max_size=5),
)
def test_matches_brute_force(redis_url: str, ops, max_distance: int, wildcard_bits: list[int]) -> None:
    wildcard = sum({1 << bit for bit in wildcard_bits})
    bases = [0, 2**64 - 1, 0x0123_4567_89AB_CDEF, 0xF0F0_F0F0_0F0F_0F0F]
    reference = BruteForceIndex(max_distance)
    with RedisIndex(redis_url, max_distance, expected_size=1000, namespace=uuid.uuid4().hex) as index:
        for step, (op, bit, base) in enumerate(ops):
            fingerprint = bases[base] ^ (1 << bit) ^ (1 << (bit * 7 % 64))
            if op == "remove":
                assert index.remove(fingerprint) == reference.remove(fingerprint)
            elif op == "remove_key":
                assert index.remove(fingerprint, f"a{base}") == reference.remove(fingerprint, f"a{base}")
            elif op == "query":
                assert index.query(fingerprint) == reference.query(fingerprint)
                assert index.query(fingerprint, wildcard) == reference.query(fingerprint, wildcard)
            elif op == "add_if_new":
                key = f"k{step}"
                assert index.add_if_new(fingerprint, key, wildcard) == reference.add_if_new(fingerprint, key, wildcard)
            else:
                # few keys, so the same (fingerprint, key) is stored more than once
                assert index.add(fingerprint, f"a{base}") == reference.add(fingerprint, f"a{base}")
        assert sorted(index.items()) == sorted(reference.items())
        assert len(index) == len(reference)
        queries = [bases[b] ^ (1 << b) for b in range(4)]
        assert index.query_many(queries) == reference.query_many(queries)


def test_remove_one_key_of_a_shared_fingerprint(redis_url: str) -> None:
    with RedisIndex(redis_url) as index:
        index.add_many([(7, "a"), (7, "b"), (9, "c")])
        assert index.remove(7, "b") == 1
        assert index.remove(7, "missing") == 0
        assert sorted(index.items()) == [(7, "a"), (9, "c")]
        assert len(index) == 2


def test_namespaces_and_reset(redis_url: str) -> None:
    with RedisIndex(redis_url, namespace="a") as a, RedisIndex(redis_url, namespace="b") as b:
        a.add(1, "in-a")
        b.add(1, "in-b")
    with RedisIndex(redis_url, namespace="a", reset=True) as a, RedisIndex(redis_url, namespace="b") as b:
        assert len(a) == 0
        assert list(b.items()) == [(1, "in-b")]


def test_namespaces_that_prefix_each_other_stay_apart(redis_url: str) -> None:
    with RedisIndex(redis_url, namespace="spider/example.com") as host, \
            RedisIndex(redis_url, namespace="spider/example.com:8080") as host_port:
        host.add(1, "a")
        host_port.add(2, "b")
    with RedisIndex(redis_url, namespace="spider/example.com", reset=True) as host, \
            RedisIndex(redis_url, namespace="spider/example.com:8080") as host_port:
        assert len(host) == 0
        assert list(host_port.items()) == [(2, "b")]


def test_every_worker_adopts_the_design_of_the_first(redis_url: str) -> None:
    with RedisIndex(redis_url, expected_size=1000) as first, RedisIndex(redis_url, expected_size=10**8) as second:
        assert second.design == first.design
        first.add(0xABCD, "k")
        assert second.query(0xABCD ^ 1)[0].key == "k"


def test_signature_and_format_are_checked(redis_url: str) -> None:
    RedisIndex(redis_url, signature="simhash-v1;a").close()
    with pytest.raises(IndexFormatError, match="other options"):
        RedisIndex(redis_url, signature="simhash-v1;b")
    with redis.Redis.from_url(redis_url) as client:
        client.hset("simhash::meta", "format", "99")
    with pytest.raises(IndexFormatError, match="format '99'.*SIMHASH_INDEX_RESET"):
        RedisIndex(redis_url)
    with RedisIndex(redis_url, reset=True, signature="simhash-v1;b") as index:
        assert len(index) == 0


def test_settings_that_would_give_wrong_answers_are_refused(redis_url: str) -> None:
    RedisIndex(redis_url, max_distance=2, ttl=60).close()
    with pytest.raises(ValueError, match="max_distance <= 2"):
        RedisIndex(redis_url, max_distance=3, ttl=60)
    with pytest.raises(ValueError, match="ttl=60"):
        RedisIndex(redis_url, max_distance=2)
    with RedisIndex(redis_url, max_distance=1, ttl=60) as smaller:  # a smaller k is still exact
        assert smaller.design.max_distance == 2
    with pytest.raises(ValueError, match="at most"):
        RedisIndex(redis_url, namespace="x").add(1, "u" * 70000)


def test_ttl_readmits_a_page_after_expiry(redis_url: str) -> None:
    with RedisIndex(redis_url, ttl=1) as index:
        assert index.add_if_new(0xFF, "first") is None
        assert index.add_if_new(0xFE, "near").key == "first"
        time.sleep(2.1)  # past the expiry second, by the Redis clock
        assert index.query(0xFF) == []
        assert index.add_if_new(0xFE, "again") is None
        assert list(index.items()) == [(0xFE, "again")]
        assert len(index) == 1


def test_recovers_when_redis_forgets_scripts_and_data(redis_url: str) -> None:
    with RedisIndex(redis_url) as index, redis.Redis.from_url(redis_url) as client:
        index.add(1, "a")
        client.script_flush()
        client.flushdb()
        assert index.add_if_new(1, "b") is None  # NOSCRIPT reloaded, namespace recreated
        assert list(index.items()) == [(1, "b")]


def test_bucket_sizes_and_describe(redis_url: str) -> None:
    with RedisIndex(redis_url, expected_size=1000) as index:
        index.add_many((i * 0x9E3779B97F4A7C15 % 2**64, str(i)) for i in range(500))
        assert sum(index.bucket_sizes(0)) == 500
        info = index.describe()
        assert info["size"] == 500 and info["design"]["tables"] == 4


def test_passwords_stay_out_of_messages() -> None:
    assert safe_url("redis://user:secret@host:6379/0") == "redis://user:***@host:6379/0"
    assert safe_url("rediss://host/1") == "rediss://host/1"


def test_batches_recover_when_redis_forgets_the_namespace(redis_url: str) -> None:
    with RedisIndex(redis_url) as index, redis.Redis.from_url(redis_url) as client:
        index.add_many([(1, "a"), (2, "b")])
        client.flushall()
        index.add_many([(3, "c"), (4, "d")])
        assert sorted(index.items()) == [(3, "c"), (4, "d")]
        assert [[m.key for m in ms] for ms in index.query_many([3, 2**64 - 1])] == [["c", "d"], []]


def test_password_in_the_url() -> None:
    server = start_or_skip("--requirepass", "s3cret")
    try:
        with RedisIndex(server.url.replace("//", "//:s3cret@")) as index:
            assert index.add_if_new(1, "a") is None
        with pytest.raises(IndexUnavailableError) as caught:
            RedisIndex(server.url.replace("//", "//:wrong@"))
        assert "wrong" not in str(caught.value)
    finally:
        server.close()


def test_a_bucket_hit_whose_key_record_was_evicted_does_not_block_storing(redis_url: str) -> None:
    # Redis under maxmemory may evict a key shard and keep the buckets that point at it.
    with RedisIndex(redis_url, namespace=uuid.uuid4().hex) as index:
        index.add(0xABCD, "evicted")
        client = redis.Redis.from_url(redis_url)
        client.delete(*client.keys(f"{index._prefix}k*"))
        assert index.add_if_new(0xABCD, "again") is None
        assert [match.key for match in index.query(0xABCD)] == ["again"]
        client.close()


def _random_bits(rng: random.Random, count: int) -> int:
    return sum(1 << bit for bit in rng.sample(range(64), count))


@pytest.mark.parametrize("ttl", [None, 3600])
def test_full_buckets_match_brute_force(redis_url: str, ttl: int | None) -> None:
    # A small expected size makes few, full buckets: the check script then finds the
    # candidates of each table by its leading 16 bits (string.find) instead of a scan.
    rng = random.Random(ttl or 0)  # fixed seeds: a failure reproduces
    bases = [rng.getrandbits(64) for _ in range(8)]
    entries = [(base ^ _random_bits(rng, rng.randint(0, 6)), f"u{i}")
               for i, base in enumerate(bases * 60)]
    reference = BruteForceIndex(3)
    reference.add_many(entries)
    with RedisIndex(redis_url, expected_size=64, namespace=uuid.uuid4().hex, ttl=ttl) as index:
        index.add_many(entries)
        for _ in range(150):
            query = rng.choice(bases) ^ _random_bits(rng, rng.randint(0, 8))
            wildcard = _random_bits(rng, rng.choice([0, 4, 12]))
            assert index.query(query, wildcard) == reference.query(query, wildcard)
        new = rng.choice(bases) ^ _random_bits(rng, 5)
        wildcard = _random_bits(rng, 12)
        assert index.add_if_new(new, "new", wildcard) == reference.add_if_new(new, "new", wildcard)


def test_leading_bytes_inside_a_record_are_no_candidate(redis_url: str) -> None:
    # The query's leading bytes end the bucket's last record, where no record starts.
    query, last = 0xAAAA_0000_0000_8000, 0x8000_0000_0000_AAAA
    fillers = [0x8000_0000_0000_0000 | (i * 0x0F0F_0F0F_0F0F) for i in range(1, 9)]
    entries = [(fp, hex(fp)) for fp in [*fillers, last]]
    reference = BruteForceIndex(3)
    reference.add_many(entries)
    with RedisIndex(redis_url, expected_size=64, namespace=uuid.uuid4().hex) as index:
        index.add_many(entries)
        for wildcard in (0, 0xF, 0xFFF0_0000):
            assert index.query(query, wildcard) == reference.query(query, wildcard) == []


def test_a_fingerprint_inside_another_key_is_not_its_key(redis_url: str) -> None:
    fingerprint = int.from_bytes(b"abcdefgh", "big")
    with RedisIndex(redis_url, expected_size=64, namespace=uuid.uuid4().hex) as index:
        index.add(fingerprint ^ 1 << 40, "https://example.com/abcdefgh")  # same key shard, first
        index.add(fingerprint, "own")
        assert [m.key for m in index.query(fingerprint) if m.fingerprint == fingerprint] == ["own"]
