from __future__ import annotations

import gzip
import itertools
import json

import pytest
from lxml import etree

from conftest import CORPUS, needs_corpus
from scrapy_simhash.core import text, textsize
from scrapy_simhash.core.boilerplate import prune_boilerplate

PAGES = [
    "<body><div>intro <a href='/'>home link</a> tail<div><p>one two three</p></div></div></body>",
    "<body><div><a href='/'>a whole <b>card</b> is a link</a></div><p>prose after it</p>text</body>",
    "<body>loose <a>link</a> text<div>x y</div><a>last child is a link</a></body>",
    "<body><a>outer<div><a>nested</a></div>more</a><div>after</div></body>",
    "<body><ul>" + "".join(f"<li><a>item {n}</a> note {n}</li>" for n in range(40)) + "</ul></body>",
    "<body>\n<div>\n  <p>line one</p>\n  <p>line two</p>\n</div>\n<div>side</div>\n</body>",
]


def _marked_body(html: str | bytes) -> etree._Element:
    root = text.parse_html(html)
    body = root.find("body")
    body = root if body is None else body
    prune_boilerplate(body)
    textsize.mark_links(body)
    return body


def _assert_sizes_are_measures(body: etree._Element) -> None:
    for prose in (True, False):
        sizes = textsize.ChildSizes(prose)
        for parent in body.iter():
            held = textsize.measure(parent, prose)
            for child, chars in sizes.of_children(parent, held):
                assert chars == textsize.measure(child, prose), (prose, parent.tag, child.tag)


@pytest.mark.parametrize("html", PAGES)
def test_child_sizes_are_their_measures(html: str) -> None:
    _assert_sizes_are_measures(_marked_body(html))


@needs_corpus
def test_child_sizes_are_their_measures_on_corpus_pages() -> None:
    with gzip.open(CORPUS / "pages.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in itertools.islice(lines, 0, 2598, 200):
            _assert_sizes_are_measures(_marked_body(json.loads(line)["html"].encode()))


def test_measure_counts_text_or_prose_without_spaces_or_markers() -> None:
    body = _marked_body("<body><p>ab cd <a href='/'>ef g</a>h</p></body>")
    assert textsize.measure_both(body) == (5, 8)
    assert (textsize.measure(body), textsize.measure(body, prose=False)) == (5, 8)


def test_sizes_of_a_parent_are_found_once() -> None:
    body = _marked_body("<body><div>" + "<p>paragraph</p>" * 3 + "</div></body>")
    sizes = textsize.ChildSizes(prose=True)
    first = list(sizes.of_children(body[0], textsize.measure(body[0])))
    assert list(sizes.of_children(body[0], -1)) == first  # known: *held* is not used again
