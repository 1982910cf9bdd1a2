"""The contract of :class:`SimhashIndex`, run over every backend.

To cover a new backend, append ``(name, factory)`` to ``BACKEND_FACTORIES``: the
factory takes ``(tmp_path, max_distance)`` and returns a fresh, empty index (it may
call ``pytest.skip`` when the backend cannot run here).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

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
