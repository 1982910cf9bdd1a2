"""The Redis index's confirmation step: sketches stored in Redis and compared in Lua."""

from __future__ import annotations

import random
import uuid

import numpy as np
import numpy.typing as npt
import pytest

redis = pytest.importorskip("redis")

from redis_server import redis_url, shared_redis_server  # noqa: E402,F401  (fixtures)

from scrapy_simhash.core.sketch import (  # noqa: E402
    SKETCH_BYTES, Confirmation, estimated_similarity, page_sketch, similarity, sketch_distance)
from scrapy_simhash.index import IndexFormatError, Match  # noqa: E402
from scrapy_simhash.index.redis._layout import CHUNK_RECORDS  # noqa: E402
from scrapy_simhash.index.redis import RedisIndex  # noqa: E402

FP = 0xF0F0_1234_5678_9ABC
BOUND = Confirmation(0.7).max_distance  # 38 bits: an estimate of 0.7
BASE = random.Random(7).randbytes(32)


def flipped(sketch: bytes, count: int, seed: int = 0) -> bytes:
    """*sketch* with *count* of its 256 bits flipped."""
    bits = sum(1 << bit for bit in random.Random(seed).sample(range(256), count))
    return (int.from_bytes(sketch, "little") ^ bits).to_bytes(32, "little")


def test_lua_counts_the_differing_bits_as_python_does(redis_url: str) -> None:
    rng = random.Random(1)
    stored = [BASE, bytes(31) + b"\x01", b"\xff" * 32, *(rng.randbytes(32) for _ in range(5))]
    with RedisIndex(redis_url, min_similarity=0.0) as index:  # 0: every match confirms, with its estimate
        index.add_entries((FP, str(n), sketch) for n, sketch in enumerate(stored))
        for n, sketch in enumerate(stored):
            for count in (0, 1, 7, 8, 9, 31, 64, 100, 128):  # the estimate tells them apart up to 128
                query = flipped(sketch, count, seed=count)
                found = {m.key: m.similarity for m in index.query(FP, sketch=query)}
                assert found == {str(i): similarity(query, s) for i, s in enumerate(stored)}
                assert found[str(n)] == estimated_similarity(count)


@pytest.mark.parametrize("where", ["candidate", "tail"])
def test_a_match_is_confirmed_up_to_the_bound_and_not_past_it(redis_url: str, where: str) -> None:
    # "candidate": the worker's own mirror found the record; "tail": another worker
    # stored it since, and the check script finds it in the records the mirror lacks.
    namespace = uuid.uuid4().hex
    options = {"namespace": namespace, "min_similarity": 0.7}
    with RedisIndex(redis_url, **options) as checker, RedisIndex(redis_url, **options) as other:
        writer = checker if where == "candidate" else other
        writer.add(FP, "stored", BASE)
        far, near = flipped(BASE, BOUND + 1), flipped(BASE, BOUND)
        assert checker.query(FP ^ 1, sketch=far) == []
        assert checker.add_if_new(FP ^ 1, "far", sketch=far) is None  # not confirmed: a distinct page
        assert checker.add_if_new(FP ^ 2, "near", sketch=near) == Match("stored", FP, 1, similarity(BASE, near))
        assert sorted(key for _, key, _ in other.entries()) == ["far", "stored"]


def test_an_entry_or_a_query_without_a_sketch_matches_on_the_fingerprint_alone(redis_url: str) -> None:
    with RedisIndex(redis_url) as index:
        index.add(FP, "no sketch")
        index.add(FP ^ 1, "sketch", BASE)
        far = flipped(BASE, 128)
        assert index.query(FP, sketch=far) == [Match("no sketch", FP, 0)]
        assert index.query(FP) == [Match("no sketch", FP, 0), Match("sketch", FP ^ 1, 1)]
        assert index.add_if_new(FP ^ 3, "new", sketch=BASE) == Match("sketch", FP ^ 1, 1, 1.0)


def test_entries_come_back_with_their_sketches(redis_url: str) -> None:
    rng = random.Random(2)
    entries = [(rng.getrandbits(64), f"u{n}", rng.choice([None, rng.randbytes(32)]))
               for n in range(CHUNK_RECORDS + 100)]  # chunks 0 and 1
    with RedisIndex(redis_url, ttl=3600) as index, RedisIndex(redis_url, ttl=3600) as reader:
        index.add_entries(entries[:-2])
        assert index.add_if_new(*entries[-2][:2], sketch=entries[-2][2]) is None
        index.add(*entries[-1])
        assert list(reader.entries()) == entries
        assert list(reader.items()) == [(fp, key) for fp, key, _ in entries]
        assert reader.describe()["mirror"]["sketch_bytes_per_fingerprint"] == 0  # Redis keeps them


@pytest.mark.parametrize("bad", [b"short", "a string of 32 characters, not!", 42])
def test_bad_sketches_are_refused_and_store_nothing(redis_url: str, bad: object) -> None:
    with RedisIndex(redis_url) as index:
        for call in (index.add, index.add_if_new):
            with pytest.raises((TypeError, ValueError)):
                call(FP, "key", sketch=bad)  # type: ignore[arg-type]
        with pytest.raises((TypeError, ValueError)):
            index.add_entries([(FP, "ok", BASE), (FP, "bad", bad)])  # type: ignore[list-item]
        assert len(index) == 0


def test_a_namespace_without_sketches_is_refused_with_what_to_do(redis_url: str) -> None:
    with RedisIndex(redis_url, namespace="v3") as index:
        index.add(FP, "old")
    with redis.Redis.from_url(redis_url) as client:  # as the previous version left it
        client.hset("simhash:v3:meta", "format", "3")
        client.delete("simhash:v3:s0")
    with pytest.raises(IndexFormatError, match="format '3'.*without sketches.*SIMHASH_INDEX_RESET=True on one "
                                               "worker.*delete the namespace"):
        RedisIndex(redis_url, namespace="v3")
    with RedisIndex(redis_url, namespace="v3", reset=True) as index:
        assert len(index) == 0 and index.add_if_new(FP, "new", sketch=BASE) is None


def test_lost_sketches_leave_the_fingerprints_to_decide(redis_url: str) -> None:
    # Redis under maxmemory may evict the sketch string of a chunk and keep the others.
    with RedisIndex(redis_url) as index, redis.Redis.from_url(redis_url) as client:
        index.add(FP, "kept", BASE)
        client.delete(index._names.chunk("s", 0))
        assert index.query(FP, sketch=flipped(BASE, 128)) == [Match("kept", FP, 0)]
        assert index.add_if_new(FP ^ 0xFFFF, "next", sketch=BASE) is None
        assert list(index.entries()) == [(FP, "kept", None), (FP ^ 0xFFFF, "next", BASE)]


def test_a_blanked_chunk_keeps_no_sketch_of_the_lost_log(redis_url: str) -> None:
    # The counter lost (evicted) and the chunks kept: the next record goes to slot 0
    # again, and its chunk is blanked; no sketch of the records lost is left to it.
    with RedisIndex(redis_url) as index, redis.Redis.from_url(redis_url) as client:
        index.add(FP, "lost", BASE)
        client.delete(index._names.prefix + "n")
        assert index.add_if_new(FP ^ 0xFFFF, "new") is None
        assert list(index.entries()) == [(FP ^ 0xFFFF, "new", None)]
        assert index.query(FP ^ 0xFFFF, sketch=flipped(BASE, 128)) == [Match("new", FP ^ 0xFFFF, 0)]


def test_records_without_sketches_take_no_room_for_them(redis_url: str) -> None:
    with RedisIndex(redis_url) as index, redis.Redis.from_url(redis_url) as client:
        index.add_many((n, str(n)) for n in range(10))
        assert not client.exists(index._names.chunk("s", 0))
        index.add(10, "10", BASE)  # zeros for the 10 before it, then its own
        assert client.strlen(index._names.chunk("s", 0)) == 11 * 32
        assert [sketch for _, _, sketch in index.entries()] == [None] * 10 + [BASE]


def short_page(rng: np.random.Generator, size: int) -> npt.NDArray[np.uint64]:
    """*size* random shingle hashes (their low 16 bits may collide, as a page's may)."""
    return rng.integers(0, 2**64 - 1, size, dtype=np.uint64)


def edited(
    rng: np.random.Generator, shingles: npt.NDArray[np.uint64], changed: int, added: int
) -> npt.NDArray[np.uint64]:
    """*shingles* with *changed* of them replaced and *added* more."""
    kept = rng.permutation(shingles)[changed:]
    return np.concatenate([kept, short_page(rng, changed + added)])


@pytest.mark.parametrize("where", ["candidate", "tail"])
def test_lua_computes_the_exact_similarity_as_python_does(redis_url: str, where: str) -> None:
    rng = np.random.default_rng(3)
    pages = [short_page(rng, size) for size in (1, 5, 29, 30, 64, 150, 199, 200, 201, 400)]
    stored = [page_sketch(page) for page in pages]
    queries = [page_sketch(edited(rng, page, changed, added)) for page in pages
               for changed, added in ((0, 0), (1, 0), (3, 2), (len(page) // 5, 1), (len(page) // 2, 0))]
    namespace = uuid.uuid4().hex
    options = {"namespace": namespace, "min_similarity": 0.0}  # 0: every match confirms, with its similarity
    with RedisIndex(redis_url, **options) as checker, RedisIndex(redis_url, **options) as other:
        writer = checker if where == "candidate" else other
        writer.add_entries((FP, str(n), sketch) for n, sketch in enumerate(stored))
        for query in queries:
            found = {m.key: m.similarity for m in checker.query(FP, sketch=query)}
            assert found == {str(n): similarity(query, s) for n, s in enumerate(stored)}


@pytest.mark.parametrize("where", ["candidate", "tail"])
def test_two_short_pages_are_confirmed_at_the_line_exactly(redis_url: str, where: str) -> None:
    """40 of 50 shingles in common is 0.8, the line: confirmed; 40 of 51 is not."""
    rng = np.random.default_rng(4)
    base = short_page(rng, 45)
    page, at_line = page_sketch(base), page_sketch(np.concatenate([base[:40], short_page(rng, 5)]))
    under = page_sketch(np.concatenate([base[:40], short_page(rng, 6)]))
    assert (similarity(page, at_line), similarity(page, under)) == (0.8, round(40 / 51, 3))
    namespace = uuid.uuid4().hex
    with RedisIndex(redis_url, namespace=namespace) as checker, RedisIndex(redis_url, namespace=namespace) as other:
        assert checker.min_similarity == 0.8
        (checker if where == "candidate" else other).add(FP, "stored", page)
        assert checker.query(FP ^ 1, sketch=at_line) == [Match("stored", FP, 1, 0.8)]
        assert checker.add_if_new(FP ^ 1, "under", sketch=under) is None
        assert sorted(key for _, key, _ in other.entries()) == ["stored", "under"]


def test_shingles_take_a_hash_field_of_short_pages_only(redis_url: str) -> None:
    rng = np.random.default_rng(5)
    short, long_page = page_sketch(short_page(rng, 50)), page_sketch(short_page(rng, 201))
    with RedisIndex(redis_url, ttl=3600) as index, redis.Redis.from_url(redis_url) as client:
        shingles = index._names.chunk("x", 0)
        index.add_entries([(0xFF, "none", None), (0xFF00, "long", long_page)])
        assert not client.exists(shingles)
        assert index.add_if_new(0xFF0000, "short", sketch=short) is None
        assert client.hgetall(shingles) == {b"2": short[SKETCH_BYTES:]}
        assert 0 < client.ttl(shingles) <= 3601  # it expires with the chunk's strings
        assert list(index.entries()) == [(0xFF, "none", None), (0xFF00, "long", long_page), (0xFF0000, "short", short)]


def test_a_short_page_whose_sketch_string_was_lost_matches_on_its_fingerprint(redis_url: str) -> None:
    rng = np.random.default_rng(6)
    page = short_page(rng, 50)
    with RedisIndex(redis_url) as index, redis.Redis.from_url(redis_url) as client:
        index.add(FP, "kept", page_sketch(page))
        client.delete(index._names.chunk("s", 0))  # evicted; the shingles' hash kept
        assert index.query(FP, sketch=page_sketch(page[:10])) == [Match("kept", FP, 0)]
        assert list(index.entries()) == [(FP, "kept", None)]


def test_a_blanked_chunk_keeps_no_shingles_of_the_lost_log(redis_url: str) -> None:
    rng = np.random.default_rng(7)
    with RedisIndex(redis_url) as index, redis.Redis.from_url(redis_url) as client:
        index.add(FP, "lost", page_sketch(short_page(rng, 50)))
        client.delete(index._names.prefix + "n")
        long_page = page_sketch(short_page(rng, 300))
        assert index.add_if_new(FP ^ 0xFFFF, "new", sketch=long_page) is None
        assert not client.exists(index._names.chunk("x", 0))
        assert list(index.entries()) == [(FP ^ 0xFFFF, "new", long_page)]


def test_a_format_5_namespace_is_still_read_and_written_without_shingles(redis_url: str) -> None:
    rng = np.random.default_rng(8)
    page = short_page(rng, 50)
    sketch, query = page_sketch(page), page_sketch(page[:45])
    RedisIndex(redis_url, namespace="v5").close()
    with redis.Redis.from_url(redis_url) as client:
        assert client.hget("simhash:v5:meta", "format") == b"6"
        client.hset("simhash:v5:meta", "format", "5")  # as the previous version made it
        with RedisIndex(redis_url, namespace="v5") as index, RedisIndex(redis_url, namespace="v5") as other:
            index.add(FP, "old", sketch[:SKETCH_BYTES])  # a record of the previous version
            assert other.add_if_new(FP ^ 0xFFFF, "new", sketch=sketch) is None  # stored, without its shingles
            assert not client.exists(index._names.chunk("x", 0))
            head = sketch[:SKETCH_BYTES]
            assert list(other.entries()) == [(FP, "old", head), (FP ^ 0xFFFF, "new", head)]
            assert similarity(sketch, query) == 0.9 and sketch_distance(sketch, query) == 14  # 45 of 50 shingles
            assert [m.similarity for m in other.query(FP ^ 0xFFFF, sketch=query)] == [estimated_similarity(14)]
