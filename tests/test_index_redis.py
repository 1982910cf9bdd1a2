from __future__ import annotations

import random
import struct
import time
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

redis = pytest.importorskip("redis")

from redis_server import redis_url, shared_redis_server, start_or_skip  # noqa: E402,F401  (fixtures)

from scrapy_simhash.core.sketch import page_sketch  # noqa: E402
from scrapy_simhash.index import IndexFormatError, IndexUnavailableError, Match, open_index  # noqa: E402
from scrapy_simhash.index.brute import BruteForceIndex  # noqa: E402
from scrapy_simhash.index.redis._client import safe_url  # noqa: E402
from scrapy_simhash.index.redis._layout import CHUNK_RECORDS  # noqa: E402
from scrapy_simhash.index.redis import RedisIndex  # noqa: E402

EDGE_FINGERPRINTS = [0, 1, 2**63, 2**64 - 1, 2**63 + 1, 0x8000_0001_8000_0001, 2**53 + 1]
BASE_SKETCH = random.Random("sketch").randbytes(32)
# Bits flipped in the base sketch: close (within 38 bits, Confirmation(0.7).max_distance,
# of the base and of each other), around that bound, and far.
SKETCH_FLIPS = [0, 3, 12, 19, 38, 39, 80, 128]
# A short page (its sketch holds its shingles) and the shingles its edits may add.
BASE_SHINGLES = np.random.default_rng(9).integers(0, 2**64 - 1, 60, dtype=np.uint64)
SHORT_PAGE = -1
#: None (no sketch), or (bits flipped in BASE_SKETCH, the seed choosing them), or
#: (SHORT_PAGE, seed): a short page of 40 shingles, a few of them replaced (a Jaccard
#: similarity of 0.6 to 1 with another: around every min_similarity tested).
sketch_specs = st.one_of(st.none(), st.tuples(st.sampled_from([*SKETCH_FLIPS, SHORT_PAGE]), st.integers(0, 2**16)))


def make_sketch(spec: tuple[int, int] | None) -> bytes | None:
    """The sketch a spec of :data:`sketch_specs` stands for."""
    if spec is None:
        return None
    flips, seed = spec
    rng = random.Random(seed)
    if flips == SHORT_PAGE:
        replaced = rng.randrange(6)
        chosen = rng.sample(range(40), 40 - replaced) + rng.sample(range(40, 60), replaced)
        return page_sketch(BASE_SHINGLES[chosen])
    bits = sum(1 << bit for bit in rng.sample(range(256), flips))
    return (int.from_bytes(BASE_SKETCH, "little") ^ bits).to_bytes(32, "little")


def sorted_entries(entries) -> list[tuple[int, str, bytes | None]]:
    return sorted(entries, key=lambda entry: (entry[0], entry[1], entry[2] or b""))


def test_open_index_routes_redis_urls(redis_url: str) -> None:
    with open_index(redis_url, namespace="spider") as index:
        assert isinstance(index, RedisIndex)


def test_fingerprints_are_stored_exactly(redis_url: str) -> None:
    with RedisIndex(redis_url) as index:
        for fingerprint in EDGE_FINGERPRINTS:
            index.add(fingerprint, hex(fingerprint))
        assert sorted(index.items()) == sorted((fp, hex(fp)) for fp in EDGE_FINGERPRINTS)
        for fingerprint in EDGE_FINGERPRINTS:
            assert index.query(fingerprint)[0].fingerprint == fingerprint


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["add_if_new", "add", "remove", "remove_key", "query"]),
                  st.integers(0, 63), st.integers(0, 3), sketch_specs),
        max_size=40,
    ),
    max_distance=st.integers(0, 4),
    min_similarity=st.sampled_from([0.0, 0.7, 0.9, 1.0]),
    wildcard_bits=st.lists(st.integers(0, 63), max_size=5),
)
def test_matches_brute_force(redis_url: str, ops, max_distance: int, min_similarity: float,
                             wildcard_bits: list[int]) -> None:
    wildcard = sum({1 << bit for bit in wildcard_bits})
    bases = [0, 2**64 - 1, 0x0123_4567_89AB_CDEF, 0xF0F0_F0F0_0F0F_0F0F]
    reference = BruteForceIndex(max_distance, min_similarity=min_similarity)
    with RedisIndex(redis_url, max_distance, expected_size=1000, namespace=uuid.uuid4().hex,
                    min_similarity=min_similarity) as index:
        for step, (op, bit, base, spec) in enumerate(ops):
            fingerprint, sketch = bases[base] ^ (1 << bit) ^ (1 << (bit * 7 % 64)), make_sketch(spec)
            if op == "remove":
                assert index.remove(fingerprint) == reference.remove(fingerprint)
            elif op == "remove_key":
                assert index.remove(fingerprint, f"a{base}") == reference.remove(fingerprint, f"a{base}")
            elif op == "query":
                assert index.query(fingerprint) == reference.query(fingerprint)
                assert index.query(fingerprint, wildcard, sketch) == reference.query(fingerprint, wildcard, sketch)
            elif op == "add_if_new":
                key = f"k{step}"
                assert (index.add_if_new(fingerprint, key, wildcard, sketch)
                        == reference.add_if_new(fingerprint, key, wildcard, sketch))
            else:
                # few keys, so the same (fingerprint, key) is stored more than once
                assert index.add(fingerprint, f"a{base}", sketch) == reference.add(fingerprint, f"a{base}", sketch)
        assert sorted_entries(index.entries()) == sorted_entries(reference.entries())
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


def test_workers_share_the_log_whatever_their_expected_size_or_distance(redis_url: str) -> None:
    with RedisIndex(redis_url, 2, expected_size=1000) as first, RedisIndex(redis_url, 3, expected_size=10**8) as second:
        first.add(0xABCD, "k")
        assert second.query(0xABCD ^ 0b111)[0].key == "k"  # distance 3: second's own k
        assert first.query(0xABCD ^ 0b111) == []


def test_signature_and_format_are_checked(redis_url: str) -> None:
    signature = "simhash-v4;shingle_size=2"
    with RedisIndex(redis_url, signature=signature) as first, RedisIndex(redis_url) as second:
        assert first.describe()["signature"] == second.describe()["signature"] == signature
    with pytest.raises(IndexFormatError, match=r"made otherwise \(shingle_size 2 \(stored\) != 3 \(now\)\)"):
        RedisIndex(redis_url, signature="simhash-v4;shingle_size=3")
    with redis.Redis.from_url(redis_url) as client:
        client.hset("simhash::meta", "format", "99")
    with pytest.raises(IndexFormatError, match="format '99'.*SIMHASH_INDEX_RESET"):
        RedisIndex(redis_url)
    with RedisIndex(redis_url, reset=True, signature="simhash-v1;b") as index:
        assert len(index) == 0


def test_a_namespace_of_the_bucket_layout_is_refused_with_what_to_do(redis_url: str) -> None:
    with redis.Redis.from_url(redis_url) as client:
        client.hset("simhash:old:meta", mapping={"format": "1", "signature": "", "ttl": "0"})
        client.set("simhash:old:t0:ab", b"\x00" * 8)
    with pytest.raises(IndexFormatError, match="format '1' is the bucket layout.*SIMHASH_INDEX_RESET"):
        RedisIndex(redis_url, namespace="old")
    with RedisIndex(redis_url, namespace="old", reset=True) as index:
        assert len(index) == 0 and index.add_if_new(1, "a") is None


def test_a_namespace_with_keys_not_coded_is_refused_with_what_to_do(redis_url: str) -> None:
    with redis.Redis.from_url(redis_url) as client:
        client.hset("simhash:v2:meta", mapping={"format": "2", "signature": "", "ttl": "0"})
    with pytest.raises(IndexFormatError, match="format '2'.*'2' their log with keys not coded.*SIMHASH_INDEX_RESET"):
        RedisIndex(redis_url, namespace="v2")


KEYS = ["https://www.example.com/a.html", "http://example.org/index.php?id=1", "", "item:42",
        "\ud800 lone surrogate", "ünïcödé/日本語.htm", "https://www.", "\x00\xff"]


def test_keys_come_back_exactly_from_every_read(redis_url: str) -> None:
    entries = [(n * 0x9E3779B97F4A7C15 % 2**64, key) for n, key in enumerate(KEYS)]
    with RedisIndex(redis_url) as index, RedisIndex(redis_url) as other:
        index.add_many(entries[:4])
        assert all(index.add_if_new(fingerprint, key) is None for fingerprint, key in entries[4:])
        assert sorted(index.items()) == sorted(entries)
        assert [other.query(fingerprint)[0].key for fingerprint, _ in entries] == KEYS
        assert [matches[0].key for matches in other.query_many([fp for fp, _ in entries])] == KEYS
        assert other.remove(entries[4][0], KEYS[4]) == 1 and len(index) == len(KEYS) - 1


def test_settings_that_would_give_wrong_answers_are_refused(redis_url: str) -> None:
    RedisIndex(redis_url, max_distance=2, ttl=60).close()
    with pytest.raises(ValueError, match="ttl=60"):
        RedisIndex(redis_url, max_distance=2)
    with pytest.raises(ValueError, match="at most"):
        RedisIndex(redis_url, namespace="x").add(1, "u" * 70000)


@pytest.mark.parametrize("ttl", [float("inf"), float("nan"), 1e30, 2**32, 0.5])
def test_a_ttl_redis_cannot_hold_is_refused_before_anything_is_written(redis_url: str, ttl: float) -> None:
    # (2**32: the records' expiry times are 32-bit seconds; it stored records expired at once)
    with pytest.raises(ValueError, match="ttl must be a number of seconds from 1 to 1000000000"):
        RedisIndex(redis_url, namespace="ttl", ttl=ttl)
    client = redis.Redis.from_url(redis_url)
    assert not client.keys("simhash:ttl:*")
    client.close()


def test_ttl_readmits_a_page_after_expiry(redis_url: str) -> None:
    # Expiry is to the second: a record stored at second S stops counting at S + ttl, which
    # may come a moment later with ttl=1; with ttl=2 every step has a second to spare.
    with RedisIndex(redis_url, ttl=2) as index:
        assert index.add_if_new(0xFF, "first") is None
        assert index.add_if_new(0xFE, "near").key == "first"
        time.sleep(3.1)  # past the expiry second, by the Redis clock
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


def test_describe_and_bucket_stats(redis_url: str) -> None:
    with RedisIndex(redis_url, expected_size=1000) as index:
        index.add_many((i * 0x9E3779B97F4A7C15 % 2**64, str(i)) for i in range(500))
        index.remove(0, "0")
        info = index.describe()
        assert (info["size"], info["log_records"], info["removed_records"]) == (499, 500, 1)
        assert info["mirror"]["records"] == 500 and info["design"]["tables"] >= 4
        assert index.bucket_stats()["buckets_per_table"] >= 256


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


def test_an_evicted_chunk_does_not_block_storing(redis_url: str) -> None:
    # Redis under maxmemory may evict some chunk keys and keep others.
    with RedisIndex(redis_url, namespace=uuid.uuid4().hex) as index, redis.Redis.from_url(redis_url) as client:
        index.add(0xABCD, "evicted")
        client.delete(index._names.chunk("o", 0))
        assert index.add_if_new(0xABCD, "again") is None
        assert [match.key for match in index.query(0xABCD)] == ["again"]
        assert list(index.items()) == [(0xABCD, "again")]


@pytest.mark.parametrize("kind", ["o", "k"])  # the key ends' string, or the keys' own
def test_an_evicted_chunk_does_not_block_storing_nor_match_as_another_key(redis_url: str, kind: str) -> None:
    # Redis under maxmemory may evict one string of a chunk and keep the others: with the
    # keys' string gone, its records matched under the key "" (a page, fetched again, a
    # near-duplicate of nothing).
    namespace = uuid.uuid4().hex
    with RedisIndex(redis_url, namespace=namespace) as index, redis.Redis.from_url(redis_url) as client:
        index.add(0xABCD, "evicted")
        client.delete(index._names.chunk(kind, 0))
        verdict = index.replace_if_new(0xABCD, "evicted")
        assert verdict.match is None
        assert [match.key for match in index.query(0xABCD)] == ["evicted"]
    with RedisIndex(redis_url, namespace=namespace) as fresh:  # a crawler that reads the log anew
        assert [match.key for match in fresh.query(0xABCD)] == ["evicted"]


@pytest.mark.parametrize("damage", ["keys cut short", "key ends before their start"])
def test_keys_of_a_damaged_chunk_read_as_gone_not_as_another_key(redis_url: str, damage: str) -> None:
    # (chunks an older release left: its keys begun again under the old key ends) - by the
    # check script and by a crawler that reads the log anew
    namespace = uuid.uuid4().hex
    with RedisIndex(redis_url, namespace=namespace) as index, redis.Redis.from_url(redis_url) as client:
        index.add(0xAAAA, "first")
        index.add(0xBBBB, "other")
        if damage == "keys cut short":
            client.set(index._names.chunk("k", 0), b"first")
        else:
            client.set(index._names.chunk("o", 0), struct.pack(">II", 5, 2))
        assert index.query(0xBBBB) == []
    with RedisIndex(redis_url, namespace=namespace) as fresh:
        assert fresh.query(0xBBBB) == [] and [key for _, key in fresh.items()] == ["first"]


def test_a_worker_follows_what_other_workers_remove_and_reset(redis_url: str) -> None:
    with RedisIndex(redis_url) as a, RedisIndex(redis_url) as b:
        a.add(0xFF, "removed")
        assert b.remove(0xFF) == 1
        assert a.add_if_new(0xFE, "kept") is None  # a's copy still holds 0xFF: Redis says it is gone
        with RedisIndex(redis_url, reset=True) as c:
            c.add(0xF0F0, "after reset")
        assert a.query(0xFE) == []
        assert [match.key for match in a.query(0xF0F1)] == ["after reset"]
        assert a.add_if_new(0xFE, "again") is None


def _random_bits(rng: random.Random, count: int) -> int:
    return sum(1 << bit for bit in rng.sample(range(64), count))


def _random_sketch(rng: random.Random) -> bytes | None:
    return rng.choice([None, make_sketch((rng.choice([*SKETCH_FLIPS, SHORT_PAGE]), rng.randrange(2**16)))])


def _clustered_entries(rng: random.Random, count: int) -> tuple[list[int], list[tuple[int, str, bytes | None]]]:
    bases = [rng.getrandbits(64) for _ in range(8)]
    return bases, [(rng.choice(bases) ^ _random_bits(rng, rng.randint(0, 6)), f"u{i}", _random_sketch(rng))
                   for i in range(count)]


@pytest.mark.parametrize("ttl", [None, 3600])
def test_records_of_other_workers_match_brute_force(redis_url: str, ttl: int | None) -> None:
    # The reader opens first, so the writer's records reach it through the check
    # script's scan of the tail (the last ones) and by catching up (the first ones).
    rng = random.Random(ttl or 0)  # fixed seeds: a failure reproduces
    bases, entries = _clustered_entries(rng, 6000)  # past the tail bound and a chunk boundary
    reference = BruteForceIndex(3)
    namespace = uuid.uuid4().hex
    with RedisIndex(redis_url, namespace=namespace, ttl=ttl) as reader, \
            RedisIndex(redis_url, namespace=namespace, ttl=ttl) as writer:
        for index in (writer, reference):
            index.add_entries(entries[:4000])
        assert reader.query(entries[0][0]) == reference.query(entries[0][0])  # catches up
        for index in (writer, reference):
            index.add_entries(entries[4000:])  # 4000-6000: across chunks 0 and 1, scanned in Lua
        removed = entries[4500][:2]
        assert writer.remove(*removed) == reference.remove(*removed) == 1
        for _ in range(100):
            query, sketch = rng.choice(bases) ^ _random_bits(rng, rng.randint(0, 8)), _random_sketch(rng)
            wildcard = _random_bits(rng, rng.choice([0, 4, 12]))
            assert reader.query(query, wildcard, sketch) == reference.query(query, wildcard, sketch)
        new, sketch = rng.choice(bases) ^ _random_bits(rng, 5), make_sketch((80, 1))
        assert reader.add_if_new(new, "new", 0xFFF, sketch) == reference.add_if_new(new, "new", 0xFFF, sketch)
        assert sorted_entries(writer.entries()) == sorted_entries(reference.entries())
        assert len(reader) == len(reference)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.booleans(), st.sampled_from(["add_if_new", "add", "remove", "query"]),
                              st.integers(0, 63), sketch_specs), max_size=30))
def test_two_workers_match_one_brute_force_index(redis_url: str, ops) -> None:
    # What one worker stores reaches the other through the check script's tail scan,
    # which confirms with the sketches as the candidates' check does.
    reference = BruteForceIndex(3)
    namespace = uuid.uuid4().hex
    with RedisIndex(redis_url, namespace=namespace) as a, RedisIndex(redis_url, namespace=namespace) as b:
        for step, (first, op, bit, spec) in enumerate(ops):
            index, fingerprint = (a if first else b), 0xF0F0_0F0F_F0F0_0F0F ^ (1 << bit) ^ (1 << (bit * 5 % 64))
            sketch = make_sketch(spec)
            if op == "remove":
                assert index.remove(fingerprint) == reference.remove(fingerprint)
            elif op == "query":
                assert index.query(fingerprint, 0xF, sketch) == reference.query(fingerprint, 0xF, sketch)
            else:
                key = f"k{step}"
                assert getattr(index, op)(fingerprint, key, sketch=sketch) == getattr(reference, op)(
                    fingerprint, key, sketch=sketch)
        assert sorted_entries(b.entries()) == sorted_entries(reference.entries())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["replace_if_new", "replace_if_new", "add", "remove_key"]),
                              st.integers(0, 63), st.integers(0, 5)), max_size=30))
def test_workers_replace_a_keys_records_as_one_brute_force_index(redis_url: str, ops) -> None:
    # A page's earlier records are found in the worker's mirror (by key CRC) and in the
    # records it has not seen yet (the check script's scan); a third worker opens late.
    reference = BruteForceIndex(3)
    namespace = uuid.uuid4().hex
    with RedisIndex(redis_url, namespace=namespace) as a, RedisIndex(redis_url, namespace=namespace) as b:
        for step, (worker, op, bit, page) in enumerate(ops):
            index = a if worker == 0 else b
            if worker == 2 and step % 2:  # a worker that opens now: mirrors the whole log
                index = RedisIndex(redis_url, namespace=namespace)
            fingerprint, key = 0xF0F0_0F0F_F0F0_0F0F ^ (1 << bit) ^ (1 << (bit * 5 % 64)), f"page{page}"
            if op == "remove_key":
                assert index.remove_key(key) == reference.remove_key(key)
            elif op == "add":
                index.add(fingerprint, key)
                reference.add(fingerprint, key)
            else:
                assert index.replace_if_new(fingerprint, key, 0xF) == reference.replace_if_new(fingerprint, key, 0xF)
            assert sorted(index.fingerprints_of(key)) == sorted(reference.fingerprints_of(key))
            if index not in (a, b):
                index.close()
        assert sorted_entries(a.entries()) == sorted_entries(reference.entries())


def test_a_running_worker_forgets_expired_records(redis_url: str) -> None:
    entries = [(i * 0x9E3779B97F4A7C15 % 2**64, str(i)) for i in range(CHUNK_RECORDS + 904)]  # chunks 0 and 1
    with RedisIndex(redis_url, ttl=2) as index:  # ttl=2: see test_ttl_readmits_a_page_after_expiry
        index.add_many(entries)
        assert index.forget_expired() == 0  # nothing expired yet
        time.sleep(3.2)  # chunk 0 (full) expires; chunk 1 lives on with the next record
        index.add(7, "late")
        index._next_forget = 0.0  # as if ttl / 4 had passed: the next check forgets
        assert index.add_if_new(7, "copy") == Match("late", 7, 0)
        assert index.describe()["mirror"]["records"] == len(entries) + 1 - CHUNK_RECORDS
        # the forgotten records and the expired ones left in chunk 1 match nothing
        assert index.add_if_new(entries[1][0], "again") is None  # (entries[0] is 0, 3 bits from 7)
        assert index.add_if_new(entries[-1][0], "again too") is None
        assert index.query(7) == [Match("late", 7, 0)]
        assert sorted(index.items()) == sorted([(7, "late"), (entries[1][0], "again"), (entries[-1][0], "again too")])
        # the key CRCs were cut with the records: a page's record is still found by its key
        assert index.fingerprints_of("late") == [7]
        assert index.replace_if_new(0xFFFF_0000_FFFF_0000, "late") == (None, 1)
        assert index.fingerprints_of("late") == [0xFFFF_0000_FFFF_0000]


def test_expired_chunks_are_skipped_when_a_worker_opens(redis_url: str) -> None:
    entries = [(i * 0x9E3779B97F4A7C15 % 2**64, str(i)) for i in range(CHUNK_RECORDS + 904)]  # chunks 0 and 1
    with RedisIndex(redis_url, ttl=2) as index:  # ttl=2: see test_ttl_readmits_a_page_after_expiry
        index.add_many(entries)
        time.sleep(3.2)  # chunk 0 (full) expires; chunk 1 lives on with the next record
        index.add(7, "late")
    with RedisIndex(redis_url, ttl=2) as index:
        assert index.describe()["mirror"]["records"] == len(entries) + 1 - CHUNK_RECORDS
        assert list(index.items()) == [(7, "late")] and len(index) == 1
        assert index.add_if_new(entries[-1][0], "again") is None


def test_stored_signature_reads_the_meta_only(redis_url: str) -> None:
    from scrapy_simhash.index import stored_signature

    assert stored_signature(redis_url, "nowhere") == ""
    RedisIndex(redis_url, namespace="signed", signature="simhash-v5;shingle_size=3").close()
    assert stored_signature(redis_url, "signed") == "simhash-v5;shingle_size=3"
    assert stored_signature("redis://127.0.0.1:1/0") == ""  # nothing there: opening it will say why


def test_catching_up_reads_the_records_from_any_position(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker behind reads the log's chunks as plain strings, in the sync script's
    transaction (:meth:`LogSession.sync`): each record's fingerprint and key CRC, from any
    position, across chunk ends and two transactions, and a mirror that matches."""
    from scrapy_simhash.index._key_crcs import key_crc
    from scrapy_simhash.index.redis import _session
    from scrapy_simhash.index.redis._layout import encoded_key

    monkeypatch.setattr(_session, "_SYNC_CHUNKS", 2)
    entries = [(i * 0x9E3779B97F4A7C15 % 2**64, f"page-{i}") for i in range(3 * CHUNK_RECORDS + 300)]
    log = [(7, "first"), *entries]
    fingerprint_bytes = b"".join(fingerprint.to_bytes(8, "big") for fingerprint, _ in log)
    crc_bytes = b"".join(key_crc(encoded_key(key)).to_bytes(4, "big") for _, key in log)
    with RedisIndex(redis_url, namespace="catch-up") as behind, RedisIndex(redis_url, namespace="catch-up") as writer:
        behind.add(7, "first")  # its mirror starts mid-chunk
        writer.add_many(entries)
        writer.remove(entries[5][0], entries[5][1])
        for position in (0, 1, CHUNK_RECORDS - 1, CHUNK_RECORDS, CHUNK_RECORDS + 17, len(log) - 1, len(log)):
            records, first, fingerprints, crcs, tombstones = behind._log.sync(position, 0, b"")
            count = min(len(log) - position, 2 * CHUNK_RECORDS - position % CHUNK_RECORDS)  # to the 2nd chunk's end
            assert (records, first) == (len(log), position)
            assert fingerprints == fingerprint_bytes[8 * position:][: 8 * count]
            assert crcs == crc_bytes[4 * position:][: 4 * count]
            assert tombstones == (1 + 5).to_bytes(8, "big")  # the sequence number of entries[5]
        assert behind.add_if_new(entries[-1][0], "copy") == Match(entries[-1][1], entries[-1][0], 0)
        assert behind.add_if_new(entries[5][0], "removed") is None
        assert sorted(behind.items()) == sorted(writer.items())


def test_a_check_far_behind_catches_up_without_the_sync_script(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check script answers where the log ends and the tombstones missed; the worker
    reads the chunks as plain strings from there (no sync script), and checks again."""
    from scrapy_simhash.index.redis._scripts import LogScripts

    entries = [(i * 0x9E3779B97F4A7C15 % 2**64, f"page-{i}") for i in range(CHUNK_RECORDS + 500)]
    with RedisIndex(redis_url, namespace="far") as behind, RedisIndex(redis_url, namespace="far") as writer:
        behind.add(7, "first")
        writer.add_many(entries)
        writer.remove(entries[3][0], entries[3][1])

        def no_sync(*args: object) -> None:
            raise AssertionError("the sync script ran")

        monkeypatch.setattr(LogScripts, "call_reading", no_sync)
        assert behind.add_if_new(entries[-1][0], "copy") == Match(entries[-1][1], entries[-1][0], 0)
        assert behind.add_if_new(entries[3][0], "removed") is None
        monkeypatch.undo()
        assert behind.describe()["mirror"]["records"] == len(entries) + 2  # "first", "removed"
        assert sorted(behind.items()) == sorted(writer.items())
