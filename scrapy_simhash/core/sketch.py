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
word is a third of a short page's shingles): its 32 bytes are a digest of its whole
shingle set instead, which agrees only with a page of the very same shingles.

**Short pages are compared exactly.** Among the thousands of pages of one site, most
pairs near the line are short pages (a class with a few members, a help page of a
paragraph), where the sketch errs most: 0.05-0.07 at J = 0.8 for 30-130 shingles, so
that one pair in five at J = 0.72 passed (measured on pages of 40-100 shingles). A page of at most :data:`EXACT_SHINGLES`
distinct shingles therefore also stores them, 16 bits each, sorted, after its 32 bytes
(at most 432 bytes in all); two such pages are confirmed on their exact Jaccard
similarity, any other pair on its sketches' estimate, both at ``min_similarity``.
Measured on 43,000 pages of five documentation sites (``benchmarks/bench_scale.py``):
drops at 0.5 < J < 0.8 from 32.9 to 4.6 per 1,000 pages, recall 0.77 to 0.82 (README,
"Precision at scale"; before, every pair on its sketches at 0.77, one standard error
under the line so that pairs on it passed: a distinct page dropped costs more than a copy kept). Two 16-bit values of different
shingles collide with probability 2**-16: a few hundredths of a shingle in a pair of
200-shingle pages.

Comparing two sketches is an XOR and a popcount, and comparing two short pages a count of
common 16-bit values: integers only, so Python, NumPy and a Redis Lua script give the
same verdict (:class:`Confirmation`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
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
#: A page of at most this many distinct shingles stores them after its sketch.
EXACT_SHINGLES: Final = 200
#: The most bytes a sketch takes: 32, and 2 a shingle of a short page.
MAX_SKETCH_BYTES: Final = SKETCH_BYTES + 2 * EXACT_SHINGLES
_BIN_SHIFT = np.uint64(64 - 8)  # 256 bins: the top 8 bits of a hash
_BIN_STARTS = np.arange(SKETCH_BITS, dtype=np.uint64) << _BIN_SHIFT
# splitmix64's finaliser: a bin's bit depends on every bit of its minimum and position.
_GOLDEN, _MIX1, _MIX2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_POSITIONS = np.arange(SKETCH_BITS, dtype=np.uint64) * _GOLDEN


def page_sketch(shingles: npt.NDArray[np.uint64]) -> bytes:
    """The sketch of a page's distinct shingle hashes: :func:`minwise_sketch`, or for a
    page of fewer than :data:`MIN_SKETCHED_SHINGLES`, a digest of the whole set; then, for
    a page of at most :data:`EXACT_SHINGLES`, the shingles themselves (16 bits each).

    >>> import numpy as np
    >>> few = np.arange(1, 21, dtype=np.uint64)
    >>> len(page_sketch(few)), similarity(page_sketch(few), page_sketch(few[::-1])), similarity(page_sketch(few), page_sketch(few[1:]))
    (72, 1.0, 0.95)
    """
    shingles = np.asarray(shingles, dtype=np.uint64)
    if len(shingles) >= MIN_SKETCHED_SHINGLES:
        if _features is not None:  # the same bits (tests/test_features_c.py), without NumPy's dozen calls
            head = _features.minwise_sketch(np.ascontiguousarray(shingles))
        else:
            head = minwise_sketch(shingles)
    else:
        exact = np.sort(shingles).astype("<u8").tobytes()
        head = hashlib.blake2b(exact, digest_size=SKETCH_BYTES, person=b"simhash-set").digest()
    if len(shingles) > EXACT_SHINGLES:
        return head
    # The low 16 bits of each (uniform) hash; np.unique sorts and drops the rare collision.
    return head + np.unique(shingles.astype(np.uint16)).astype("<u2").tobytes()


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
    """How many of the 256 bits of two sketches differ (their first 32 bytes)."""
    return (int.from_bytes(a[:SKETCH_BYTES], "little") ^ int.from_bytes(b[:SKETCH_BYTES], "little")).bit_count()


def shingles_of(sketch: bytes) -> npt.NDArray[np.uint16]:
    """The 16-bit shingles a short page's sketch holds (none for a longer page)."""
    return np.frombuffer(sketch, dtype="<u2", offset=SKETCH_BYTES)


def common_shingles(first: npt.NDArray[np.uint16], second: npt.NDArray[np.uint16]) -> tuple[int, int]:
    """How many of two short pages' 16-bit shingles (:func:`shingles_of`) they share, and
    how many they hold together: the exact Jaccard similarity's numerator and denominator."""
    common = len(np.intersect1d(first, second, assume_unique=True))
    return common, len(first) + len(second) - common


def exact_similarity(common: int, union: int) -> float:
    """The Jaccard similarity of two short pages sharing *common* of their *union*
    shingles (three decimals: the same float wherever it is computed)."""
    return round(common / union, 3)


def similarity(a: bytes, b: bytes) -> float:
    """The Jaccard similarity of two pages' sketches: exact for two short pages, else
    estimated, in [0, 1] (three decimals)."""
    found = _UNCONFIRMED.similarity(a, b)
    assert found is not None  # (min_similarity 0 confirms every pair)
    return found


def is_exact(sketch: bytes) -> bool:
    """Whether *sketch* holds its page's shingles (a short page's)."""
    return len(sketch) > SKETCH_BYTES


def estimated_similarity(distance: int) -> float:
    """The Jaccard similarity estimated from two sketches that differ in *distance* bits."""
    return round(max(0.0, 1.0 - 2.0 * distance / SKETCH_BITS), 3)


@dataclass(frozen=True, slots=True)
class Confirmation:
    """When two sketches confirm a SimHash match: their pages share at least
    ``min_similarity`` of their shingles, exactly for two short pages, else as their
    sketches estimate it. 0 confirms every match.

    Both tests are on integers (:attr:`min_permille`, :attr:`max_distance`), which the
    Redis scripts take as they are.

    >>> c = Confirmation(0.8)
    >>> c.max_distance, c.min_permille, c.exact_confirms(8, 10), c.exact_confirms(7, 10)
    (25, 800, True, False)
    >>> Confirmation(0.0).max_distance, Confirmation(1.0).max_distance
    (256, 0)
    """

    min_similarity: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_similarity <= 1.0:  # (also refuses nan)
            raise ValueError(f"min_similarity must be between 0 and 1, not {self.min_similarity!r}")

    @property
    def max_distance(self) -> int:
        """The most bits two sketches may differ in (:func:`max_sketch_distance`)."""
        return max_sketch_distance(self.min_similarity)

    @property
    def min_permille(self) -> int:
        """``min_similarity`` in thousandths: the exact test on integers."""
        return round(self.min_similarity * 1000)

    def exact_confirms(self, common: int, union: int) -> bool:
        """Whether two short pages sharing *common* of their *union* shingles are alike."""
        return common * 1000 >= self.min_permille * union

    def similarity(self, query: bytes, stored: bytes) -> float | None:
        """The similarity of two sketches when it confirms the match, else ``None``."""
        if is_exact(query) and is_exact(stored):
            return self.by_shingles(*common_shingles(shingles_of(query), shingles_of(stored)))
        return self.by_distance(sketch_distance(query, stored))

    def by_shingles(self, common: int, union: int) -> float | None:
        """:meth:`similarity` of two short pages sharing *common* of their *union* shingles."""
        return exact_similarity(common, union) if self.exact_confirms(common, union) else None

    def by_distance(self, distance: int) -> float | None:
        """:meth:`similarity` of two sketches differing in *distance* bits (one of a longer page)."""
        return estimated_similarity(distance) if distance <= self.max_distance else None


_UNCONFIRMED = Confirmation(0.0)


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

    A sketch is 32 bytes, and a short page's 2 more a shingle (at most
    :data:`EXACT_SHINGLES`, sorted, distinct). All zeros is no sketch: stores keep a row
    without one as zeros (a real sketch is all zeros with probability 2**-256).
    """
    if sketch is None:
        return None
    if not isinstance(sketch, (bytes, bytearray, memoryview)):
        raise TypeError(f"a sketch is {SKETCH_BYTES} bytes, not {type(sketch).__name__}")
    data = bytes(sketch)
    if len(data) != SKETCH_BYTES:
        extra = len(data) - SKETCH_BYTES
        if not (0 < extra <= MAX_SKETCH_BYTES - SKETCH_BYTES and extra % 2 == 0):
            raise ValueError(f"a sketch is {SKETCH_BYTES} bytes and 2 a shingle up to {MAX_SKETCH_BYTES}, not {len(data)}")
        shingles = shingles_of(data)
        if not (shingles[1:] > shingles[:-1]).all():  # (3x faster than np.diff, ~2 us)
            raise ValueError("a sketch's shingles must be sorted and distinct")
    return data if any(data[:SKETCH_BYTES]) else None
