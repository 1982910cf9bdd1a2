"""Fingerprinter.from_tree: a page read from the tree Scrapy's selectors parse, left as it is."""

from __future__ import annotations

import gzip
import json

import pytest
from conftest import CORPUS, DEMO_SITE, needs_corpus
from lxml import etree
from scrapy.http import HtmlResponse
from test_extract_c import needs_c, python_extraction

from scrapy_simhash import Fingerprinter
from scrapy_simhash.core import text

ARTICLE = (DEMO_SITE / "articles" / "coffee-roasting.html").read_bytes()


def response(body: bytes, url: str = "http://a.example/page") -> HtmlResponse:
    return HtmlResponse(url, body=body, encoding="utf-8")


def never() -> etree._Element:
    raise AssertionError("the tree was asked for")


@needs_c
def test_reads_the_selectors_tree_and_leaves_it_as_it_was() -> None:
    page = response(ARTICLE)
    root = page.selector.root
    before = etree.tostring(root)
    result = Fingerprinter().from_tree(lambda: root, page.text, url=page.url)
    assert result == Fingerprinter().from_html(page.text, url=page.url)
    assert result.fingerprint is not None
    assert etree.tostring(root) == before
    assert page.css("h1::text").get()  # the spider's selectors still read it


@pytest.mark.parametrize(
    ("body", "reason"), [(b"%PDF-1.7 binary", "binary"), (b"  \n", "empty"), (b"just text", "not_html")]
)
def test_what_is_not_a_page_is_skipped_before_the_tree_is_parsed(body: bytes, reason: str) -> None:
    result = Fingerprinter().from_tree(never, response(body).text)
    assert result.skip_reason == reason


def nested(levels: int, deep_text: str, around: str = "div") -> bytes:
    shallow = "<p>" + "A paragraph every version of the page shares, long enough to count. " * 3 + "</p>"
    deep = f"<{around}>{'<div>' * (levels - 1)}<p>{deep_text}</p>{'</div>' * (levels - 1)}</{around}>"
    return f"<html><body>{shallow}{deep}</body></html>".encode()


@needs_c
@pytest.mark.parametrize("around", ["div", "svg", "noscript"])  # (the last two: left out of the text)
@pytest.mark.parametrize("levels", [253, 254, 300, 2100])
def test_a_page_nested_deeper_than_parse_html_reads_gets_its_verdict(levels: int, around: str) -> None:
    # Scrapy's selectors parse up to 2048 levels (huge_tree) and cut the rest without a
    # word: two pages that differ past that read alike. As from_html, from_tree skips a page
    # past parse_html's 256 levels ("too_deep"), and fingerprints one within them.
    words = " ".join(f"word{n}" for n in range(60))
    page = response(nested(levels, words, around))
    result = Fingerprinter().from_tree(lambda: page.selector.root, page.text, url=page.url)
    assert result == Fingerprinter().from_html(page.text, url=page.url)
    assert (result.skip_reason == "too_deep") == (levels + 2 > 255)  # (+ <html>, <body>, <p>'s parents)


def test_without_the_c_extraction_it_parses_the_page_itself() -> None:
    page = response(ARTICLE)
    with python_extraction():
        result = Fingerprinter().from_tree(never, page.text, url=page.url)
        assert result == Fingerprinter().from_html(page.text, url=page.url)


def test_another_extractor_parses_the_page_itself() -> None:
    def first_paragraph(root: etree._Element) -> list[str]:
        return [root.findtext(".//p") or ""]

    page = response(ARTICLE)
    fingerprinter = Fingerprinter(extractor=first_paragraph)
    assert fingerprinter.from_tree(never, page.text) == Fingerprinter(extractor=first_paragraph).from_html(page.text)


def test_a_page_longer_than_parse_html_reads_is_parsed_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text, "MAX_HTML_BYTES", len(ARTICLE) // 2)
    page = response(ARTICLE)
    assert Fingerprinter().from_tree(never, page.text) == Fingerprinter().from_html(page.text)


@needs_c
@needs_corpus
@pytest.mark.slow
def test_every_dev_corpus_page_gets_the_fingerprint_of_its_own_parse() -> None:
    """parsel's parser keeps comments and collects ids: the same blocks all the same."""
    own, shared = Fingerprinter(), Fingerprinter()  # each with its template memory, fed alike
    differing = []
    with gzip.open(CORPUS / "pages.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            page = json.loads(line)
            scrapy_response = response(page["html"].encode(), page["url"])
            expected = own.from_html(scrapy_response.text, url=page["url"])
            root = scrapy_response.selector.root
            if shared.from_tree(lambda: root, scrapy_response.text, url=page["url"]) != expected:
                differing.append(page["id"])
    assert differing == []
