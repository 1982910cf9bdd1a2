from __future__ import annotations

from contextlib import nullcontext

import pytest
from c_modules import python_instead_of

from scrapy_simhash.core import boilerplate, content, text
from scrapy_simhash.core.boilerplate import prune_boilerplate

ARTICLE = " ".join(f"sentence {n} of the article body, with words that matter." for n in range(40))


def _extract(html: str) -> str:
    return "\n".join(content.extract_main_blocks(text.parse_html(html)))


def test_semantic_boilerplate_is_removed_and_content_kept() -> None:
    html = (
        "<body><header><h2>Site name</h2></header><nav><a href='/'>Home</a> <a href='/x'>Docs</a></nav>"
        f"<main><h1>Title</h1><p>{ARTICLE}</p></main>"
        "<aside>Popular: <a href='/p'>a post</a></aside><footer>Copyright 2024 footer text</footer></body>"
    )
    extracted = _extract(html)
    assert "sentence 39 of the article body" in extracted
    for boilerplate in ("Site name", "Home", "Popular", "Copyright"):
        assert boilerplate not in extracted


def test_boilerplate_named_by_class_is_removed() -> None:
    html = (
        f"<body><div id='wrap'><div class='post-body'><p>{ARTICLE}</p></div>"
        "<div class='comment-section'><p>First! great post, thanks for writing it down here</p></div>"
        "<div class='share-bar'><a href='/share'>Share on social</a></div><div class='ad-banner'>Buy now, best prices</div>"
        "<div class='visit-counter'>Views: 1,234 | Online: 12</div></div></body>"
    )
    extracted = _extract(html)
    assert "sentence 0 of the article body" in extracted
    for boilerplate in ("First!", "Share on", "Buy now", "Views"):
        assert boilerplate not in extracted


@pytest.mark.parametrize("python", [False, True])
@pytest.mark.parametrize("box", ["related", "share-box", "tags", "social sharing"])
def test_a_box_named_for_links_is_kept_when_it_holds_none(box: str, python: bool) -> None:
    """Templates name what wraps the article for what sits beside it, and a repost of the
    article in that template must keep its text; the box of links itself goes."""
    html = (f"<body><div class='{box}'><p>{ARTICLE}</p></div>"
            f"<div class='{box}'><a href='/1'>Another story</a> <a href='/2'>And one more</a></div></body>")
    with python_instead_of("extraction") if python else nullcontext():
        extracted = _extract(html)
    assert "sentence 39 of the article body" in extracted
    assert "Another story" not in extracted


@pytest.mark.parametrize("python", [False, True])
def test_a_class_of_headers_the_page_repeats_is_its_entries(python: bool) -> None:
    """pydoctor heads each method's documentation with its signature, in a div.functionHeader;
    the page's own header, named so once, is the page's frame."""
    members = "".join(
        f"<div class='basemethod'><div class='functionHeader'>def method_{n}(self, request):</div>"
        f"<div class='functionBody'><p>Handles the request number {n} and returns what it made of it.</p></div></div>"
        for n in range(4)
    )
    html = (f"<body><div class='header'>Site of the project: home, downloads, mailing lists</div>"
            f"<div class='content'><h1>class Handler</h1><p>{ARTICLE}</p>{members}</div></body>")
    with python_instead_of("extraction") if python else nullcontext():
        extracted = _extract(html)
    assert all(f"def method_{n}(self, request):" in extracted for n in range(4))
    assert "Site of the project" not in extracted


def test_byline_copyright_and_disclaimer_lines_are_removed() -> None:
    html = (
        f"<body><article><h1>Title</h1><p class='byline'>By A. Writer, 3 May</p><p>{ARTICLE[:1500]}</p>"
        f"<p>{ARTICLE[1500:]}</p>"
        "<p class='copyright-note'>All rights reserved by the publisher</p>"
        "<div id='legal'><div class='disclaimer'>Opinions are the author's own and not ours</div></div>"
        "<p class='lead-in'>A paragraph with a class of its own stays in</p></article></body>"
    )
    extracted = _extract(html)
    assert "sentence 39 of the article body" in extracted and "A paragraph with a class" in extracted
    for boilerplate in ("By A. Writer", "All rights reserved", "Opinions are"):
        assert boilerplate not in extracted


def test_link_lists_are_left_out_of_prose_pages() -> None:
    links = "".join(f"<li><a href='/{n}'>related page number {n}</a></li>" for n in range(20))
    html = f"<body><div><p>{ARTICLE}</p><ul>{links}</ul></div></body>"
    extracted = _extract(html)
    assert "sentence 5" in extracted and "related page number" not in extracted


def test_a_table_of_contents_keeps_its_links() -> None:
    links = "".join(f"<li><a href='/{n}'>chapter {n} of the guide</a></li>" for n in range(30))
    extracted = _extract(f"<body><h1>Contents</h1><ul>{links}</ul></body>")
    assert "chapter 29 of the guide" in extracted


def test_short_article_beside_a_long_sidebar() -> None:
    sidebar = "About this site: " + "a long description of the site that is on every page. " * 3
    html = (
        "<body><div class='wrap'><div class='left'><h1>Short story</h1>"
        "<div><p>The short article text that is the real content of this page.</p></div></div>"
        f"<div class='right'><p>{sidebar}</p></div></div></body>"
    )
    extracted = _extract(html)
    assert "real content" in extracted and "About this site" not in extracted


def test_biggest_section_wins_but_title_stays() -> None:
    section = "<section><h2>Bugfixes</h2><p>" + ARTICLE + "</p></section>"
    html = f"<body><div><h1>Release 1.2.3</h1><p>Short intro.</p>{section}</div></body>"
    extracted = _extract(html)
    assert "Release 1.2.3" in extracted and "sentence 3" in extracted


def test_paragraphs_beside_a_long_code_listing_stay() -> None:
    # The listing holds most of the prose, but it is a part of the article, not its container.
    code = "\n".join(f"    call_{n}(argument_{n})  # step {n} of the example" for n in range(30))
    html = (
        "<body><div id='area'><h1>Err function</h1><p>Returns the code of the last error.</p>"
        "<h2>Parameters</h2><ul><li>none: it reads the state of the program</li></ul>"
        f"<h2>Example</h2><div class='code'><pre>{code}</pre></div></div></body>"
    )
    extracted = _extract(html)
    assert "Returns the code of the last error." in extracted and "step 29 of the example" in extracted
    assert "it reads the state of the program" in extracted  # not a <p>: kept as the listing's sibling


def test_an_article_of_one_paragraph_is_entered_past_its_sidebar() -> None:
    html = (
        "<body><div class='col'><p>About this site: notes on cooking, written since 2009.</p></div>"
        f"<div id='c'><p>{ARTICLE}</p></div></body>"
    )
    extracted = _extract(html)
    assert "sentence 39 of the article body" in extracted and "About this site" not in extracted


def test_paragraphs_after_the_chosen_post_are_left_out() -> None:
    html = (
        f"<body><div class='thread'><h1>How do I fix my bike chain?</h1><div><p>{ARTICLE}</p>"
        "<p>and a second paragraph of the first post</p></div>"
        "<p>Reply: me too, same problem here</p><p>Reply: try a new chain</p></div></body>"
    )
    extracted = _extract(html)
    assert "How do I fix my bike chain?" in extracted and "second paragraph" in extracted
    assert "Reply:" not in extracted


def test_the_descent_never_enters_a_paragraph() -> None:
    lead = "The one long paragraph of this help page, " * 8
    html = (
        "<body><div><h1>Headers and footers</h1><p>Define the headers here.</p>"
        f"<p>{lead}</p><div><h2>Reset</h2><p>Undo the changes made in this dialog.</p></div></div></body>"
    )
    extracted = _extract(html)
    assert "Define the headers here." in extracted and "Undo the changes" in extracted


@pytest.mark.parametrize(
    "line",
    [
        "（责任编辑：王伟）",
        "免责声明：本文转载自网络，仅供参考，不代表本站观点。",
        "来源: 新华社",
        "Copyright © 2024 The Field Notebook",
        "Posted by Ann on 3 May 2024",
    ],
)
def test_credit_and_legal_lines_are_left_out(line: str) -> None:
    extracted = _extract(f"<body><article><h1>Title</h1><p>{ARTICLE}</p><p>{line}</p></article></body>")
    assert "sentence 39 of the article body" in extracted and line not in extracted


def test_text_about_copyright_is_content() -> None:
    long_note = "来源：" + "本段讨论软件包的来源与签名。" * 15  # a paragraph, not a credit line
    interview = "记者：您如何看待今年的经济形势？它对普通家庭的生活又有哪些具体的影响？"
    extracted = _extract(
        f"<body><article><p>{ARTICLE}</p><p>Copyright law differs between countries.</p>"
        f"<p>来源不明的软件包不应安装。</p><p>{long_note}</p><p>{interview}</p></article></body>"
    )
    assert "Copyright law differs" in extracted and "来源不明" in extracted
    assert long_note in extracted and interview in extracted


def test_page_without_body_or_text() -> None:
    assert content.extract_main_blocks(text.parse_html("<html><p>only</p></html>")) == ["only"]
    assert content.extract_main_blocks(text.parse_html("<html><body><img src=x></body></html>")) == []


def test_boilerplate_holding_most_of_the_page_is_kept() -> None:
    # A site that wraps its whole page in a "page-header" div, beside a small footer.
    html = (
        f"<body><div class='page-header'><h1>Title</h1><p>{ARTICLE}</p>"
        "<nav>Home | Docs</nav></div><footer>Copyright 2024 footer text</footer></body>"
    )
    extracted = _extract(html)
    assert "sentence 39 of the article body" in extracted
    assert "Home | Docs" not in extracted and "Copyright" not in extracted


def test_nested_and_adjacent_boilerplate_keeps_the_text_around_it() -> None:
    root = text.parse_html(
        f"<body><p>{ARTICLE}</p><div class='sidebar'>Side <div class='widget'>Widget</div> more</div>"
        "after the sidebar<div class='ad-banner'>Buy now</div> and the end</body>"
    )
    prune_boilerplate(root.find("body"))
    remaining = text.visible_text(root)
    assert "after the sidebar" in remaining and "and the end" in remaining
    for boilerplate in ("Side", "Widget", "more", "Buy now"):
        assert boilerplate not in remaining


def test_remembered_verdicts_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    html = (
        f"<body><div class='post-body'><p>{ARTICLE}</p></div><div class='share-bar'><a href='/s'>Share it</a></div>"
        "<div role='navigation'>Menu</div><div style='display: none'>Hidden</div></body>"
    )
    expected = _extract(html)
    monkeypatch.setattr(boilerplate, "_MAX_VERDICTS", 1)  # forgets all the time
    assert _extract(html) == _extract(html) == expected
    assert "sentence 0 of the article body" in expected
    assert not any(word in expected for word in ("Share it", "Menu", "Hidden"))


PROSE = "The age of the cookie, in seconds: long enough for a browser session and more."
# A page of sections named for their topics (ids from their headings, as Sphinx and
# Django write them), inside a frame named for what it is.
SECTIONS_PAGE = (
    "<body><div class='sphinxsidebar'><a href='/a'>Index</a> <a href='/b'>Modules</a></div>"
    "<div class='document'><h1>Settings</h1>"
    "<div class='section' id='s-csrf-cookie-age'><span id='csrf-cookie-age'></span><h3>CSRF_COOKIE_AGE</h3>"
    f"<p>Default: 31449600</p><p>{PROSE}</p></div>"
    f"<section id='host-header-poisoning'><h2>Host header poisoning</h2><p>{ARTICLE}</p></section>"
    f"<div id='domains'><p>Cookie domains are shared between the subdomains of one site, {ARTICLE}</p></div>"
    "<div id='comments'><h3>2 comments</h3><ol class='comment-list'><li><p>First! Thanks for writing "
    "this all down, it helped me a lot with my project today.</p></li></ol></div>"
    "<div class='siteFooter'><p>Hosted by the volunteers of the project, thanks to all our sponsors "
    "and to everyone who ever sent a patch.</p></div></div></body>"
)


def test_sections_named_for_their_topic_keep_their_text() -> None:
    extracted = _extract(SECTIONS_PAGE)
    for kept in ("CSRF_COOKIE_AGE", "Default: 31449600", "The age of the cookie", "Host header poisoning",
                 "Cookie domains are shared", "sentence 39 of the article body"):
        assert kept in extracted
    # the frame, named so (also in compound words), and the comments go
    for gone in ("Index", "Modules", "First! Thanks", "Hosted by the volunteers"):
        assert gone not in extracted


def test_a_frame_word_inside_a_compound_name_prunes_a_container_not_a_paragraph() -> None:
    page = (
        f"<body><article><h1>Trace errors</h1><p>{ARTICLE}</p>"
        "<div class='howtoget'><p class='howtogetheader'>To access this command...</p>"
        "<p>Choose Tools - Detective - Trace Error.</p></div>"
        "<div class='pageheader'><p>Product tour, pricing and the blog of the company.</p></div>"
        "</article></body>"
    )
    extracted = _extract(page)
    assert "To access this command..." in extracted and "Choose Tools" in extracted
    assert "Product tour" not in extracted  # a container: its compound name says frame


@pytest.mark.parametrize(
    ("section", "spared"),
    [
        (f"<h3>Cookies</h3><p>{PROSE}</p>", True),
        (f"<a id='x'></a><h3>Cookies</h3><p>{PROSE}</p>", True),  # anchors before the heading are empty
        (f"<p>{PROSE}</p><h3>Cookies</h3>", False),  # does not start with its heading
        ("<h3>Cookies</h3><p>Accept all cookies</p>", False),  # no paragraph of prose
        ("<h3>SESSION_COOKIE_AGE</h3><p>Default: 1209600 (2 weeks)</p><p>The age of session cookies.</p>",
         True),  # short paragraphs, together prose
        (f"<h3>Cookies</h3><div><p>{PROSE}</p></div>", False),  # not a paragraph of its own
        (f"<h3>Cookies</h3><p><a href='/p'>{PROSE}</a></p>", False),  # a link, not prose
    ],
)
def test_a_container_named_boilerplate_is_spared_only_when_it_reads_as_a_section(section: str, spared: bool) -> None:
    body = text.parse_html(f"<body><div id='cookie-notice'>{section}</div><p>{ARTICLE}</p></body>").find("body")
    assert boilerplate.reads_as_section(body[0]) is spared
    assert (body[0] in boilerplate.boilerplate_elements(body)) is not spared


def test_a_repost_leaves_out_its_credit_lines_and_the_title_its_template_repeats() -> None:
    original = f"<body><article><h1>Models</h1><p>{ARTICLE}</p></article></body>"
    repost = (
        "<body><div class='page'><h1>Models</h1>"
        "<p>2023-06-28 21:04 来源：http://docs.example/models.html 作者：someone</p>"
        "<p>This article was originally published at http://docs.example/models.html.</p>"
        f"<article><h1>Models</h1><p>{ARTICLE}</p></article></div></body>"
    )
    assert _extract(repost) == _extract(original)
    assert "Models" in _extract(original)


def _chapter_page(entries: list[str]) -> str:
    """A book's chapter page as DocBook writes it: its title in a title page's header, then
    its table of contents, all links, between the book's navigation bars."""
    toc = "".join(f"<dt><span class='sect1'><a href='s{n}.html'>{entry}</a></span></dt>" for n, entry in enumerate(entries))
    return (
        "<html><head><title>Chapter 7. Booting Into Your New System</title></head><body>"
        "<div class='navheader'><table><tr><th>Chapter 7. Booting Into Your New System</th></tr>"
        "<tr><td><a href='prev.html'>Prev</a></td><td><a href='next.html'>Next</a></td></tr></table></div>"
        "<div class='chapter'><div class='titlepage'><div><div><h1 class='title'>"
        "<a name='boot-new'></a>Chapter 7. Booting Into Your New System</h1></div></div></div>"
        f"<div class='toc'><p><b>Table of Contents</b></p><dl class='toc'>{toc}</dl></div></div>"
        "<div class='navfooter'><table><tr><td>6.4. Loading Missing Firmware</td>"
        "<td><a href='index.html'>Home</a></td><td>7.1. The Moment of Truth</td></tr></table></div></body></html>"
    )


@pytest.mark.parametrize("python", [False, True])
def test_a_chapter_page_keeps_its_table_of_contents_beside_its_title(python: bool) -> None:
    # The descent goes into the column of the page's <h1> when a sidebar outweighs an
    # article; a column holding the heading alone is a title, and the content beside it.
    entries = ["7.1. The Moment of Truth", "7.2. Mounting encrypted volumes", "7.2.1. Troubleshooting", "7.3. Log In"]
    with python_instead_of("extraction") if python else nullcontext():
        extracted = _extract(_chapter_page(entries))
    assert "Chapter 7. Booting Into Your New System" in extracted
    assert all(entry in extracted for entry in entries)


def test_a_repost_of_a_chapter_page_keeps_its_table_of_contents_too() -> None:
    # A repost's template prints the title above the article's own, and its credit lines:
    # the link lists are weighed without those, which go anyway, as in the original.
    entries = ["7.1. The Moment of Truth", "7.2. Mounting encrypted volumes", "7.3. Log In"]
    toc = "".join(f"<dt><a href='s{n}.html'>{entry}</a></dt>" for n, entry in enumerate(entries))
    repost = (
        "<html><head><title>Chapter 7. Booting_Example News</title></head><body><div class='article'>"
        "<h1>Chapter 7. Booting</h1><p>2020-03-30 12:56 来源：http://example.org/ch07.html 作者：someone</p>"
        f"<div class='body'><h2>Chapter 7. Booting</h2><p>Contents</p><dl>{toc}</dl></div>"
        "<p>（责任编辑：王伟）</p></div></body></html>"
    )
    extracted = _extract(repost)
    assert all(entry in extracted for entry in entries)


@pytest.mark.parametrize("python", [False, True])
def test_names_inside_a_code_listing_are_the_codes(python: bool) -> None:
    # Sphinx's source pages give each class's block its name as id: "cookies" is a frame's
    # word, but not inside a <pre>, where the names are the code's.
    block = ("<div class='viewcode-block' id='CookiesMiddleware'><a class='viewcode-back' href='m.html'>[docs]</a>"
             "<span class='k'>class</span> <span class='nc'>CookiesMiddleware</span>:\n"
             "    \"\"\"This middleware enables working with sites that need cookies.\"\"\"\n"
             "    def process_request(self, request):\n        return self.jar.add_cookie_header(request)\n</div>")
    page = (f"<body><div class='cookie-banner'>We use cookies. Accept all.</div><h1>Source code for cookies</h1>"
            f"<div class='highlight'><pre>import logging\n\nlogger = logging.getLogger(__name__)\n\n{block}</pre></div>"
            "</body>")
    with python_instead_of("extraction") if python else nullcontext():
        extracted = _extract(page)
    assert "class CookiesMiddleware:" in extracted and "add_cookie_header" in extracted
    assert "We use cookies" not in extracted  # outside the listing, the name still says frame


def _file_page(includes: list[str], lead: str = "") -> str:
    """A source file's page as Doxygen writes it: its #include lines, each a <code> with a
    link, above the table of its functions (most of the page's prose)."""
    lines = "".join(f"<code>#include &lt;<a class='el' href='{name}.html'>{name}</a>&gt;</code><br/>\n"
                    for name in includes)
    rows = "".join(f"<tr><td>void</td><td><a href='f{n}'>make_grid_{n}</a> (const Triangulation&lt; dim &gt; "
                   f"&amp;triangulation, const unsigned int refinements_{n})</td></tr>" for n in range(12))
    return (f"<body><div class='contents'><div class='textblock'>{lead}{lines}</div>"
            f"<table class='memberdecls'><tr><th>Functions</th></tr>{rows}</table></div></body>")


@pytest.mark.parametrize("python", [False, True])
def test_code_before_the_chosen_child_stays(python: bool) -> None:
    # The descent goes into the functions' table; the #include lines before it are all
    # code, and they tell a .cc file's page from its header's.
    includes = ["deal.II/base/bounding_box.h", "deal.II/grid/grid_tools.h", "deal.II/particles/generators.h"]
    with python_instead_of("extraction") if python else nullcontext():
        extracted = _extract(_file_page(includes))
        with_prose = _extract(_file_page(includes, lead="<b>Some words about the file</b> and more of them."))
    assert all(f"#include <{name}>" in extracted for name in includes) and "make_grid_11" in extracted
    assert "#include" not in with_prose and "make_grid_11" in with_prose  # not all code: left behind as before


def test_long_attributes_are_judged_but_not_remembered() -> None:
    """An app's state in a data-* attribute (200 KB a page) is a page's own: remembered, a
    crawl's pages held it all (the C table the same, extract_c/prune.c)."""
    from lxml import etree

    state = '{"props": "' + "x" * 5000 + '"}'
    element = etree.fromstring(f"<div class='sidebar' data-page='{state}'>menu</div>")
    short = etree.fromstring("<div class='sidebar'>menu</div>")
    assert boilerplate.attribute_verdict(element) == boilerplate.attribute_verdict(short) != 0
    assert tuple(element.items()) not in boilerplate._VERDICTS
    assert tuple(short.items()) in boilerplate._VERDICTS
