"""scrapy-simhash: drop near-duplicate pages from Scrapy crawls.

SimHash fingerprints (Charikar 2002) of each page's main text, searched exactly within
Hamming distance k with the permutation-table index of Manku, Jain & Das Sarma
("Detecting Near-Duplicates for Web Crawling", WWW 2007).
"""

from __future__ import annotations

from .core.fingerprint import from_hex, hamming_distance, simhash, to_hex
from .core.fingerprinter import Fingerprinter, FingerprintOptions, FingerprintResult
from .index import (
    IndexFormatError,
    IndexUnavailableError,
    Match,
    MemoryIndex,
    SimhashIndex,
    SimhashIndexError,
    open_index,
)

__version__ = "0.1.0"

__all__ = [
    "FingerprintOptions",
    "FingerprintResult",
    "Fingerprinter",
    "IndexFormatError",
    "IndexUnavailableError",
    "Match",
    "MemoryIndex",
    "SimhashIndex",
    "SimhashIndexError",
    "from_hex",
    "hamming_distance",
    "open_index",
    "simhash",
    "to_hex",
]
