"""64-bit SimHash (Charikar, STOC 2002) and helpers for 64-bit fingerprints.

Each feature is a 64-bit hash with a weight. Bit ``i`` of the fingerprint is 1 when
the weights of the features whose bit ``i`` is 1 outweigh those whose bit ``i`` is 0.
Similar feature sets give fingerprints that differ in few bits, so near-duplicate
detection becomes a Hamming-distance search (see :mod:`scrapy_simhash.index`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

try:
    from . import _features  # the C votes, built at install time when a C compiler is there
except ImportError:  # no compiler: NumPy, with the same results
    _features = None  # type: ignore[assignment]

#: Fingerprint width: Manku, Jain & Das Sarma (WWW 2007) use f = 64 bits.
FINGERPRINT_BITS = 64
_MASK = (1 << FINGERPRINT_BITS) - 1

# Bit i of a little-endian uint64 is bit (i % 8) of byte (i // 8); unpacking each
# byte little-bit-first gives column i == bit i.
_BIT_ORDER = "little"


def simhash(hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.floating]) -> int:
    """Return the SimHash of weighted 64-bit feature hashes.

    >>> import numpy as np
    >>> h = np.array([0b1011, 0b0011], dtype=np.uint64)
    >>> simhash(h, np.array([1.0, 3.0]))
    3
    >>> simhash(h, np.array([3.0, 1.0]))
    11
    """
    return simhash_margins(hashes, weights)[0]


def simhash_margins(
    hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.floating]
) -> tuple[int, npt.NDArray[np.float64]]:
    """The SimHash and, per bit, how firmly it was decided (its vote over the total weight).

    A bit whose margin is near 0 flips under a small edit of the page; see
    :func:`weakest_bits`.

    >>> import numpy as np
    >>> fingerprint, margins = simhash_margins(np.array([0b01, 0b11], dtype=np.uint64), np.array([3.0, 1.0]))
    >>> fingerprint, margins[:3].tolist()
    (1, [1.0, -0.5, -1.0])
    """
    if len(hashes) != len(weights):
        raise ValueError(f"{len(hashes)} hashes but {len(weights)} weights")
    if _features is not None:
        # None when a weight is not a multiple of 1/1024: sums of other floats depend on the
        # order they are added in, so NumPy's own order decides.
        found = _features.simhash_votes(
            np.ascontiguousarray(hashes, dtype=np.uint64), np.ascontiguousarray(weights, dtype=np.float64)
        )
        if found is not None:
            return found[0], np.frombuffer(found[1], dtype=np.float64)
    return _numpy_margins(hashes, weights)


def _numpy_margins(
    hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.floating]
) -> tuple[int, npt.NDArray[np.float64]]:
    """:func:`simhash_margins` in NumPy (when the C votes were not built, or cannot be exact)."""
    # One flat unpack then a reshape: ~3x faster than unpacking along axis 1.
    bits = np.unpackbits(
        np.ascontiguousarray(hashes, dtype="<u8").view(np.uint8), bitorder=_BIT_ORDER
    ).reshape(-1, FINGERPRINT_BITS)
    # sum over features of w * (+1 if bit else -1) == 2 * (w @ bits) - sum(w)
    w = np.asarray(weights, dtype=np.float64)
    total = w.sum()
    # einsum, not `w @ bits`: BLAS would wake its threads for this small product, and
    # they spin on the other cores after it (~0.8 ms of CPU a page on 2 cores).
    votes = 2.0 * np.einsum("i,ij->j", w, bits) - total
    packed = np.packbits(votes > 0, bitorder=_BIT_ORDER)
    return int(packed.view("<u8")[0]), votes / (total or 1.0)


def weakest_bits(margins: npt.NDArray[np.floating], count: int) -> int:
    """Bit mask of the *count* bits with the smallest absolute margin (ties: lower bit),
    at most a quarter of them (rounded up) in each 16-bit quarter of the fingerprint.

    These are the bits most likely to differ between near-duplicates, which an index
    query may then ignore (the ``wildcard`` of :meth:`SimhashIndex.query`). Why the
    quarters: for k = 3 the index's tables are keyed on them (Manku et al.'s four
    16-bit blocks), and a query visits ``2**w`` buckets of a table with w wildcard bits
    in its key. Spread so, 14 bits cost 48-52 bucket visits; left where they fall,
    about 90 on average, and detection measured the same (README, "Choosing k").

    >>> import numpy as np
    >>> margins = np.ones(64); margins[[3, 60]] = [0.01, -0.02]
    >>> weakest_bits(margins, 2) == (1 << 3) | (1 << 60)
    True
    >>> margins = np.arange(64.0)  # the weakest bits all in the first quarter
    >>> bin(weakest_bits(margins, 8)).count("1"), weakest_bits(margins, 8) & 0xFFFF
    (8, 3)
    """
    if not 0 <= count <= FINGERPRINT_BITS:
        raise ValueError(f"count must be between 0 and {FINGERPRINT_BITS}, not {count}")
    if _features is not None and isinstance(margins, np.ndarray) and margins.dtype == np.float64:
        # The same mask (tests/test_features_c.py), without NumPy's argsort and a Python loop.
        return int(_features.weakest_bits(np.ascontiguousarray(margins), count))
    return _weakest_bits_in_python(margins, count)


def _weakest_bits_in_python(margins: npt.NDArray[np.floating], count: int) -> int:
    """:func:`weakest_bits` in Python: the specification of its C path."""
    per_quarter = -(-count // 4)
    taken = [0, 0, 0, 0]
    mask = 0
    for bit in np.argsort(np.abs(margins), kind="stable").tolist():
        if count == 0:
            break
        if taken[bit >> 4] < per_quarter:
            taken[bit >> 4] += 1
            mask |= 1 << bit
            count -= 1
    return mask


def hamming_distance(a: int, b: int, ignoring: int = 0) -> int:
    """Number of bits in which two fingerprints differ, outside the bits of *ignoring*
    (a wildcard mask: how a check counts, see :func:`weakest_bits`).

    >>> hamming_distance(0b1011, 0b0010), hamming_distance(0b1011, 0b0010, ignoring=0b1000)
    (2, 1)
    >>> hamming_distance(-1, 0)
    Traceback (most recent call last):
    ...
    ValueError: not a 64-bit fingerprint: -1
    """
    return ((check_fingerprint(a) ^ check_fingerprint(b)) & ~ignoring).bit_count()


def to_hex(fingerprint: int) -> str:
    """A fingerprint as 16 lower-case hex digits.

    >>> to_hex(255)
    '00000000000000ff'
    """
    return f"{check_fingerprint(fingerprint):016x}"  # (masked, 2**64 was written as 0)


def from_hex(text: str) -> int:
    """Parse a fingerprint written by :func:`to_hex` (a ``0x`` prefix is allowed).

    >>> from_hex('00000000000000ff'), from_hex('0xFF')
    (255, 255)
    """
    value = int(text, 16)
    if not 0 <= value <= _MASK:
        raise ValueError(f"not a 64-bit fingerprint: {text!r}")
    return value


def check_fingerprint(value: int) -> int:
    """Return *value* if it is a valid 64-bit fingerprint, else raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"a fingerprint is an int, not {type(value).__name__}: {value!r}")
    value = int(value)
    if not 0 <= value <= _MASK:
        raise ValueError(f"not a 64-bit fingerprint: {value!r}")
    return value
