"""Boilerplate by its role: the first pass of main-content extraction (:mod:`.content`).

An element is boilerplate when its tag says so (``<nav>``, ``<header>``, ``<footer>``,
``<aside>``, ``<form>``, ...), its ARIA role says so (navigation, banner,
contentinfo, ...), it is hidden, or its class/id names it (the Readability heuristics,
extended with counters, share bars and meta lines) without also saying it is the
content. Such elements are removed unless they hold most of the page's text.
"""

from __future__ import annotations

import re

from lxml import etree

_BOILERPLATE_TAGS = ("nav", "header", "footer", "aside", "form", "menu", "dialog")
#: Only these are checked for boilerplate class/id names: the containers, not inline text.
_CONTAINER_TAGS = ("div", "section", "ul", "ol", "table")
_BOILERPLATE_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar", "dialog"}
)
# Readability's "unlikely candidates", extended with counters, share bars and meta lines.
# Short words must stand alone (between separators); long ones may be part of a word
# ("sphinxsidebar").
_UNLIKELY = re.compile(
    r"(?:^|[\s_-])(?:ad|ads|adv|adbox|adsbox|meta|nav|tags?|share|reply)(?=$|[\s_-])|"
    r"advert|banner|breadcrumb|comment|community|cookie|counter|disqus|footer|gdpr|header|"
    r"menu|navbar|navigation|pager|pagination|popup|promo|recommend|related|remark|replies|"
    r"rss|sharing|shoutbox|sidebar|skyscraper|social|sponsor|subscribe|toolbar|topbar|widget",
    re.IGNORECASE,
)
# Ids are often made from headings ("s-meta-options"): only the long words count there.
_UNLIKELY_ID = re.compile(
    r"advert|banner|breadcrumb|comment|cookie|footer|header|menu|navbar|navigation|"
    r"pagination|popup|sidebar|social|sponsor|toolbar",
    re.IGNORECASE,
)
# ...unless the same class/id also says it is the content.
_LIKELY = re.compile(r"article|body|content|main|post|entry|story", re.IGNORECASE)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
#: An element holding more than this share of the page's text is never pruned:
#: some sites wrap the whole page in a <header> or a "page-header" div.
_MAX_PRUNED_SHARE = 0.8


def _text_chars(element: etree._Element) -> int:
    serialised = etree.tostring(element, method="text", encoding=str, with_tail=False)
    return len(serialised) - serialised.count(" ")


def _names_boilerplate(names: str, cache: dict[str, bool]) -> bool:
    verdict = cache.get(names)
    if verdict is None:
        verdict = cache[names] = _UNLIKELY.search(names) is not None
    return verdict


def _is_hidden(element: etree._Element) -> bool:
    if element.get("hidden") is not None or element.get("aria-hidden") == "true":
        return True
    style = element.get("style")
    return style is not None and _HIDDEN_STYLE.search(style) is not None


def _boilerplate_elements(body: etree._Element) -> list[etree._Element]:
    found = list(body.iter(*_BOILERPLATE_TAGS))
    cache: dict[str, bool] = {}
    for element in body.iter(*_CONTAINER_TAGS):
        if element.get("role") in _BOILERPLATE_ROLES or _is_hidden(element):
            found.append(element)
            continue
        names, element_id = element.get("class"), element.get("id")
        if names is None and element_id is None:
            continue
        says_boilerplate = (names is not None and _names_boilerplate(names, cache)) or (
            element_id is not None and _UNLIKELY_ID.search(element_id) is not None
        )
        if says_boilerplate and not _LIKELY.search(f"{names} {element_id}"):
            found.append(element)
    return found


def prune_boilerplate(body: etree._Element) -> None:
    """Remove boilerplate elements in place, keeping the text that follows them."""
    doomed = _boilerplate_elements(body)
    if not doomed:
        return
    limit = _MAX_PRUNED_SHARE * _text_chars(body)
    for element in doomed:
        parent = element.getparent()
        if parent is None or _text_chars(element) > limit:
            continue  # already removed with an ancestor, or too big to be boilerplate
        _remove_keeping_tail(parent, element)


def _remove_keeping_tail(parent: etree._Element, element: etree._Element) -> None:
    tail = element.tail
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)
