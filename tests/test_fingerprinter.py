from __future__ import annotations

import numpy as np
import pytest

from scrapy_simhash.core.fingerprint import hamming_distance
from scrapy_simhash.core.fingerprinter import Fingerprinter, FingerprintOptions, FingerprintResult
from scrapy_simhash.core.sketch import similarity
from scrapy_simhash.index.base import DEFAULT_MIN_SIMILARITY

ARTICLE = " ".join(f"Paragraph {n} explains how the widget number {n} is configured." for n in range(30))
PAGE = (
    "<html><head><title>Widgets</title></head><body>"
    "<nav><a href='/'>Home</a> <a href='/docs'>Docs</a> <a href='/blog'>Blog</a></nav>"
    "<div class='content'><h1>Configuring widgets</h1><p>{article}</p></div>"
    "{extra}<footer>Copyright Example Inc.</footer></body></html>"
)


def _page(article: str = ARTICLE, extra: str = "") -> str:
    return PAGE.format(article=article, extra=extra)


def test_boilerplate_changes_do_not_move_the_fingerprint() -> None:
    fingerprinter = Fingerprinter()
    plain = fingerprinter.from_html(_page())
    noisy = fingerprinter.from_html(
        _page(extra="<div class='comments'><p>Nice article, thanks a lot for it!</p></div>"
              "<div class='ad-banner'>Buy widgets now at the best price</div>"
              "<div class='visit-counter'>Views: 1,234</div>")
    )
    assert plain.fingerprint is not None and plain.fingerprint == noisy.fingerprint


def test_a_small_edit_stays_near_and_another_page_is_far() -> None:
    fingerprinter = Fingerprinter()
    original = fingerprinter.from_html(_page()).fingerprint
    edited = fingerprinter.from_html(_page(ARTICLE.replace("Paragraph 7 ", "Section 7 "))).fingerprint
    other = fingerprinter.from_html(_page(" ".join(f"Unrelated text {n} about cooking pasta." for n in range(40))))
    assert original is not None and edited is not None and other.fingerprint is not None
    assert hamming_distance(original, edited) <= 7 < hamming_distance(original, other.fingerprint)


@pytest.mark.parametrize(
    ("html", "reason"),
    [(b"", "empty"), (b"\x89PNG\r\n\x1a\n\x00", "binary"), (b"plain text", "not_html"),
     ("<p>too short</p>", "too_short"), ("<html><body><img src=x></body></html>", "empty"),
     # deeper than libxml2 reads: the text past its limit would be missing, not the page
     ("<html><body>" + "<div>" * 300 + "<p>" + "word " * 50 + "</p></body></html>", "too_deep")],
)
def test_skips(html: bytes | str, reason: str) -> None:
    result = Fingerprinter().from_html(html)
    assert result.skipped and result.skip_reason == reason


@pytest.mark.parametrize("bom, codec", [(b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"),
                                        (b"\xff\xfe\x00\x00", "utf-32-le")])
def test_a_page_with_a_utf16_or_utf32_bom_is_read_by_it_not_skipped_as_binary(bom: bytes, codec: str) -> None:
    # BOM first, as browsers read: its NULs made it "binary" before
    page = f"<html><head><title>Caf\u00e9</title></head><body><p>{ARTICLE} \u00e9t\u00e9 \u4e2d\u6587</p></body></html>"
    in_utf8 = Fingerprinter().from_html(page.encode())
    result = Fingerprinter().from_html(bom + page.encode(codec))
    assert result.fingerprint is not None and result == in_utf8
    assert Fingerprinter().main_blocks(bom + page.encode(codec)) == Fingerprinter().main_blocks(page.encode())


def test_from_text() -> None:
    result = Fingerprinter().from_text(ARTICLE)
    assert result.fingerprint is not None and result.tokens > 100


def test_template_blocks_are_learned_per_site_when_asked() -> None:
    fingerprinter = Fingerprinter(FingerprintOptions(template_suppression=True))
    chrome = "<div class='box'><p>About us: a site about widgets and gadgets and everything else.</p></div>"
    results: list[FingerprintResult] = []
    for n in "abcdefgh":
        article = " ".join(f"Story {n} sentence {m} with words w{n}x{m}." for m in range(20))
        html = f"<html><body><div><h1>Story {n}{n}</h1><p>{article}</p><p>{article}</p>{chrome}</div></body></html>"
        results.append(fingerprinter.from_html(html, url=f"https://site.example/story/{n}"))
    assert results[0].template_blocks == 0 and results[-1].template_blocks == 1


def test_by_default_a_fingerprint_depends_on_the_page_alone() -> None:
    """In any order, in a fresh fingerprinter or one that saw the whole site before."""
    pages = [_page(f"Story {n}: " + " ".join(f"line {n} {m} words" for m in range(30))) for n in range(8)]
    first = [Fingerprinter().from_html(page, url="https://site.example/") for page in pages]
    shared = Fingerprinter()
    backwards = [shared.from_html(page, url="https://site.example/") for page in reversed(pages)]
    assert first == backwards[::-1] and len({result.fingerprint for result in first}) == len(pages)


def test_a_custom_extractor_can_be_plugged() -> None:
    fingerprinter = Fingerprinter(extractor=lambda root: ["the same text " * 20])
    assert fingerprinter.from_html(_page()).fingerprint == fingerprinter.from_html("<p>other</p>").fingerprint


@pytest.mark.parametrize(
    "options",
    [
        {"shingle_size": 0},
        {"min_tokens": 0},
        {"segmenter": "nope"},
        {"weighting": "idf"},
        {"max_weight": 0},
        {"max_weight": "8"},
        {"max_weight": True},
        {"max_weight": 10**400},
    ],
)
def test_bad_options_fail_fast(options: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        FingerprintOptions(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name, value",
    [("shingle_size", "3"), ("min_tokens", "3"), ("wildcard_bits", 2.5), ("shingle_size", True),
     ("main_content", "yes"), ("template_suppression", 1), ("hash_key", "secret"), ("weighting", 3)],
)
def test_an_option_of_another_type_is_a_type_error_naming_it(name: str, value: object) -> None:
    with pytest.raises(TypeError, match=f"^{name} must be ") as error:
        FingerprintOptions(**{name: value})  # type: ignore[arg-type]
    assert "secret" not in str(error.value)  # a hash key is never shown


def test_a_numpy_int_option_is_the_int_it_is() -> None:
    options = FingerprintOptions(shingle_size=np.int64(2), wildcard_bits=np.int32(10))
    assert type(options.shingle_size) is int and options == FingerprintOptions(shingle_size=2, wildcard_bits=10)
    assert options.signature() == FingerprintOptions(shingle_size=2).signature()


@pytest.mark.parametrize("method", ["from_html", "main_blocks"])
def test_a_url_that_is_not_a_str_is_a_type_error_naming_it(method: str) -> None:
    with pytest.raises(TypeError, match="^url must be a str or None, not bytes"):
        getattr(Fingerprinter(), method)(f"<p>{ARTICLE}</p>", url=b"http://example.com/")


def test_signature_names_what_changes_fingerprints() -> None:
    default = FingerprintOptions()
    assert default.signature() == FingerprintOptions(segmenter="char").signature()
    assert FingerprintOptions(segmenter="jieba").signature() == FingerprintOptions(segmenter="rjieba").signature()
    assert default.signature() != FingerprintOptions(shingle_size=2).signature()
    assert default.signature() != FingerprintOptions(max_weight=float("inf")).signature()
    assert default.signature() == FingerprintOptions(max_weight=8).signature()  # 8 is 8.0
    assert "secret" not in FingerprintOptions(hash_key=b"secret").signature()
    # two keys make unrelated fingerprints: their stores must not mix
    keyed = {FingerprintOptions(hash_key=key).signature() for key in (b"secret", b"other", b"")}
    assert len(keyed) == 3
    assert FingerprintOptions(hash_key=b"secret").signature() == FingerprintOptions(hash_key=b"secret").signature()


def test_the_weight_cap_reaches_the_features() -> None:
    # One phrase all over the page outvotes the rest unless its weight is capped.
    body = "package manager " * 200 + " ".join(f"word{n} and more{n}" for n in range(60))
    html = f"<html><body><article><p>{body}</p></article></body></html>"
    capped = Fingerprinter().from_html(html).fingerprint
    uncapped = Fingerprinter(FingerprintOptions(max_weight=float("inf"))).from_html(html).fingerprint
    assert capped is not None and uncapped is not None and capped != uncapped


def test_the_sketch_is_of_the_whole_token_stream() -> None:
    # Its 5-token shingles run across blocks, as the near-duplicate definition's do: how
    # the text is cut into blocks does not change it, and a sibling page whose short lines
    # (signatures, table cells) differ in one name each is not confirmed as a copy.
    lines = [f"pub fn method_{n}(self, count: usize) -> Option<Item>" for n in range(12)]
    fingerprinter = Fingerprinter()
    as_lines = fingerprinter.from_text("\n".join(lines))
    as_one_block = fingerprinter.from_text(" ".join(lines))
    assert as_lines.sketch == as_one_block.sketch
    sibling = fingerprinter.from_text("\n".join(line.replace("Item", "Other") for line in lines))
    assert similarity(as_lines.sketch, sibling.sketch) < DEFAULT_MIN_SIMILARITY


def _short_page(title: str, entry: str) -> str:
    # A listing of one entry, a link, in its site's template: its text is the template's.
    return (f"<html><head><title>Library: {title}</title></head><body><div id='top'>Reference "
            "documentation for the library, version 9.4.1</div><div class='contents'><h2>Namespaces</h2>"
            f"<table><tr><td>namespace</td><td><a href='/{entry}.html'>{entry}</a></td></tr></table></div>"
            "<address>Generated by the documentation tool 1.9.4</address></body></html>")


def test_a_short_page_is_told_from_its_siblings_by_its_title() -> None:
    fingerprinter = Fingerprinter()
    first = fingerprinter.from_html(_short_page("Exceptions Namespace Reference", "DataOut"))
    sibling = fingerprinter.from_html(_short_page("MatrixTools Namespace Reference", "Internal"))
    copy = fingerprinter.from_html(_short_page("Exceptions Namespace Reference", "DataOut"))
    assert first.sketch != sibling.sketch and first.fingerprint != sibling.fingerprint
    assert (first.fingerprint, first.sketch) == (copy.fingerprint, copy.sketch)
    assert "library: exceptions namespace reference" in fingerprinter.main_blocks(_short_page("Exceptions Namespace Reference", "x"))


def test_a_short_pages_title_counts_without_the_sites_name() -> None:
    body = ("<body><article><h1>Number Format: Delete Decimal Place</h1><p>Removes one decimal place "
            "from the numbers in the selected cells.</p></article></body>")
    original = f"<html><head><title>Number Format: Delete Decimal Place</title></head>{body}</html>"
    repost = f"<html><head><title>Number Format: Delete Decimal Place_News Site</title></head>{body}</html>"
    other_site = f"<html><head><title>Tech Daily | Number Format: Delete Decimal Place</title></head>{body}</html>"
    fingerprinter = Fingerprinter()
    first = fingerprinter.from_html(original)
    assert first.sketch is not None and len(first.sketch) > 32  # a short page: its title counts
    assert fingerprinter.from_html(repost) == first == fingerprinter.from_html(other_site)
    retitled = original.replace("<title>Number Format: Delete", "<title>Number Format: Add")
    assert fingerprinter.from_html(retitled).sketch != first.sketch  # not the heading: it stays


def test_a_long_page_is_fingerprinted_without_its_title() -> None:
    retitled = _page().replace("<title>Widgets</title>", "<title>Widgets - a repost on another site</title>")
    assert Fingerprinter().from_html(_page()) == Fingerprinter().from_html(retitled)


def test_a_utf16_page_longer_than_parse_html_reads_is_read_as_its_utf8_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    # Cut at MAX_HTML_BYTES once converted to UTF-8; the declared encoding (utf-16) must not
    # then be applied to those UTF-8 bytes.
    from scrapy_simhash.core import text

    page = f"<html><body><p>{ARTICLE}</p><p>{ARTICLE} and more.</p></body></html>"
    monkeypatch.setattr(text, "MAX_HTML_BYTES", len(page.encode()) // 2)
    in_utf8 = Fingerprinter().from_html(page.encode(), encoding="utf-8")
    in_utf16 = Fingerprinter().from_html(b"\xff\xfe" + page.encode("utf-16-le"), encoding="utf-16")
    assert in_utf16.fingerprint is not None and in_utf16 == in_utf8
