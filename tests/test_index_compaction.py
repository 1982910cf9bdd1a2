"""The in-memory index drops its removed rows a step per insert and removal
(``index/_dropping.py``): every answer during a compaction is brute force's, and what it
builds is what a fresh build of the live rows gives."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probe_kernels import KERNELS, using_kernel
from test_index_merge import around as changed
from scrapy_simhash.core.sketch import page_sketch
from scrapy_simhash.index import _column_steps, _merge, _renumbering
from scrapy_simhash.index._buckets import SortedBuckets, row_hints
from scrapy_simhash.index._dropping import Compaction
from scrapy_simhash.index._sketches import SketchStore
from scrapy_simhash.index.brute import BruteForceIndex
from scrapy_simhash.index.memory import MemoryIndex


@pytest.fixture
def small_steps(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Steps of a few rows: a compaction stays under way across many calls."""
    monkeypatch.setattr(_merge, "STEP_ENTRIES", 64)
    monkeypatch.setattr(_renumbering, "FILL_ROWS", 64)
    monkeypatch.setattr(_column_steps, "KEY_BYTES_PER_STEP", 400)
    yield


def sketch_of(rng: random.Random) -> bytes | None:
    """None, a long page's sketch (random) or a short page's (its shingles kept apart)."""
    kind = rng.randrange(3)
    if kind == 0:
        return None
    size = 40 if kind == 1 else 400
    return page_sketch(np.random.default_rng(rng.randrange(2**32)).integers(0, 2**63, size, dtype=np.uint64))


def same_state(index: MemoryIndex, reference: BruteForceIndex, keys: list[str]) -> None:
    assert len(index) == len(reference)
    assert [sorted(index.fingerprints_of(key)) for key in keys] == [
        sorted(reference.fingerprints_of(key)) for key in keys]


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), buffer_limit=st.integers(2, 30), lookup_first=st.booleans())
def test_a_recrawl_answers_as_brute_force_at_every_step_of_its_compactions(
    small_steps: None, kernel: str, seed: int, buffer_limit: int, lookup_first: bool
) -> None:
    """Pages fetched again and again (changed, unchanged, removed, new), with sketches and
    wildcard bits: every call's answer, the size and each key's records are brute force's."""
    rng = random.Random(seed)
    bases = [rng.getrandbits(64) for _ in range(8)]
    with using_kernel(kernel):
        index, reference = MemoryIndex(3, expected_size=0), BruteForceIndex(3)
        index.buffer_limit = buffer_limit
        if lookup_first:
            index.prepare_key_lookups()
        under_way = compactions = 0
        for i in range(500):
            fingerprint, key = changed(rng, bases, 5), f"https://example.com/{rng.randrange(120)}"
            wildcard = sum(1 << p for p in rng.sample(range(64), rng.choice([0, 6, 14])))
            sketch, op = sketch_of(rng), rng.randrange(10)
            if op < 6:
                assert index.replace_if_new(fingerprint, key, wildcard, sketch) == reference.replace_if_new(
                    fingerprint, key, wildcard, sketch)
            elif op == 6:
                assert index.remove(fingerprint) == reference.remove(fingerprint)
            elif op == 7:
                assert index.remove_key(key) == reference.remove_key(key)
            elif op == 8:
                assert index.add_if_new(fingerprint, key, wildcard, sketch) == reference.add_if_new(
                    fingerprint, key, wildcard, sketch)
            probe = changed(rng, bases, 5)
            assert index.query(probe, wildcard, sketch) == reference.query(probe, wildcard, sketch)
            compactions += under_way and index._compaction is None
            under_way = index._compaction is not None
            if i % 50 == 0:
                same_state(index, reference, [f"https://example.com/{n}" for n in range(0, 120, 7)])
        assert compactions > 0
        same_state(index, reference, [f"https://example.com/{n}" for n in range(120)])
        assert sorted(index.entries()) == sorted(reference.entries())


def test_a_compaction_builds_what_a_fresh_build_of_the_live_rows_gives(small_steps: None) -> None:
    rng = np.random.default_rng(3)
    fingerprints = rng.integers(0, 2**64 - 1, 3000, dtype=np.uint64)
    keys = [f"https://example.com/{n}" for n in range(3000)]
    sketches = [sketch_of(random.Random(n)) for n in range(3000)]
    index = MemoryIndex.from_arrays(fingerprints, keys, 3, sketches=SketchStore.from_sketches(sketches))
    index.buffer_limit = 8
    index.prepare_key_lookups()
    removed = rng.choice(3000, 800, replace=False).tolist()
    for row in removed:
        index.remove_key(keys[row])
    assert index._compaction is not None  # due at the 751st removal, a step a removal since
    index._finish_compaction()
    kept = np.setdiff1d(np.arange(3000), removed[:751])
    assert index._tables.sorted.same_as(SortedBuckets.build(index.design, fingerprints[kept]))
    assert np.array_equal(index._hints.values, row_hints(index.design, fingerprints[kept]))
    assert list(index._keys) == [keys[row] for row in kept]
    assert [index._sketches[row] for row in range(len(kept))] == [sketches[row] for row in kept]
    assert len(index) == 3000 - 800 and len(index._removed) == 800 - 751  # (those removed during it)
    live = np.setdiff1d(np.arange(3000), removed)
    assert [index.fingerprints_of(keys[row]) for row in live[::37]] == [[int(fingerprints[row])] for row in live[::37]]
    assert all(index.fingerprints_of(keys[row]) == [] for row in removed[::17])


def test_no_call_runs_a_whole_compaction(monkeypatch: pytest.MonkeyPatch) -> None:
    """At the default bounds each compaction ends a step per call, merges waiting for it."""
    monkeypatch.setattr(_merge, "STEP_ENTRIES", 256)
    monkeypatch.setattr(_renumbering, "FILL_ROWS", 1024)
    monkeypatch.setattr(Compaction, "finish", lambda self: pytest.fail("a compaction run at once"))
    rng = random.Random(5)
    index = MemoryIndex(3, expected_size=0)
    index.prepare_key_lookups()
    compactions = was_compacting = 0
    for i in range(60_000):  # 20k pages, each fetched 3 times, changed each time
        index.replace_if_new(rng.getrandbits(64), f"https://example.com/{i % 20_000}")
        compactions += was_compacting and index._compaction is None
        was_compacting = index._compaction is not None
    assert compactions >= 2
    assert len(index) == 20_000 and len(index._hints) < 40_000


def test_removals_alone_end_a_compaction(small_steps: None) -> None:
    """Pages that changed into copies of another: removals with no insert still step it."""
    index = MemoryIndex(3, expected_size=0)
    entries = [(random.Random(n).getrandbits(64), f"https://example.com/{n}") for n in range(2000)]
    index.add_many(entries)
    index.buffer_limit = 8
    removed = 0
    while index._compaction is None:
        index.remove_key(entries[removed][1])
        removed += 1
    while index._compaction is not None:
        index.remove_key(entries[removed][1])
        removed += 1
    assert len(index._hints) < 2000 and len(index) == 2000 - removed
    assert sorted(index.items()) == sorted(entries[removed:])


def test_a_key_lookup_built_during_a_compaction_is_of_the_new_rows(small_steps: None) -> None:
    """The first search by key builds the lookup over every row: the compaction ends first."""
    entries = [(random.Random(n).getrandbits(64), f"https://example.com/{n % 900}") for n in range(1000)]
    index, reference = MemoryIndex.from_arrays([f for f, _ in entries], [k for _, k in entries]), BruteForceIndex(3)
    reference.add_many(entries)
    index.buffer_limit = 8
    for fingerprint, key in entries[:300]:  # (keys 0-99 have a second record: rows 900-999)
        assert index.remove(fingerprint, key) == reference.remove(fingerprint, key)
    assert index._compaction is not None
    keys = [f"https://example.com/{n}" for n in range(0, 900, 7)]
    assert [index.fingerprints_of(key) for key in keys] == [reference.fingerprints_of(key) for key in keys]
    assert index._compaction is None and len(index._hints) < 1000
    assert index.replace_if_new(1, keys[3]) == reference.replace_if_new(1, keys[3])
    assert sorted(index.items()) == sorted(reference.items())
