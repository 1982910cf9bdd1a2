"""The index probe in C (``scrapy_simhash.index._scan``) against NumPy and brute force."""

from __future__ import annotations

import random
from types import ModuleType

import numpy as np
import pytest

from probe_kernels import KERNELS, using_kernel
from scrapy_simhash.core.fingerprint import weakest_bits
from scrapy_simhash.index import _buckets
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


@pytest.mark.parametrize("kernel", KERNELS)
def test_describe_names_the_probe(kernel: str) -> None:
    with using_kernel(kernel):
        assert MemoryIndex(3).describe()["probe"] == kernel


@pytest.fixture
def scan() -> ModuleType:
    if _buckets._scan is None:
        pytest.skip("the C probe (scrapy_simhash.index._scan) was not built: no C compiler at install")
    return _buckets._scan


def small_layout() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One table of 4 buckets: rows 0, 1 in bucket 0, row 2 in bucket 3."""
    directories = np.array([[0, 2, 2, 2, 3]], dtype=np.uint32)
    rows = np.array([[0, 1, 2]], dtype=np.uint32)
    fingerprints = np.array([0b0000, 0b0111, 0b1111], dtype=np.uint64)
    return directories, rows, fingerprints


def test_scan_finds_rows_within_the_distance(scan: ModuleType) -> None:
    directories, rows, fingerprints = small_layout()
    assert scan.sorted_matches(directories, rows, fingerprints, (0,), (0,), 0, 0, 3) == {0: 0, 1: 3}
    # bucket 3 through its two wildcard bits; the full distance of row 2 is 4
    assert scan.sorted_matches(directories, rows, fingerprints, (0,), (3,), 0, 0b1000, 3) == {0: 0, 1: 3, 2: 4}
    assert scan.range_matches(fingerprints, 1, 3, 0, 0, 3) == {1: 3}
    assert scan.range_matches(fingerprints, 1, 2, 0, 0, 3) == {1: 3}
    assert scan.range_matches(fingerprints, 3, 3, 0, 0, 3) == {}
    # distances are clamped: none is within a negative one, all within 64 and more
    assert scan.range_matches(fingerprints, 0, 3, 0, 0, -(2**40)) == {}
    assert scan.sorted_matches(directories, rows, fingerprints, (0,), (0,), 0, 0, -(2**40)) == {}
    assert scan.range_matches(fingerprints, 0, 3, 0, 0, 2**70) == {0: 0, 1: 3, 2: 4}
    # NumPy ints are ints
    assert scan.range_matches(fingerprints, np.int64(1), 3, np.uint64(0), 0, np.int8(3)) == {1: 3}


def test_scan_refuses_what_would_read_out_of_bounds(scan: ModuleType) -> None:
    directories, rows, fingerprints = small_layout()
    with pytest.raises(ValueError, match="out of the directory"):
        scan.sorted_matches(directories, rows, fingerprints, (4,), (0,), 0, 0, 3)
    with pytest.raises(ValueError, match="not sorted"):
        scan.sorted_matches(np.array([[0, 9, 9, 9, 9]], dtype=np.uint32), rows, fingerprints, (0,), (0,), 0, 0, 3)
    with pytest.raises(IndexError, match="past the fingerprints"):
        scan.sorted_matches(directories, rows, fingerprints[:1], (0,), (0,), 0, 0, 3)
    with pytest.raises(ValueError, match="out of the directory"):  # no bucket at all
        scan.sorted_matches(np.empty((1, 0), np.uint32), np.empty((1, 0), np.uint32), fingerprints, (0,), (0,), 0, 0, 3)
    for start, stop in [(4, 4), (-1, 3), (2, 1), (0, 4)]:
        with pytest.raises(IndexError, match="not all in the fingerprints"):
            scan.range_matches(fingerprints, start, stop, 0, 0, 3)


def test_scan_refuses_wrong_arguments(scan: ModuleType) -> None:
    directories, rows, fingerprints = small_layout()
    with pytest.raises(TypeError, match="4-byte unsigned ints"):
        scan.sorted_matches(directories.astype(np.uint64), rows, fingerprints, (0,), (0,), 0, 0, 3)
    with pytest.raises(TypeError, match="8-byte unsigned ints"):
        scan.range_matches(fingerprints.astype(np.uint32), 0, 3, 0, 0, 3)
    with pytest.raises(TypeError, match="8-byte unsigned ints"):  # the right size, not the right type
        scan.range_matches(fingerprints.astype(np.float64), 0, 3, 0, 0, 3)
    misaligned = np.zeros(33, np.uint8)[1:].view(np.uint64)
    with pytest.raises(TypeError, match="aligned"):
        scan.range_matches(misaligned, 0, 4, 0, 0, 3)
    with pytest.raises(TypeError, match="tuples"):
        scan.sorted_matches(directories, rows, fingerprints, [0], (0,), 0, 0, 3)
    with pytest.raises(TypeError, match="8 arguments"):
        scan.sorted_matches(directories, rows, fingerprints)
    with pytest.raises(OverflowError):
        scan.range_matches(fingerprints, 0, 3, -1, 0, 3)
    with pytest.raises(TypeError):
        scan.range_matches(fingerprints, 0, 3, 1.5, 0, 3)
    with pytest.raises(ValueError, match="one row per table"):
        scan.sorted_matches(directories, rows[:, :2].copy(), fingerprints, (0, 0), (0, 0), 0, 0, 3)
