"""A 256-bit minwise sketch of a page's shingle set: the confirmation of a SimHash match.

SimHash estimates the angle between two weighted feature vectors; among thousands of
pages of one site that share a template, a vocabulary and whole paragraphs, some
distinct pages land within k bits by chance, and more of them as the index grows.
Henzinger (SIGIR 2006, "Finding near-duplicate web pages: a large-scale evaluation of
algorithms") measured SimHash alone at precision 0.50 on 1.6B pages, worst on same-site
pairs, and 0.79 once a shingle (Jaccard) test confirmed each SimHash match. So every
page also gets this sketch, stored with its fingerprint, and a match within k is a
near-duplicate only when the two sketches estimate a Jaccard similarity of at least
``min_similarity`` (:func:`max_sketch_distance`).

The sketch is *b-bit one-permutation minwise hashing* with b = 1:

* one permutation (Li, Owen & Zhang, NIPS 2012): the page's distinct shingle hashes
  (already uniform 64-bit keyed BLAKE2b values, :mod:`.features`) fall into 256 bins by
  their top 8 bits; each bin keeps its smallest hash. An empty bin (a short page) takes
  the minimum of the next non-empty bin, circularly (densification by rotation,
  Shrivastava & Li, ICML 2014);
* b = 1 (Li & König, WWW 2010): each bin keeps one bit of a mix of its minimum and its
  position. Two bins agree when their minima are the same shingle (probability J) and
  by chance otherwise (1/2), so with ``d`` of the 256 bits differing the estimate is
  ``J = 1 - 2 d / 256``. One bit a bin spends the 32 bytes better than fewer, wider
  bins: its standard error is 0.054 at J = 0.5 and 0.037 at J = 0.8 (0.063 and 0.050
  for 64 one-byte bins), measured unbiased down to pages of 10 shingles.

The shingles are of 5 tokens (:data:`SKETCH_SHINGLE_SIZE`) over the page's whole token
stream, across its blocks: the unit in which the ground truth of near-duplicates is usually
defined (Broder et al., "Syntactic clustering of the Web", 1997; this project's corpora).
A confirmed match is then a pair that shares most of its 5-token runs, not only its words.

A page of fewer than :data:`MIN_SKETCHED_SHINGLES` shingles is too short for a sketch to
estimate its Jaccard similarity (the error grows as bins stay empty, and one differing
word is a third of a short page's shingles): its sketch is a digest of its whole shingle
set instead, which agrees only with a page of the very same shingles.

Comparing two sketches is an XOR and a popcount: integers only, so Python, NumPy and a
Redis Lua script give the same verdict.
"""

from __future__ import annotations

import hashlib
from typing import Final

import numpy as np
import numpy.typing as npt

try:
    from . import _features  # minwise_sketch in C, ~10x faster (built at install when a compiler is there)
except ImportError:
    _features = None  # type: ignore[assignment]

SKETCH_BITS: Final = 256
SKETCH_BYTES: Final = SKETCH_BITS // 8
SKETCH_SHINGLE_SIZE: Final = 5
MIN_SKETCHED_SHINGLES: Final = 30
_BIN_SHIFT = np.uint64(64 - 8)  # 256 bins: the top 8 bits of a hash
_BIN_STARTS = np.arange(SKETCH_BITS, dtype=np.uint64) << _BIN_SHIFT
# splitmix64's finaliser: a bin's bit depends on every bit of its minimum and position.
_GOLDEN, _MIX1, _MIX2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_POSITIONS = np.arange(SKETCH_BITS, dtype=np.uint64) * _GOLDEN


def page_sketch(shingles: npt.NDArray[np.uint64]) -> bytes:
    """The sketch of a page's distinct shingle hashes: :func:`minwise_sketch`, or for a
    page of fewer than :data:`MIN_SKETCHED_SHINGLES`, a digest of the whole set.

    >>> import numpy as np
    >>> few = np.arange(1, 21, dtype=np.uint64)
    >>> similarity(page_sketch(few), page_sketch(few[::-1])), similarity(page_sketch(few), page_sketch(few[1:])) < 0.5
    (1.0, True)
    """
    if len(shingles) >= MIN_SKETCHED_SHINGLES:
        if _features is not None:  # the same bits (tests/test_features_c.py), without NumPy's dozen calls
            return _features.minwise_sketch(np.ascontiguousarray(shingles, dtype=np.uint64))
        return minwise_sketch(shingles)
    exact = np.sort(np.asarray(shingles, dtype=np.uint64)).astype("<u8").tobytes()
    return hashlib.blake2b(exact, digest_size=SKETCH_BYTES, person=b"simhash-set").digest()


def minwise_sketch(hashes: npt.NDArray[np.uint64]) -> bytes:
    """The 32-byte sketch of a set of 64-bit shingle hashes (at least one). The
    specification of its C path (``_features.minwise_sketch``), which :func:`page_sketch` runs.

    >>> import numpy as np
    >>> a = np.arange(1, 2001, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    >>> similarity(minwise_sketch(a), minwise_sketch(a[::-1]))
    1.0
    >>> abs(similarity(minwise_sketch(a), minwise_sketch(a[:1000])) - 0.5) < 0.2  # J = 0.5
    True
    """
    if not len(hashes):
        raise ValueError("a sketch needs at least one shingle")
    ordered = np.sort(np.asarray(hashes, dtype=np.uint64))
    # Sorted, a bin's hashes are adjacent and its minimum comes first.
    first = np.searchsorted(ordered, _BIN_STARTS)
    filled = first < len(ordered)
    filled[filled] = (ordered[first[filled]] >> _BIN_SHIFT) == _BIN_STARTS[filled] >> _BIN_SHIFT
    bins = np.flatnonzero(filled)
    # Each bin's source: itself when filled, else the next filled bin, circularly.
    source = bins[np.searchsorted(bins, np.arange(SKETCH_BITS)) % len(bins)]
    minima = ordered[first[source]]
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps, as intended
        mixed = minima + _POSITIONS
        mixed = (mixed ^ (mixed >> np.uint64(30))) * _MIX1
        mixed = (mixed ^ (mixed >> np.uint64(27))) * _MIX2
        mixed ^= mixed >> np.uint64(31)
    bits = (mixed >> np.uint64(63)).astype(np.uint8)
    return np.packbits(bits, bitorder="little").tobytes()


def sketch_distance(a: bytes, b: bytes) -> int:
    """How many of the 256 bits of two sketches differ."""
    return (int.from_bytes(a, "little") ^ int.from_bytes(b, "little")).bit_count()


def similarity(a: bytes, b: bytes) -> float:
    """The Jaccard similarity that two sketches estimate, in [0, 1]."""
    return estimated_similarity(sketch_distance(a, b))


def estimated_similarity(distance: int) -> float:
    """The Jaccard similarity estimated from two sketches that differ in *distance* bits."""
    return round(max(0.0, 1.0 - 2.0 * distance / SKETCH_BITS), 3)


def max_sketch_distance(min_similarity: float) -> int:
    """The most bits two sketches may differ in for an estimate of at least *min_similarity*;
    0 confirms every match (no confirmation step).

    >>> max_sketch_distance(0.0), max_sketch_distance(0.7), max_sketch_distance(1.0)
    (256, 38, 0)
    """
    if not 0.0 <= min_similarity <= 1.0:  # (also refuses nan)
        raise ValueError(f"min_similarity must be between 0 and 1, not {min_similarity!r}")
    if min_similarity == 0.0:
        return SKETCH_BITS
    return int((1.0 - min_similarity) * SKETCH_BITS / 2 + 1e-9)


def check_sketch(sketch: object) -> bytes | None:
    """*sketch* as bytes if it is one, ``None`` for none, else ``TypeError``/``ValueError``.

    All zeros is no sketch: stores keep a row without one as zeros (a real sketch is
    all zeros with probability 2**-256).
    """
    if sketch is None:
        return None
    if not isinstance(sketch, (bytes, bytearray, memoryview)):
        raise TypeError(f"a sketch is {SKETCH_BYTES} bytes, not {type(sketch).__name__}")
    data = bytes(sketch)
    if len(data) != SKETCH_BYTES:
        raise ValueError(f"a sketch is {SKETCH_BYTES} bytes, not {len(data)}")
    return data if any(data) else None
