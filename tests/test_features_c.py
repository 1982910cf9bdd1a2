"""The C features and votes (scrapy_simhash.core._features) against the Python code, their oracle."""

from __future__ import annotations

import gzip
import hashlib
import json
from contextlib import AbstractContextManager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from c_modules import python_instead_of
from conftest import CORPUS, needs_corpus
from scrapy_simhash.core import features, fingerprint, hashing, sketch
from scrapy_simhash.core.features import WEIGHTINGS, Featurizer

BUILT = features._features
needs_c = pytest.mark.skipif(
    BUILT is None, reason="scrapy_simhash.core._features was not built: no C compiler at install"
)

# Characters of every class the tokenizer tells apart, and their edges.
_SCRIPTS = st.one_of(
    st.sampled_from("abcXYZ019_ \t\n.,-'"),  # ASCII
    st.sampled_from("éüñøß\u0301\u0300\u0327\u0483"),  # Latin, combining marks
    st.characters(min_codepoint=0x0900, max_codepoint=0x097F),  # Devanagari (and its dandas)
    st.characters(min_codepoint=0xAC00, max_codepoint=0xAC20),  # Hangul
    st.characters(min_codepoint=0x3040, max_codepoint=0x30FF),  # Hiragana, Katakana, U+30FB
    st.sampled_from("\u3099\u309a\u302a\u31f0\u31ff"),  # kana marks, katakana extension
    st.characters(min_codepoint=0x0E00, max_codepoint=0x0E7F),  # Thai
    st.sampled_from("\u4e00\u4e2d\u6587\u9fd5\u9fd6\u9fff"),  # Han BMP, at the segmented edge
    st.sampled_from("\u3400\u4dbf\uf900\ufa6e\ufaff"),  # extension A, compatibility ideographs
    st.sampled_from("\U00020000\U0002a6d6\U0003ffff\U00040000\U0001f600"),  # astral
    st.sampled_from("٣൧௫²½"),  # digits and numbers of other scripts
    st.sampled_from("\x1e\ud800\udfff\u00a0’“”–"),  # separator, lone surrogates, punctuation
)
# Text without script-rule characters, so that the plain \w+ regime is tried as often.
_PLAIN = st.one_of(st.sampled_from("abc019_ .-é\u00a0’\x1e\ud800"), st.sampled_from("\uac00\U00020000ñ"))
_TEXTS = st.one_of(st.lists(_SCRIPTS, max_size=40), st.lists(_PLAIN, max_size=40)).map("".join)
_OPTIONS = st.fixed_dictionaries(
    {
        "shingle_size": st.integers(1, 16),
        "hash_key": st.sampled_from([b"", b"k", bytes(range(64))]),
        "weighting": st.sampled_from(WEIGHTINGS),
        "max_weight": st.sampled_from([None, 2.5]),
    }
)


def python_kernel() -> AbstractContextManager[None]:
    """Featurizers made inside the block, and simhash_margins there, run the Python code."""
    return python_instead_of("features")


def featurizer_pair(**options: object) -> tuple[Featurizer, Featurizer]:
    """A featurizer on the C kernel and one on the Python code, with the same options."""
    with python_kernel():
        oracle = Featurizer(segmenter="char", **options)  # type: ignore[arg-type]
    return Featurizer(segmenter="char", **options), oracle  # type: ignore[arg-type]


def assert_same_features(blocks: list[str], native: Featurizer, oracle: Featurizer) -> None:
    got, expected = native.features(blocks), oracle.features(blocks)
    assert got.n_tokens == expected.n_tokens
    np.testing.assert_array_equal(got.hashes, expected.hashes)
    np.testing.assert_array_equal(got.weights, expected.weights)
    fingerprint_c, margins_c = fingerprint.simhash_margins(got.hashes, got.weights)
    with python_kernel():
        fingerprint_py, margins_py = fingerprint.simhash_margins(expected.hashes, expected.weights)
    assert fingerprint_c == fingerprint_py
    np.testing.assert_array_equal(margins_c, margins_py)
    # The features and the sketch's shingles of one pass over the tokens: the same as apart.
    together, across = native.features_and_shingle_set(blocks, sketch.SKETCH_SHINGLE_SIZE)
    assert together.n_tokens == expected.n_tokens
    np.testing.assert_array_equal(together.hashes, expected.hashes)
    np.testing.assert_array_equal(together.weights, expected.weights)
    np.testing.assert_array_equal(across, oracle.shingle_set([" ".join(blocks)], sketch.SKETCH_SHINGLE_SIZE))


def test_the_kernel_is_named() -> None:
    assert features.kernel() == ("python" if BUILT is None else "c")
    with python_kernel():
        assert features.kernel() == "python"
        assert Featurizer(segmenter="char").fingerprint("a b c d") != 0


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXTS, max_size=6), _OPTIONS)
def test_c_features_are_the_python_ones(blocks: list[str], options: dict[str, object]) -> None:
    assert_same_features(blocks, *featurizer_pair(**options))


@needs_c
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.sampled_from("aé\U00020000"), st.sampled_from([b"", b"key"]))
def test_long_tokens_hash_as_hashlib_blake2b(length: int, letter: str, key: bytes) -> None:
    # BLAKE2b works in 128-byte blocks: tokens of 1 to 1200 bytes cross several.
    token = letter * length
    found = Featurizer(shingle_size=2, hash_key=key, segmenter="char").features([token])
    digest = hashlib.blake2b(token.encode(), digest_size=8, key=key).digest()
    expected = hashing.mix64(np.frombuffer(digest, dtype="<u8").astype(np.uint64))
    np.testing.assert_array_equal(found.hashes, expected)


@needs_c
def test_a_full_token_table_starts_again() -> None:
    table = BUILT.TokenTable(b"k", 8)
    _, oracle = featurizer_pair(shingle_size=3, hash_key=b"k")
    for page in range(20):
        blocks = [" ".join(f"word{page}x{i}" for i in range(page, page + 15)), "common words here"]
        hashes, counts, n_tokens = table.shingle_counts(blocks, 3)
        expected = oracle.features(blocks)
        np.testing.assert_array_equal(np.frombuffer(hashes, dtype=np.uint64), expected.hashes)
        assert n_tokens == expected.n_tokens
        assert table.remembered() <= 8


@needs_c
@pytest.mark.parametrize("repeats", [1, 40, 5000])
def test_repeated_shingles_are_counted(repeats: int) -> None:
    # Equal hashes share a sort bucket: past 32 of them the bucket is radix sorted.
    blocks = ["a b " * repeats + " ".join(map(str, range(3000))), "中文" * repeats]
    assert_same_features(blocks, *featurizer_pair(shingle_size=2, weighting="log"))


@needs_c
def test_bad_blocks_fail_alike() -> None:
    native, oracle = featurizer_pair(shingle_size=2)
    for featurizer in (native, oracle):
        with pytest.raises(TypeError):
            featurizer.features(["fine", b"bytes"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="64 bytes"):
        BUILT.TokenTable(bytes(65), 8)


@needs_c
@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), max_size=300),
    st.sampled_from(["quantised", "any", "huge"]),
    st.randoms(use_true_random=False),
)
def test_c_votes_are_numpy_votes(hashes: list[int], kind: str, rng: object) -> None:
    values = [rng.uniform(-3, 50) for _ in hashes]  # type: ignore[attr-defined]
    if kind == "quantised":
        values = [round(value * 1024) / 1024 for value in values]
    elif kind == "huge":
        values = [2.0**45 for _ in values]
    h, w = np.array(hashes, dtype=np.uint64), np.array(values, dtype=np.float64)
    found = fingerprint.simhash_margins(h, w)
    with python_kernel():
        expected = fingerprint.simhash_margins(h, w)
    assert found[0] == expected[0]
    np.testing.assert_array_equal(found[1], expected[1])
    off_grid = any(not (value * 1024).is_integer() for value in values)  # "any" may draw 0.0
    if len(h) and (kind == "huge" or off_grid):  # NumPy decided
        assert BUILT.simhash_votes(h, w) is None


@needs_c
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, -0.0, 0.5, -0.5, 1e-9, float("nan"), float("inf")]) | st.floats(-2, 2),
             min_size=64, max_size=64),
    st.integers(0, 64),
)
def test_c_weakest_bits_are_the_python_ones(margins: list[float], count: int) -> None:
    # Ties (equal and opposite margins, signed zeros) and NaN: the stable argsort's order.
    values = np.array(margins, dtype=np.float64)
    expected = fingerprint._weakest_bits_in_python(values, count)
    assert BUILT.weakest_bits(values, count) == expected
    assert fingerprint.weakest_bits(values, count) == expected
    assert expected.bit_count() == count


@needs_c
def test_c_weakest_bits_refuse_what_they_cannot_read() -> None:
    with pytest.raises(ValueError, match="64 float64"):
        BUILT.weakest_bits(np.zeros(63), 3)
    with pytest.raises(ValueError, match="between 0 and 64"):
        BUILT.weakest_bits(np.zeros(64), 65)
    with pytest.raises(TypeError, match="8-byte items"):
        BUILT.weakest_bits(np.zeros(64, dtype=np.float32), 3)


@needs_c
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=600, unique=True),
    st.integers(0, 63),
)
def test_c_sketches_are_numpy_sketches(hashes: list[int], shift: int) -> None:
    # Shifted right, the hashes leave most bins empty: the densification's paths.
    shingles = np.array(sorted({value >> shift for value in hashes}), dtype=np.uint64)
    expected = sketch.minwise_sketch(shingles)
    assert BUILT.minwise_sketch(shingles) == expected
    assert BUILT.minwise_sketch(shingles[::-1].copy()) == expected  # any order
    found = sketch.page_sketch(shingles)
    with python_kernel():
        assert sketch.page_sketch(shingles) == found


@needs_c
def test_c_sketches_refuse_what_numpy_refuses() -> None:
    with pytest.raises(ValueError, match="at least one shingle"):
        BUILT.minwise_sketch(np.array([], dtype=np.uint64))
    with pytest.raises(ValueError, match="uint64"):
        BUILT.minwise_sketch(b"12345")


@needs_c
@pytest.mark.slow
@needs_corpus
def test_c_features_on_the_dev_corpus() -> None:
    from scrapy_simhash.core.content import extract_main_blocks
    from scrapy_simhash.core.fingerprinter import content_blocks
    from scrapy_simhash.core.text import parse_html

    pairs = [featurizer_pair(shingle_size=3), featurizer_pair(shingle_size=2, hash_key=b"k", weighting="log")]
    with gzip.open(CORPUS / "pages.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            blocks = content_blocks(extract_main_blocks(parse_html(json.loads(line)["html"].encode())))
            for native, oracle in pairs:
                assert_same_features(blocks, native, oracle)


@needs_c
@pytest.mark.slow
@pytest.mark.parametrize("with_han", [False, True], ids=["alone", "next-to-han"])
def test_c_tokens_of_every_code_point(with_han: bool) -> None:
    # Each character inside and between words, 256 a page; a Han block forces the script rules.
    native, oracle = featurizer_pair(shingle_size=2)
    for low in range(0, 0x110000, 256):
        blocks = [f"a{chr(code)}b{chr(code)}{chr(code)}" for code in range(low, low + 256)] + ["中"] * with_han
        got, expected = native.features(blocks), oracle.features(blocks)
        assert got.n_tokens == expected.n_tokens, hex(low)
        np.testing.assert_array_equal(got.hashes, expected.hashes, err_msg=hex(low))
