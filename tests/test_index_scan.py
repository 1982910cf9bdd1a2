"""The index probe in C (``scrapy_simhash.index._scan``) against NumPy and brute force."""

from __future__ import annotations

import random
from types import ModuleType

import numpy as np
import pytest

from probe_kernels import KERNELS, using_kernel
from scrapy_simhash.core.fingerprint import weakest_bits
from scrapy_simhash.index import _buckets
from scrapy_simhash.index._tables import make_design
from scrapy_simhash.index._write_buffer import WriteBuffer
from scrapy_simhash.index.brute import BruteForceIndex
from scrapy_simhash.index.memory import MemoryIndex


_RNG = random.Random(1)
BASES = [_RNG.getrandbits(64) for _ in range(4000)]


def entries_around(count: int, seed: int, bases: list[int] = BASES) -> list[tuple[int, str]]:
    """*count* entries around the *bases* (~6 each), up to 6 bits from their base."""
    rng = random.Random(seed)
    entries = []
    for i in range(count):
        fingerprint = rng.choice(bases)
        for _ in range(rng.randint(0, 6)):
            fingerprint ^= 1 << rng.randrange(64)
        entries.append((fingerprint, f"https://example.com/{i}"))
    return entries


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("wildcard_bits", [0, 6, 14, 20])
def test_wildcard_probes_of_a_large_index_match_brute_force(kernel: str, wildcard_bits: int) -> None:
    entries = entries_around(24_000, seed=wildcard_bits)
    sorted_part, buffered = entries[:20_000], entries[20_000:]  # both parts of the index probed
    rng = np.random.default_rng(wildcard_bits)
    probes = [(f ^ (1 << int(rng.integers(64))), weakest_bits(rng.random(64), wildcard_bits))
              for f, _ in entries_around(300, seed=99)]
    with using_kernel(kernel):
        index = MemoryIndex.from_arrays([f for f, _ in sorted_part], [key for _, key in sorted_part], 3)
        index.add_many(buffered[:1000])  # below add_many's bulk threshold: into the write buffer
        reference = BruteForceIndex(3)
        reference.add_many(entries[:21_000])
        found = [index.query(q, wildcard) for q, wildcard in probes]
    assert found == [reference.query(q, wildcard) for q, wildcard in probes]
    assert sum(map(len, found)) > 100  # the probes do find entries


@pytest.mark.parametrize("prefix_bits", [6, 16])
def test_the_c_probe_filters_long_buckets_as_its_twin(scan: ModuleType, prefix_bits: int) -> None:
    """Buckets of ~300 rows (6-bit keys; 16-bit ones: few rows a bucket, and table 0's 2-byte
    tails): the C filter's whole blocks of 64 rows and their ends, every distance up to past
    its rounds of ``x &= x - 1`` (filter.h), with and without wildcard bits."""
    entries = entries_around(20_000, seed=5, bases=BASES[:500])  # ~40 rows a base: many matches
    fingerprints = np.array([f for f, _ in entries], dtype=np.uint64)
    tables = _buckets.SortedBuckets.build(make_design(3, 4, prefix_bits), fingerprints)
    assert int(tables.bucket_sizes().max()) > 128 or tables.tails.dtype == np.uint16
    rng = np.random.default_rng(5)
    probes = [(f ^ (1 << int(rng.integers(64))), weakest_bits(rng.random(64), bits))
              for (f, _), bits in zip(entries_around(60, seed=7, bases=BASES[:500]), [0, 6, 14] * 20)]
    for max_distance in [0, 1, 3, 8, 9, 12]:
        found = [tables.matches(q, max_distance, wildcard) for q, wildcard in probes]
        with using_kernel("numpy"):
            assert found == [tables.matches(q, max_distance, wildcard) for q, wildcard in probes]
        if max_distance <= 3:  # (the design's distance: every row within it is in a visited bucket)
            assert found == [brute_force(fingerprints, q, max_distance, wildcard) for q, wildcard in probes]
    assert sum(map(len, found)) > 1000


def brute_force(fingerprints: np.ndarray, query: int, max_distance: int, wildcard: int) -> dict[int, int]:
    """``{row: fingerprint}`` of every row within *max_distance* outside the *wildcard* bits."""
    counted = np.uint64(~wildcard & (2**64 - 1))
    rows = np.flatnonzero(np.bitwise_count((fingerprints ^ np.uint64(query)) & counted) <= max_distance)
    return dict(zip(rows.tolist(), fingerprints[rows].tolist()))


@pytest.mark.parametrize("kernel", KERNELS)
def test_describe_names_the_probe(kernel: str) -> None:
    with using_kernel(kernel):
        assert MemoryIndex(3).describe()["probe"] == kernel


@pytest.fixture
def scan() -> ModuleType:
    if _buckets._scan is None:
        pytest.skip("the C probe (scrapy_simhash.index._scan) was not built: no C compiler at install")
    return _buckets._scan


def small_tables() -> _buckets.SortedBuckets:
    """4 tables of 8-bit buckets over fingerprints 0, 0b0111, 0b1111 and one far away."""
    fingerprints = np.array([0b0000, 0b0111, 0b1111, 2**64 - 1], dtype=np.uint64)
    return _buckets.SortedBuckets.build(make_design(3, 4, 8), fingerprints)


def probe(scan: ModuleType, tables: _buckets.SortedBuckets, *args: object) -> dict[int, int]:
    return scan.sorted_matches(tables.layout.packed(), *arrays(tables), *args)


def arrays(tables: _buckets.SortedBuckets) -> list[np.ndarray]:
    """The arrays the C probe reads: directories, slices, tails, rows."""
    return tables.arrays()


def test_scan_finds_rows_within_the_distance(scan: ModuleType) -> None:
    tables = small_tables()
    assert probe(scan, tables, 0, 0, 3) == {0: 0, 1: 0b0111}
    assert probe(scan, tables, 0, 0b1000, 3) == {0: 0, 1: 0b0111, 2: 0b1111}  # a wildcard bit
    assert probe(scan, tables, 2**63 - 1, 0, 3) == {3: 2**64 - 1}  # in another table-0 bucket: through the slices
    # distances are clamped: none is within a negative one, all within 64 and more
    assert probe(scan, tables, 0, 0, -(2**40)) == {}
    assert probe(scan, tables, 0, 0, 2**70) == {0: 0, 1: 0b0111, 2: 0b1111}  # (the buckets visited)
    assert probe(scan, tables, np.uint64(0), np.int64(0), np.int8(3)) == {0: 0, 1: 0b0111}  # NumPy ints are ints


def test_the_write_buffer_walk_finds_rows_within_the_distance(scan: ModuleType) -> None:
    design = make_design(3, 4, 8)
    buffer = WriteBuffer(design, 10)
    for row, fingerprint in enumerate([0, 0b0111, 0b1111, 2**64 - 1], 10):
        assert buffer.add(row, fingerprint) == design.bucket_keys(fingerprint)[0]
    assert buffer.matches(0, 3) == {10: 0, 11: 0b0111}
    assert buffer.matches(0, 3, 0b1000) == {10: 0, 11: 0b0111, 12: 0b1111}
    arrays = (buffer._layout, buffer._newest, buffer._older, buffer._fingerprints)
    with pytest.raises(IndexError, match="does not hold"):  # (rows 2 and 3 are not there)
        scan.buffer_matches(*arrays, 1, 10, 0, 2**64 - 1, 3)
    buffer._older[0, 1] = 1  # a chain that loops
    with pytest.raises(IndexError, match="does not hold"):
        scan.buffer_matches(*arrays, 4, 10, 0, 0, 3)
    with pytest.raises(ValueError, match="slots"):
        scan.buffer_matches(buffer._layout, buffer._newest[:, :5].copy(), *arrays[2:], 4, 10, 0, 0, 3)
    with pytest.raises(IndexError, match="full"):
        scan.buffer_add(*arrays, len(buffer._fingerprints), 0)


def test_scan_refuses_what_would_read_out_of_bounds(scan: ModuleType) -> None:
    tables = small_tables()
    layout, (directories, slices, tails, rows) = tables.layout.packed(), arrays(tables)
    with pytest.raises(ValueError, match="out of the directory"):
        scan.sorted_matches(layout, directories[:, :5].copy(), slices, tails, rows, 2**64 - 1, 0, 3)
    unsorted = directories.copy()
    unsorted[:, 1] = 9
    with pytest.raises(ValueError, match="not sorted"):
        scan.sorted_matches(layout, unsorted, slices, tails, rows, 0, 0, 3)
    for wrong in ([directories, slices, tails, rows[:2].copy()], [directories, slices, tails[:2].copy(), rows],
                  [directories, slices, tails.astype(np.uint16), rows],
                  [directories[:, :10].copy(), slices, tails, rows]):
        with pytest.raises(ValueError, match="must fit one another"):
            scan.sorted_matches(layout, *wrong, 0, 0, 3)


def test_scan_refuses_wrong_arguments(scan: ModuleType) -> None:
    tables = small_tables()
    layout, (directories, slices, tails, rows) = tables.layout.packed(), arrays(tables)
    with pytest.raises(TypeError, match="4-byte ints"):
        scan.sorted_matches(layout, directories.astype(np.uint64), slices, tails, rows, 0, 0, 3)
    with pytest.raises(TypeError, match="4-byte ints"):  # the right size, not the right type
        scan.sorted_matches(layout, directories, slices.astype(np.float32), tails, rows, 0, 0, 3)
    with pytest.raises(TypeError, match="4-byte ints"):  # tails: unsigned, of 2 or 4 bytes
        scan.sorted_matches(layout, directories, slices, tails.astype(np.uint64), rows, 0, 0, 3)
    misaligned = np.zeros(4 * len(rows) + 1, np.uint8)[1:].view(np.uint32)
    with pytest.raises(TypeError, match="aligned"):
        scan.sorted_matches(layout, directories, slices, tails, misaligned, 0, 0, 3)
    with pytest.raises(ValueError, match="layout"):
        scan.sorted_matches(layout[:, :2].copy(), directories, slices, tails, rows, 0, 0, 3)
    with pytest.raises(TypeError, match="8 arguments"):
        scan.sorted_matches(layout, directories, slices)
    with pytest.raises(OverflowError):
        probe(scan, tables, -1, 0, 3)
    with pytest.raises(TypeError):
        probe(scan, tables, 1.5, 0, 3)
    with pytest.raises(TypeError, match="9 arguments"):
        scan.buffer_matches(layout, [{}] * 4, (), np.zeros(0, np.uint64), 0, 0, 0, 3)


def test_a_c_probe_that_differs_from_its_twin_is_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    if _buckets._scan is None:
        pytest.skip("the C probe was not built")
    assert _buckets.c_probe_mismatch() is None
    monkeypatch.setattr(_buckets.SortedBuckets, "matches", lambda self, f, k, w=0: {0: 0} if _buckets._scan else {})
    assert _buckets.c_probe_mismatch() == "it differs from its NumPy twin on a sample"
    monkeypatch.setenv("SIMHASH_C_PROBE", "0")
    assert _buckets.c_probe_mismatch() == "SIMHASH_C_PROBE=0"


def test_the_c_write_buffer_add_keeps_what_its_twin_keeps(scan: ModuleType) -> None:
    design, rng = make_design(3, 4, 8), random.Random(3)
    fingerprints = [rng.getrandbits(64) for _ in range(1500)] * 2  # (some buckets chained, the arrays grown)
    buffers = {}
    for kernel in KERNELS:
        with using_kernel(kernel):
            buffers[kernel] = WriteBuffer(design, 7)
            keys = [buffers[kernel].add(row, f) for row, f in enumerate(fingerprints, 7)]
        assert keys == [design.bucket_keys(f)[0] for f in fingerprints]
    c, twin = buffers["c"], buffers["numpy"]
    rows = len(fingerprints)
    assert np.array_equal(c._newest, twin._newest) and np.array_equal(c._older[:, :rows], twin._older[:, :rows])
    assert np.array_equal(c._fingerprints[:rows], twin._fingerprints[:rows])
    with pytest.raises(TypeError, match="6 arguments"):
        scan.buffer_add(c._layout, c._newest, c._older)
    with pytest.raises(TypeError, match="4-byte ints"):
        scan.buffer_add(c._layout, c._newest.astype(np.int64), c._older, c._fingerprints, 0, 0)
    with pytest.raises(ValueError, match="read-only"):  # (an array it writes to must be writable)
        c._older.flags.writeable = False
        scan.buffer_add(c._layout, c._newest, c._older, c._fingerprints, 0, 0)


def test_a_write_buffer_with_fewer_slots_than_buckets_finds_the_same_rows() -> None:
    """Slots are a bucket key's low bits: rows of other buckets in a slot are looked at and
    left out (20-bit keys, 4,096 slots)."""
    design = make_design(3, 5, 20)
    entries = entries_around(3000, seed=8)
    rng = np.random.default_rng(8)
    probes = [(f ^ 1, weakest_bits(rng.random(64), 14)) for f, _ in entries_around(50, seed=9)]
    reference = BruteForceIndex(3)
    reference.add_many(entries)
    for kernel in KERNELS:
        with using_kernel(kernel):
            buffer = WriteBuffer(design, 0)
            for row, (fingerprint, _) in enumerate(entries):
                buffer.add(row, fingerprint)
            assert buffer._newest.shape == (10, 4096)
            found = [buffer.matches(q, 3, w) for q, w in probes]
        assert [sorted(f.values()) for f in found] == [sorted(m.fingerprint for m in reference.query(q, w))
                                                      for q, w in probes]
