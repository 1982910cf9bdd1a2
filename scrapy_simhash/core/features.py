"""Text -> tokens -> weighted shingle hashes -> SimHash.

Tokens come from :mod:`.segment` (jieba/rjieba for Han, a regex for other scripts),
shingles of ``shingle_size`` tokens are hashed by :mod:`.hashing`, and each distinct
shingle is weighted by its damped term frequency, so a phrase repeated all over a
page (a menu entry, a footer) cannot outvote the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Union

import numpy as np
import numpy.typing as npt

from . import hashing, segment
from .fingerprint import simhash

try:
    from . import _features  # the C tokens -> shingle counts, built at install when a compiler is there
except ImportError:  # no compiler: regex + NumPy, with the same results
    _features = None  # type: ignore[assignment]
else:
    _features.set_script_classes(*segment.SCRIPT_CLASSES)

#: How a shingle seen ``tf`` times on a page is weighted.
WEIGHTINGS = ("log", "tf", "binary")

# Weights are rounded to multiples of 1/1024: SimHash vote sums are then exact in
# float64, whatever order BLAS adds them in, so a page gets the same bits everywhere.
_WEIGHT_QUANTUM = 1024.0


class Features(NamedTuple):
    """The distinct shingle hashes of a page, their weights, and its token count."""

    hashes: npt.NDArray[np.uint64]
    weights: npt.NDArray[np.float64]
    n_tokens: int


Content = Union[str, Sequence[str]]


def kernel() -> str:
    """Which code turns blocks into shingle counts: ``"c"`` (:mod:`._features`, built at install)
    or ``"python"``. C runs for the ``"char"`` segmenter with shingles of 2+ tokens and no block
    weights (the defaults of :class:`~.fingerprinter.FingerprintOptions`); Python otherwise."""
    return "python" if _features is None else "c"


class Featurizer:
    """Turn normalised text, or a sequence of text blocks, into SimHash features.

    - ``shingle_size``: tokens per shingle (default 2; 1 = single tokens); shingles never span
      two blocks, and a block with fewer tokens is one shorter shingle.
    - ``hash_key``: secret bytes (at most 64) keying every hash; see :mod:`.hashing`.
    - ``segmenter``: ``"auto"`` (rjieba if importable, else jieba), ``"rjieba"``, ``"jieba"``,
      or ``"char"`` (every Han character is a token).
    - ``weighting``: a shingle seen tf times weighs ``"tf"``, ``"log"`` (1 + ln tf) or
      ``"binary"`` (1); ``max_weight`` caps it.

    It remembers the hashes of the tokens it has seen: keep one per crawl.

    >>> featurizer = Featurizer(shingle_size=2)
    >>> blocks = ["near-duplicate pages", "同一个页面的近似副本"]
    >>> found = featurizer.features(blocks)
    >>> found.n_tokens, len(found.hashes)  # (near duplicate) (duplicate pages) (同一个 页面) ...
    (8, 6)
    >>> featurizer.fingerprint(found) == featurizer.fingerprint(blocks)
    True
    """

    def __init__(
        self,
        shingle_size: int = 2,
        hash_key: bytes = b"",
        segmenter: str = "auto",
        weighting: str = "tf",
        max_weight: float | None = None,
    ) -> None:
        if not 1 <= shingle_size <= 16:
            raise ValueError(f"shingle_size must be between 1 and 16, not {shingle_size}")
        if weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {WEIGHTINGS}, not {weighting!r}")
        if max_weight is not None and not max_weight > 0:
            raise ValueError(f"max_weight must be positive, not {max_weight!r}")
        self.shingle_size = shingle_size
        self.weighting = weighting
        self.max_weight = max_weight
        #: Whether capping whole counts leaves whole numbers (:meth:`_damp`'s fast path).
        self._whole_cap = max_weight is None or float(max_weight).is_integer()
        self.tokens = segment.Tokenizer(segmenter)
        self._hash_tokens = hashing.TokenHasher(hash_key)
        self._separator_hash = np.uint64(hashing.token_hash(segment.BLOCK_SEPARATOR, hash_key))
        native = _features is not None and segmenter == "char" and shingle_size > 1
        self._table = _features.TokenTable(hash_key, hashing.DEFAULT_CAPACITY) if native else None

    def features(self, content: Content, block_weights: Sequence[float] | None = None) -> Features:
        """Features of a text, or of blocks (with optional per-block weight factors).

        >>> f = Featurizer(shingle_size=2, weighting="log").features("a b a b a")
        >>> f.n_tokens, len(f.hashes), sorted(f.weights.tolist())
        (5, 2, [1.693359375, 1.693359375])
        """
        blocks = [content] if isinstance(content, str) else list(content)
        if block_weights is not None and len(block_weights) != len(blocks):
            raise ValueError(f"{len(blocks)} blocks but {len(block_weights)} block weights")
        if self.shingle_size == 1 and block_weights is None:
            return self._unigrams("\n".join(blocks))
        if self._table is not None and block_weights is None:
            return self._native_features(self._table, blocks)
        token_hashes, is_separator = self._hash_blocks(blocks)
        n_tokens = len(token_hashes) - int(np.count_nonzero(is_separator))
        if block_weights is None:
            shingles = hashing.separated_shingle_hashes(token_hashes, is_separator, self.shingle_size)
            hashes, counts = np.unique(shingles, return_counts=True)
            weights = self._damp(counts)
        else:
            lengths = _block_lengths(is_separator) if blocks else []
            tokens = token_hashes[~is_separator]
            shingles = hashing.block_shingle_hashes(tokens, self.shingle_size, lengths)
            hashes, weights = self._weigh_blocks(shingles, lengths, block_weights)
        return Features(hashes, weights, n_tokens)

    def shingle_set(self, blocks: Sequence[str], size: int) -> npt.NDArray[np.uint64]:
        """The distinct hashes of the *size*-token shingles of *blocks*, unweighted: the set
        whose Jaccard similarity a page's sketch estimates (:mod:`.sketch`).

        >>> len(Featurizer(segmenter="char").shingle_set(["one two three four five six"], 5))
        2
        """
        blocks = list(blocks)
        if self._table is not None and size > 1:
            return np.frombuffer(self._table.shingle_counts(blocks, size)[0], dtype=np.uint64)
        token_hashes, is_separator = self._hash_blocks(blocks)
        return np.unique(hashing.separated_shingle_hashes(token_hashes, is_separator, size))

    def features_and_shingle_set(self, blocks: list[str], size: int) -> tuple[Features, npt.NDArray[np.uint64]]:
        """:meth:`features` of *blocks* and :meth:`shingle_set` of them joined by spaces, as
        one block: in C from one pass over their tokens (a space is never part of a token,
        so the tokens of the joined text are the blocks' tokens, in order).

        >>> f = Featurizer(segmenter="char")
        >>> found, shingles = f.features_and_shingle_set(["one two three", "four five six"], 5)
        >>> found.n_tokens, shingles.tolist() == f.shingle_set(["one two three four five six"], 5).tolist()
        (6, True)
        """
        if self._table is None or size == 1:
            return self.features(blocks), self.shingle_set([" ".join(blocks)], size)
        hashes, counts, n_tokens, across = self._table.shingle_counts(blocks, self.shingle_size, size)
        weights = self._damp(np.frombuffer(counts, dtype=np.int64))
        found = Features(np.frombuffer(hashes, dtype=np.uint64), weights, n_tokens)
        return found, np.frombuffer(across, dtype=np.uint64)

    def _native_features(self, table: _features.TokenTable, blocks: list[str]) -> Features:
        """:meth:`features` of blocks without block weights, in C (see :func:`kernel`)."""
        hashes, counts, n_tokens = table.shingle_counts(blocks, self.shingle_size)
        weights = self._damp(np.frombuffer(counts, dtype=np.int64))
        return Features(np.frombuffer(hashes, dtype=np.uint64), weights, n_tokens)

    def _hash_blocks(self, blocks: list[str]) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
        """Token hashes of all blocks, separators between blocks included (and marked)."""
        separator = segment.BLOCK_SEPARATOR
        joined = separator.join(blocks)
        if joined.count(separator) > max(len(blocks) - 1, 0):  # one inside a block: no boundary
            joined = separator.join(block.replace(separator, " ") for block in blocks)
        token_hashes = self._hash_tokens(self.tokens.raw(joined))
        return token_hashes, token_hashes == self._separator_hash

    def _unigrams(self, content: str) -> Features:
        """The fast path of shingle size 1: count tokens, hash the distinct ones."""
        counts = self.tokens.counts(content)
        token_hashes, tf = self._hash_tokens.counted(counts)
        return Features(hashing.mix64(token_hashes), self._damp(tf), int(tf.sum()))

    def fingerprint(self, content: Content | Features) -> int:
        """The 64-bit SimHash of *content* (text, blocks, or its :class:`Features`)."""
        found = content if isinstance(content, Features) else self.features(content)
        return simhash(found.hashes, found.weights)

    def _damp(
        self, counts: npt.NDArray[np.intp], factors: npt.NDArray[np.float64] | None = None
    ) -> npt.NDArray[np.float64]:
        """Weights from counts (and per-shingle factors), capped and quantised."""
        if factors is None and self.weighting == "tf" and self._whole_cap:
            # (The default.) Counts capped at a whole number are whole: one call, where the
            # general path's five cost ~10 us a page.
            if self.max_weight is None:
                return counts.astype(np.float64)
            return np.minimum(counts, self.max_weight, dtype=np.float64)
        if self.weighting == "log":
            weights = 1.0 + np.log(counts)
        elif self.weighting == "tf":
            weights = counts.astype(np.float64)
        else:
            weights = np.ones(len(counts))
        if factors is None and self.max_weight is None and self.weighting != "log":
            return weights  # whole numbers: already multiples of 1/1024
        if factors is not None:
            weights *= factors
        if self.max_weight is not None:
            np.minimum(weights, self.max_weight, out=weights)
        return np.round(weights * _WEIGHT_QUANTUM) / _WEIGHT_QUANTUM

    def _weigh_blocks(
        self, shingles: npt.NDArray[np.uint64], lengths: list[int], block_weights: Sequence[float]
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float64]]:
        """A shingle weighs its damped tf times the largest factor of the blocks it is in."""
        per_block = np.asarray(hashing.shingles_per_block(lengths, self.shingle_size))
        occurrence = np.repeat(np.asarray(block_weights, dtype=np.float64), per_block)
        hashes, inverse, counts = np.unique(shingles, return_inverse=True, return_counts=True)
        factors = np.zeros(len(hashes))
        np.maximum.at(factors, inverse, occurrence)
        return hashes, self._damp(counts, factors)


def _block_lengths(is_separator: npt.NDArray[np.bool_]) -> list[int]:
    """Tokens in each block, from the separator marks of the blocks' joined tokens."""
    ends = np.flatnonzero(np.concatenate([is_separator, [True]]))  # the last block ends the text
    lengths: list[int] = (np.diff(np.concatenate([[-1], ends])) - 1).tolist()
    return lengths
