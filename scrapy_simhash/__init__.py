"""scrapy-simhash: drop near-duplicate pages from Scrapy crawls.

SimHash fingerprints (Charikar 2002) of each page's main text, searched exactly within
Hamming distance k with the permutation-table index of Manku, Jain & Das Sarma
("Detecting Near-Duplicates for Web Crawling", WWW 2007).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .core.fingerprint import from_hex, hamming_distance, simhash, to_hex
from .core.fingerprinter import Fingerprinter, FingerprintOptions, FingerprintResult, main_text
from .index import (
    IndexFormatError,
    IndexUnavailableError,
    Match,
    MemoryIndex,
    SimhashIndex,
    SimhashIndexError,
    open_index,
)

if TYPE_CHECKING:
    from .addon import Addon
    from .config import SimhashSettings
    from .exceptions import NearDuplicateItem, NearDuplicatePage
    from .middlewares import SimhashMiddleware
    from .pipelines import SimhashPipeline
    from .spidermiddlewares import SimhashSpiderMiddleware

__version__ = "0.1.0"

# The Scrapy components load on first use, so the core, the index and the CLI
# import without Scrapy (``from scrapy_simhash import SimhashMiddleware`` still works).
_SCRAPY_NAMES = {
    "Addon": ".addon",
    "NearDuplicateItem": ".exceptions",
    "NearDuplicatePage": ".exceptions",
    "SimhashMiddleware": ".middlewares",
    "SimhashPipeline": ".pipelines",
    "SimhashSettings": ".config",
    "SimhashSpiderMiddleware": ".spidermiddlewares",
}


def __getattr__(name: str) -> Any:
    if name not in _SCRAPY_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_SCRAPY_NAMES[name], __name__), name)


__all__ = [
    "Addon",
    "FingerprintOptions",
    "FingerprintResult",
    "Fingerprinter",
    "IndexFormatError",
    "IndexUnavailableError",
    "Match",
    "MemoryIndex",
    "NearDuplicateItem",
    "NearDuplicatePage",
    "SimhashIndex",
    "SimhashIndexError",
    "SimhashMiddleware",
    "SimhashPipeline",
    "SimhashSettings",
    "SimhashSpiderMiddleware",
    "from_hex",
    "hamming_distance",
    "main_text",
    "open_index",
    "simhash",
    "to_hex",
]
