from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.core.features import Features, Featurizer
from scrapy_simhash.core.fingerprint import hamming_distance

ENGLISH = "the quick brown fox jumps over the lazy dog while the cat sleeps " * 3
CHINESE = "我们在北京天安门看升旗，然后去故宫博物院参观古代建筑和文物。"
MIXED = "debian 12 安装指南：第 3 章 partitioning 磁盘分区 2023-07-29"
SAMPLES = [ENGLISH, CHINESE, MIXED, "カタカナのテスト", "한국어 텍스트"]


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_one_feature_per_distinct_shingle(size: int) -> None:
    tokens = ENGLISH.split()
    found = Featurizer(shingle_size=size).features(ENGLISH)
    distinct = {tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}
    assert found.n_tokens == len(tokens)
    assert len(found.hashes) == len(distinct) == len(np.unique(found.hashes))


@pytest.mark.parametrize(("text", "tokens", "features"), [("", 0, 0), ("one two", 2, 1), ("a b c", 3, 1)])
def test_fewer_tokens_than_a_shingle(text: str, tokens: int, features: int) -> None:
    found = Featurizer(shingle_size=3).features(text)
    assert (found.n_tokens, len(found.hashes), len(found.weights)) == (tokens, features, features)


def test_empty_text_has_fingerprint_zero() -> None:
    assert Featurizer().fingerprint("") == Featurizer().fingerprint([]) == 0


@pytest.mark.parametrize(
    ("weighting", "max_weight", "expected"),
    [
        ("tf", None, [1.0, 3.0, 6.0]),
        ("log", None, [1.0, 1 + np.log(3), 1 + np.log(6)]),
        ("binary", None, [1.0, 1.0, 1.0]),
        ("tf", 2.5, [1.0, 2.5, 2.5]),
    ],
)
def test_weights(weighting: str, max_weight: float | None, expected: list[float]) -> None:
    featurizer = Featurizer(shingle_size=1, weighting=weighting, max_weight=max_weight)
    found = featurizer.features("a b b b c c c c c c")
    assert sorted(found.weights.tolist()) == pytest.approx(expected, abs=1 / 1024)
    assert (found.weights * 1024 == np.round(found.weights * 1024)).all()  # exact vote sums


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet=["a", "b", "c", " ", "中", "文", "\x1e", "é"], max_size=12), max_size=6),
    st.integers(1, 4),
)
def test_features_of_blocks_match_a_plain_python_reference(blocks: list[str], size: int) -> None:
    featurizer = Featurizer(shingle_size=size, weighting="tf", segmenter="char")
    shingles: Counter[tuple[str, ...]] = Counter()
    tokens_per_block = [featurizer.tokens(block.replace("\x1e", " ")) for block in blocks]
    for tokens in tokens_per_block:
        span = min(size, len(tokens))
        shingles.update(tuple(tokens[i : i + span]) for i in range(len(tokens) - span + 1) if span)
    found = featurizer.features(blocks)
    assert found.n_tokens == sum(map(len, tokens_per_block))
    assert sorted(found.weights.tolist()) == sorted(map(float, shingles.values()))


def test_shingles_do_not_cross_blocks() -> None:
    featurizer = Featurizer(shingle_size=2)
    assert len(featurizer.features(["a b", "c d"]).hashes) == 2  # (a b) (c d)
    assert len(featurizer.features("a b c d").hashes) == 3  # (a b) (b c) (c d)


def test_unigrams_of_blocks_equal_unigrams_of_the_text() -> None:
    featurizer = Featurizer(shingle_size=1)
    blocks = featurizer.features(["the fox", "the dog", "中文"])
    joined = featurizer.features("the fox the dog 中文")
    assert blocks.hashes.tolist() == joined.hashes.tolist()
    assert blocks.weights.tolist() == joined.weights.tolist()


@pytest.mark.parametrize("text", SAMPLES + ["café, naïve don’t ¶ x² 2023-07-29"])
def test_the_unigram_fast_path_equals_the_general_one(text: str) -> None:
    featurizer = Featurizer(shingle_size=1)
    fast = featurizer.features(text)
    general = featurizer.features([text], block_weights=[1.0])  # shingles of any size
    assert sorted(zip(fast.hashes.tolist(), fast.weights.tolist())) == sorted(
        zip(general.hashes.tolist(), general.weights.tolist())
    )
    assert fast.n_tokens == general.n_tokens


def test_block_weights_scale_their_shingles() -> None:
    featurizer = Featurizer(shingle_size=1, weighting="tf")
    found = featurizer.features(["menu menu", "article text menu"], block_weights=[0.5, 2.0])
    by_hash = dict(zip(found.hashes.tolist(), found.weights.tolist()))
    assert set(by_hash) == set(featurizer.features("menu article text").hashes.tolist())
    assert sorted(by_hash.values()) == [2.0, 2.0, 6.0]  # menu: tf 3 x max(0.5, 2.0)
    with pytest.raises(ValueError, match="2 blocks but 1 block weights"):
        featurizer.features(["a", "b"], block_weights=[1.0])


def test_keyed_fingerprints_differ_from_unkeyed_ones() -> None:
    unkeyed = Featurizer().features(ENGLISH)
    keyed = Featurizer(hash_key=b"secret").features(ENGLISH)
    assert not np.intersect1d(unkeyed.hashes, keyed.hashes).size
    assert Featurizer().fingerprint(ENGLISH) != Featurizer(hash_key=b"secret").fingerprint(ENGLISH)


def test_similar_texts_get_close_fingerprints() -> None:
    featurizer = Featurizer(shingle_size=2)
    base = featurizer.fingerprint(ENGLISH * 3)
    edited = featurizer.fingerprint(ENGLISH * 3 + " and a bird")
    other = featurizer.fingerprint("completely different words about simhash and near duplicates " * 3)
    assert hamming_distance(base, edited) < hamming_distance(base, other)


def test_fingerprint_accepts_its_own_features() -> None:
    featurizer = Featurizer()
    found = featurizer.features(CHINESE)
    assert isinstance(found, Features)
    assert featurizer.fingerprint(found) == featurizer.fingerprint(CHINESE)


_PRINT_FINGERPRINTS = """
import json, sys
from scrapy_simhash.core.features import Featurizer
samples = json.loads(sys.argv[1])
print(json.dumps([[Featurizer(shingle_size=s, hash_key=k.encode(), segmenter=seg).fingerprint(t)
                   for t in samples] for s, k, seg in json.loads(sys.argv[2])]))
"""
_CONFIGS = [(1, "", "auto"), (3, "", "jieba"), (2, "secret", "auto"), (2, "", "char")]


def test_fingerprints_are_the_same_in_another_process() -> None:
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    args = [json.dumps(SAMPLES), json.dumps(_CONFIGS)]
    done = subprocess.run(
        [sys.executable, "-c", _PRINT_FINGERPRINTS, *args], env=env, capture_output=True, check=True
    )
    here = [
        [Featurizer(shingle_size=s, hash_key=k.encode(), segmenter=seg).fingerprint(t) for t in SAMPLES]
        for s, k, seg in _CONFIGS
    ]
    assert json.loads(done.stdout) == here
    assert all(len(set(row)) == len(SAMPLES) for row in here)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"shingle_size": 0}, "shingle_size"),
        ({"shingle_size": 17}, "shingle_size"),
        ({"weighting": "idf"}, "weighting"),
        ({"max_weight": 0}, "max_weight"),
        ({"segmenter": "thulac"}, "segmenter"),
        ({"hash_key": "text"}, "hash_key"),
    ],
)
def test_bad_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        Featurizer(**options)  # type: ignore[arg-type]
