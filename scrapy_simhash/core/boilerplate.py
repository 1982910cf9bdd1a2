"""Boilerplate by its role: the first pass of main-content extraction (:mod:`.content`).

An element is boilerplate when its tag says so (``<nav>``, ``<header>``, ``<footer>``,
``<aside>``, ``<form>``, ...), or its attributes do (:mod:`.names`: its ARIA role, hidden,
or class/id words of the Readability heuristics, extended with counters, share bars,
bylines and legal notes, without also saying it is the content) and it does not read as a
section of the text (:func:`reads_as_section`). Such elements are removed unless they hold
most of the page's text.

Some boilerplate is known by its text instead: the credit and legal lines of an article
(:func:`is_credit_line`), and the lines that say when a post was posted: a repost
replaces them with its own.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from lxml import etree

from .names import (
    BY_COMPOUND,
    BY_LINK_NAME,
    BY_NAME,
    BY_ROLE,
    HEADER_ONLY,
    MAIN_BY_ROLE,
    NOT_BOILERPLATE,
    attributes_say_boilerplate,
)
from .text import HEADING_TAGS
from .threads import has_stamp, thread_replies

BOILERPLATE_TAGS = ("nav", "header", "footer", "aside", "form", "menu", "dialog")
_BOILERPLATE_TAG_SET = frozenset(BOILERPLATE_TAGS)
#: Only these are checked for boilerplate class/id names: containers and paragraphs (a
#: byline, a copyright line), not inline text.
CONTAINER_TAGS = ("div", "section", "ul", "ol", "table", "p")
#: The page's content by its tag (or by ``role="main"``): an element named boilerplate that
#: holds one is the page's frame, not its navigation (Read the Docs wraps the whole page,
#: its menu and its article, in ``wy-grid-for-nav``).
LANDMARK_TAGS = ("main", "article")
#: An element holding more than this share of the page's text is never pruned: some
#: sites wrap the whole page in a <header> or a "page-header" div. Unless it is mostly
#: link text: a book's table of contents in a <nav> outweighs a short chapter page.
MAX_PRUNED_SHARE = 0.8
#: Above this share of link text an element is a list of links (navigation).
MAX_LINK_SHARE = 0.5
#: A section starts with one of these, and has paragraphs of at least this many
#: characters (spaces not counted), each mostly not links (:func:`reads_as_section`):
#: a setting's two lines, "Default: 1209600 (2 weeks)" and what it does.
SECTION_HEADINGS = HEADING_TAGS
MIN_SECTION_PROSE = 40
# Credit and legal lines, by how they start: who edited or wrote a page, where it was
# copied from, its copyright or disclaimer. A repost brings its own (another editor,
# another source, "originally published at"), so they differ between copies of one article. Chinese sites write
# 责任编辑 "editor in charge", 免责声明 "disclaimer", 来源 "source", 原标题 "original title".
#: How a credit or name line may start: an opening bracket, then (after spaces) how one of
#: the patterns below starts (lower case; ``#``: a digit, a dateline's year). Checked before
#: the patterns: most blocks start otherwise, and the case-blind patterns cost ~0.5 us a
#: block. The C extraction asks :func:`is_credit_line` only of blocks that start so.
CREDIT_BRACKETS = "([（【"
CREDIT_STARTS = (
    "责任编辑", "免责声明", "版权声明", "版权所有", "来源", "本文来源", "文章来源", "原标题", "原文链接", "出处", "转载",
    "copyright", "©", "all rights reserved", "disclaimer", "this ", "originally ", "reposted ", "republished ",
    "reprinted ", "编辑", "作者", "记者", "posted by", "written by", "####",
)  # fmt: skip
#: The letters past ASCII that the patterns' IGNORECASE takes for ASCII ones (each, then
#: its ASCII letter): only these four in all of Unicode (a test checks it).
CASE_FOLDS_TO_ASCII = "\u0130i\u0131i\u017fs\u212ak"
#: The starts' first letters, either case (the digits for ``#``): what the Python code checks first.
CREDIT_FIRST_LETTERS = "".join(
    sorted({letter for start in CREDIT_STARTS for letter in (start[0], start[0].upper())} - {"#"})
) + "0123456789"
_CREDIT_LINE = re.compile(
    r"[(\[（【]?\s*(?:"
    r"责任编辑|免责声明|版权声明|版权所有|"
    r"(?:来源|本文来源|文章来源|原标题|原文链接|出处|转载)\s*[:：]|"
    r"copyright\s*(?:©|\(c\)|\d{4}|by\b)|©|all rights reserved|disclaimer\s*[:：]|"
    # where a repost says the article comes from: "This article was originally published at ..."
    r"this (?:article|post|story|piece) (?:was|is|has been) (?:originally|first) (?:published|posted)\b|"
    r"originally (?:published|posted) (?:at|on)\b|"
    r"(?:reposted|republished|reprinted) (?:from|with permission)\b"
    r")",
    re.IGNORECASE,
)
# ...and a news dateline: a date (a time), then where the article comes from or who wrote
# it, as news sites print it under the title ("2023-06-28 21:04 来源：新华社 作者：王伟"):
# a repost prints its own.
_DATELINE = re.compile(
    r"\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}日?.{0,40}?(?:来源|作者|编辑|记者|source|by)\s*[:：]",
    re.IGNORECASE,
)
# ...and a name line: only short, since an interview's questions start with 记者:
# ("reporter:") and a manual's entries with 编辑: ("edit:").
_NAME_LINE = re.compile(r"[(\[（【]?\s*(?:(?:编辑|作者|记者)\s*[:：]|posted by\b|written by\b)", re.IGNORECASE)
#: Longer blocks starting that way are content (a paragraph about copyright law).
MAX_CREDIT_LINE = 160
_MAX_NAME_LINE = 32
#: ...and any line this short that holds a date and a time of day (:func:`.threads.has_stamp`):
#: mostly when a post was posted ("楼主 发表于 2021-01-22 12:20 | 只看该作者", "Posted by ann
#: on Jul 16, 2025 00:35"), which a repost prints its own, or a timestamp; a schedule's
#: rows ("Keynote: 2024-05-03 14:00") go too.
MAX_STAMP_LINE = 64
#: Verdicts on containers by their attributes, kept across pages (~300 bytes each)...
_VERDICTS: dict[tuple[tuple[str, str], ...], int] = {}
_MAX_VERDICTS = 4096
#: ...when they are at most this long (names and values): an app's state in a ``data-*``
#: attribute (Inertia.js' ``data-page``, 200 KB) is a page's own, and 4,096 of them held
#: ~1 GB (the C twin's table: extract_c/prune.c).
MAX_REMEMBERED_ATTRIBUTES = 1024


def _text_chars(element: etree._Element) -> int:
    serialised = etree.tostring(element, method="text", encoding=str, with_tail=False)
    return len(serialised) - serialised.count(" ")


def boilerplate_elements(body: etree._Element) -> list[etree._Element]:
    """The elements :func:`prune_boilerplate` looks at: by tag, then by role or names, then
    a thread's replies (:func:`.threads.thread_replies`). (It keeps some of them: one that
    holds most of the page's text and is not mostly links.)
    """
    # One walk of the tree for both kinds (each walk of a big page costs ~0.1 ms); the
    # tagged ones come first, as they are removed first.
    tagged: list[etree._Element] = []
    named: list[etree._Element] = []
    landmarks: list[etree._Element] = []
    repeated = repeated_in(body)
    for element in body.iter(*BOILERPLATE_TAGS, *CONTAINER_TAGS, *LANDMARK_TAGS):
        if element.tag in _BOILERPLATE_TAG_SET:
            tagged.append(element)
        elif element.tag in LANDMARK_TAGS:
            landmarks.append(element)
        else:
            verdict = container_verdict(element, repeated)
            by_name = verdict == BY_ROLE or (verdict == BY_NAME and not reads_as_section(element))
            if by_name and not _in_listing(element):
                named.append(element)
            elif verdict == MAIN_BY_ROLE:
                landmarks.append(element)
    if landmarks and named:
        frame = {ancestor for landmark in landmarks for ancestor in landmark.iterancestors()}
        named = [element for element in named if element not in frame or attribute_verdict(element) == BY_ROLE]
    # ...and a thread's replies, its comments by their place (once: some are named so too).
    replies = thread_replies(body)
    if replies:
        doomed = set(tagged).union(named)
        replies = [reply for reply in replies if reply not in doomed]
    return tagged + named + replies


def _in_listing(element: etree._Element) -> bool:
    """Whether *element* is inside a code listing (``<pre>``): its names are the code's
    (Sphinx's ``viewcode-block`` of ``class CookiesMiddleware`` has the class's name as its
    id), never the page's furniture."""
    return next(element.iterancestors("pre"), None) is not None


def attribute_verdict(element: etree._Element) -> int:
    """:func:`.names.attributes_say_boilerplate` of a container's attributes.

    The verdict depends on the attributes only, and a site repeats the same ones
    (``class="row"``) on every page: it is remembered, by all of them.
    """
    pairs = tuple(element.items())  # one call, instead of one per attribute looked up
    if not pairs:
        return NOT_BOILERPLATE
    verdict = _VERDICTS.get(pairs)
    if verdict is None:
        verdict = attributes_say_boilerplate(pairs)
        if sum(len(name) + len(value) for name, value in pairs) <= MAX_REMEMBERED_ATTRIBUTES:
            if len(_VERDICTS) >= _MAX_VERDICTS:
                _VERDICTS.clear()  # simpler than LRU; a site's attributes come back at once
            _VERDICTS[pairs] = verdict
    return verdict


def container_verdict(element: etree._Element, repeated: Callable[[etree._Element], bool]) -> int:
    """:func:`attribute_verdict` as it holds for this container: a header followed by what
    it heads, whose tag and class the page gives to another element too (*repeated*), is an
    entry's (:data:`.names.HEADER_ONLY`; not a label alone in a table's cell), a frame's
    word in a compound name is not a paragraph's (:data:`.names.BY_COMPOUND`), and a box
    named for its links holds one (:data:`.names.BY_LINK_NAME`); each is
    :data:`.names.BY_NAME` or :data:`.names.NOT_BOILERPLATE`."""
    verdict = attribute_verdict(element)
    if verdict & HEADER_ONLY:
        if _heads_something(element) and repeated(element):
            return NOT_BOILERPLATE
        verdict &= ~HEADER_ONLY
    if verdict == BY_COMPOUND:
        return NOT_BOILERPLATE if element.tag == "p" else BY_NAME
    if verdict == BY_LINK_NAME:
        return BY_NAME if element.find(".//a[@href]") is not None else NOT_BOILERPLATE
    return verdict


def _heads_something(element: etree._Element) -> bool:
    return any(isinstance(sibling.tag, str) for sibling in element.itersiblings())


def repeated_in(body: etree._Element) -> Callable[[etree._Element], bool]:
    """Whether the page gives an element's tag and class to another element of *body*
    too. Counted once, when first asked (few pages ask)."""
    counts: Counter[tuple[str, str]] | None = None

    def repeated(element: etree._Element) -> bool:
        nonlocal counts
        if counts is None:
            counts = Counter((other.tag, other.get("class")) for other in body.iter() if other.get("class") is not None)
        return counts[(element.tag, element.get("class"))] >= 2

    return repeated


def reads_as_section(element: etree._Element) -> bool:
    """Whether a container is a section of the text: its first child with text is a
    heading (anchors before it are empty), and it has paragraphs of prose of its own.
    Such a container is never pruned by its name alone: ids are often made from
    headings (``csrf-cookie-age``, ``host-header-poisoning``).
    """
    children = (child for child in element if isinstance(child.tag, str))  # (not comments)
    first = next((child for child in children if _text_chars(child)), None)  # most containers stop here
    if first is None or first.tag not in SECTION_HEADINGS:
        return False
    prose = 0
    for child in children:  # the rest, after the heading
        if child.tag == "p":
            chars = _text_chars(child)
            if _link_chars(child) <= MAX_LINK_SHARE * chars:
                prose += chars
    return prose >= MIN_SECTION_PROSE


def is_credit_line(block: str) -> bool:
    """Whether a text block is an article's credit or legal line.

    >>> is_credit_line("（责任编辑：王伟）"), is_credit_line("Copyright © 2024 Example Inc.")
    (True, True)
    >>> is_credit_line("This article was originally published at https://example.com/a.html.")
    True
    >>> is_credit_line("Copyright law differs between countries.")
    False
    >>> is_credit_line("First published in 1998, the format is still in use.")
    False
    >>> is_credit_line("2023-06-28 21:04 来源：新华社 作者：王伟 字号：大 中 小"), is_credit_line("2023-06-28: 发布 2.0 版")
    (True, False)
    >>> is_credit_line("楼主 发表于 2021-01-22 12:20 | 只看该作者"), is_credit_line("Released on 2021-01-22 at 12:20.")
    (True, True)
    >>> is_credit_line("记者：您如何看待今年的经济形势？它对普通家庭的生活又有哪些具体的影响？")
    False
    """
    # Stripped first: the patterns must not start with \s*, which would try every
    # split of an indented block's leading spaces (quadratic).
    block = block.lstrip()
    if len(block) <= MAX_STAMP_LINE and ":" in block and has_stamp(block):
        return True
    if len(block) > MAX_CREDIT_LINE or not _may_be_credit_line(block):
        return False
    if _CREDIT_LINE.match(block) is not None or _DATELINE.match(block) is not None:
        return True
    return len(block) <= _MAX_NAME_LINE and _NAME_LINE.match(block) is not None


def _may_be_credit_line(block: str) -> bool:
    if block[:1] in CREDIT_BRACKETS:
        block = block[1:].lstrip()
    return block[:1] in CREDIT_FIRST_LETTERS if block else False


def prune_boilerplate(body: etree._Element) -> None:
    """Remove boilerplate elements in place, keeping the text that follows them."""
    doomed = boilerplate_elements(body)
    if not doomed:
        return
    if _all_small(body, doomed):
        for element in doomed:
            parent = element.getparent()
            if parent is not None:
                remove_keeping_tail(parent, element)
        return
    limit = MAX_PRUNED_SHARE * _text_chars(body)
    for element in doomed:
        parent = element.getparent()
        if parent is None:
            continue  # already removed with an ancestor
        chars = _text_chars(element)
        if chars > limit and _link_chars(element) <= MAX_LINK_SHARE * chars:
            continue  # too big to be boilerplate, and not a list of links
        remove_keeping_tail(parent, element)


def _link_chars(element: etree._Element) -> int:
    return sum(_text_chars(link) for link in element.iter("a"))


def _all_small(body: etree._Element, doomed: list[etree._Element]) -> bool:
    """Whether no doomed element can hold the share of the page that would save it.

    Doomed elements that are not inside one another hold, together, at most the whole
    page: when none is bigger than that share of them, none is bigger than that share
    of the page, and the page need not be serialised to know it (~3 pages in 4).
    Removing some only shrinks the others, so they all go.
    """
    sizes = [_text_chars(element) for element in doomed]
    among = set(doomed)
    outermost = sum(
        size
        for element, size in zip(doomed, sizes)
        if not any(ancestor in among for ancestor in element.iterancestors())
    )
    return max(sizes) <= MAX_PRUNED_SHARE * outermost


def remove_keeping_tail(parent: etree._Element, element: etree._Element) -> None:
    """Remove *element* from *parent*, keeping its tail text (what follows it) in place."""
    tail = element.tail
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)
