"""What changes a page's fingerprint: :class:`FingerprintOptions` and the algorithm's version.

A stored index keeps :meth:`FingerprintOptions.signature` and refuses fingerprints of
another kind (other options, another :data:`ALGORITHM_VERSION`).
"""

from __future__ import annotations

import hashlib
import numbers
from dataclasses import asdict, dataclass, field
from typing import Final, Literal

from . import features, segment

Segmenter = Literal["char", "auto", "jieba", "rjieba"]
Weighting = Literal["tf", "log", "binary"]

#: The version of what a page's fingerprint and sketch are (extraction, tokens, features,
#: SimHash, sketch): part of :meth:`FingerprintOptions.signature`, so a stored index made
#: by another version is refused. tests/test_golden.py holds the fingerprints of fixed
#: pages under it and fails when one changes and this does not.
ALGORITHM_VERSION: Final = 19


@dataclass(frozen=True, slots=True)
class FingerprintOptions:
    """Everything that changes which fingerprint a page gets.

    Fingerprints made with different options are not comparable; :meth:`signature`
    names the options so a stored index can refuse fingerprints of another kind.
    The defaults are the values tuned on the dev corpus (see the README, "How well
    does it work"): trigrams of tokens (words; each Han character is a token) weighted
    by term frequency capped at 8, main content only, pages under 10 tokens not
    fingerprinted.
    """

    shingle_size: int = 3
    weighting: Weighting = "tf"
    #: The largest weight of a shingle: the words a page is about ("software package"
    #: all over a manual) must not outvote the rest, or two chapters of one manual
    #: look alike.
    max_weight: float = 8.0
    min_tokens: int = 10
    hash_key: bytes = field(default=b"", repr=False)
    #: "char": every Han character is a token (measured better than words, and faster:
    #: zh P / R 0.993 / 0.960 as trigrams against 0.992 / 0.942 for word bigrams, README "Features");
    #: "auto"/"rjieba"/"jieba": dictionary words.
    segmenter: Segmenter = "char"
    main_content: bool = True
    #: Leave out the text blocks a site repeats on most of its pages, as learned from the
    #: pages fingerprinted so far: a page's fingerprint then depends on which pages came
    #: before it (in this process), so it is off by default. On the dev corpus with one
    #: host per site it changed 36 of 2,598 fingerprints, and crawl-order recall by one pair.
    template_suppression: bool = False
    #: How many of a page's least-confident bits its index query may ignore (see
    #: :attr:`FingerprintResult.wildcard`); it changes queries, not fingerprints.
    wildcard_bits: int = 14

    def __post_init__(self) -> None:
        self._check_types()
        if not 1 <= self.shingle_size <= 16:
            raise ValueError(f"shingle_size must be between 1 and 16, not {self.shingle_size}")
        if self.weighting not in features.WEIGHTINGS:
            raise ValueError(f"weighting must be one of {features.WEIGHTINGS}, not {self.weighting!r}")
        if self.min_tokens < 1:
            raise ValueError(f"min_tokens must be at least 1, not {self.min_tokens}")
        if self.segmenter not in segment.SEGMENTERS:
            raise ValueError(f"segmenter must be one of {segment.SEGMENTERS}, not {self.segmenter!r}")
        # A float, so that 8 and 8.0 sign alike (a stored index compares signatures).
        if isinstance(self.max_weight, bool) or not isinstance(self.max_weight, (int, float)):
            raise ValueError(f"max_weight must be a number, not {self.max_weight!r}")
        try:
            object.__setattr__(self, "max_weight", float(self.max_weight))
        except OverflowError:
            raise ValueError(f"max_weight is too large: {self.max_weight}") from None
        if not self.max_weight > 0:  # also refuses nan
            raise ValueError(f"max_weight must be positive, not {self.max_weight}")
        if not 0 <= self.wildcard_bits <= 32:
            raise ValueError(f"wildcard_bits must be between 0 and 32, not {self.wildcard_bits}")
        if len(self.hash_key) > hashlib.blake2b.MAX_KEY_SIZE:  # (the feature hashes are keyed BLAKE2b)
            raise ValueError(f"hash_key must be at most 64 bytes, not {len(self.hash_key)}")

    def _check_types(self) -> None:
        # Before the range checks, which would fail on a str with Python's own message.
        for name, kind in _FIELD_TYPES.items():
            value = getattr(self, name)
            if kind is int and isinstance(value, numbers.Integral) and not isinstance(value, bool):
                object.__setattr__(self, name, int(value))  # (a NumPy int: signed as the int it is)
            elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                # (the value not shown: it may be the hash key)
                raise TypeError(f"{name} must be {kind.__name__}, not {type(value).__name__}")

    def signature(self) -> str:
        """A stable string naming the options; a hash key by a short digest, never itself.

        Fingerprints made with two different keys are unrelated, so the digest tells
        their stores apart.
        """
        values = asdict(self)
        values["hash_key"] = f"keyed:{_key_digest(self.hash_key)}" if self.hash_key else "unkeyed"
        # jieba and rjieba (and so "auto") cut words identically; "char" does not.
        values["segmenter"] = "char" if self.segmenter == "char" else "words"
        del values["wildcard_bits"]  # query-side only: fingerprints are the same
        return f"simhash-v{ALGORITHM_VERSION};" + ";".join(f"{k}={v}" for k, v in sorted(values.items()))


#: The fields whose range or use alone would not catch a value of another type.
_FIELD_TYPES: dict[str, type] = {
    "shingle_size": int, "min_tokens": int, "wildcard_bits": int, "hash_key": bytes,
    "main_content": bool, "template_suppression": bool, "weighting": str, "segmenter": str,
}


def _key_digest(key: bytes) -> str:
    # 48 bits: enough to tell keys apart, too few to stand for the key.
    return hashlib.blake2b(key, digest_size=6, person=b"simhash-sig").hexdigest()
