"""The minwise sketch that confirms a SimHash match: its estimates, and the short-page rule."""

from __future__ import annotations

import numpy as np
import pytest

from scrapy_simhash.core.sketch import (
    EXACT_SHINGLES,
    MIN_SKETCHED_SHINGLES,
    SKETCH_BYTES,
    Confirmation,
    check_sketch,
    estimated_similarity,
    max_sketch_distance,
    minwise_sketch,
    page_sketch,
    similarity,
    sketch_distance,
)


def overlapping_sets(rng: np.random.Generator, size: int, jaccard: float) -> tuple[np.ndarray, np.ndarray]:
    """Two sets of *size* random hashes whose Jaccard similarity is *jaccard* (about)."""
    shared = round(2 * size * jaccard / (1 + jaccard))
    pool = rng.integers(0, 2**64 - 1, 2 * size - shared, dtype=np.uint64)
    return pool[:size], pool[size - shared :]


@pytest.mark.parametrize("jaccard", [0.3, 0.5, 0.8, 0.95])
@pytest.mark.parametrize("size", [MIN_SKETCHED_SHINGLES, 200, 5000])
def test_the_estimate_is_unbiased_and_within_its_error(size: int, jaccard: float) -> None:
    rng = np.random.default_rng(size + int(100 * jaccard))
    estimates = []
    for _ in range(200):
        a, b = overlapping_sets(rng, size, jaccard)
        exact = len(np.intersect1d(a, b)) / len(np.union1d(a, b))
        estimates.append(similarity(minwise_sketch(a), minwise_sketch(b)) - exact)
    assert abs(np.mean(estimates)) < 0.02  # unbiased
    # The module doc's standard errors; a set of fewer shingles than bins has fewer samples.
    assert np.std(estimates) < (0.065 if size >= 256 else 0.12)


def test_the_sketch_does_not_depend_on_the_order_or_repeats_of_the_shingles() -> None:
    shingles = np.random.default_rng(1).integers(0, 2**64 - 1, 500, dtype=np.uint64)
    sketch = page_sketch(shingles)
    assert page_sketch(shingles[::-1]) == sketch
    assert len(sketch) == SKETCH_BYTES  # a long page: the sketch alone


def exact_16_bit_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    low_a, low_b = np.unique(a.astype(np.uint16)), np.unique(b.astype(np.uint16))
    common = len(np.intersect1d(low_a, low_b))
    return round(common / (len(low_a) + len(low_b) - common), 3)


@pytest.mark.parametrize("size", [5, MIN_SKETCHED_SHINGLES, EXACT_SHINGLES])
def test_short_pages_are_compared_on_their_shingles_exactly(size: int) -> None:
    rng = np.random.default_rng(size)
    for jaccard in (0.5, 0.75, 0.8, 0.9):
        a, b = overlapping_sets(rng, size, jaccard)
        first, second = page_sketch(a), page_sketch(b)
        assert len(first) == SKETCH_BYTES + 2 * len(np.unique(a.astype(np.uint16)))
        assert similarity(first, second) == exact_16_bit_jaccard(a, b)
    assert similarity(page_sketch(a), page_sketch(a[::-1])) == 1.0


def test_a_pair_with_a_longer_page_is_compared_on_the_sketch() -> None:
    rng = np.random.default_rng(7)
    a, b = overlapping_sets(rng, EXACT_SHINGLES + 1, 0.8)
    short = b[: EXACT_SHINGLES - 20]
    long_sketch, short_sketch = page_sketch(a), page_sketch(short)
    assert len(long_sketch) == SKETCH_BYTES and len(short_sketch) > SKETCH_BYTES
    assert similarity(long_sketch, short_sketch) == estimated_similarity(sketch_distance(long_sketch, short_sketch))
    # Under 30 shingles, the first 32 bytes are a digest: a long page never agrees with it.
    tiny = page_sketch(a[:MIN_SKETCHED_SHINGLES - 1])
    assert similarity(long_sketch, tiny) < 0.5


def test_confirmation_is_exact_for_short_pages_and_by_estimate_for_others() -> None:
    confirmation = Confirmation(0.8)
    assert confirmation.exact_confirms(80, 100) and not confirmation.exact_confirms(79, 100)
    assert confirmation.max_distance == max_sketch_distance(0.8)
    rng = np.random.default_rng(3)
    a, b = overlapping_sets(rng, 100, 0.7)  # short: exact, J = 0.7
    assert confirmation.similarity(page_sketch(a), page_sketch(b)) is None
    assert Confirmation(0.6).similarity(page_sketch(a), page_sketch(b)) == exact_16_bit_jaccard(a, b)
    assert Confirmation(0.0).similarity(page_sketch(a), page_sketch(a[:1])) is not None
    with pytest.raises(ValueError, match="between 0 and 1"):
        Confirmation(float("nan"))


def test_thresholds_are_whole_bits_and_0_confirms_everything() -> None:
    assert max_sketch_distance(0.8) == 25 and max_sketch_distance(1.0) == 0
    assert max_sketch_distance(0.0) == 256
    with pytest.raises(ValueError, match="between 0 and 1"):
        max_sketch_distance(1.2)


_HEAD = bytes(range(1, SKETCH_BYTES + 1))


@pytest.mark.parametrize(("bad", "error"), [
    (b"short", ValueError), ("x" * 32, TypeError), (12, TypeError),
    (_HEAD + b"\x01", ValueError),  # half a shingle
    (_HEAD + np.array([3, 2], dtype="<u2").tobytes(), ValueError),  # not sorted
    (_HEAD + np.array([2, 2], dtype="<u2").tobytes(), ValueError),  # repeated
    (_HEAD + np.arange(EXACT_SHINGLES + 1, dtype="<u2").tobytes(), ValueError),  # too many
])
def test_bad_sketches_are_refused(bad: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        check_sketch(bad)


def test_no_sketch_is_none_or_zeros() -> None:
    assert check_sketch(None) is None and check_sketch(bytes(SKETCH_BYTES)) is None
    short = _HEAD + np.arange(EXACT_SHINGLES, dtype="<u2").tobytes()
    assert check_sketch(bytearray(short)) == short
