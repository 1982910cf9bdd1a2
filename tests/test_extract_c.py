"""The C extraction (scrapy_simhash.core._extract) against the Python code, its oracle."""

from __future__ import annotations

import gzip
import json
import re
import sys
from contextlib import AbstractContextManager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from c_modules import python_instead_of
from conftest import CORPUS, needs_corpus
from scrapy_simhash.core import boilerplate, content, templates, text

BUILT = content._extract
needs_c = pytest.mark.skipif(
    BUILT is None, reason="scrapy_simhash.core._extract was not built: no C compiler at install"
)


def python_extraction() -> AbstractContextManager[None]:
    """extract_main_blocks and normalize_blocks run the Python code inside the block."""
    return python_instead_of("extraction")


def c_extraction(root: etree._Element) -> list[str]:
    """The C extraction with what the Python code adds to it, never falling back."""
    return content.without_repeats(BUILT.main_blocks(root, *content.c_arguments(root, None)))


def both_ways(html: bytes | str, strip_invisible: bool = False) -> tuple[list[str], list[str]]:
    """The blocks from C (never falling back) and from Python, each on its own parse of *html*."""
    c_blocks = c_extraction(text.parse_html(html, strip_invisible=strip_invisible))
    with python_extraction():
        python_blocks = content.extract_main_blocks(text.parse_html(html, strip_invisible=strip_invisible))
    return c_blocks, python_blocks


# ---- Generated pages: every construct the algorithm treats apart -------------------

_WORDS = st.sampled_from(
    [
        "near", "duplicate", "pages", "the", "a", " ", "  ", "\n", "\t", "\xa0", "中文", "页面的", "。",
        "Copyright 2024 Example", "© Example", "（责任编辑：王伟）", "来源：新华社", "Posted by Ann", "[ 编辑: x ]",
        "\ue000", "\ue001", "\ue002", "x\ue001y\ue002z", "&amp;", "&lt;b&gt;", "&nbsp;", "é\u0301", "😀",
        "<!-- a comment -->", "<?pi x?>", "Site", "near duplicate", "near  duplicate ",
        "A paragraph of prose, long enough to count as one: sixty characters and more.",
        "2021-01-22 12:20", "Jul 16, 2025 00:35",  # a post's stamp (threads.has_stamp)
    ]
)  # fmt: skip
#: Titles whose parts (heading.title_parts) some generated texts show.
_TITLES = st.sampled_from(["", "near duplicate", "Site: near duplicate", "near duplicate | Site", "Site", "中文 — 页面的"])
_TEXTS = st.lists(_WORDS, max_size=6).map("".join)
_CLASSES = st.sampled_from(
    ["", "content", "sidebar", "nav", "ad", "post-body", "comments", "menu main", "row", "share-bar", "SideBar",
     "sphinxsidebar", "siteFooter", "howtogetheader", "domain", "posting", "section", "header", "headertitle",
     "title", "\u01c4Footer", "Straße-footer", "İnav", "related-links", "tags", "share sidebar",
     "post first", "post reply", " post", "functionHeader"]
)
_ATTRIBUTES = st.lists(
    st.one_of(
        _CLASSES.map(lambda names: f'class="{names}"'),
        st.sampled_from(["footer", "post", "s-meta", "par_id123", "main-content", "csrf-cookie-age",
                         "host-header-poisoning", "widgets"]).map(lambda name: f'id="{name}"'),
        st.sampled_from(['role="navigation"', 'role="main"', "hidden", 'aria-hidden="true"']),
        st.sampled_from(['style="display: none"', 'style="color: red"', 'data-x="1"', 'href="/a"',
                         'style="VISIBILITY :\u3000Hidden"', 'style="d\u0131splay:none"']),
    ),
    max_size=3,
).map(" ".join)
_CONTAINERS = st.sampled_from(
    [
        "div", "section", "article", "main", "nav", "header", "footer", "aside", "form", "ul", "ol", "li",
        "table", "tr", "td", "p", "pre", "blockquote", "h1", "h2", "h3", "h6", "span", "b", "a", "menu", "dialog",
        "script", "style", "noscript", "template", "button", "br", "hr", "custom-tag", "code", "tt", "tbody", "dl",
        "dt", "dd", "th",
    ]
)  # fmt: skip
#: Entries of lists (entries.text_list_entries): mostly links, text, or any element.
_LINK_ENTRY = _TEXTS.map(lambda words: f"<a href='/x'>{words or 'a link'}</a>")
_TEXT_ENTRY = _TEXTS.map(lambda words: f"{words}<a href='/y'>y</a> and some text that is not a link")
#: A table of contents' entries (entries.contents_links): section numbers, good and bad.
_NUMBERS = st.sampled_from(["1. ", "1.1. ", "2.3 ", " 4.2.1\t", "1.\xa0", "12..3 ", "1.a ", "7", "1.1.", "\xa0 3 ", "٣.١ "])
_NUMBERED_ENTRY = st.tuples(_NUMBERS, _TEXTS).map(lambda parts: f"<a href='/z'>{parts[0]}<b>{parts[1]}</b></a>")
_ENTRY_TAGS = {"ul": ("li",), "ol": ("li",), "table": ("tr",), "tbody": ("tr",), "dl": ("dt", "dd")}


def _element(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    def render(parts: tuple[str, str, list[str], str, str]) -> str:
        tag, attributes, inner, own_text, tail = parts
        return f"<{tag} {attributes}>{own_text}{''.join(inner)}</{tag}>{tail}"

    return st.one_of(
        st.tuples(_CONTAINERS, _ATTRIBUTES, st.lists(children, max_size=5), _TEXTS, _TEXTS).map(render),
        _list(children),
    )


def _list(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    def render(parts: tuple[str, list[str]]) -> str:
        tag, entries = parts
        inner = "".join(f"<{entry_tag}>{entry}</{entry_tag}>" for entry in entries for entry_tag in _ENTRY_TAGS[tag])
        return f"<{tag}>{inner}</{tag}>"

    entry = st.one_of(_LINK_ENTRY, _TEXT_ENTRY, _NUMBERED_ENTRY, children)
    return st.tuples(st.sampled_from(sorted(_ENTRY_TAGS)), st.lists(entry, min_size=2, max_size=7)).map(render)


_PAGES = st.tuples(_TITLES, st.recursive(_TEXTS, _element, max_leaves=40)).map(
    lambda page: f"<html><head><title>{page[0]}</title></head><body>{page[1]}</body></html>"
)


@needs_c
@pytest.mark.parametrize("section", [
    "<h3>Cookies</h3><p>{prose}</p>", "<a id='x'></a><span> </span><h3>Cookies</h3><p>{prose}</p>",
    "<p>{prose}</p><h3>Cookies</h3>", "<h3>Cookies</h3><p>Accept all</p>", "<h3>Cookies</h3><div><p>{prose}</p></div>",
    "<h6>Cookies</h6><p><a href='/p'>{prose}</a></p>", "<h2>Cookies</h2><!-- a comment --><p>{prose}</p>",
])  # fmt: skip
def test_sections_named_like_boilerplate_give_the_python_blocks(section: str) -> None:
    prose = "The age of the cookie, in seconds: long enough for a browser session and more."
    html = (f"<html><body><div id='csrf-cookie-age'>{section.format(prose=prose)}</div>"
            f"<p>{prose * 5}</p><div class='sidebar'>{prose}</div></body></html>")
    c_blocks, python_blocks = both_ways(html)
    assert c_blocks == python_blocks


@needs_c
@pytest.mark.parametrize("article", [
    "<h2>Chapter 7</h2><h1>Chapter 7</h1><p>Contents</p><dl><dt><a href='/a'>7.1. The Moment of Truth</a></dt>"
    "<dt><a href='/b'>7.2. Mounting volumes</a></dt></dl><p>（责任编辑：王伟）</p>",
    "<p>2023-06-28 21:04 来源：新华社 作者：王伟</p><h1><a href='/t'>Title</a></h1><p> Title </p>"
    "<ul><li><a href='/a'>first entry</a></li><li><a href='/b'>second entry</a></li></ul>",
    "<p>\ue001Title</p><p>Title\ue002</p><div><a href='/x'>a long link text, longer than the rest</a></div>",
    "<div><code>#include &lt;<a href='/h'>a.h</a>&gt;</code><br/>\n\ue001 <tt> x</tt></div><div><p>The rest, longer.</p>"
    "<p>And more text of prose than the code before it.</p><p>And a third paragraph.</p></div>",
    "<div><a href='/c'><code>code in a link</code></a> <var>v</var></div><div><p>The rest, longer than the code.</p>"
    "<p>And more text of prose than the code before it.</p><p>And a third paragraph.</p></div>",
    "<p>Copyright © 2024 Example</p><p>One</p><p>Two</p><div><a href='/x'>links</a> <a href='/y'>more links</a></div>",
    "<h1>A title</h1><p> <a name='top'></a> </p><h1>A title</h1><p>Text.</p><div><a href='/x'>a link, longer</a></div>",
    "<p><a name='top'></a></p><p>Title</p><p>\xa0</p><p>Title</p><div><a href='/x'>links</a></div><p>Text</p>",
])  # fmt: skip
def test_link_lists_weighed_without_credit_lines_and_a_repeated_title_give_the_python_blocks(article: str) -> None:
    for html in (f"<html><body><div>{article}</div></body></html>",
                 f"<html><body><div class='post'>{article}</div><div class='side'><a href='/n'>nav</a></div></body></html>"):
        c_blocks, python_blocks = both_ways(html)
        assert c_blocks == python_blocks


#: A heading in a container named boilerplate (heading.lost_by_name), as generated docs print it.
_HEADED_PAGES = st.tuples(
    _TITLES,
    st.sampled_from(["div", "section", "header", "p", "table"]),
    _ATTRIBUTES,
    st.sampled_from(["h1", "div", "span", "td", "a", "h2"]),
    st.sampled_from(["near duplicate", " near\xa0duplicate ", "Site", "<b>near</b> duplicate", "other",
                     "<a href='/'>Site</a>", " <a href='/'><b>Site</b></a> ", "<a href='/'>Site</a> x"]),
    st.recursive(_TEXTS, _element, max_leaves=12),
).map(lambda page: (
    f"<html><head><title>{page[0]}</title></head><body><{page[1]} {page[2]}><p>Menu <a href='/'>home</a></p>"
    f"<div class='headertitle'><{page[3]}>{page[4]}</{page[3]}></div></{page[1]}>"
    f"<div class='contents'>{page[5]}<p>{'A paragraph of prose, long enough to count as one. ' * 3}</p></div>"
    f"</body></html>"
))


#: A line of each way a credit line starts (boilerplate.CREDIT_STARTS), some in letters that
#: re's IGNORECASE folds to ASCII ones ('ı', 'İ', 'ſ', the Kelvin sign)...
_CREDIT_LINES = [
    "（责任编辑：王伟）", "免责声明：仅供参考", "版权声明：本文为原创", "版权所有 © 2024", "来源：新华社", "本文来源: 人民网",
    "文章来源：网络", "原标题：某某", "原文链接：http://x", "出处：某书", "转载：某站", "Copyright © 2024 Example",
    "© Example", "All Rights Reserved.", "Disclaimer: none", "This article was originally published at x.",
    "Originally published on x.", "Reposted from x.", "Republished with permission.", "Reprinted from x.",
    "[ 编辑: 王伟 ]", "作者: 李", "记者：张", "Posted by Ann", "Written by Ann", "2023-06-28 21:04 来源：新华社",
    "Thıs article was first published here.", "COPYRİGHT 2024 Example", "ALL RIGHTſ RESERVED", "(Posted by Ann)",
    "  \u3000 来源：新华社", "2023 年 6 月 28 日 作者：王伟", "202３-06-28 来源：新华社",
]  # fmt: skip
#: ...and lines that start alike but are not: the C code asks Python of the first ones only.
_NOT_CREDIT_LINES = [
    "This is not a credit line.", "Copyrighted works", "Posted byline", "2023 was a year.", "The end.", "reprinted",
    "Ｃopyright 2024", "来源不明的软件包", "12:30 fixed", "Ｋelvin", "\u212aelvin", "1.2.3 Notes", "Copyright law.",
]  # fmt: skip


def test_the_letters_past_ascii_that_re_folds_to_ascii_ones_are_all_known() -> None:
    """The C code takes only these for ASCII letters (boilerplate.CASE_FOLDS_TO_ASCII)."""
    folds = boilerplate.CASE_FOLDS_TO_ASCII
    known = dict(zip(folds[::2], folds[1::2]))
    letter = re.compile("[a-z]", re.IGNORECASE)
    assert {chr(code) for code in range(128, sys.maxunicode + 1) if letter.fullmatch(chr(code))} == set(known)
    assert all(re.fullmatch(ascii_letter, char, re.IGNORECASE) for char, ascii_letter in known.items())


@needs_c
@pytest.mark.parametrize(("line", "credit"), [(line, True) for line in _CREDIT_LINES]
                         + [(line, False) for line in _NOT_CREDIT_LINES])
def test_credit_lines_give_the_python_blocks(line: str, credit: bool) -> None:
    prose = "A paragraph of prose. " * 8
    html = f"<html><body><article><h1>Title</h1><p>{prose}</p><p>{line}</p></article></body></html>"
    c_blocks, python_blocks = both_ways(html)
    assert c_blocks == python_blocks
    assert content.is_credit_line(line) == credit
    assert any(line.strip() in block for block in c_blocks) != credit


@needs_c
@settings(max_examples=400, deadline=None)
@given(st.one_of(_PAGES, _HEADED_PAGES))
def test_generated_pages_give_the_python_blocks(page: str) -> None:
    c_blocks, python_blocks = both_ways(page)
    assert c_blocks == python_blocks


@needs_c
@settings(max_examples=100, deadline=None)
@given(_PAGES)
def test_generated_pages_give_the_same_blocks_stripped_or_not(page: str) -> None:
    assert both_ways(page, strip_invisible=True) == both_ways(page, strip_invisible=False)


@needs_c
@settings(max_examples=100, deadline=None)
@given(_PAGES)
def test_generated_pages_with_their_comments_give_the_python_blocks(page: str) -> None:
    parser = etree.HTMLParser()  # keeps comments and processing instructions, as parsel's does
    c_blocks = c_extraction(etree.fromstring(page, parser))
    with python_extraction():
        assert c_blocks == content.extract_main_blocks(etree.fromstring(page, parser))


# ---- Trees it does not model: the Python code runs ---------------------------------


@needs_c
def test_comments_are_left_out_as_parse_html_strips_them() -> None:
    parser = etree.HTMLParser()  # keeps comments and processing instructions, as parsel's does
    page = "<html><body><p>First paragraph<!-- a note --> of it.</p><?pi x?><p>Second one.</p></body></html>"
    assert BUILT.main_blocks(etree.fromstring(page, parser)) == ["First paragraph of it.", "Second one."]
    with python_extraction():
        assert content.extract_main_blocks(etree.fromstring(page, parser)) == ["First paragraph of it.", "Second one."]


@needs_c
def test_pages_past_65534_lines_fall_back_to_python() -> None:
    page = "<html><body>" + "\n" * 70_000 + "<div><p>Far down the page.</p></div></body></html>"
    with pytest.raises(BUILT.Unsupported):
        BUILT.main_blocks(text.parse_html(page))
    assert content.extract_main_blocks(text.parse_html(page)) == ["Far down the page."]


@needs_c
def test_rejects_what_is_not_an_lxml_element() -> None:
    with pytest.raises(TypeError, match="lxml element"):
        BUILT.main_blocks("<p>not parsed</p>")


@needs_c
def test_leaves_the_tree_as_it_was() -> None:
    page = (
        '<html><body><nav><a href="/">Home</a></nav><div class="content"><h1>Title</h1>'
        "<p>Text of the article, long enough to be the content.</p><script>x()</script></div></body></html>"
    )
    root = text.parse_html(page, strip_invisible=False)
    before = etree.tostring(root)
    assert content.extract_main_blocks(root) == ["Title", "Text of the article, long enough to be the content."]
    assert etree.tostring(root) == before


def test_kernel_names_the_code_that_runs() -> None:
    assert content.kernel() == ("python" if BUILT is None else "c")
    with python_extraction():
        assert content.kernel() == "python"


# ---- The dev corpus ----------------------------------------------------------------


@needs_c
@needs_corpus
@pytest.mark.slow
def test_every_dev_corpus_page_gives_the_python_blocks() -> None:
    differing = []
    with gzip.open(CORPUS / "pages.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            page = json.loads(line)
            c_blocks, python_blocks = both_ways(page["html"].encode())
            root = text.parse_html(page["html"], strip_invisible=False)
            if c_blocks != python_blocks or BUILT.page_title(root) != text.page_title(root):
                differing.append(page["id"])
    assert differing == []


# ---- The page's <title> (text.page_title) --------------------------------------------

_HTML_TITLES = [
    "<title>Exceptions Namespace Reference</title><p>Hi",
    "<title>a &amp; b &lt;c&gt; &#x4e2d;&eacute;</title>",
    "<title>a<!-- not a comment in a title -->b <b>no element either</b></title>",
    "<title></title><p>empty", "<p>none", "<html><body><title>in the body</title></body></html>",
    "<html><head></head><head><title>the second head's</title></head></html>",
    "<head><title>one</title><title>two</title></head>",
    "<title>  spaces\n and lines  </title>", "<title>" + "long " * 5000 + "</title>",
]
_XML_TITLES = [
    "<html><head><title>a<![CDATA[ <b>c</b> ]]>d<i>stops here</i>e</title></head></html>",
    "<html><head><title><i>starts with an element</i>tail</title></head></html>",
    "<html><head><title>a<!--comment-->b</title></head></html>",
    '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>namespaced: none</title></head></html>',
    '<!DOCTYPE html [<!ENTITY e "x">]><html><head><title>a&e;b</title></head></html>',
]


@needs_c
@pytest.mark.parametrize("page", _HTML_TITLES)
def test_the_c_title_is_lxmls_of_html(page: str) -> None:
    root = text.parse_html(page, strip_invisible=False)
    assert BUILT.page_title(root) == text.page_title(root) == content.read_title(root)


@needs_c
@pytest.mark.parametrize("page", _XML_TITLES)
def test_the_c_title_is_lxmls_of_xml(page: str) -> None:
    # Text, CDATA, then the first other node (an element, a comment, an entity) ends it.
    root = etree.fromstring(page, etree.XMLParser(resolve_entities=False))
    assert BUILT.page_title(root) == text.page_title(root)


@needs_c
def test_the_c_title_refuses_what_is_not_an_element() -> None:
    with pytest.raises(TypeError, match="lxml element"):
        BUILT.page_title("<title>x</title>")
    comment = etree.Comment("x")
    assert content.read_title(comment) == text.page_title(comment) == ""  # (Unsupported: Python reads it)


# ---- Normalised blocks (text.normalize_blocks) ---------------------------------------

_BLOCK_TEXT = st.lists(
    st.one_of(
        st.sampled_from([" ", "\t", "\n", "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u3000", "\ue000", "\u200b"]),
        st.sampled_from(["a", "É", "中", "_", "7", "٣", "²", "-", "|", "😀", "ǅ"]),
    ),
    max_size=30,
).map("".join)


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.lists(_BLOCK_TEXT, max_size=6), st.booleans())
def test_normalised_blocks_are_the_python_ones(blocks: list[str], with_letter: bool) -> None:
    c_blocks = text.normalize_blocks(blocks, with_letter=with_letter)
    with python_extraction():
        assert c_blocks == text.normalize_blocks(blocks, with_letter=with_letter)


# Digits of several kinds: \d is a decimal digit of any script ("٣", "１"), never "²" or "①".
_KEY_TEXT = st.text(alphabet=st.sampled_from(["a", "中", " ", "7", "0", "٣", "１", "²", "①", "-", "😀"]), max_size=80)


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.lists(_KEY_TEXT, max_size=8))
def test_block_keys_are_the_python_ones(blocks: list[str]) -> None:
    assert BUILT.block_keys(blocks, templates._SHORT_BLOCK) == [templates.block_key(block) for block in blocks]


@needs_c
def test_block_keys_refuses_what_is_not_text() -> None:
    with pytest.raises(TypeError, match="blocks must be str"):
        BUILT.block_keys(["a", b"b"], templates._SHORT_BLOCK)


def test_the_c_code_runs_only_with_the_lxml_it_was_built_against() -> None:
    assert content.c_code_mismatch(("6.1.3", 21406), ("6.1.3", 21406)) is None
    upgraded = content.c_code_mismatch(("6.1.3", 21406), ("6.2.0", 21500))
    assert upgraded == "it was built against lxml 6.1.3 with libxml2 21406, and lxml 6.2.0 with libxml2 21500 runs"
    assert content.c_code_mismatch(("6.1.3", 21406), ("6.1.3", 21407)) is not None


@needs_c
def test_after_an_lxml_upgrade_the_python_twin_runs_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import importlib

    import lxml

    page = etree.fromstring(b"<html><body><article><h1>T</h1><p>" + b"word " * 40 + b"</p></article></body></html>",
                            etree.HTMLParser())
    with_c = content.extract_main_blocks(page)
    try:
        monkeypatch.setattr(lxml, "__version__", "99.0.0")
        with caplog.at_level("WARNING", logger="scrapy_simhash.core.content"):
            importlib.reload(content)
        assert content.kernel() == "python"
        assert "built against lxml" in caplog.text and "lxml 99.0.0" in caplog.text
        assert content.extract_main_blocks(page) == with_c
    finally:
        monkeypatch.undo()
        importlib.reload(content)
    assert content.kernel() == "c"
