"""The short pages' shingles in the memory index: packed by row, kept through appends,
bulk loads and compaction, and confirming as the brute-force reference does."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scrapy_simhash.core.sketch import page_sketch
from scrapy_simhash.index import MemoryIndex, _merge
from scrapy_simhash.index._renumbering import Renumbering
from scrapy_simhash.index._tombstones import Tombstones
from scrapy_simhash.index._sketches import ShingleColumn, SketchStore
from scrapy_simhash.index.brute import BruteForceIndex


def test_rows_keep_their_bytes_through_extend_and_a_compaction() -> None:
    column = ShingleColumn()
    column.append(1, b"\x01\x00\x02\x00")
    column.append(4, b"\x07\x00")
    other = ShingleColumn([0, 2], [2, 6], b"\x03\x00\x04\x00\x05\x00")
    column.extend_from(other, 10)
    assert [column.get(row) for row in (0, 1, 4, 10, 11, 12)] == [
        b"", b"\x01\x00\x02\x00", b"\x07\x00", b"\x03\x00", b"", b"\x04\x00\x05\x00"
    ]
    renumbering = Renumbering(13, 2)  # rows 0 and 4 dropped: rows 1, 10 and 12 become 0, 8 and 10
    list(renumbering.steps(Tombstones.of_rows(np.array([0, 4]))))
    compressed = _merge.finish(column.compaction_steps(renumbering, 2))
    assert len(compressed) == 3
    assert [compressed.get(row) for row in (0, 8, 10)] == [b"\x01\x00\x02\x00", b"\x03\x00", b"\x04\x00\x05\x00"]
    assert compressed.get(2) == b""
    with pytest.raises(ValueError, match="comes before"):
        column.append(3, b"\x01\x00")


def test_a_sketch_store_gives_back_whole_sketches() -> None:
    rng = np.random.default_rng(2)
    sketches = [page_sketch(rng.integers(0, 2**63, size, dtype=np.uint64)) for size in (10, 500, 150, 201, 200)]
    sketches.insert(2, None)
    store = SketchStore.from_sketches(sketches)
    assert [store[row] for row in range(len(sketches))] == sketches
    one_by_one = SketchStore()
    for sketch in sketches:
        one_by_one.append(sketch)
    assert [one_by_one[row] for row in range(len(sketches))] == sketches
    assert one_by_one.nbytes >= sum(len(sketch) - 32 for sketch in sketches if sketch)


@pytest.mark.parametrize("count", [1, 3, 16, 17, 40])  # Python's ints up to 16 rows, NumPy past them
def test_sketch_distances_count_the_differing_bits_of_each_row(count: int) -> None:
    rng = np.random.default_rng(count)
    sketches = [page_sketch(rng.integers(0, 2**63, 300, dtype=np.uint64)) for _ in range(count)]
    sketches[2::4] = [None] * len(sketches[2::4])  # rows stored without one: -1
    store = SketchStore.from_sketches(sketches)
    query = page_sketch(rng.integers(0, 2**63, 300, dtype=np.uint64))
    rows = rng.permutation(count).astype(np.intp)
    expected = [
        -1 if sketches[row] is None
        else sum(bin(a ^ b).count("1") for a, b in zip(sketches[row][:32], query[:32]))
        for row in rows.tolist()
    ]
    assert store.distances(rows, query) == expected
    own = [row for row in rows.tolist() if sketches[row] is not None]
    assert store.distances(np.array(own, dtype=np.intp), sketches[own[0]])[0] == 0


def overlapping(rng: random.Random, base: list[int], jaccard: float) -> np.ndarray:
    """A set sharing about *jaccard* of its union with *base*."""
    keep = round(len(base) * 2 * jaccard / (1 + jaccard))
    fresh = [rng.getrandbits(63) for _ in range(len(base) - keep)]
    return np.array(rng.sample(base, keep) + fresh, dtype=np.uint64)


def test_the_memory_index_confirms_short_pages_as_brute_force_does_through_removals() -> None:
    rng = random.Random(5)
    memory, brute = MemoryIndex(3, expected_size=64), BruteForceIndex(3)
    bases = [[rng.getrandbits(63) for _ in range(rng.choice((20, 80, 190, 400)))] for _ in range(12)]
    fingerprint = 0xFACE_0000_0000_0000
    for index in (memory, brute):
        for number, base in enumerate(bases):
            index.add(fingerprint ^ number, f"base-{number}", page_sketch(np.array(base, dtype=np.uint64)))
    for index in (memory, brute):
        for number in range(0, 12, 3):
            index.remove_key(f"base-{number}")
    memory.settled_tables()  # (drops the removed rows: the columns are compacted)
    assert len(memory._sketches) == 8
    for trial in range(300):
        base = bases[trial % 12]
        sketch = page_sketch(overlapping(rng, base, rng.uniform(0.6, 1.0)))
        wildcard = rng.getrandbits(64) & 0xFF
        assert memory.query(fingerprint, wildcard, sketch) == brute.query(fingerprint, wildcard, sketch)
    exact = [m for m in memory.query(fingerprint, 0xFF, page_sketch(np.array(bases[1], dtype=np.uint64)))]
    assert exact[0].key == "base-1" and exact[0].similarity == 1.0
