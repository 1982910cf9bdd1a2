"""The C attribute verdict (extract_c/names.c) against names.attributes_say_boilerplate, its oracle."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator

import lxml.html
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import CORPUS, needs_corpus
from scrapy_simhash.core import content, names
from scrapy_simhash.core.names import (
    BY_COMPOUND,
    BY_LINK_NAME,
    BY_NAME,
    BY_ROLE,
    HEADER_ONLY,
    MAIN_BY_ROLE,
    NOT_BOILERPLATE,
)

BUILT = content._extract
needs_c = pytest.mark.skipif(
    BUILT is None, reason="scrapy_simhash.core._extract was not built: no C compiler at install"
)
Pairs = tuple[tuple[str, str], ...]


def assert_same_verdict(pairs: Pairs) -> None:
    assert BUILT.attribute_verdict(pairs) == names.attributes_say_boilerplate(pairs), pairs


@needs_c
@pytest.mark.parametrize(("pairs", "verdict"), [
    ((), NOT_BOILERPLATE),
    ((("class", "site-footer"),), BY_NAME),
    ((("class", "siteFooter"), ("href", "/")), BY_NAME),  # a case change cuts words
    ((("class", "footer2col"),), BY_NAME),  # so do digits
    ((("id", "domains"),), NOT_BOILERPLATE),  # whole words only
    ((("class", "sphinxsidebar"),), BY_COMPOUND),
    ((("id", "tocframe"),), BY_COMPOUND),
    ((("class", "tocframe"),), NOT_BOILERPLATE),  # "toc" is an id's part only
    ((("class", "post-header"),), NOT_BOILERPLATE),  # it also says it is the content
    ((("class", "mainNav"),), NOT_BOILERPLATE),
    ((("id", "s-meta-options"),), NOT_BOILERPLATE),  # "meta" is a class's word only
    ((("class", "sidebar"), ("class", "main")), NOT_BOILERPLATE),  # the last one, as dict() keeps it
    ((("role", "navigation"),), BY_ROLE),
    ((("role", "Navigation"),), NOT_BOILERPLATE),
    ((("role", "main"), ("class", "sidebar")), MAIN_BY_ROLE),
    ((("{http://www.w3.org/1999/xhtml}role", "navigation"),), NOT_BOILERPLATE),
    ((("hidden", ""),), BY_ROLE),
    ((("aria-hidden", "true"),), BY_ROLE),
    ((("aria-hidden", "True"),), NOT_BOILERPLATE),
    ((("style", "color: red; DISPLAY :\tNone"),), BY_ROLE),
    ((("style", "visibility:\u3000hidden"),), BY_ROLE),  # \s: any Unicode space
    ((("style", "display: block; display-none"),), NOT_BOILERPLATE),
    ((("style", "d\u0131splay: none"),), BY_ROLE),  # a dotless i: IGNORECASE matches it to "i"
    ((("class", "Straße-footer"),), BY_NAME),
    ((("class", "\u01c4Footer"),), BY_COMPOUND),  # no ASCII case change: "ǆfooter"
    ((("class", "ad²"),), NOT_BOILERPLATE),  # "²" is no \d: one word
    ((("class", "ad٣"),), BY_NAME),  # "٣" is
    ((("class", "related-links"),), BY_LINK_NAME),  # a box named for its links only
    ((("class", "Tags shareBar"),), BY_LINK_NAME),
    ((("class", "tags sidebar"),), BY_NAME),  # also named for the page's frame
    ((("class", "tags relatedmenu"),), BY_NAME),  # ...even in a compound
    ((("class", "tags"), ("id", "comments")), BY_NAME),  # ...or by its id
    ((("class", "related"), ("id", "related")), BY_LINK_NAME),  # (not an id's word)
    ((("class", "functionHeader"),), BY_NAME | HEADER_ONLY),  # a header's name only
    ((("class", "panelheader card"),), BY_COMPOUND | HEADER_ONLY),
    ((("class", "header"), ("id", "header")), BY_NAME),  # also by its id
    ((("class", "header nav"),), BY_NAME),  # also for another part of the frame
])  # fmt: skip
def test_verdicts(pairs: Pairs, verdict: int) -> None:
    assert BUILT.attribute_verdict(pairs) == names.attributes_say_boilerplate(pairs) == verdict


# ---- Generated attribute sets --------------------------------------------------------

_ROLES, _STYLES, *_VOCABULARIES, _LINK_BOX_WORDS, _HEADER_PARTS = names.RULES
_WORDS = sorted({word for words, parts in _VOCABULARIES for word in (*words, *parts)} | _LINK_BOX_WORDS
                | set(_HEADER_PARTS))
_LETTERS = "ßİıǄǅǆςΣΩжЖ中ſKﬁé\u0301"  # special cases of lower(), non-ASCII letters, a mark
_PIECES = st.one_of(
    st.sampled_from(_WORDS),
    st.sampled_from(_WORDS).map(str.upper),
    st.sampled_from(_WORDS).map(str.title),
    st.sampled_from(["-", "_", " ", "  ", "\t", ".", "2", "٣", "²", "½", "x", "X", "toc", "wrapper", "domain"]),
    st.text(alphabet=_LETTERS, min_size=1, max_size=3),
)
_NAMES = st.lists(_PIECES, max_size=6).map("".join)
_STYLE_PIECES = st.one_of(
    st.sampled_from([name for style in _STYLES for name in style]),
    st.sampled_from(["DiSpLaY", "NONE", "Hidden", "d\u0131splay", "VİSİBİLİTY", "diſplay", "block", "color", "red"]),
    st.sampled_from([" ", "", "\t", "\n", "\xa0", "\u3000", ":", ":", ";", "=", "-", "x"]),
)
_STYLES_TEXT = st.lists(_STYLE_PIECES, max_size=8).map("".join)
_PAIRS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["class", "id"]), _NAMES),
        st.tuples(st.just("style"), _STYLES_TEXT),
        st.tuples(st.just("role"), st.sampled_from([*sorted(_ROLES), "main", "Main", "navigation ", "", "article"])),
        st.tuples(st.sampled_from(["hidden", "aria-hidden", "data-x", "CLASS", "{urn:x}id"]),
                  st.sampled_from(["", "true", "True", "false", "footer"])),
    ),
    max_size=5,
).map(tuple)


@needs_c
@settings(max_examples=3000, deadline=None)
@given(_PAIRS)
def test_generated_attributes_get_the_python_verdict(pairs: Pairs) -> None:
    assert_same_verdict(pairs)


@needs_c
@pytest.mark.slow
def test_every_character_is_cut_and_matched_as_python_does() -> None:
    """Each code point (past the BMP, one in 7) inside names and styles."""
    for code in [*range(1, 0x10000), *range(0x10000, 0x110000, 7)]:
        if 0xD800 <= code < 0xE000:
            continue  # (lone surrogates: never in a parsed page)
        c = chr(code)
        for pairs in ((("class", c + "ad"),), (("class", "navi" + c + "Bar"),), (("id", "x" + c + "footer" + c),),
                      (("style", "display" + c + ":none"),), (("style", "di" + c + "play:none"),)):
            assert_same_verdict(pairs)


def _corpus_attributes() -> Iterator[Pairs]:
    with gzip.open(CORPUS / "pages.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            root = lxml.html.fromstring(json.loads(line)["html"].encode())
            yield from (tuple(element.items()) for element in root.iter() if isinstance(element.tag, str))


@needs_c
@needs_corpus
@pytest.mark.slow
def test_every_attribute_set_of_the_dev_corpus_gets_the_python_verdict() -> None:
    differing = [pairs for pairs in set(_corpus_attributes())
                 if BUILT.attribute_verdict(pairs) != names.attributes_say_boilerplate(pairs)]
    assert differing == []


# ---- When the Python function runs, and errors ---------------------------------------


@needs_c
def test_python_is_asked_only_about_styles_with_letters_ignorecase_maps_to_ascii(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[Pairs] = []
    verdict = names.attributes_say_boilerplate

    def spy(pairs: Pairs) -> int:
        asked.append(pairs)
        return verdict(pairs)

    monkeypatch.setattr(names, "attributes_say_boilerplate", spy)
    content._configure_c_code()
    try:
        for style in ("display:none", "display:\xa0block; 中文", "displäy:none", "dısplay: block", "diſplay:none"):
            BUILT.attribute_verdict((("class", "İnav Straße"), ("style", style)))
    finally:
        monkeypatch.undo()
        content._configure_c_code()
    assert asked == [(("class", "İnav Straße"), ("style", "dısplay: block")),
                     (("class", "İnav Straße"), ("style", "diſplay:none"))]


@needs_c
@pytest.mark.parametrize(("pairs", "error"), [
    ((("class", "a\0b"),), ValueError),  # (lxml never gives one)
    ((("class",),), TypeError),
    ((["class", "x"],), TypeError),
    ((("class", b"x"),), TypeError),
    (7, TypeError),
])  # fmt: skip
def test_refuses_what_is_not_attributes(pairs: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        BUILT.attribute_verdict(pairs)
