"""Text -> tokens (jieba for Han script, words otherwise) -> weighted shingle hashes."""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from functools import cached_property
from typing import Callable

import numpy as np

from .fingerprint import simhash

# Han ideographs (CJK Unified + Extension A + Compatibility) form runs given to jieba.
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"\w+")
_TOKEN_CACHE_LIMIT = 500_000


def _load_segmenter(name: str) -> Callable[[str], list[str]]:
    if name in ("auto", "rjieba"):
        try:
            import rjieba
        except ImportError:
            if name == "rjieba":
                raise
        else:
            return rjieba.cut
    import jieba

    jieba.setLogLevel(logging.WARNING)  # it logs the dictionary load at DEBUG/INFO
    return jieba.lcut


class Featurizer:
    """Tokenize, shingle, weight and hash (baseline)."""

    def __init__(self, shingle_size: int = 3, hash_key: bytes = b"", segmenter: str = "auto") -> None:
        self.shingle_size = shingle_size
        self._hash_key = hash_key
        self._segmenter_name = segmenter
        self._token_hashes: dict[str, int] = {}

    @cached_property
    def _segment(self) -> Callable[[str], list[str]]:
        return _load_segmenter(self._segmenter_name)

    def tokens(self, text: str) -> list[str]:
        out: list[str] = []
        position = 0
        for run in _HAN_RUN.finditer(text):
            out += _WORD.findall(text, position, run.start())
            out += self._segment(run.group())
            position = run.end()
        out += _WORD.findall(text, position)
        return out

    def _hash_token(self, token: str) -> int:
        value = self._token_hashes.get(token)
        if value is None:
            if len(self._token_hashes) >= _TOKEN_CACHE_LIMIT:
                self._token_hashes.clear()
            digest = hashlib.blake2b(token.encode(), digest_size=8, key=self._hash_key).digest()
            value = self._token_hashes[token] = int.from_bytes(digest, "little")
        return value

    def fingerprint(self, tokens: list[str]) -> int:
        size = min(self.shingle_size, len(tokens))
        shingles = Counter(tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1))
        hashes = np.empty(len(shingles), dtype=np.uint64)
        for row, shingle in enumerate(shingles):
            value = 0
            for token in shingle:
                value = (value * 0x9E3779B97F4A7C15 + self._hash_token(token)) & 0xFFFFFFFFFFFFFFFF
            hashes[row] = value
        weights = 1.0 + np.log(np.fromiter(shingles.values(), dtype=np.float64))
        return simhash(hashes, weights)
