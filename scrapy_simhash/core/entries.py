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
"""

from __future__ import annotations

import re

from lxml import etree

from .textsize import LINK_CLOSE, LINK_OPEN, measure_both

#: Whose element children are entries of one list.
LIST_TAGS = ("table", "thead", "tbody", "tfoot", "ul", "ol", "dl")
#: A list has at least this many entries...
MIN_ENTRIES = 3
#: ...and of those with text, at least this share not mostly links (content._MAX_LINK_DENSITY).
MIN_TEXT_SHARE = 1 / 3
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
