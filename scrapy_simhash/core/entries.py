"""Lists judged whole: the entries of a list of text are its content (step 3 of :mod:`.content`).

Blocks that are mostly link text are navigation and are left out of the main content. A
list or a table is one thing, though: navigation is a list whose every entry is a link,
while a list of members, of functions or of files mixes entries of text ("check_no_
subscribers() const noexcept  Subscriptor  private") with entries that happen to be mostly
links ("counter  Subscriptor  mutable private"). Judged row by row, the second kind went,
and with it what tells a class's member list from its siblings': two such lists kept only
their long rows, the ones inherited from the same bases.

So the entries of a list (the element children of a ``<table>``, ``<tbody>``, ``<ul>``,
``<dl>``...: rows, items, terms) are judged together: when at least a third of those with
text are not mostly links, the list is text, and so are its links: a row mostly of links is
kept, and so is a cell of a row of text that is only a link (FPDoc's property tables put
each cell in a paragraph of its own: "pl", "ro", and the property's name, a link). A list
of links is navigation as before.

A list of *cards* is a listing's content, though its entries are all links: a shop's
category page shows each product as one link around its name, its price and its rating,
where a menu's link holds one text (:func:`card_links`). Its links count as prose, as
those of a table of contents do (:func:`contents_links`): without them, the pages of one
category (page 1, page 2...) kept only what they share, their heading and the category's
text, and were dropped as copies of each other.
"""

from __future__ import annotations

import re

from lxml import etree

from .boilerplate import CONTAINER_TAGS
from .textsize import LINK_CLOSE, LINK_OPEN, measure_both

#: Whose element children are entries of one list.
LIST_TAGS = ("table", "thead", "tbody", "tfoot", "ul", "ol", "dl")
#: A list has at least this many entries...
MIN_ENTRIES = 3
#: ...and of those with text, at least this share not mostly links (content._MAX_LINK_DENSITY).
MIN_TEXT_SHARE = 1 / 3
#: What holds a list of cards: a list, or a container a theme lays its grid out with
#: (``<div class="products">``); the C code's LIST and CONTAINER elements.
CARD_LIST_TAGS = tuple(dict.fromkeys((*LIST_TAGS, *CONTAINER_TAGS)))
#: A card holds at least this many texts in elements of their own (its link included)...
MIN_CARD_TEXTS = 3
#: ...and a list of cards has at least MIN_ENTRIES of them, this share of its entries.
MIN_CARD_SHARE = 0.8
#: A table of contents has at least MIN_ENTRIES numbered links, this share of its links with text.
MIN_NUMBERED_SHARE = 0.8
# A section number then a title: "1. Intro", "2.3 Setup". ASCII digits and spaces, and the
# no-break space (the C twin's set); group 1 holds the nested levels (".3").
_SPACES = " \t\n\r\f\v\xa0"
_NUMBERED = re.compile(f"[{_SPACES}]*[0-9]+((?:\\.[0-9]+)*)\\.?[{_SPACES}]+[^{_SPACES}]")


def text_list_entries(element: etree._Element, max_link_density: float) -> list[etree._Element]:
    """The entries of the lists of text in *element* (itself included): lists of at least
    :data:`MIN_ENTRIES` entries, :data:`MIN_TEXT_SHARE` of those with text not mostly links
    (more than *max_link_density* of their text), measured with their links marked
    (:func:`.textsize.mark_links`)."""
    found: list[etree._Element] = []
    for listing in element.iter(*LIST_TAGS):
        entries = [child for child in listing if isinstance(child.tag, str)]
        if len(entries) < MIN_ENTRIES:
            continue
        verdicts = [is_links for is_links in (_is_links(entry, max_link_density) for entry in entries)
                    if is_links is not None]
        if verdicts and verdicts.count(False) >= MIN_TEXT_SHARE * len(verdicts):
            found.extend(entries)
    return found


def contents_links(body: etree._Element) -> set[etree._Element]:
    """The links of the tables of contents in *body*: every link of a list (:data:`LIST_TAGS`)
    of at least :data:`MIN_ENTRIES` numbered links (:data:`_NUMBERED`), one of them nested,
    that are :data:`MIN_NUMBERED_SHARE` of its links with text. Asked before the links are
    marked."""
    found: set[etree._Element] = set()
    for listing in body.iter(*LIST_TAGS):
        links = list(listing.iter("a"))
        numbered = nested = with_text = 0
        for link in links:
            text = etree.tostring(link, method="text", encoding=str, with_tail=False)
            with_text += bool(text.strip(_SPACES))
            number = _NUMBERED.match(text)
            numbered += number is not None
            nested |= number is not None and bool(number.group(1))
        if nested and numbered >= MIN_ENTRIES and numbered >= MIN_NUMBERED_SHARE * with_text:
            found.update(links)
    return found


def card_links(body: etree._Element) -> set[etree._Element]:
    """The links of the lists of cards in *body*: lists (:data:`CARD_LIST_TAGS`) of at least
    :data:`MIN_ENTRIES` entries that are each one link holding :data:`MIN_CARD_TEXTS` texts
    of elements of their own (:func:`card_link`), :data:`MIN_CARD_SHARE` of their entries.
    Asked before the links are marked."""
    found: set[etree._Element] = set()
    for listing in body.iter(*CARD_LIST_TAGS):
        entries = [child for child in listing if isinstance(child.tag, str)]
        cards = [link for link in map(card_link, entries) if link is not None]
        if len(cards) >= MIN_ENTRIES and len(cards) >= MIN_CARD_SHARE * len(entries):
            found.update(cards)
    return found


def card_link(entry: etree._Element) -> etree._Element | None:
    """The link of *entry* when it is a card: its one link, holding :data:`MIN_CARD_TEXTS`
    texts of elements of their own (a product's name, price and rating); else None."""
    links = list(entry.iter("a"))
    if len(links) != 1:
        return None
    texts = sum(1 for element in links[0].iter(etree.Element) if _has_own_text(element))
    return links[0] if texts >= MIN_CARD_TEXTS else None


def _has_own_text(element: etree._Element) -> bool:
    """Whether *element* holds text (not only spaces) outside its child elements."""
    return any((text or "").strip() for text in (element.text, *(child.tail for child in element)))


def unmark_entries(entries: list[etree._Element]) -> None:
    """Take the link markers off the links in *entries*, once a link (lists nest)."""
    links = {link for entry in entries for link in entry.iter("a")}
    for link in links:
        link.text = (link.text or "").removeprefix(LINK_OPEN) or None
        link.tail = (link.tail or "").removeprefix(LINK_CLOSE) or None


def _is_links(entry: etree._Element, max_link_density: float) -> bool | None:
    """Whether an entry is mostly link text (None: it has no text)."""
    prose, everything = measure_both(entry)
    if not everything:
        return None
    return everything - prose > max_link_density * everything
