"""Stable, optionally keyed, 64-bit hashes of tokens and of shingles of tokens.

A feature hash must be the same in every process and on every machine, or stored
fingerprints stop matching: Python's ``hash()`` is salted per process, so tokens are
hashed with BLAKE2b (8-byte digest), keyed with the user's secret if there is one (then
nobody can craft pages whose features collide). BLAKE2b costs ~1.4 us a call, a dict
lookup ~0.04 us, and token frequencies follow Zipf's law, so each distinct token is
hashed once and remembered in a bounded table. Shingle hashes are then combined from
token hashes with vectorised uint64 arithmetic, finished by MurmurHash3's 64-bit mixer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Union

import numpy as np
import numpy.typing as npt

Hashes = npt.NDArray[np.uint64]
#: A token, or its UTF-8 encoding (the fast path of :mod:`.segment` gives bytes).
Token = Union[str, bytes]
Tokens = Union[Sequence[str], Sequence[bytes]]
TokenCounts = Union[Mapping[str, int], Mapping[bytes, int]]

#: Distinct tokens remembered before the table starts again (~150 bytes each).
DEFAULT_CAPACITY = 1 << 17
_MAX_KEY_BYTES = 64  # BLAKE2b's key limit

# Odd multiplier (2**64 / golden ratio) chaining tokens, and MurmurHash3's fmix64
# constants (Appleby): every input bit ends up flipping each output bit with p ~ 1/2.
_CHAIN = np.uint64(0x9E3779B97F4A7C15)
_FMIX_1 = np.uint64(0xFF51AFD7ED558CCD)
_FMIX_2 = np.uint64(0xC4CEB9FE1A85EC53)
_SHIFT = np.uint64(33)


def token_hash(token: Token, key: bytes = b"") -> int:
    """The 64-bit hash of one token (``str``, or its UTF-8 ``bytes``): keyed BLAKE2b.

    >>> token_hash("simhash") == token_hash(b"simhash")
    True
    >>> token_hash("simhash") != token_hash("simhash", key=b"secret")
    True
    """
    # Lone surrogates (from badly decoded pages) must not crash us.
    data = token if isinstance(token, bytes) else token.encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8, key=key).digest(), "little")


def check_key(key: bytes) -> bytes:
    """Return *key* if BLAKE2b accepts it, else raise ``TypeError``/``ValueError``."""
    if not isinstance(key, bytes):
        raise TypeError(f"hash_key must be bytes, not {type(key).__name__}")
    if len(key) > _MAX_KEY_BYTES:
        raise ValueError(f"hash_key must be at most {_MAX_KEY_BYTES} bytes, not {len(key)}")
    return key


class TokenHasher:
    """Hash token lists, remembering up to *capacity* distinct tokens.

    Tokens get small integer ids (a dict lookup each, in C via ``map``) that index a
    NumPy table of their hashes: converting small ints is cheaper than 64-bit ones.
    """

    def __init__(self, key: bytes = b"", capacity: int = DEFAULT_CAPACITY) -> None:
        self._key = check_key(key)
        self._capacity = capacity
        # str and bytes keys apart: "a" and b"a" hash alike, and comparing them in one dict
        # is a BytesWarning (an error under python -bb).
        self._ids: dict[type, dict[Token, int]] = {str: {}, bytes: {}}
        self._size = 0
        self._table: Hashes = np.empty(1024, dtype=np.uint64)

    def __call__(self, tokens: Tokens) -> Hashes:
        """The hashes of *tokens* (all str or all bytes), in order."""
        ids = self._ids_of(tokens)  # first: it may grow the table
        return self._table[ids]

    def counted(self, counts: TokenCounts) -> tuple[Hashes, npt.NDArray[np.intp]]:
        """The hashes of the tokens counted in *counts*, and their counts, as arrays."""
        ids = self._ids_of(counts)  # first: it may grow the table
        return self._table[ids], np.fromiter(counts.values(), dtype=np.intp, count=len(counts))

    def _ids_of(self, tokens: Sequence[str] | Sequence[bytes] | TokenCounts) -> npt.NDArray[np.intp]:
        first = next(iter(tokens), None)
        if first is None:
            return np.empty(0, dtype=np.intp)
        kind = type(first)
        # Nearly every page brings new tokens (names, numbers: Zipf's long tail), so
        # learn them first (a set difference, in C) and then map every token once.
        distinct: set[Token] = set(tokens)
        new = distinct.difference(self._ids[kind])
        if new:
            if self._size + len(new) > self._capacity:
                for ids in self._ids.values():  # simpler than LRU; frequent tokens come back at once
                    ids.clear()
                self._size = 0
                new = distinct
            self._learn(new, kind)
        known = self._ids[kind]
        return np.fromiter(map(known.__getitem__, tokens), dtype=np.intp, count=len(tokens))

    def _learn(self, new: set[Token], kind: type) -> None:
        """Give the *new* tokens ids and hash them, all at once (no NumPy call per token)."""
        tokens = list(new)
        first = self._size
        self._size += len(tokens)
        if self._size > len(self._table):
            self._table = np.resize(self._table, max(self._size, 2 * len(self._table)))
        self._ids[kind].update(zip(tokens, range(first, self._size)))
        data = [
            token if isinstance(token, bytes) else token.encode("utf-8", "surrogatepass") for token in tokens
        ]
        key = self._key
        # As token_hash(): the 8-byte digest read as a little-endian integer.
        digests = b"".join([hashlib.blake2b(item, digest_size=8, key=key).digest() for item in data])
        self._table[first : self._size] = np.frombuffer(digests, dtype="<u8")


def mix64(values: Hashes) -> Hashes:
    """MurmurHash3's fmix64 finaliser, in place on a uint64 array (returned)."""
    values ^= values >> _SHIFT
    values *= _FMIX_1
    values ^= values >> _SHIFT
    values *= _FMIX_2
    values ^= values >> _SHIFT
    return values


def shingle_hashes(token_hashes: Hashes, size: int) -> Hashes:
    """Hashes of the runs of *size* consecutive tokens (one run of all, if fewer).

    >>> h = np.array([1, 2, 3, 4], dtype=np.uint64)
    >>> len(shingle_hashes(h, 3)), len(shingle_hashes(h, 9)), len(shingle_hashes(h[:0], 3))
    (2, 1, 0)
    >>> bool(shingle_hashes(h, 2)[0] != shingle_hashes(h[::-1], 2)[-1])  # order matters
    True
    """
    return block_shingle_hashes(token_hashes, size, [len(token_hashes)])


def block_shingle_hashes(token_hashes: Hashes, size: int, block_lengths: Sequence[int]) -> Hashes:
    """Shingle hashes that never span two blocks; a block shorter than *size* is one shingle.

    The hash of the tokens ``t0 .. tL-1`` is ``fmix64((..(h0 * C ^ h1) * C ..) ^ hL-1)``,
    computed for every shingle at once, one token position per step.

    >>> h = np.array([1, 2, 3, 4, 5], dtype=np.uint64)
    >>> len(block_shingle_hashes(h, 2, [3, 0, 2]))  # (1 2) (2 3) | (4 5)
    3
    >>> bool(block_shingle_hashes(h, 9, [2, 3])[1] == shingle_hashes(h[2:], 9)[0])
    True
    """
    if len(block_lengths) == 1:
        return _contiguous_shingle_hashes(token_hashes, size)
    starts, spans = _shingle_starts(np.asarray(block_lengths, dtype=np.intp), size)
    padded = np.concatenate([token_hashes, np.zeros(size, dtype=np.uint64)])
    acc = padded[starts]
    for step in range(1, size):
        chained = (acc * _CHAIN) ^ padded[starts + step]
        acc = np.where(step < spans, chained, acc)
    return mix64(acc)


def _contiguous_shingle_hashes(token_hashes: Hashes, size: int) -> Hashes:
    """The one-block case with slices instead of index arrays (the common, fast path)."""
    span = min(size, len(token_hashes))
    count = len(token_hashes) - span + 1 if span else 0
    acc = token_hashes[:count].copy()
    for step in range(1, span):
        acc *= _CHAIN
        acc ^= token_hashes[step : step + count]
    return mix64(acc)


def separated_shingle_hashes(
    token_hashes: Hashes, is_separator: npt.NDArray[np.bool_], size: int
) -> Hashes:
    """The shingles of :func:`block_shingle_hashes`, in another order, from the tokens
    of all blocks with the separators between them still in place (``is_separator``).

    For when their order does not matter (a page's features are sorted): the windows
    of *size* tokens are chained over slices, then those holding a separator dropped;
    only blocks shorter than *size* go through index arrays.

    >>> h = np.array([1, 2, 3, 0, 4, 5], dtype=np.uint64)  # (1 2 3) | (4 5)
    >>> got = separated_shingle_hashes(h, h == 0, 2)
    >>> sorted(got.tolist()) == sorted(block_shingle_hashes(h[h != 0], 2, [3, 2]).tolist())
    True
    """
    count = max(len(token_hashes) - size + 1, 0)
    acc = token_hashes[:count].copy()
    clean = ~is_separator[:count]
    for step in range(1, size):
        acc *= _CHAIN
        acc ^= token_hashes[step : step + count]
        clean &= ~is_separator[step : step + count]
    short = _short_block_hashes(token_hashes, is_separator, size, clean)
    return np.concatenate([mix64(acc[clean]), short])


def _short_block_hashes(
    token_hashes: Hashes, is_separator: npt.NDArray[np.bool_], size: int, clean: npt.NDArray[np.bool_]
) -> Hashes:
    """One shingle for each block shorter than *size* (*clean*: full windows without a separator)."""
    bounded = np.concatenate([[True], is_separator, [True]])
    starts_block = ~is_separator & bounded[:-2]
    starts_block[: len(clean)] &= ~clean  # a full window starts there: not a short block
    starts = np.flatnonzero(starts_block)
    ends = np.flatnonzero(bounded[1:])  # separators, and the end
    spans = ends[np.searchsorted(ends, starts)] - starts
    padded = np.concatenate([token_hashes, np.zeros(size, dtype=np.uint64)])
    acc = padded[starts]
    for step in range(1, size):
        acc = np.where(step < spans, (acc * _CHAIN) ^ padded[starts + step], acc)
    return mix64(acc)


def shingles_per_block(block_lengths: Sequence[int], size: int) -> list[int]:
    """How many shingles :func:`block_shingle_hashes` makes from each block.

    >>> shingles_per_block([5, 2, 0], 3)
    [3, 1, 0]
    """
    return [max(length - size + 1, 1) if length else 0 for length in block_lengths]


def _shingle_starts(
    lengths: npt.NDArray[np.intp], size: int
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """First token of each shingle, and its number of tokens (< size only for short blocks)."""
    ends = np.cumsum(lengths)
    block_start = np.repeat(ends - lengths, lengths)
    position = np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.intp)
    spans = np.minimum(np.repeat(ends, lengths) - position, size)
    keep = (spans == size) | ((position == block_start) & (spans < size))
    return position[keep], spans[keep]
