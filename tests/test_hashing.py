from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapy_simhash.core.hashing import (
    TokenHasher,
    block_shingle_hashes,
    check_key,
    separated_shingle_hashes,
    shingle_hashes,
    shingles_per_block,
    token_hash,
)

token_lists = st.lists(st.sampled_from(["a", "b", "c", "d", "中文", "é"]), max_size=30)


def test_keyed_and_unkeyed_hashes_differ() -> None:
    tokens = ["simhash", "near", "duplicate", "中文"]
    unkeyed, keyed = TokenHasher()(tokens), TokenHasher(b"secret")(tokens)
    other_key = TokenHasher(b"secret2")(tokens)
    assert not np.intersect1d(unkeyed, keyed).size
    assert not np.intersect1d(keyed, other_key).size


def test_hasher_matches_token_hash_whatever_its_capacity() -> None:
    tokens = [f"t{i % 37}" for i in range(200)] + ["\ud800lone surrogate"]
    expected = np.array([token_hash(t, b"k") for t in tokens], dtype=np.uint64)
    tiny = TokenHasher(b"k", capacity=8)  # starts again many times
    for _ in range(3):
        assert (tiny(tokens) == expected).all()
        assert (tiny(tokens[::-1]) == expected[::-1]).all()


@pytest.mark.parametrize("capacity", [100, 10_000])
def test_hasher_grows_past_its_first_table(capacity: int) -> None:
    hasher = TokenHasher(capacity=capacity)
    for start in (0, 2000, 1000):
        tokens = [f"w{i}" for i in range(start, start + 3000)]
        expected = [token_hash(t) for t in tokens]
        assert hasher(tokens).tolist() == expected
        hashes, tf = hasher.counted(dict.fromkeys(tokens[::-1], 2))
        assert hashes.tolist() == expected[::-1] and set(tf.tolist()) == {2}


@pytest.mark.parametrize(("key", "error"), [("text", TypeError), (b"x" * 65, ValueError)])
def test_bad_keys_are_refused(key: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="hash_key"):
        check_key(key)  # type: ignore[arg-type]


@given(token_lists, st.integers(1, 5))
def test_equal_shingles_hash_equal_and_different_ones_differ(tokens: list[str], size: int) -> None:
    hashes = shingle_hashes(TokenHasher()(tokens), size)
    span = min(size, len(tokens))
    shingles = [tuple(tokens[i : i + span]) for i in range(len(tokens) - span + 1)] if tokens else []
    assert len(hashes) == len(shingles)
    by_shingle: dict[tuple[str, ...], int] = {}
    for shingle, value in zip(shingles, hashes.tolist()):
        assert by_shingle.setdefault(shingle, value) == value
    assert len(set(by_shingle.values())) == len(by_shingle)


@given(st.lists(token_lists, max_size=6), st.integers(1, 4))
def test_block_shingles_are_the_shingles_of_each_block(blocks: list[list[str]], size: int) -> None:
    hasher = TokenHasher()
    flat = hasher([t for block in blocks for t in block])
    lengths = [len(block) for block in blocks]
    expected = [shingle_hashes(hasher(block), size) for block in blocks]
    got = block_shingle_hashes(flat, size, lengths)
    assert got.tolist() == np.concatenate([np.empty(0, np.uint64), *expected]).tolist()
    assert [len(e) for e in expected] == shingles_per_block(lengths, size)


@given(st.lists(token_lists, max_size=6), st.integers(1, 4))
def test_separated_shingles_are_the_block_shingles(blocks: list[list[str]], size: int) -> None:
    hasher = TokenHasher()
    joined = [t for n, block in enumerate(blocks) for t in ([] if n == 0 else ["\x1e"]) + block]
    hashes = hasher(joined)
    is_separator = np.array([t == "\x1e" for t in joined], dtype=bool)
    got = separated_shingle_hashes(hashes, is_separator, size)
    expected = block_shingle_hashes(hashes[~is_separator], size, [len(block) for block in blocks])
    assert sorted(got.tolist()) == sorted(expected.tolist())


def test_shingle_hashes_are_well_spread() -> None:
    # Sequential token hashes are the worst case for a weak combiner: every bit must
    # still be set in about half of the shingles (fmix64 avalanche).
    hashes = shingle_hashes(np.arange(20_000, dtype=np.uint64), 3)
    bits = np.unpackbits(hashes.view(np.uint8)).reshape(-1, 64).mean(axis=0)
    assert ((bits > 0.45) & (bits < 0.55)).all()


def test_counted_hashes_are_those_of_the_distinct_tokens() -> None:
    hasher = TokenHasher(b"k", capacity=4)
    counts = {"a": 3, "b": 1, "中文": 2, "c": 1, "d": 5}
    hashes, tf = hasher.counted(counts)
    assert hashes.tolist() == hasher(list(counts)).tolist()
    assert tf.tolist() == [3, 1, 2, 1, 5]


def test_a_token_and_its_utf8_bytes_hash_alike() -> None:
    hasher = TokenHasher(b"k")
    words = ["plain", "café", "中文"]
    assert hasher(words).tolist() == hasher([w.encode() for w in words]).tolist()
    assert hasher([]).tolist() == []
