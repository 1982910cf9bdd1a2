"""Parts of a page that copy another document's entries (core/digests.py, its C twin in
core/extract_c/digest.c): found, left out of the main text, and never confused with a page's
own table of contents, "[source]" buttons or prose that cites another page.

The pages imitate rustdoc's: every type page repeats the methods of a trait it implements,
each with the first paragraph of its documentation and links into the trait's page.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
from conftest import RecordingSpider, crawl, local_url
from lxml import etree
from serve_demo import start_server

from scrapy_simhash import Fingerprinter, hamming_distance, main_text
from scrapy_simhash.cli._common import file_url
from scrapy_simhash.cli.text import annotated
from scrapy_simhash.core import content, digests, text
from scrapy_simhash.core.sketch import Confirmation

METHODS = 40
TYPES = 24
VERBS = "reads writes skips counts folds maps filters zips chains peeks takes drops".split()


def trait_methods(target: str = "trait.Iterator.html", same_text: bool = False) -> str:
    """The trait's methods as a type page copies them: a signature and a paragraph each,
    both linking to the method on the trait's own page."""
    entries = []
    for number in range(METHODS):
        name = "source" if same_text else f"method_{number}"
        verb = VERBS[number % len(VERBS)]
        entries.append(
            f"<div class='method'><h4>fn <a href='{target}#method.{number}'>{name}</a>(&amp;self) -&gt; usize</h4>"
            f"<p>It {verb} the items of the iterator and returns how many of them it {verb}, "
            f"one at a time. <a href='{target}#method.{number}'>Read more</a></p></div>")
    return f"<h2>Trait Implementations</h2><div class='impl-items'>{''.join(entries)}</div>"


def type_page(number: int, methods: str | None = None) -> str:
    """The page of one type: its own heading and documentation, then the copied methods."""
    verb = VERBS[number % len(VERBS)]
    return (f"<html><head><title>Type{number} in std::iter</title></head><body>"
            "<nav><a href='index.html'>std</a></nav><main>"
            f"<h1>Struct std::iter::Type{number}</h1><p>An iterator that {verb} its items with the "
            f"closure number {number}, created by the method {verb}_{number} of the Iterator trait.</p>"
            f"{trait_methods() if methods is None else methods}</main></body></html>")


def root_of(page: str) -> etree._Element:
    return text.parse_html(page, strip_invisible=False)


def c_and_python_blocks(page: str, url: str | None) -> tuple[list[str] | None, list[str]]:
    root = root_of(page)
    in_c = content.extract_leaving_tree(root, url)
    return in_c, content._extract_in_python(copy.deepcopy(root), url)


def test_the_copied_methods_are_a_digest_of_the_trait_and_left_out() -> None:
    page = type_page(1)
    parts = digests.digest_parts(root_of(page), "http://rust.test/std/iter/struct.Type1.html")
    assert [part.get("class") for part in parts] == ["impl-items"]
    blocks = Fingerprinter().main_blocks(page, url="http://rust.test/std/iter/struct.Type1.html")
    assert "struct std::iter::type1" in blocks
    assert not any("read more" in block for block in blocks)


def test_sibling_types_are_distinct_once_the_copies_are_left_out() -> None:
    """Without the rule the 40 copied methods make any two type pages 0.9 alike."""
    fingerprinter = Fingerprinter()
    first, second = (fingerprinter.from_html(type_page(number), url=f"http://rust.test/struct.Type{number}.html")
                     for number in (1, 2))
    assert Confirmation(0.8).similarity(first.sketch, second.sketch) is None  # type: ignore[arg-type]
    assert hamming_distance(first.fingerprint, second.fingerprint) > 3  # type: ignore[arg-type]
    copied = Fingerprinter(extractor=lambda root: text.split_blocks(text.body_of(root)))
    with_copies = [copied.from_html(type_page(number)) for number in (1, 2)]
    assert Confirmation(0.8).similarity(with_copies[0].sketch, with_copies[1].sketch)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("methods", "why"),
    [
        (trait_methods(same_text=True), "[source] buttons: one text"),
        ("<ul>" + "".join(f"<li><a href='guide.html#s{n}'>Section {n} of the guide</a></li>" for n in range(40))
         + "</ul>", "a table of contents of another page: links, no paragraphs"),
        ("".join(f"<p>{'This paragraph is about something else entirely, at length. ' * 3}"
                 f"See <a href='guide.html#s{n}'>section {n}</a>.</p>" for n in range(40)),
         "prose citing another page: hundreds of characters a link"),
        (trait_methods().replace("<p>", "<span>").replace("</p>", "</span>"), "no paragraphs"),
    ],
)
def test_what_is_not_a_digest(methods: str, why: str) -> None:
    assert digests.digest_parts(root_of(type_page(1, methods)), "http://rust.test/struct.Type1.html") == [], why


def test_main_text_takes_the_url_as_from_html_does() -> None:
    page = type_page(1, trait_methods("struct.Type1.html"))
    assert "read more" in main_text(page, url="http://rust.test/struct.Type1.html")
    assert "read more" not in main_text(page)


def test_links_into_the_page_itself_by_its_file_name_are_its_own() -> None:
    """gtk-doc links a page's functions to its own anchors by file name: with the URL known,
    that is the page itself; without one, a link with a path points elsewhere."""
    page = type_page(1, trait_methods("struct.Type1.html"))
    assert digests.digest_parts(root_of(page), "http://rust.test/std/iter/struct.Type1.html;jsessionid=7?x=1") == []
    assert len(digests.digest_parts(root_of(page), None)) == 1
    assert digests.page_document("http://rust.test/std/iter/struct.Type1.html#x") == "struct.Type1.html"
    assert digests.page_document(None) is None


def test_a_url_with_a_lone_surrogate_or_a_nul_names_no_link() -> None:
    # No href holds one (lxml reads them from UTF-8): the links are told apart as without a URL.
    page = type_page(1, trait_methods("struct.Type1.html"))
    for url in ("http://rust.test/struct.Type1.html\udcff", "http://rust.test/struct.Type1.html\0"):
        assert main_text(page, url=url) == main_text(page)
        assert Fingerprinter().from_html(page, url=url) == Fingerprinter().from_html(page)


def test_remove_keeps_the_text_after_a_digest() -> None:
    page = type_page(1).replace("</div></main>", "</div>Tail text after the copies.</main>")
    root = root_of(page)
    assert digests.remove_digests(root, "http://rust.test/struct.Type1.html") == 1
    assert "Tail text after the copies." in root.xpath("string()")
    assert "Read more" not in root.xpath("string()")


@pytest.mark.skipif(content.kernel() != "c", reason="the C extraction was not built")
@pytest.mark.parametrize("url", [None, "http://rust.test/std/iter/struct.Type1.html", "http://rust.test/",
                                 "http://rust.test/struct.Type1.html\udcff", "http://rust.test/struct.Type1.html\0"])
@pytest.mark.parametrize("variant", range(6))
def test_c_finds_the_digests_python_finds(url: str | None, variant: int) -> None:
    methods = [trait_methods(), trait_methods("struct.Type1.html"), trait_methods(same_text=True),
               trait_methods() + trait_methods("trait.Clone.html"),
               "<script>var x = '" + "y" * 5000 + "';</script>" + trait_methods(),
               trait_methods("  ../iter/trait.Iterator.html?x=1 ")][variant]
    in_c, in_python = c_and_python_blocks(type_page(1, methods), url)
    assert in_c == in_python


def test_from_tree_leaves_out_the_digest_and_leaves_the_tree_as_it_was() -> None:
    page = type_page(3)
    url = "http://rust.test/struct.Type3.html"
    fingerprinter = Fingerprinter()
    root = root_of(page)
    before = etree.tostring(root)
    assert fingerprinter.from_tree(lambda: root, page, url=url) == fingerprinter.from_html(page, url=url)
    assert etree.tostring(root) == before


@pytest.fixture(scope="module")
def type_site(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A site of type pages that all copy the trait's methods, and one copy of a type page."""
    site = tmp_path_factory.mktemp("types")
    links = []
    for number in range(TYPES):
        (site / f"struct.Type{number}.html").write_text(type_page(number))
        links.append(f"<li><a href='struct.Type{number}.html'>Type{number}</a></li>")
    (site / "struct.Type0.print.html").write_text(type_page(0))
    links.append("<li><a href='struct.Type0.print.html'>Type0, printable</a></li>")
    (site / "index.html").write_text(f"<html><body><h1>std::iter</h1><ul>{''.join(links)}</ul></body></html>")
    server = start_server(site)
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_a_crawl_keeps_every_type_page_and_drops_the_copy(type_site: str) -> None:
    crawler = crawl(RecordingSpider, {"CONCURRENT_REQUESTS": 1}, start_url=type_site)
    kept = {local_url(item["url"]) for item in crawler.spider.items}
    assert {f"/struct.Type{number}.html" for number in range(TYPES)} <= kept
    # (The type pages link to index.html: the home page under a second URL. The print
    # version, another document name, is handed on for its links: SIMHASH_FOLLOW_DROPPED.)
    assert {(local_url(drop.url), local_url(drop.duplicate_of)) for drop in crawler.spider.all_drops()} == {
        ("/struct.Type0.print.html", "/struct.Type0.html"), ("/index.html", "/")
    }


def test_the_text_command_says_which_blocks_a_digest_left_out(tmp_path: Path) -> None:
    page = tmp_path / "struct.Type1.html"
    page.write_text(type_page(1))
    lines = annotated(Fingerprinter(), page.read_bytes(), file_url(str(page)))
    assert "+ struct std::iter::type1" in lines
    assert "- fn method_0(&self) -> usize  [copies another page's entries, linking to them (a digest)]" in lines


def _digest_like_page(rng: random.Random) -> str:
    """Entries linking into one document, with strays: other targets, repeated texts, filler
    around the density limit, one or two paragraphs an entry or none."""
    target = rng.choice(["t.html", "../t.html", "page.html", "http://o.example/t.html", " t.html?q=1 "])
    strays = ["#m{}", "t.html#", "javascript:x#{}", "u.html#m{}", "page.html;s=1#m{}", "", "?#{}"]
    entries = []
    for number in range(rng.randrange(15, 60)):
        href = f"{target}#m{number}" if rng.random() < 0.85 else rng.choice(strays).format(number)
        name = f"m{number}" if rng.random() < 0.9 else "same"
        wrap = rng.choice(["p", "p", "div", "li"])
        entries.append(f"<div><h4><a href='{href}'>{name}</a></h4><{wrap}>{'word ' * rng.randrange(25)}"
                       f"<a href='{href}'>Read more</a></{wrap}></div>")
    own = f"<p>{'own text ' * rng.randrange(1, 40)}<a href='t.html#intro'>t</a></p>"
    return f"<html><body><main>{own}<div class='items'>{''.join(entries)}</div>{own}</main></body></html>"


@pytest.mark.skipif(content.kernel() != "c", reason="the C extraction was not built")
def test_c_and_python_agree_on_random_digest_like_pages() -> None:
    rng = random.Random(16)
    found = 0
    for _ in range(150):
        page = _digest_like_page(rng)
        for url in (None, "http://x/page.html", "http://x/t.html"):
            in_c, in_python = c_and_python_blocks(page, url)
            assert in_c == in_python, (url, page)
            found += bool(digests.digest_parts(root_of(page), url))
    assert 100 < found < 450  # both kinds of page were drawn


@pytest.mark.skipif(content.kernel() != "c", reason="the C extraction was not built")
def test_a_page_of_more_digests_than_the_c_code_holds_runs_the_python_code() -> None:
    page = type_page(1, "".join(trait_methods(f"trait.T{number}.html") for number in range(65)))
    root = root_of(page)
    assert len(digests.digest_parts(root, None)) == 65
    assert content.extract_leaving_tree(root, None) is None  # (MAX_DIGESTS: 64)
    assert content.extract_main_blocks(root_of(page), None) == content._extract_in_python(root_of(page), None)
    assert "struct std::iter::type1" in [block.lower() for block in content.extract_main_blocks(root_of(page))]
