from __future__ import annotations

from itertools import combinations
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.index._design_choice import (
    bytes_per_fingerprint,
    choose_design,
    design_for_size,
    probe_cost_ns,
)
from scrapy_simhash.index._tables import MAX_PREFIX_BITS, TableDesign, make_design

fingerprints = st.integers(min_value=0, max_value=2**64 - 1)

# (max_distance, blocks) for every k the index supports, with a few block counts each
DESIGNS = [(k, b) for k in range(9) for b in (k + 1, k + 2, k + 4) if b <= 64]


def reference_bucket_key(design: TableDesign, table: int, fingerprint: int) -> int:
    """The paper's definition with bit strings: concatenate the leading blocks, keep a prefix."""
    bits = f"{fingerprint:064b}"  # most significant bit first
    leading = "".join(
        bits[64 - shift - width : 64 - shift]
        for shift, width in (design.blocks[i] for i in design.tables[table])
    )
    return int(leading[: design.prefix_bits], 2)


@pytest.mark.parametrize(("k", "blocks"), DESIGNS)
def test_blocks_cover_every_bit_once(k: int, blocks: int) -> None:
    design = make_design(k, blocks)
    masks = [((1 << width) - 1) << shift for shift, width in design.blocks]
    assert sum(masks) == 2**64 - 1  # disjoint masks summing to all ones
    assert all(a & b == 0 for a, b in combinations(masks, 2))
    widths = [width for _, width in design.blocks]
    assert max(widths) - min(widths) <= 1


@pytest.mark.parametrize(("k", "blocks"), DESIGNS)
def test_one_table_per_choice_of_leading_blocks(k: int, blocks: int) -> None:
    design = make_design(k, blocks)
    assert len(design.tables) == comb(blocks, k)
    assert len(set(design.tables)) == len(design.tables)
    assert all(len(set(leading)) == blocks - k for leading in design.tables)


@pytest.mark.parametrize(("k", "blocks"), DESIGNS)
@settings(max_examples=20)
@given(fingerprint=fingerprints)
def test_bucket_keys_follow_the_definition(k: int, blocks: int, fingerprint: int) -> None:
    design = make_design(k, blocks)
    expected = tuple(
        reference_bucket_key(design, t, fingerprint) for t in range(len(design.tables))
    )
    assert design.bucket_keys(fingerprint) == expected


@given(st.lists(fingerprints, min_size=1, max_size=30), st.sampled_from(DESIGNS))
def test_bucket_keys_array_matches_scalar_keys(fps: list[int], k_blocks: tuple[int, int]) -> None:
    design = make_design(*k_blocks)
    array = design.bucket_keys_array(np.array(fps, dtype=np.uint64))
    assert array.shape == (len(design.tables), len(fps))
    assert [tuple(column) for column in array.T.tolist()] == [design.bucket_keys(f) for f in fps]


def _flip_masks(bits: int) -> np.ndarray:
    """Every 64-bit mask with exactly *bits* ones."""
    return np.array(
        [sum(1 << i for i in positions) for positions in combinations(range(64), bits)],
        dtype=np.uint64,
    )


@pytest.mark.parametrize(
    ("k", "blocks", "prefix_bits"),
    [(0, 1, 20), (1, 2, 32), (2, 3, 21), (2, 5, 20), (3, 4, 16), (3, 5, 25), (3, 6, 20)],
)
def test_every_pair_within_k_shares_a_bucket_exhaustively(
    k: int, blocks: int, prefix_bits: int
) -> None:
    """The exactness argument of section 3, checked for every flip of <= k bits."""
    design = make_design(k, blocks, prefix_bits)
    for fingerprint in (0, 2**64 - 1, 0x0123_4567_89AB_CDEF):
        base = np.array(design.bucket_keys(fingerprint), dtype=np.uint64)[:, None]
        for flipped in range(k + 1):
            neighbours = np.uint64(fingerprint) ^ _flip_masks(flipped)
            shares_bucket = (design.bucket_keys_array(neighbours) == base).any(axis=0)
            assert shares_bucket.all()


@pytest.mark.parametrize("k", [4, 5, 6, 7, 8])
@settings(max_examples=50)
@given(fingerprint=fingerprints, positions=st.lists(st.integers(0, 63), max_size=8))
def test_random_flips_within_k_share_a_bucket(
    k: int, fingerprint: int, positions: list[int]
) -> None:
    design = choose_design(k, 10_000_000)
    neighbour = fingerprint
    for position in set(positions[:k]):
        neighbour ^= 1 << position
    pairs = zip(design.bucket_keys(fingerprint), design.bucket_keys(neighbour))
    assert any(a == b for a, b in pairs)


@pytest.mark.parametrize("k", range(9))
@pytest.mark.parametrize("size", [0, 1000, 1_000_000, 100_000_000])
def test_choose_design_is_the_cheapest_that_fits(k: int, size: int) -> None:
    design = choose_design(k, size, max_bytes_per_fingerprint=64)
    assert design.max_distance == k
    assert design.prefix_bits <= design.leading_bits
    others = [design_for_size(make_design(k, b), size) for b in range(k + 1, k + 9)]
    fitting = [d for d in others if bytes_per_fingerprint(d, size) <= 64]
    if fitting:
        assert bytes_per_fingerprint(design, size) <= 64
        assert probe_cost_ns(design, size) == min(probe_cost_ns(d, size) for d in fitting)
    else:
        assert len(design.blocks) == k + 1


def test_choose_design_follows_the_paper_trade_off_for_k3() -> None:
    """Few wide tables at ten million; more, longer-keyed tables at a billion (section 3.1.1)."""
    assert len(choose_design(3, 10_000_000).blocks) == 4
    at_a_billion = choose_design(3, 1_000_000_000)
    assert len(at_a_billion.blocks) == 5
    assert at_a_billion.expected_candidates(10**9) < choose_design(
        3, 10**7
    ).expected_candidates(10**9)


def test_exact_match_needs_one_table() -> None:
    design = choose_design(0, 1_000_000)
    assert (len(design.blocks), len(design.tables)) == (1, 1)


def test_a_tight_memory_cap_falls_back_to_fewest_tables() -> None:
    design = choose_design(3, 1_000_000_000, max_bytes_per_fingerprint=1)
    assert len(design.tables) == 4


def test_bucket_width_grows_with_size_up_to_the_leading_width() -> None:
    design = make_design(3, 5, 8)
    widths = [design_for_size(design, n).prefix_bits for n in (10, 10**6, 10**8, 10**11)]
    assert widths == sorted(widths)
    assert widths[0] == 8
    assert widths[-1] == design.leading_bits


def test_expected_candidates_halve_per_extra_prefix_bit() -> None:
    narrow, wide = make_design(3, 4, 12), make_design(3, 4, 13)
    assert narrow.expected_candidates(10**6) == 2 * wide.expected_candidates(10**6)


def test_describe_names_the_design() -> None:
    described = make_design(2, 3, 20).describe()
    assert described == {
        "max_distance": 2,
        "blocks": [22, 21, 21],
        "tables": 3,
        "leading_bits": 21,
        "prefix_bits": 20,
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((3, 3), "blocks must be between 4 and 64"),
        ((3, 65), "blocks must be between 4 and 64"),
        ((-1, 4), "max_distance must be between 0 and 63"),
        ((3, 4, 17), "prefix_bits must be between 1 and 16"),
        ((0, 1, 0), "prefix_bits must be between 1 and 32"),
        ((0, 1, MAX_PREFIX_BITS + 1), "prefix_bits must be between 1 and 32"),
    ],
)
def test_make_design_rejects_bad_arguments(args: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_design(*args)


def test_choose_design_rejects_a_negative_size() -> None:
    with pytest.raises(ValueError, match="expected_size must be >= 0"):
        choose_design(3, -1)


@given(
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**64 - 1),
    st.sampled_from([make_design(3, 4), make_design(3, 5, 8), make_design(1, 3)]),
)
@settings(max_examples=200)
def test_probe_keys_spell_every_bucket_the_wildcard_can_reach(
    fingerprint: int, other: int, design: TableDesign
) -> None:
    wildcard = other & (other >> 3) & (other >> 5)  # ~1/8 of the bits, varied positions
    visited = design.probe_keys(fingerprint, wildcard)
    # any fingerprint that agrees with the query outside the wildcard lands in a visited bucket
    variant = (fingerprint & ~wildcard) | (other & wildcard)
    for keys, key in zip(visited, design.bucket_keys(variant)):
        assert key in keys
        assert len(keys) == len(set(keys))
    assert design.probe_keys(fingerprint) == tuple((key,) for key in design.bucket_keys(fingerprint))
