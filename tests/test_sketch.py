"""The minwise sketch that confirms a SimHash match: its estimates, and the short-page rule."""

from __future__ import annotations

import numpy as np
import pytest

from scrapy_simhash.core.sketch import (
    MIN_SKETCHED_SHINGLES,
    SKETCH_BYTES,
    check_sketch,
    max_sketch_distance,
    minwise_sketch,
    page_sketch,
    similarity,
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
    assert len(sketch) == SKETCH_BYTES


def test_a_short_page_matches_only_the_same_shingles() -> None:
    short = np.arange(1, MIN_SKETCHED_SHINGLES, dtype=np.uint64)  # one too few to be sketched
    same = page_sketch(short[::-1])
    one_more = page_sketch(np.append(short[1:], np.uint64(10**6)))  # J = 0.93, but short
    assert similarity(page_sketch(short), same) == 1.0
    assert similarity(page_sketch(short), one_more) < 0.5
    long = np.arange(1, MIN_SKETCHED_SHINGLES + 1, dtype=np.uint64)
    assert similarity(page_sketch(long), page_sketch(short)) < 0.5  # a digest is no minwise sketch


def test_thresholds_are_whole_bits_and_0_confirms_everything() -> None:
    assert max_sketch_distance(0.8) == 25 and max_sketch_distance(1.0) == 0
    assert max_sketch_distance(0.0) == 256
    with pytest.raises(ValueError, match="between 0 and 1"):
        max_sketch_distance(1.2)


@pytest.mark.parametrize(("bad", "error"), [(b"short", ValueError), ("x" * 32, TypeError), (12, TypeError)])
def test_bad_sketches_are_refused(bad: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        check_sketch(bad)


def test_no_sketch_is_none_or_zeros() -> None:
    assert check_sketch(None) is None and check_sketch(bytes(SKETCH_BYTES)) is None
