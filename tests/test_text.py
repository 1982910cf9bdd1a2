from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapy_simhash.core import text


def _blocks(html: str | bytes) -> list[str]:
    return text.normalize_blocks(text.split_blocks(text.parse_html(html)))


def test_invisible_elements_are_dropped() -> None:
    html = (
        "<html><head><title>t</title><style>p{}</style></head><body><script>var x</script>"
        "<noscript>enable js</noscript><p>kept</p><!-- a comment --><template>no</template>"
        "<svg><text>no</text></svg><iframe>no</iframe></body></html>"
    )
    assert _blocks(html) == ["kept"]


def test_blocks_do_not_glue_words() -> None:
    assert _blocks("<ul><li>one</li><li>two</li></ul><p>three<br>four</p><div>five</div>six") == [
        "one", "two", "three", "four", "five", "six",
    ]


def test_inline_elements_stay_in_their_block() -> None:
    assert _blocks("<p>a <b>bold</b> and <a href='#'>linked</a> word</p>") == ["a bold and linked word"]


@pytest.mark.parametrize(
    ("body", "encoding"),
    [
        ("<p>café</p>".encode("latin-1"), "iso-8859-1"),
        ('<meta charset="gbk"><p>café 中文</p>'.encode("gbk", "replace"), None),
        ("<p>café 中文</p>".encode("utf-8"), None),
        (b"\xef\xbb\xbf<p>caf\xc3\xa9</p>", "latin-1"),  # the BOM wins over HTTP
        ('<meta http-equiv="content-type" content="text/html; charset=big5"><p>中文</p>'.encode("big5"), None),
    ],
)
def test_decoding(body: bytes, encoding: str | None) -> None:
    blocks = text.split_blocks(text.parse_html(body, encoding=encoding))
    assert "caf" in "".join(blocks) or "中文" in "".join(blocks)
    assert "\ufffd" not in "".join(blocks)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "empty"),
        (b"   \n ", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "binary"),
        (b"%PDF-1.7 ...", "binary"),
        (b"abc\x00def", "binary"),
        (b"just some plain text, no markup", "not_html"),
        ("", "empty"),
    ],
)
def test_not_html_is_a_clean_skip(body: bytes | str, reason: str) -> None:
    with pytest.raises(text.NotHtmlError) as caught:
        text.parse_html(body)
    assert caught.value.reason == reason


def test_broken_markup_is_parsed() -> None:
    assert _blocks("<div><p>unclosed <b>bold<p>next</div></span>tail") == ["unclosed bold", "next", "tail"]


def test_huge_page_is_cut_not_refused() -> None:
    page = "<html><body>" + "<p>word " * (text.MAX_HTML_BYTES // 4) + "</body></html>"
    blocks = text.split_blocks(text.parse_html(page))
    assert 0 < sum(map(len, blocks)) < text.MAX_HTML_BYTES


def test_normalize() -> None:
    assert text.normalize("  Ｆｕｌｌ\u3000WIDTH\n\tStraße ") == "full width strasse"
    assert text.normalize_blocks(["A", "  ", "B\nC"]) == ["a", "b c"]


@pytest.mark.parametrize(
    "content",
    [
        "plain ascii", "café\xa0au lait…", "中文，标点（全角）：是；吗？！", "™ ½ ﬁ Ｆｕｌｌ",
        "e\u0301 \u212b", "", "\ud800 x",
    ],  # fmt: skip
)
def test_fast_nfkc_is_nfkc(content: str) -> None:
    assert text._nfkc(content) == unicodedata.normalize("NFKC", content)


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\ue000")), max_size=6))
def test_normalize_blocks_is_normalize_of_each_block(blocks: list[str]) -> None:
    expected = [normalised for normalised in map(text.normalize, blocks) if normalised]
    assert text.normalize_blocks(blocks) == expected


@pytest.mark.parametrize("html", [None, 42, ["<p>a</p>"]])
def test_what_is_not_bytes_or_text_is_a_type_error_naming_it(html: object) -> None:
    with pytest.raises(TypeError, match=f"html must be bytes or str, not {type(html).__name__}"):
        text.parse_html(html)  # type: ignore[arg-type]


def test_a_bytearray_is_read_like_bytes() -> None:
    assert text.visible_text(text.parse_html(bytearray(b"<p>hello world</p>"))) == "hello world"


def _verdict(check: object, html: str | bytes) -> str:
    try:
        return f"page, whole: {check(html)}"  # type: ignore[operator]
    except text.NotHtmlError as exc:
        return exc.reason


_CHECKED_TEXT = st.one_of(
    st.text(st.sampled_from([" ", "\t", "\x0c", "\x1c", "\x85", "\u3000", "\x00", "<", "a", "中", "\ud800"])),
    st.sampled_from(["%PDF-1.4", "\x89PNG", "GIF89a", "PK\x03\x04", "\x1f\x8b"]).map(lambda magic: magic + "<p>x</p>"),
)


@given(_CHECKED_TEXT, st.integers(0, 1100))
def test_check_html_reads_text_as_its_utf8_bytes(html: str, indent: int) -> None:
    """A str (Scrapy's response.text) is checked without being encoded whole: the verdict
    must be the one of its UTF-8 bytes, past the first 1024 characters too."""
    for page in (html, " " * indent + html):
        encoded = page.encode("utf-8", "surrogatepass")
        assert _verdict(text.check_html, page) == _verdict(text.check_html, encoded)
