"""MemoryIndex against the brute-force reference, on clustered fingerprints."""

from __future__ import annotations

import gc
import logging
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probe_kernels import KERNELS, using_kernel
from scrapy_simhash.index import _design_choice, _merge, open_index
from scrapy_simhash.index._buckets import SortedBuckets
from scrapy_simhash.index._design_choice import choose_design
from scrapy_simhash.index._storage import KeyStore
from scrapy_simhash.index._tables import TableDesign, make_design
from scrapy_simhash.index.brute import BruteForceIndex
from scrapy_simhash.index.memory import MemoryIndex

# (max_distance, explicit design or None for the automatic one)
CONFIGS: list[tuple[int, TableDesign | None]] = [
    (0, None),
    (1, None),
    (3, None),
    (3, make_design(3, 5, 6)),
    (3, make_design(3, 6, 4)),
    (5, None),
    (5, make_design(5, 7, 5)),
    (8, None),
]
CONFIG_IDS = [f"k{k}-{'auto' if d is None else len(d.blocks)}" for k, d in CONFIGS]

# An operation: (kind, cluster, flipped bit positions, key number, wildcard bit positions,
# sketch: None, or the cluster's base sketch with these bits flipped: few confirm, many do not)
operations = st.tuples(
    st.sampled_from(["add_if_new", "add_if_new", "add", "remove", "remove_key", "query"]),
    st.integers(0, 3),
    st.lists(st.integers(0, 63), max_size=10),
    st.integers(0, 5),
    st.lists(st.integers(0, 63), max_size=12),
    st.one_of(st.none(), st.lists(st.integers(0, 255), max_size=80)),
)
# The base sketch of each cluster, as 256-bit ints.
base_sketches = st.lists(st.integers(0, 2**256 - 1), min_size=4, max_size=4)


def near(base: int, positions: list[int]) -> int:
    """*base* with the bits at *positions* flipped (clusters make matches happen)."""
    for position in positions:
        base ^= 1 << position
    return base


def fresh_pair(
    k: int, design: TableDesign | None, buffer_limit: int
) -> tuple[MemoryIndex, BruteForceIndex]:
    index = MemoryIndex(k, expected_size=0, design=design)
    index.buffer_limit = buffer_limit  # small: merges and compactions happen in tests
    return index, BruteForceIndex(k)


def sketch_near(base: int, positions: list[int] | None) -> bytes | None:
    """*base* with the bits at *positions* flipped, as a sketch (``None`` for none)."""
    return None if positions is None else near(base, positions).to_bytes(32, "little")


def apply(
    index: MemoryIndex | BruteForceIndex,
    op: tuple[str, int, list[int], int, list[int], list[int] | None],
    bases: list[int],
    sketches: list[int],
) -> object:
    kind, cluster, positions, key_number, wildcard_positions, sketch_positions = op
    fingerprint, key = near(bases[cluster], positions), f"https://example.com/{key_number}"
    wildcard = near(0, sorted(set(wildcard_positions)))
    sketch = sketch_near(sketches[cluster], sketch_positions)
    if kind == "add_if_new":
        return index.add_if_new(fingerprint, key, wildcard, sketch)
    if kind == "add":
        return index.add(fingerprint, key, sketch)
    if kind == "remove":
        return index.remove(fingerprint)
    if kind == "remove_key":
        return index.remove(fingerprint, key)
    return index.query(fingerprint, wildcard, sketch)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize(("k", "design"), CONFIGS, ids=CONFIG_IDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bases=st.lists(st.integers(0, 2**64 - 1), min_size=4, max_size=4),
    sketches=base_sketches,
    ops=st.lists(operations, max_size=80),
    buffer_limit=st.integers(1, 9),
    probes=st.lists(
        st.tuples(st.integers(0, 3), st.lists(st.integers(0, 63), max_size=10)), max_size=8
    ),
)
def test_same_answers_as_brute_force(
    kernel: str,
    k: int,
    design: TableDesign | None,
    bases: list[int],
    sketches: list[int],
    ops: list[tuple[str, int, list[int], int, list[int], list[int] | None]],
    buffer_limit: int,
    probes: list[tuple[int, list[int]]],
) -> None:
    with using_kernel(kernel):
        index, reference = fresh_pair(k, design, buffer_limit)
        for op in ops:
            assert apply(index, op, bases, sketches) == apply(reference, op, bases, sketches)
        queries = [near(bases[c], positions) for c, positions in probes]
        expected = [reference.query(q) for q in queries]
        assert [index.query(q) for q in queries] == expected
        assert index.query_many(queries) == expected
        assert len(index) == len(reference)
        assert sorted(index.items()) == sorted(reference.items())
        assert sorted(index.entries(), key=repr) == sorted(reference.entries(), key=repr)


def clustered(count: int, k: int, seed: int) -> list[tuple[int, str]]:
    """*count* entries around 50 random bases, up to k + 2 bits from their base."""
    rng = random.Random(seed)
    bases = [rng.getrandbits(64) for _ in range(50)]
    entries = []
    for i in range(count):
        flips = [rng.randrange(64) for _ in range(rng.randint(0, k + 2))]
        entries.append((near(rng.choice(bases), flips), f"https://example.com/{i}"))
    return entries


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("k", [0, 3, 8])
def test_bulk_paths_match_brute_force(k: int, kernel: str) -> None:
    with using_kernel(kernel):
        check_bulk_paths(k)


def check_bulk_paths(k: int) -> None:
    entries = clustered(6000, k, seed=k)  # above the bulk threshold of add_many
    reference = BruteForceIndex(k)
    reference.add_many(entries)
    bulk = MemoryIndex(k, expected_size=0)
    bulk.add_many(entries[:100])  # one at a time, then the vectorised merge
    bulk.add_many(entries[100:])
    built = MemoryIndex.from_arrays([f for f, _ in entries], [key for _, key in entries], k)
    queries = [f ^ (1 << (i % 64)) for i, (f, _) in enumerate(clustered(300, k, seed=99))]
    expected = [reference.query(q) for q in queries]
    assert bulk.query_many(queries) == expected
    assert built.query_many(queries) == expected
    assert [built.query(q) for q in queries] == expected


@pytest.mark.parametrize("kernel", KERNELS)
def test_index_grows_its_buckets_and_stays_exact(kernel: str) -> None:
    with using_kernel(kernel):
        index, reference = MemoryIndex(3, expected_size=0), BruteForceIndex(3)
        first_width = index.design.prefix_bits
        for fingerprint, key in clustered(40_000, 3, seed=7):
            assert index.add_if_new(fingerprint, key) == reference.add_if_new(fingerprint, key)
        assert index.design.prefix_bits > first_width
        assert sorted(index.items()) == sorted(reference.items())


def test_compaction_forgets_removed_entries() -> None:
    index, reference = fresh_pair(3, None, buffer_limit=4)
    entries = clustered(400, 3, seed=3)
    index.add_many(entries)
    reference.add_many(entries)
    for fingerprint, key in entries[::2]:
        assert index.remove(fingerprint, key) == reference.remove(fingerprint, key)
    assert len(index._hints) < len(entries)  # rows dropped for good (a compaction, a step per removal)
    assert sorted(index.items()) == sorted(reference.items())
    assert [index.query(f) for f, _ in entries] == [reference.query(f) for f, _ in entries]


def test_from_arrays_accepts_a_key_store_and_numpy_fingerprints() -> None:
    fps = np.array([1, 2**64 - 1, 3], dtype=np.uint64)
    keys = KeyStore.from_buffer("aéb\U0001f600c".encode(), [1, 4, 9])
    index = MemoryIndex.from_arrays(fps, keys, max_distance=1)
    assert sorted(index.items()) == [(1, "a"), (3, "\U0001f600c"), (2**64 - 1, "éb")]
    assert [m.key for m in index.query(3)] == ["\U0001f600c", "a"]


def test_from_arrays_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="2 fingerprints but 1 keys"):
        MemoryIndex.from_arrays(np.array([1, 2], dtype=np.uint64), ["a"])


def test_from_arrays_rejects_negative_fingerprints() -> None:
    with pytest.raises(ValueError, match="not a 64-bit fingerprint: -1"):
        MemoryIndex.from_arrays(np.array([1, -1]), ["a", "b"])


def test_design_must_match_max_distance() -> None:
    with pytest.raises(ValueError, match="design is for distance 2, not max_distance=3"):
        MemoryIndex(3, design=make_design(2, 3))


def test_a_bad_key_stores_nothing() -> None:
    index = MemoryIndex(3)
    with pytest.raises(TypeError, match="a key is a str, not bytes"):
        index.add(5, b"https://example.com")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a key is a str, not int"):
        index.add_many([(1, "ok")] * 5000 + [(2, 7)])  # type: ignore[list-item]
    assert len(index) == 0
    assert list(index.items()) == []


def test_bucket_stats_compare_candidates_with_the_design() -> None:
    rng = np.random.default_rng(0)
    fps = rng.integers(0, 2**64 - 1, 50_000, dtype=np.uint64)
    index = MemoryIndex.from_arrays(fps, [str(i) for i in range(len(fps))])
    stats = index.bucket_stats()
    assert stats["rows"] == 50_000
    # uniform fingerprints: candidates per probe close to the design's figure
    assert 0.8 < stats["mean_candidates_per_probe"] / stats["expected_candidates"] < 1.3
    assert stats["largest_bucket"] >= 50_000 / stats["buckets_per_table"]


def test_describe_reports_design_and_memory() -> None:
    index = MemoryIndex.from_arrays(
        np.arange(10_000, dtype=np.uint64), [f"k{i}" for i in range(10_000)]
    )
    described = index.describe()
    assert described["backend"] == "memory"
    assert described["size"] == 10_000
    assert described["design"] == index.design.describe()
    assert described["probe"] in ("c", "numpy")
    # 8 bytes of fingerprint + 4 per table, plus growth slack and directories
    assert 8 + 4 * len(index.design.tables) <= described["index_bytes_per_fingerprint"] < 64
    assert described["key_bytes_per_fingerprint"] >= 8


@given(st.lists(st.text(), max_size=30), st.data())
def test_key_store_round_trips_any_text(keys: list[str], data: st.DataObject) -> None:
    store = KeyStore.from_keys(keys[:10])
    for key in keys[10:20]:
        store.append(key)
    store.extend_from(KeyStore.from_keys(keys[20:]))
    assert list(store) == keys
    keep = np.array(
        data.draw(st.lists(st.booleans(), min_size=len(keys), max_size=len(keys))), dtype=bool
    )
    assert list(store.compress(keep)) == [key for key, kept in zip(keys, keep) if kept]
    copy = KeyStore.from_buffer(store.data, store.ends)
    assert list(copy) == keys


def test_key_store_refuses_inconsistent_offsets() -> None:
    with pytest.raises(ValueError, match="non-decreasing and end at the buffer length"):
        KeyStore.from_buffer(b"abc", [2, 1, 3])
    with pytest.raises(ValueError, match="non-decreasing and end at the buffer length"):
        KeyStore.from_buffer(b"abc", [])


def test_key_store_keeps_lone_surrogates_from_bad_input() -> None:
    store = KeyStore.from_keys(["a\ud800b"])
    assert store[0] == "a\ud800b"


def test_write_buffer_gives_the_garbage_collector_nothing_to_walk() -> None:
    """Each full collection of a crawl's process walks every container it holds: the rows
    waiting in the write buffer must not be one (or a few) each."""
    index = MemoryIndex(max_distance=3, expected_size=1_000_000)
    gc.collect()
    before = len(gc.get_objects())
    rng = random.Random(5)
    for row in range(3000):
        index.add(rng.getrandbits(64), f"page-{row}")
    gc.collect()
    assert index.describe()["buffered"] == 3000
    assert len(gc.get_objects()) - before < 100


@pytest.mark.parametrize(("size", "narrow", "wide"), [(5000, 8, 10), (70_000, 14, 17), (70_000, 16, 18)])
def test_widening_the_buckets_gives_what_a_fresh_build_gives(size: int, narrow: int, wide: int) -> None:
    fingerprints = np.random.default_rng(size + wide).integers(0, 2**64 - 1, size, dtype=np.uint64)
    design = make_design(3, 5)
    old = SortedBuckets.build(design.with_prefix_bits(narrow), fingerprints[: size - 100])
    widened = _merge.merged(old, fingerprints[size - 100 :], size - 100, design.with_prefix_bits(wide))
    assert widened.same_as(SortedBuckets.build(design.with_prefix_bits(wide), fingerprints))


def test_an_index_sized_for_a_billion_pages_starts_small() -> None:
    index = MemoryIndex(3, expected_size=10**9)
    cap = _design_choice.MEMORY_MAX_BYTES_PER_FINGERPRINT  # the tables for its size in memory...
    assert index.design.tables == choose_design(3, 10**9, max_bytes_per_fingerprint=cap).tables
    assert index.memory_usage()["index_bytes"] <= 100 * 2**20  # ...but buckets that grow as pages come


@pytest.mark.parametrize("size", [10**6, 10**7, 10**8, 10**9])
def test_the_memory_index_design_takes_at_most_26_bytes_a_fingerprint(size: int) -> None:
    design = _design_choice.design_for_size(_design_choice.starting_design(3, size), size)
    assert _design_choice.bytes_per_fingerprint(design, size) <= 26


def test_an_index_built_in_bulk_gets_buckets_for_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The small start is for an empty index: a reopened store's is sized for what it holds."""
    monkeypatch.setattr(_design_choice, "EMPTY_INDEX_BYTES", 4096)  # any start is small now
    fingerprints = np.random.default_rng(3).integers(0, 2**64 - 1, 100_000, dtype=np.uint64)
    index = MemoryIndex.from_arrays(fingerprints, KeyStore.from_keys(map(str, range(100_000))), 3)
    assert index.design.prefix_bits == choose_design(3, 100_000).prefix_bits > 8


def test_settings_only_a_disk_store_uses_are_warned_of_once(caplog: pytest.LogCaptureFixture) -> None:
    """SIMHASH_FSYNC and SIMHASH_TTL with the memory index: a WARNING each, once a process."""
    from scrapy_simhash import index as index_module

    index_module._warn_fsync_ignored.cache_clear()
    index_module._warn_ttl_ignored.cache_clear()
    with caplog.at_level(logging.WARNING, logger="scrapy_simhash.index"):
        for _ in range(2):
            open_index("memory", fsync_seconds=1.0, ttl=60)
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert warnings == [
        "The memory index writes no files: SIMHASH_FSYNC ignored (only a disk store fsyncs)",
        "Entries never expire in the memory index: SIMHASH_TTL ignored (only Redis has TTL)",
    ]


@pytest.mark.parametrize("query_is_short", [False, True])
def test_many_candidates_are_confirmed_as_brute_force_confirms_them(query_is_short: bool) -> None:
    """A cluster of pages within k of each other, most told apart by their sketches, some
    alike, some stored without one: a check's 300 candidates confirmed at once (NumPy, for
    a long page's sketch) or a row at a time (a short page's shingles), as brute force does."""
    from scrapy_simhash.index.base import Match
    from scrapy_simhash.index.brute import BruteForceIndex

    rng = random.Random(8)
    centre = rng.getrandbits(64)
    base_sketch = rng.randbytes(32)
    index, reference = MemoryIndex(3, expected_size=1000), BruteForceIndex(3)
    for n in range(300):
        fingerprint = centre ^ (1 << rng.randrange(64) if n % 2 else 0)
        if n % 10 == 0:
            sketch = None
        elif n % 7 == 0:  # alike: a few bits off the query's
            sketch = bytes(b ^ (1 if i < 2 else 0) for i, b in enumerate(base_sketch))
        else:
            sketch = rng.randbytes(32)
        index.add(fingerprint, f"page{n}", sketch)
        reference.add(fingerprint, f"page{n}", sketch)
    query_sketch = base_sketch + (b"\x01\x00\x02\x00" if query_is_short else b"")
    found = index.query(centre, sketch=query_sketch)
    expected = reference.query(centre, sketch=query_sketch)
    assert found == sorted(expected, key=Match.order)
    assert len(found) >= 60 and any(match.similarity is None for match in found)
