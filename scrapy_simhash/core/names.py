"""Boilerplate by its attributes: ARIA role, visibility, and class and id *words*.

Class and id names are split into words (at separators, digits and case changes:
``mainNav site-footer_2`` is *main*, *nav*, *site*, *footer*) and a name rule matches
whole words only, so that a section named for its topic keeps its text: *domain* is not
*main*, *posting* not *post*. Compounds of the words for a page's frame (``sphinxsidebar``,
``sitefooter``, ``maincontent``) still count, as frames are often named that way, but only
for containers (:data:`BY_COMPOUND`): a paragraph is no frame, and ``howtogetheader`` is
the heading of a box of the text ("To access this command...").

A box named only for the links it lists ("related", "tags", "share": :data:`BY_LINK_NAME`)
that holds no link is no such box: templates give such names to what wraps an article's
text too (``share-box``, a ``social`` wrapper of the story and its share buttons), and a
repost of the article inside that template must keep it.

A header named so by its class alone (:data:`HEADER_ONLY`) is the page's when the page has
one; a header followed by what it heads, whose tag and class the page gives to another
element too, is an entry's (pydoctor's ``functionHeader`` above each method's
documentation, with the method's signature; not Doxygen's ``groupHeader``, a label alone in
a table's cell).

A container named boilerplate (:data:`BY_NAME`) may still be a section of the text
whose id was made from its heading (``csrf-cookie-age``, ``host-header-poisoning``): the
pruning spares those that read as sections (:func:`.boilerplate.reads_as_section`).
"""

from __future__ import annotations

import re
from typing import Final

#: What :func:`attributes_say_boilerplate` answers.
NOT_BOILERPLATE: Final = 0
BY_ROLE: Final = 1  # its ARIA role, or hidden: boilerplate whatever it holds
BY_NAME: Final = 2  # a class or id word: boilerplate unless it reads as a section
MAIN_BY_ROLE: Final = 3  # role="main": the content itself, and what holds it is the page's frame
BY_COMPOUND: Final = 4  # a frame's word inside a compound name only: BY_NAME, but not for a <p>
BY_LINK_NAME: Final = 5  # only class words for a box of links: BY_NAME if it holds a link
#: A flag on BY_NAME and BY_COMPOUND: its class names a header only (``functionHeader``).
HEADER_ONLY: Final = 8

_BOILERPLATE_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar", "dialog"}
)
# Readability's "unlikely candidates", extended with counters, share bars, meta lines,
# bylines, copyright and disclaimer notes.
_CLASS_WORDS = frozenset(
    "ad ads adv adbox adsbox advert adverts advertisement banner breadcrumb breadcrumbs byline comment "
    "comments community cookie cookies copyright counter disclaimer disqus footer gdpr header menu meta "
    "nav navbar navigation pager pagination popup promo recommend recommended related remark replies reply "
    "rss share sharing shoutbox sidebar skyscraper social sponsor sponsored subscribe tag tags toolbar "
    "topbar widget widgets".split()
)
# ...of which these name a box of links (a box without one is something else).
_LINK_BOX_WORDS = frozenset("recommend recommended related share sharing social tag tags".split())
# ...and these a header (:data:`HEADER_ONLY`).
_HEADER_PARTS = ("header",)
# Ids are often made from headings ("s-meta-options"): only the longer words count there.
_ID_WORDS = frozenset(
    "advert banner breadcrumb breadcrumbs comment comments cookie cookies footer header menu navbar "
    "navigation pagination popup sidebar social sponsor toolbar".split()
)
#: Words for a page's frame that also count inside a compound word (``sitefooter``).
_FRAME_PARTS = ("sidebar", "footer", "header", "navbar", "toolbar", "topbar", "banner", "breadcrumb",
                "pagination", "navigation", "menu", "widget")
# ...and an id naming a table of contents (``tocframe``, ``toc``): a frame of links beside
# the page, where a class of that name is often a chapter's own list of sections (DocBook).
_ID_PARTS = (*(part for part in _FRAME_PARTS if part in _ID_WORDS), "toc")
# ...unless the same class/id also says it is the content.
_CONTENT_WORDS = frozenset("article articles body content contents main post posts entry entries story".split())
_CONTENT_PARTS = ("content", "article")

# Hidden by its style: "display: none", "visibility: hidden", in any case and spacing.
_HIDDEN_STYLES = (("display", "none"), ("visibility", "hidden"))

_LETTER_RUNS = re.compile(r"[^\W\d_]+")
_CASE_CHANGE = re.compile(r"(?<=[a-z])(?=[A-Z])")
_HIDDEN_STYLE = re.compile(
    "|".join(rf"{re.escape(name)}\s*:\s*{re.escape(value)}" for name, value in _HIDDEN_STYLES), re.IGNORECASE
)

#: These rules as the C twin (``extract_c/names.c``) takes them (``content._configure_c_code``),
#: so that they are written here only.
RULES: Final = (
    _BOILERPLATE_ROLES, _HIDDEN_STYLES, (_CLASS_WORDS, _FRAME_PARTS), (_ID_WORDS, _ID_PARTS),
    (_CONTENT_WORDS, _CONTENT_PARTS), _LINK_BOX_WORDS, _HEADER_PARTS,
)


def name_words(names: str) -> list[str]:
    """The words of class or id names, lower-cased.

    >>> name_words("mainNav site-footer_2 sphinxsidebar HTMLParser")
    ['main', 'nav', 'site', 'footer', 'sphinxsidebar', 'htmlparser']
    """
    return [word.lower() for run in _LETTER_RUNS.findall(names) for word in _CASE_CHANGE.split(run)]


def _says(words: list[str], vocabulary: frozenset[str], parts: tuple[str, ...] = ()) -> bool:
    return any(word in vocabulary or word.startswith(parts) or word.endswith(parts) for word in words)


def attributes_say_boilerplate(pairs: tuple[tuple[str, str], ...]) -> int:
    """Whether an element with these attributes (``element.items()``) is boilerplate:
    :data:`NOT_BOILERPLATE`, :data:`BY_ROLE`, :data:`BY_NAME`, :data:`BY_COMPOUND` or
    :data:`BY_LINK_NAME`; or the page's content by its ARIA role (:data:`MAIN_BY_ROLE`).
    :data:`BY_NAME` and :data:`BY_COMPOUND` may carry the flag :data:`HEADER_ONLY`.

    >>> attributes_say_boilerplate((("class", "site-footer"),)), attributes_say_boilerplate((("id", "domains"),))
    (2, 0)
    >>> attributes_say_boilerplate((("class", "sphinxsidebar"),))
    4
    >>> attributes_say_boilerplate((("class", "post-header"),)), attributes_say_boilerplate((("role", "navigation"),))
    (0, 1)
    >>> attributes_say_boilerplate((("class", "related-links"),)), attributes_say_boilerplate((("class", "tags nav"),))
    (5, 2)
    >>> attributes_say_boilerplate((("class", "functionHeader"),)) == BY_NAME | HEADER_ONLY
    True
    """
    attributes = dict(pairs)
    if attributes.get("role") in _BOILERPLATE_ROLES or _is_hidden(attributes):
        return BY_ROLE
    if attributes.get("role") == "main":
        return MAIN_BY_ROLE
    class_words = name_words(attributes.get("class") or "")
    id_words = name_words(attributes.get("id") or "")
    id_says = _says(id_words, _ID_WORDS, _ID_PARTS)
    class_signals = [word for word in class_words if _says([word], _CLASS_WORDS, _FRAME_PARTS)]
    if not (class_signals or id_says) or _says(class_words + id_words, _CONTENT_WORDS, _CONTENT_PARTS):
        return NOT_BOILERPLATE
    by_class_alone = bool(class_signals) and not id_says
    if by_class_alone and all(word in _LINK_BOX_WORDS for word in class_signals):
        return BY_LINK_NAME
    verdict = BY_NAME if _says(class_words, _CLASS_WORDS) or _says(id_words, _ID_WORDS) else BY_COMPOUND
    if by_class_alone and all(word.startswith(_HEADER_PARTS) or word.endswith(_HEADER_PARTS) for word in class_signals):
        verdict |= HEADER_ONLY
    return verdict


def _is_hidden(attributes: dict[str, str]) -> bool:
    if "hidden" in attributes or attributes.get("aria-hidden") == "true":
        return True
    style = attributes.get("style")
    return style is not None and _HIDDEN_STYLE.search(style) is not None
