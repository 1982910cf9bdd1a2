"""Boilerplate by its role: the first pass of main-content extraction (:mod:`.content`).

An element is boilerplate when its tag says so (``<nav>``, ``<header>``, ``<footer>``,
``<aside>``, ``<form>``, ...), its ARIA role says so (navigation, banner,
contentinfo, ...), it is hidden, or its class/id names it (the Readability heuristics,
extended with counters, share bars, bylines and legal notes) without also saying it is the
content. Such elements are removed unless they hold most of the page's text.

Some boilerplate is known by its text instead: the credit and legal lines of an article
(:func:`is_credit_line`), which a repost replaces with its own.
"""

from __future__ import annotations

import re

from lxml import etree

BOILERPLATE_TAGS = ("nav", "header", "footer", "aside", "form", "menu", "dialog")
_BOILERPLATE_TAG_SET = frozenset(BOILERPLATE_TAGS)
#: Only these are checked for boilerplate class/id names: containers and paragraphs (a
#: byline, a copyright line), not inline text.
CONTAINER_TAGS = ("div", "section", "ul", "ol", "table", "p")
_BOILERPLATE_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar", "dialog"}
)


class _CaseBlindPattern:
    """A lower-case pattern searched case-insensitively, ~4x faster in ASCII text.

    ASCII text is lower-cased and searched case-sensitively: the same matches, since the
    non-ASCII characters that ``re.IGNORECASE`` also equates with ASCII letters (the
    Kelvin sign with k, the long s with s) cannot be in it. Class and id names are ASCII.
    """

    def __init__(self, pattern: str) -> None:
        self._ascii = re.compile(pattern)
        self._any = re.compile(pattern, re.IGNORECASE)

    def found_in(self, text: str) -> bool:
        if text.isascii():
            return self._ascii.search(text.lower()) is not None
        return self._any.search(text) is not None


# Readability's "unlikely candidates", extended with counters, share bars, meta lines,
# bylines, copyright and disclaimer notes.
# Short words must stand alone (between separators); long ones may be part of a word
# ("sphinxsidebar").
_UNLIKELY = _CaseBlindPattern(
    r"(?:^|[\s_-])(?:ad|ads|adv|adbox|adsbox|byline|meta|nav|tags?|share|reply)(?=$|[\s_-])|"
    r"advert|banner|breadcrumb|comment|community|cookie|copyright|counter|disclaimer|disqus|"
    r"footer|gdpr|header|menu|navbar|navigation|pager|pagination|popup|promo|recommend|related|remark|replies|"
    r"rss|sharing|shoutbox|sidebar|skyscraper|social|sponsor|subscribe|toolbar|topbar|widget"
)
# Ids are often made from headings ("s-meta-options"): only the long words count there.
_UNLIKELY_ID = _CaseBlindPattern(
    r"advert|banner|breadcrumb|comment|cookie|footer|header|menu|navbar|navigation|"
    r"pagination|popup|sidebar|social|sponsor|toolbar"
)
# ...unless the same class/id also says it is the content.
_LIKELY = _CaseBlindPattern(r"article|body|content|main|post|entry|story")
_HIDDEN_STYLE = _CaseBlindPattern(r"display\s*:\s*none|visibility\s*:\s*hidden")
#: An element holding more than this share of the page's text is never pruned: some
#: sites wrap the whole page in a <header> or a "page-header" div. Unless it is mostly
#: link text: a book's table of contents in a <nav> outweighs a short chapter page.
MAX_PRUNED_SHARE = 0.8
#: Above this share of link text an element is a list of links (navigation).
MAX_LINK_SHARE = 0.5
# Credit and legal lines, by how they start: who edited or wrote a page, where it was
# copied from, its copyright or disclaimer. A repost brings its own (another editor,
# another source), so they differ between copies of one article. Chinese sites write
# 责任编辑 "editor in charge", 免责声明 "disclaimer", 来源 "source", 原标题 "original title".
#: How a credit or name line may start: an opening bracket, then (after spaces) one of
#: the first letters of the patterns below (either case). Checked before the patterns:
#: most blocks start otherwise, and the case-blind patterns cost ~0.5 us a block.
CREDIT_BRACKETS = "([（【"
CREDIT_FIRST_LETTERS = "责免版来本文原出转©编作记cCaAdDpPwW"
_CREDIT_LINE = re.compile(
    r"[(\[（【]?\s*(?:"
    r"责任编辑|免责声明|版权声明|版权所有|"
    r"(?:来源|本文来源|文章来源|原标题|原文链接|出处|转载)\s*[:：]|"
    r"copyright\s*(?:©|\(c\)|\d{4}|by\b)|©|all rights reserved|disclaimer\s*[:：]"
    r")",
    re.IGNORECASE,
)
# ...and a name line: only short, since an interview's questions start with 记者:
# ("reporter:") and a manual's entries with 编辑: ("edit:").
_NAME_LINE = re.compile(r"[(\[（【]?\s*(?:(?:编辑|作者|记者)\s*[:：]|posted by\b|written by\b)", re.IGNORECASE)
#: Longer blocks starting that way are content (a paragraph about copyright law).
_MAX_CREDIT_LINE = 160
_MAX_NAME_LINE = 32
#: Verdicts on containers by their attributes, kept across pages (~300 bytes each).
_VERDICTS: dict[tuple[tuple[str, str], ...], bool] = {}
_MAX_VERDICTS = 4096


def _text_chars(element: etree._Element) -> int:
    serialised = etree.tostring(element, method="text", encoding=str, with_tail=False)
    return len(serialised) - serialised.count(" ")


def _is_hidden(attributes: dict[str, str]) -> bool:
    if "hidden" in attributes or attributes.get("aria-hidden") == "true":
        return True
    style = attributes.get("style")
    return style is not None and _HIDDEN_STYLE.found_in(style)


def boilerplate_elements(body: etree._Element) -> list[etree._Element]:
    """The elements :func:`prune_boilerplate` looks at: by tag, then by role or names.

    (It keeps some of them: one that holds most of the page's text and is not mostly links.)
    """
    # One walk of the tree for both kinds (each walk of a big page costs ~0.1 ms); the
    # tagged ones come first, as they are removed first.
    tagged: list[etree._Element] = []
    named: list[etree._Element] = []
    for element in body.iter(*BOILERPLATE_TAGS, *CONTAINER_TAGS):
        if element.tag in _BOILERPLATE_TAG_SET:
            tagged.append(element)
        elif _is_named_boilerplate(element):
            named.append(element)
    return tagged + named


def _is_named_boilerplate(element: etree._Element) -> bool:
    """Whether a container is boilerplate by its role, visibility or class/id names.

    The verdict depends on the attributes only, and a site repeats the same ones
    (``class="row"``) on every page: it is remembered, by all of them.
    """
    pairs = tuple(element.items())  # one call, instead of one per attribute looked up
    if not pairs:
        return False
    verdict = _VERDICTS.get(pairs)
    if verdict is None:
        if len(_VERDICTS) >= _MAX_VERDICTS:
            _VERDICTS.clear()  # simpler than LRU; a site's attributes come back at once
        verdict = _VERDICTS[pairs] = attributes_say_boilerplate(pairs)
    return verdict


def attributes_say_boilerplate(pairs: tuple[tuple[str, str], ...]) -> bool:
    """Whether an element with these attributes (``element.items()``) is boilerplate."""
    attributes = dict(pairs)
    if attributes.get("role") in _BOILERPLATE_ROLES or _is_hidden(attributes):
        return True
    names, element_id = attributes.get("class"), attributes.get("id")
    if names is None and element_id is None:
        return False
    says_boilerplate = (names is not None and _UNLIKELY.found_in(names)) or (
        element_id is not None and _UNLIKELY_ID.found_in(element_id)
    )
    return says_boilerplate and not _LIKELY.found_in(f"{names} {element_id}")


def is_credit_line(block: str) -> bool:
    """Whether a text block is an article's credit or legal line.

    >>> is_credit_line("（责任编辑：王伟）"), is_credit_line("Copyright © 2024 Example Inc.")
    (True, True)
    >>> is_credit_line("Copyright law differs between countries.")
    False
    >>> is_credit_line("记者：您如何看待今年的经济形势？它对普通家庭的生活又有哪些具体的影响？")
    False
    """
    # Stripped first: the patterns must not start with \s*, which would try every
    # split of an indented block's leading spaces (quadratic).
    block = block.lstrip()
    if len(block) > _MAX_CREDIT_LINE or not _may_be_credit_line(block):
        return False
    if _CREDIT_LINE.match(block) is not None:
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
                _remove_keeping_tail(parent, element)
        return
    limit = MAX_PRUNED_SHARE * _text_chars(body)
    for element in doomed:
        parent = element.getparent()
        if parent is None:
            continue  # already removed with an ancestor
        chars = _text_chars(element)
        if chars > limit and _link_chars(element) <= MAX_LINK_SHARE * chars:
            continue  # too big to be boilerplate, and not a list of links
        _remove_keeping_tail(parent, element)


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


def _remove_keeping_tail(parent: etree._Element, element: etree._Element) -> None:
    tail = element.tail
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)
