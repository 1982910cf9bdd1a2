"""The contract of :class:`SimhashIndex`, run over every backend.

To cover a new backend, append ``(name, factory)`` to ``BACKEND_FACTORIES``: the
factory takes ``(tmp_path, max_distance)`` and returns a fresh, empty index (it may
call ``pytest.skip`` when the backend cannot run here).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from scrapy_simhash.core.sketch import SKETCH_BYTES, Confirmation, check_sketch, page_sketch, sketch_distance
from scrapy_simhash.index import _buckets
from scrapy_simhash.index.base import Match, SimhashIndex
from scrapy_simhash.index.brute import BruteForceIndex
from scrapy_simhash.index.memory import MemoryIndex
from scrapy_simhash.index.disk import DiskIndex
from redis_cluster import cluster_index
from redis_server import redis_index

IndexFactory = Callable[[Path, int], SimhashIndex]

BACKEND_FACTORIES: list[tuple[str, IndexFactory]] = [
    ("brute", lambda tmp_path, k: BruteForceIndex(k)),
    ("memory", lambda tmp_path, k: MemoryIndex(k, expected_size=1000)),
    # the NumPy probe, as where the C one was not built (see index_factory)
    ("memory-numpy", lambda tmp_path, k: MemoryIndex(k, expected_size=1000)),
    ("disk", lambda tmp_path, k: DiskIndex(tmp_path, k)),
    ("redis", lambda tmp_path, k: redis_index(k)),
    ("redis-ttl", lambda tmp_path, k: redis_index(k, ttl=3600)),
    ("redis-cluster", lambda tmp_path, k: cluster_index(k)),
]

BASE = 0xF0F0_1234_5678_9ABC


def flip(fingerprint: int, *bits: int) -> int:
    for bit in bits:
        fingerprint ^= 1 << bit
    return fingerprint


@pytest.fixture(params=BACKEND_FACTORIES, ids=[name for name, _ in BACKEND_FACTORIES])
def index_factory(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[int], SimhashIndex]]:
    name, factory = request.param
    if name.endswith("-numpy"):
        monkeypatch.setattr(_buckets, "_scan", None)
    opened: list[SimhashIndex] = []

    def make(max_distance: int = 3) -> SimhashIndex:
        index = factory(tmp_path / f"index{len(opened)}", max_distance)
        opened.append(index)
        return index

    yield make
    for index in opened:
        index.close()


@pytest.fixture
def index(index_factory: Callable[[int], SimhashIndex]) -> SimhashIndex:
    return index_factory(3)


def test_add_if_new_stores_then_reports_the_stored_key(index: SimhashIndex) -> None:
    assert index.add_if_new(BASE, "https://a.example/") is None
    near = flip(BASE, 1, 40)
    assert index.add_if_new(near, "https://b.example/") == Match("https://a.example/", BASE, 2)
    assert len(index) == 1  # the near-duplicate was not stored


def test_add_if_new_returns_the_nearest_match(index: SimhashIndex) -> None:
    index.add(flip(BASE, 1, 2, 3), "far")
    index.add(flip(BASE, 5), "near")
    assert index.add_if_new(BASE, "new") == Match("near", flip(BASE, 5), 1)


def test_query_lists_matches_nearest_first(index: SimhashIndex) -> None:
    entries = {
        "d3": flip(BASE, 0, 20, 63),
        "d0": BASE,
        "d2": flip(BASE, 7, 50),
        "d1": flip(BASE, 33),
    }
    for key, fingerprint in entries.items():
        index.add(fingerprint, key)
    assert [(m.key, m.distance) for m in index.query(BASE)] == [
        ("d0", 0),
        ("d1", 1),
        ("d2", 2),
        ("d3", 3),
    ]


@pytest.mark.parametrize("k", [0, 1, 3, 5])
def test_distance_k_is_found_and_k_plus_1_is_not(
    index_factory: Callable[[int], SimhashIndex], k: int
) -> None:
    index = index_factory(k)
    # spread the flipped bits over the whole word, so they fall in different blocks
    within, beyond = flip(BASE, *range(0, 64, 64 // (k + 1))[:k]), flip(
        BASE, *range(1, 64, 64 // (k + 2))[: k + 1]
    )
    index.add(within, "within")
    index.add(beyond, "beyond")
    assert [(m.key, m.distance) for m in index.query(BASE)] == [("within", k)]


def test_identical_fingerprints_are_distance_0(index: SimhashIndex) -> None:
    index.add(BASE, "first")
    index.add(BASE, "second")
    assert index.query(BASE) == [Match("first", BASE, 0), Match("second", BASE, 0)]
    assert index.add_if_new(BASE, "third") == Match("first", BASE, 0)


def test_extreme_fingerprints(index: SimhashIndex) -> None:
    index.add(0, "zero")
    index.add(2**64 - 1, "ones")
    assert index.query(1) == [Match("zero", 0, 1)]
    assert index.query(2**64 - 2) == [Match("ones", 2**64 - 1, 1)]


def test_len_and_items(index: SimhashIndex) -> None:
    entries = [(flip(BASE, i), f"k{i}") for i in range(0, 60, 6)] + [(7, "seven")]
    for fingerprint, key in entries:
        index.add(fingerprint, key)
    assert len(index) == len(entries)
    assert sorted(index.items()) == sorted(entries)


def test_remove_by_fingerprint_and_by_key(index: SimhashIndex) -> None:
    index.add(BASE, "a")
    index.add(BASE, "b")
    index.add(flip(BASE, 9), "c")
    assert index.remove(BASE, "b") == 1
    assert index.remove(BASE, "missing") == 0
    assert [m.key for m in index.query(BASE)] == ["a", "c"]
    assert index.remove(BASE) == 1
    assert index.remove(BASE) == 0
    assert sorted(index.items()) == [(flip(BASE, 9), "c")]
    assert len(index) == 1


def test_remove_by_key_removes_every_copy(index: SimhashIndex) -> None:
    index.add(BASE, "a")
    index.add(BASE, "a")  # add stores unconditionally: two copies
    index.add(BASE, "b")
    assert index.remove(BASE, "a") == 2
    assert sorted(index.items()) == [(BASE, "b")] and len(index) == 1


def test_add_many_and_query_many(index: SimhashIndex) -> None:
    index.add_many((flip(BASE, i), f"k{i}") for i in range(64))
    queries = [BASE, flip(BASE, 10), 12345]
    assert len(index) == 64
    assert index.query_many(queries) == [index.query(q) for q in queries]
    assert index.query_many([]) == []
    assert len(index.query_many([BASE])[0]) == 64


def test_nearest_and_describe(index: SimhashIndex) -> None:
    assert index.nearest(BASE) is None
    index.add(flip(BASE, 3), "x")
    assert index.nearest(BASE) == Match("x", flip(BASE, 3), 1)
    described = index.describe()
    assert (described["size"], described["max_distance"]) == (1, 3)
    assert described["backend"] == index.backend_name


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (-1, ValueError),
        (2**64, ValueError),
        ("00ff", TypeError),
        (1.0, TypeError),
        (True, TypeError),
        (None, TypeError),
    ],
)
def test_bad_fingerprints_are_refused_and_store_nothing(
    index: SimhashIndex, bad: object, error: type[Exception]
) -> None:
    for call in (index.add_if_new, index.add):
        with pytest.raises(error):
            call(bad, "key")  # type: ignore[arg-type]
    with pytest.raises(error):
        index.query(bad)  # type: ignore[arg-type]
    with pytest.raises(error):
        index.remove(bad)  # type: ignore[arg-type]
    with pytest.raises(error):
        index.query_many([BASE, bad])  # type: ignore[list-item]
    assert len(index) == 0


def test_context_manager_closes(index_factory: Callable[[int], SimhashIndex]) -> None:
    with index_factory(3) as index:
        index.add(BASE, "kept")
        assert len(index) == 1
    index.close()  # closing twice is harmless


@pytest.mark.parametrize("bad_key", [b"https://a.example/", 42, None])
def test_keys_must_be_strings(index: SimhashIndex, bad_key: object) -> None:
    with pytest.raises(TypeError):
        index.add(BASE, bad_key)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        index.add_if_new(BASE, bad_key)  # type: ignore[arg-type]
    assert len(index) == 0


def test_wildcard_bits_may_differ_freely(index: SimhashIndex) -> None:
    index.add(BASE, "stored")
    query = flip(BASE, 1, 2, 3, 10, 20, 30)  # 6 bits away: beyond k = 3 ...
    assert index.query(query) == []
    # ... but within 3 once three of the differing bits are wildcards
    wildcard = (1 << 10) | (1 << 20) | (1 << 30) | (1 << 63)
    assert index.query(query, wildcard) == [Match("stored", BASE, 6)]
    assert index.add_if_new(query, "again", wildcard) == Match("stored", BASE, 6)
    assert index.query(query, wildcard=(1 << 10) | (1 << 20)) == []
    assert len(index) == 1


def test_k_0_matches_exact_copies_only_whatever_the_wildcard(
    index_factory: Callable[[int], SimhashIndex],
) -> None:
    index = index_factory(0)
    index.add(BASE, "stored")
    four_away = flip(BASE, 1, 2, 3, 4)
    every_bit = 2**64 - 1
    assert index.query(four_away, every_bit) == []
    assert index.add_if_new(four_away, "other", every_bit) is None
    assert index.add_if_new(BASE, "copy", every_bit) == Match("stored", BASE, 0)


def test_a_sketch_confirms_a_match_within_k(index: SimhashIndex) -> None:
    sketch = bytes(range(1, 33))
    far = bytes(byte ^ 0xFF for byte in sketch)  # every bit differs: an estimated J of 0
    close = bytes([sketch[0] ^ 0b111, *sketch[1:]])  # 3 of 256 bits differ
    assert index.add_if_new(BASE, "stored", 0, sketch) is None
    near = flip(BASE, 5)
    assert index.query(near, 0, far) == []
    assert index.add_if_new(near, "distinct", 0, far) is None  # kept: stored with its sketch
    assert index.add_if_new(near, "copy", 0, close) == Match("stored", BASE, 1, 0.977)
    assert index.query(near) == [Match("distinct", near, 0), Match("stored", BASE, 1)]  # no sketch: k alone
    assert sorted(index.entries()) == sorted([(BASE, "stored", sketch), (near, "distinct", far)])


def test_replace_if_new_keeps_one_record_a_key(index: SimhashIndex) -> None:
    far = BASE ^ 0xFFFF
    assert index.replace_if_new(BASE, "a") == (None, 0)  # new: stored
    assert index.replace_if_new(far, "a") == (None, 1)  # changed beyond k: replaced
    assert sorted(index.items()) == [(far, "a")]
    verdict = index.replace_if_new(flip(far, 2), "a")  # changed within k: unchanged
    assert verdict.replaced == 0 and verdict.match is not None
    assert (verdict.match.key, verdict.match.fingerprint, verdict.match.distance) == ("a", far, 1)
    assert sorted(index.items()) == [(far, "a")] and index.fingerprints_of("a") == [far]


def test_replace_if_new_prefers_the_pages_own_record(index: SimhashIndex) -> None:
    index.add(BASE, "other")
    index.add(flip(BASE, 1, 2), "page")
    match, replaced = index.replace_if_new(BASE, "page")
    assert match is not None and (match.key, match.distance, replaced) == ("page", 2, 0)
    assert len(index) == 2


def test_a_changed_page_that_duplicates_another_loses_its_old_record(index: SimhashIndex) -> None:
    index.add(BASE, "other")
    index.add(BASE ^ 0xFFFF, "page")
    match, replaced = index.replace_if_new(flip(BASE, 5), "page")
    assert match is not None and (match.key, match.distance, replaced) == ("other", 1, 1)
    assert sorted(index.items()) == [(BASE, "other")]


def test_remove_key_removes_every_record_of_the_key(index: SimhashIndex) -> None:
    index.add(BASE, "a")
    index.add(BASE ^ 0xFF, "a")
    index.add(BASE, "b")
    assert sorted(index.fingerprints_of("a")) == sorted([BASE, BASE ^ 0xFF])
    assert index.remove_key("a") == 2 and index.remove_key("a") == 0
    assert sorted(index.items()) == [(BASE, "b")] and index.fingerprints_of("a") == []


@pytest.mark.parametrize("seed", [1, 2])
def test_replace_if_new_answers_as_brute_force(index_factory: Callable[[int], SimhashIndex], seed: int) -> None:
    """Pages of a few sites fetched again and again, some changed: same verdicts, same records."""
    rng = random.Random(seed)
    bases = [rng.getrandbits(64) for _ in range(8)]
    index, reference = index_factory(3), BruteForceIndex(3)
    for _ in range(400):
        fingerprint = rng.choice(bases)
        for bit in rng.sample(range(64), rng.randrange(7)):
            fingerprint ^= 1 << bit
        key = f"page{rng.randrange(60)}"
        assert index.replace_if_new(fingerprint, key) == reference.replace_if_new(fingerprint, key)
    assert sorted(index.items()) == sorted(reference.items())


def short_pages(seed: int, size: int, shared: int, extra: int = 0) -> tuple[bytes, bytes]:
    """The sketches of two pages of *size* and *size* + *extra* shingles, *shared* of them
    common: an exact Jaccard similarity of shared / (2 size + extra - shared), their low
    16 bits (what a short page's sketch stores) all distinct."""
    rng = np.random.default_rng(seed)
    low = rng.choice(2**16, 2 * size + extra - shared, replace=False).astype(np.uint64)
    pool = (rng.integers(0, 2**48, len(low), dtype=np.uint64) << np.uint64(16)) | low
    return page_sketch(pool[:size]), page_sketch(pool[size - shared :])


# (size, shared, extra): pairs at min_similarity 0.8 exactly (shared / union = 8 / 10),
# and a shingle under it (a digest's 32 bytes under 30 shingles, a minwise sketch's
# from 30), or just over; the last two are a short and a long page (201 shingles: none
# stored), confirmed by the sketch.
SHORT_PAIRS = [(18, 16, 0), (18, 16, 1), (45, 40, 0), (45, 40, 1), (45, 41, 0), (99, 88, 0), (99, 88, 1),
               (198, 176, 0), (198, 176, 1), (200, 178, 0), (200, 178, 1), (200, 190, 1)]


def test_short_pages_are_confirmed_on_their_exact_similarity(index_factory: Callable[[int], SimhashIndex]) -> None:
    index, references = index_factory(3), [BruteForceIndex(3), MemoryIndex(3, expected_size=1000)]
    confirmation, rng = Confirmation(index.min_similarity), random.Random(5)
    sketch_disagrees = 0
    for seed in range(4):
        for n, (size, shared, extra) in enumerate(SHORT_PAIRS):
            stored, query = short_pages(seed, size, shared, extra)
            fingerprint, key = rng.getrandbits(64), f"{seed}.{n}"
            for each in (index, *references):
                each.add(fingerprint, key, stored)
            near = flip(fingerprint, 7)
            expected = [reference.query(near, 0, query) for reference in references]
            assert index.query(near, 0, query) == expected[0] == expected[1]
            assert index.add_if_new(near, key + "?", 0, query) == references[0].add_if_new(near, key + "?", 0, query)
            if len(query) > SKETCH_BYTES:  # two short pages: the exact verdict, whatever the sketch's
                union = 2 * size + extra - shared
                exact = shared * 1000 >= 800 * union
                assert bool(expected[0]) == exact
                if exact and expected[0][0].similarity != round(shared / union, 3):
                    raise AssertionError(expected[0])
                sketch_disagrees += (sketch_distance(stored, query) <= confirmation.max_distance) != exact
    assert sketch_disagrees  # some pairs the sketch alone would have judged otherwise
    assert sorted(index.entries()) == sorted(references[0].entries())


def test_short_page_sketches_round_trip(index_factory: Callable[[int], SimhashIndex]) -> None:
    """entries() gives back a short page's whole sketch (32 bytes and its shingles), as an
    export does (hex), and an index imported from it gives the same verdicts."""
    index, copy = index_factory(3), index_factory(3)
    few, many = short_pages(1, 18, 16), short_pages(2, 200, 178)
    long_page = page_sketch(np.arange(1, 302, dtype=np.uint64))
    entries = [(BASE, "few", few[0]), (BASE ^ 0xFF00, "many", many[0]), (BASE ^ 0xFF_0000, "long", long_page),
               (BASE ^ 0xFF00_0000, "none", None)]
    index.add_entries(entries[:2])
    index.add(*entries[2])
    assert index.add_if_new(*entries[3][:2]) is None
    assert sorted(index.entries()) == sorted(entries)
    exported = [(fp, key, None if sketch is None else sketch.hex()) for fp, key, sketch in index.entries()]
    copy.add_entries((fp, key, None if text is None else check_sketch(bytes.fromhex(text)))
                     for fp, key, text in exported)
    assert sorted(copy.entries()) == sorted(entries)
    for fingerprint, _, _ in entries:
        for query in (few[1], many[1]):
            assert copy.query(flip(fingerprint, 1), 0, query) == index.query(flip(fingerprint, 1), 0, query)
    assert copy.query(flip(BASE, 1), 0, few[1]) == [Match("few", BASE, 1, 0.8)]  # 16 of 20 shingles
    assert copy.query(BASE ^ 0xFF00, 0, many[1]) == [Match("many", BASE ^ 0xFF00, 0, round(178 / 222, 3))]
