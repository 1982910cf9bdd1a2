from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapy_simhash.core.fingerprint import (
    check_fingerprint,
    from_hex,
    hamming_distance,
    simhash,
    to_hex,
    weakest_bits,
)

fingerprints = st.integers(min_value=0, max_value=2**64 - 1)


def reference_simhash(hashes: list[int], weights: list[float]) -> int:
    """Charikar's definition, bit by bit, in plain Python."""
    result = 0
    for bit in range(64):
        vote = sum(w if (h >> bit) & 1 else -w for h, w in zip(hashes, weights))
        if vote > 0:
            result |= 1 << bit
    return result


# Whole-number weights keep the sums exact, so ties (a vote of exactly 0 -> bit 0)
# cannot be decided differently by two summation orders.
@given(st.lists(st.tuples(fingerprints, st.integers(1, 50).map(float)), min_size=1, max_size=40))
def test_simhash_matches_definition(features: list[tuple[int, float]]) -> None:
    hashes = [h for h, _ in features]
    weights = [w for _, w in features]
    got = simhash(np.array(hashes, dtype=np.uint64), np.array(weights))
    assert got == reference_simhash(hashes, weights)


def test_simhash_of_one_feature_is_the_feature() -> None:
    assert simhash(np.array([2**63 + 5], dtype=np.uint64), np.array([1.0])) == 2**63 + 5


def test_simhash_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="2 hashes but 1 weights"):
        simhash(np.array([1, 2], dtype=np.uint64), np.array([1.0]))


@given(fingerprints, fingerprints)
def test_hamming_distance_counts_differing_bits(a: int, b: int) -> None:
    assert hamming_distance(a, b) == bin(a ^ b).count("1")
    assert hamming_distance(a, b) == hamming_distance(b, a)


@given(fingerprints)
def test_hex_round_trip(value: int) -> None:
    text = to_hex(value)
    assert len(text) == 16
    assert from_hex(text) == value


@pytest.mark.parametrize("bad", ["1" * 17, "-1", "xyz"])
def test_from_hex_rejects_bad_text(bad: str) -> None:
    with pytest.raises(ValueError):
        from_hex(bad)


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (2**64, ValueError), (True, TypeError), ("1", TypeError)])
def test_check_fingerprint(bad: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        check_fingerprint(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (2**64, ValueError), (1.0, TypeError), ("1", TypeError)])
def test_hamming_distance_and_to_hex_refuse_what_is_no_fingerprint(bad: object, error: type[Exception]) -> None:
    # (they masked it: hamming_distance(-1, 0) was 1, to_hex(2**64) '0000000000000000')
    with pytest.raises(error):
        hamming_distance(bad, 0)  # type: ignore[arg-type]
    with pytest.raises(error):
        hamming_distance(0, bad)  # type: ignore[arg-type]
    with pytest.raises(error):
        to_hex(bad)  # type: ignore[arg-type]


@given(st.lists(st.floats(-100, 100), min_size=64, max_size=64), st.integers(0, 32))
def test_weakest_bits_are_spread_over_the_quarters(margins: list[float], count: int) -> None:
    mask = weakest_bits(np.array(margins), count)
    chosen = [bit for bit in range(64) if mask >> bit & 1]
    assert len(chosen) == count
    per_quarter = -(-count // 4)
    taken = [sum(1 for bit in chosen if bit // 16 == quarter) for quarter in range(4)]
    assert max(taken) <= per_quarter
    # Within that rule the weakest win: an unchosen bit in a quarter with room is no weaker
    # than any chosen bit, and within a quarter no weaker than that quarter's chosen bits.
    weakest_chosen = max((abs(margins[bit]) for bit in chosen), default=0.0)
    for bit in set(range(64)) - set(chosen):
        if taken[bit // 16] < per_quarter:
            assert abs(margins[bit]) >= weakest_chosen
        assert all(abs(margins[bit]) >= abs(margins[other]) for other in chosen if other // 16 == bit // 16)
