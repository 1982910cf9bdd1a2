"""What each character becomes in :func:`.text.normalize_blocks`' fast path (``extract_c/fold.c``).

Normalisation is NFKC, then case folding, of a page's text. When no character of the
text changes its neighbours under NFKC, that is the NFKC and the fold of each character
on its own, which the C code computes a character at a time (twice as fast as
``unicodedata.normalize`` and ``str.casefold`` over the page, which copy it twice). Only
two kinds of characters change their neighbours: the second ones of NFKC's compositions
(every one is a combining mark or a Hangul jamo: ``tests/test_fold_c.py`` checks it on
Unicode's table) and those that NFKC reorders (combining marks, by their class). Those
are :data:`OTHER`, and so is any character that NFKC maps to text past ASCII, whose
result could compose with a neighbour (compatibility jamo): a page holding one is
normalised the slow way.
"""

from __future__ import annotations

import unicodedata
from typing import Final

#: Its own NFKC and case fold (most letters and punctuation past ASCII, Han characters).
KEEP: Final = 1
#: A space (the blocks' spaces are collapsed into one).
SPACE: Final = 2
#: Not folded a character at a time: the page's text goes through ``unicodedata``.
OTHER: Final = 3
#: Hangul jamo: NFKC composes a leading consonant, a vowel and a trailing consonant.
_JAMO = ((0x1100, 0x11FF), (0xA960, 0xA97F), (0xD7B0, 0xD7FF))


def fold_class(code: int) -> int | str:
    """What the character *code* (past ASCII) becomes in a page's normalised text:
    :data:`KEEP`, :data:`SPACE`, :data:`OTHER`, or the text it becomes (its fold, or the
    fold of its NFKC when that is ASCII).

    >>> fold_class(ord("é")) == KEEP, fold_class(0xA0) == SPACE, fold_class(0x301) == OTHER
    (True, True, True)
    >>> fold_class(ord("É")), fold_class(ord("…")), fold_class(ord("Ａ")), fold_class(ord("ß"))
    ('é', '...', 'a', 'ss')
    """
    character = chr(code)
    nfkc = unicodedata.normalize("NFKC", character)
    if character.isspace():
        return SPACE if nfkc.isspace() else OTHER
    if unicodedata.category(character)[0] == "M" or unicodedata.combining(character) or _is_jamo(code):
        return OTHER  # composed with, or reordered against, a neighbour
    if nfkc == character:
        folded = character.casefold()
        return KEEP if folded == character else folded
    folded = nfkc.casefold()
    return folded if folded.isascii() else OTHER


def _is_jamo(code: int) -> bool:
    return any(first <= code <= last for first, last in _JAMO)
