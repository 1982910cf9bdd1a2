"""normalize_blocks a character at a time (extract_c/fold.c, core/folding.py) against unicodedata's
NFKC and str.casefold over the whole text, the slow path it stands for."""

from __future__ import annotations

import gzip
import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import CORPUS, needs_corpus
from scrapy_simhash.core import content, folding, text
from scrapy_simhash.core.text import BLOCK_BOUNDARY

BUILT = text._extract
needs_c = pytest.mark.skipif(BUILT is None, reason="scrapy_simhash.core._extract was not built: no C compiler")


def slow(blocks: list[str], with_letter: bool = True) -> list[str]:
    """normalize_blocks without the fast path: NFKC and case folding over the joined text."""
    joined = text._nfkc(BLOCK_BOUNDARY.join(blocks)).casefold()
    normalised = (" ".join(block.split()) for block in joined.split(BLOCK_BOUNDARY))
    return [block for block in normalised if block and (not with_letter or text._HAS_LETTER.search(block))]


def assert_folds_as_slow(blocks: list[str], with_letter: bool = True) -> bool:
    """The fast path gives the slow path's blocks, or None; and normalize_blocks the slow
    path's blocks always. Whether the fast path took it."""
    folded = BUILT.fold_blocks(blocks, BLOCK_BOUNDARY, with_letter)
    expected = slow(blocks, with_letter)
    assert folded is None or folded == expected, blocks
    assert text.normalize_blocks(blocks, with_letter=with_letter) == expected, blocks
    return folded is not None


def test_what_may_change_a_neighbour_is_never_folded_alone() -> None:
    """The second character of every NFKC composition, and every character NFKC reorders,
    is OTHER: a text holding one goes the slow way (this is what makes the fast path exact)."""
    for code in range(0x80, 0x110000):
        decomposition = unicodedata.decomposition(chr(code))
        if decomposition and not decomposition.startswith("<") and len(decomposition.split()) == 2:
            second = int(decomposition.split()[1], 16)
            assert second >= 0x80 and folding.fold_class(second) == folding.OTHER, hex(code)
        if unicodedata.combining(chr(code)):
            assert folding.fold_class(code) == folding.OTHER, hex(code)


@pytest.mark.parametrize(("character", "folded"), [
    ("é", folding.KEEP), ("中", folding.KEEP), ("’", folding.KEEP), ("\xa0", folding.SPACE),
    ("\u3000", folding.SPACE), ("\u0301", folding.OTHER), ("\u1161", folding.OTHER),  # a jamo vowel
    ("\u3131", folding.OTHER),  # a compatibility jamo: NFKC makes it a jamo, which composes
    ("Ω", "ω"), ("\u2126", folding.OTHER),  # the ohm sign: NFKC gives Ω, past ASCII
    ("…", "..."), ("™", "tm"), ("，", ","), ("Ｗ", "w"), ("ß", "ss"), ("İ", "i\u0307"),
])
def test_fold_class(character: str, folded: int | str) -> None:
    assert folding.fold_class(ord(character)) == folded


@needs_c
def test_every_character_folds_as_the_slow_path() -> None:
    taken = 0
    for code in range(0x80, 0x10000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        character = chr(code)
        taken += assert_folds_as_slow(["A" + character + "b", character + " Z" + character])
        assert_folds_as_slow([character, "x" + character], with_letter=False)
    assert taken > 50_000  # (most characters fold alone)


@needs_c
@needs_corpus
def test_the_dev_pages_fold_as_the_slow_path() -> None:
    with gzip.open(CORPUS / "pages.jsonl.gz", "rt", encoding="utf-8") as lines:
        pages = [json.loads(line) for line in lines]
    taken = 0
    for page in pages:
        root = text.parse_html(page["html"].encode("utf-8"), strip_invisible=False)
        taken += assert_folds_as_slow(content.extract_main_blocks(root, page["url"]))
    assert taken >= 0.95 * len(pages)  # (2,594 of 2,598 when written)


_CHARACTERS = st.one_of(
    st.sampled_from("aZ 9_\t\n.,-"),
    st.sampled_from("éÉßİıΣσςǄǅ中文，。：“”’…™\xa0\u2028\u3000Ｗ！ﬁ\u0301\u0308\u1100\u1161\u11a8\u3131가\ue000"),
    st.characters(codec="utf-8", exclude_categories=("Cs",)),
)


@needs_c
@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(_CHARACTERS, max_size=30), max_size=8), st.booleans())
def test_generated_blocks_fold_as_the_slow_path(blocks: list[str], with_letter: bool) -> None:
    assert_folds_as_slow(blocks, with_letter)


@needs_c
def test_bad_blocks_are_refused() -> None:
    with pytest.raises(TypeError):
        BUILT.fold_blocks(["ok", b"bytes"], BLOCK_BOUNDARY, True)
    with pytest.raises(TypeError):
        BUILT.fold_blocks(("a tuple",), BLOCK_BOUNDARY, True)
    # normalize_blocks takes any iterable of blocks: what is not a list goes the slow way, whole.
    assert text.normalize_blocks(block for block in ["Ｈｅｌｌｏ", "ÉTÉ"]) == ["hello", "été"]
    assert text.normalize_blocks(("Ｈｅｌｌｏ", "ÉTÉ")) == ["hello", "été"]
