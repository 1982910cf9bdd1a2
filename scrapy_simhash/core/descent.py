"""Where the main content of a page is: the descent by text density (step 2 of :mod:`.content`).

From ``<body>`` (or the page's only ``<main>``/``<article>``), descend into the child holding
most of the page's prose, text not inside links, so navigation lists weigh nothing; into
the column holding the page's ``<h1>`` when a long sidebar outweighs a short article (not
into the heading alone); or
into a clear winner (a forum's first post). Headings, paragraphs and blocks all of code
passed on the way are kept; the descent never enters a paragraph or a code listing. Sizes come from
:mod:`.textsize`, each child measured at most once.
"""

from __future__ import annotations

from collections.abc import Iterator

from lxml import etree

from .heading import links_home_around
from .text import HEADING_TAGS
from .textsize import ChildSizes, measure, without_markers

#: Descend into a child while it holds at least this share of the page's prose.
DESCEND_SHARE = 0.8
#: ...or into the child holding the page's <h1> (or its <main>/<article>) if it holds
#: this share of its parent's prose...
FAIR_SHARE = 0.2
#: ...and more than this many times the heading's own: a child that holds the heading and
#: little else is a title (DocBook's ``titlepage`` above a chapter's table of contents),
#: not the column of an article outweighed by its sidebar; the content is beside it.
HEADING_ALONE = 1.5
#: Text of a page's own (a short sentence), which the descent does not leave behind with
#: its heading (:func:`_leaves_the_heading_behind`).
OWN_TEXT_BESIDE = 40
#: ...or into a child holding this share, and three times more than any sibling.
WINNER_SHARE, WINNER_MARGIN = 0.6, 3.0
#: ...but never into the description of an entry (a method's parameters and returns
#: below its signature): it belongs with its term, and one winner inside another would
#: each leave a quarter of the text behind.
ENTRY_PARTS = frozenset({"dd"})
#: ...nor into one with more than this share of the prose before it: a forum's first
#: post comes first (its replies after it), while the biggest part of an article or an
#: API page comes after its lead (a class's description and its summary tables before
#: its methods' details).
WINNER_LEAD = 0.1
#: Those two rules weigh every child: only for elements with few children (columns,
#: posts), not for an article's hundred paragraphs.
MAX_CONTESTANTS = 16
_HEADINGS = frozenset(HEADING_TAGS)
#: Kept when the descent leaves them behind (an article's title and lead, an entry's term)...
KEPT_SIBLINGS = _HEADINGS | {"p", "dt"}
#: ...and never descended into (nor a wrapper of exactly one <pre>).
TEXT_BLOCKS = KEPT_SIBLINGS | {"pre", "blockquote"}
#: Code: a child before the chosen one whose text is all in these is kept too (a file's
#: page lists its ``#include`` lines, each a ``<code>``, above its members).
CODE_TAGS = frozenset({"pre", "code", "kbd", "samp", "tt", "var"})


def main_container(
    body: etree._Element, prose: bool = True, total: int | None = None,
    heading_path: frozenset[etree._Element] = frozenset(),
) -> tuple[etree._Element, list[etree._Element]]:
    """The deepest element holding most of the page's prose (or text).

    Start from the page's only ``<main>`` or ``<article>``, if it holds a fair share
    of the prose. Then, level by level, descend into the child holding 80% of it (unless
    that leaves the heading's own text behind: :func:`_leaves_the_heading_behind`);
    failing that, into the child holding the page's first ``<h1>`` if that child
    holds a fair share (an article outweighed by its site's sidebar) and more than the
    heading (not a title page's header, beside the content); failing that,
    into a clear winner, three times the size of any sibling (a forum post above its
    replies); never into a paragraph or a code listing. Headings, paragraphs and blocks
    all of code before the chosen child are kept (the title and lead of an article whose
    biggest section won, a file's ``#include`` lines). Return the container and those elements.

    *total*, if given, must be ``measure(body, prose)`` (sizes are derived from it);
    *heading_path*: :func:`first_heading_path`, asked before pruning.
    """
    left_behind: list[etree._Element] = []
    landmarks = list(body.iter("h1", "main", "article"))  # one walk of the tree for the three
    heading = next((element for element in landmarks if element.tag == "h1"), None)
    on_heading_path = set(heading.iterancestors()) if heading is not None else set()
    on_heading_path.add(heading)
    heading_chars = measure(heading, prose) if heading is not None else 0
    container, total = _semantic_start(body, landmarks, prose, total)
    held = total
    sizer = ChildSizes(prose)
    while held > 0:
        found = _dominant_child(sizer.of_children(container, held), held, DESCEND_SHARE * total)
        if found is not None and _leaves_the_heading_behind(sizer, container, held, found[0], heading_path):
            break
        if found is None and len(container) <= MAX_CONTESTANTS:
            sizes = [(chars, child) for child, chars in sizer.of_children(container, held)]
            found = _heading_child(sizes, held, on_heading_path, heading_chars)
            if found is None:
                found = _clear_winner(sizes, held)
            if found is not None:
                total = found[1]
        if found is None or _is_text_block(found[0]):
            break
        # The headings, paragraphs and code before the chosen child stay: the title of an
        # article whose biggest section won, its lead, a file's includes. (Those after it:
        # replies, "last modified".)
        for child in container:
            if child is found[0]:
                break
            if child.tag in KEPT_SIBLINGS or (isinstance(child.tag, str) and _is_code(child)):
                left_behind.append(child)
        container, held = found
    return container, left_behind


def first_heading_path(body: etree._Element) -> frozenset[etree._Element]:
    """The elements that hold the page's first ``<h1>`` in *body*, asked before pruning (a
    page header, ``<header>``, may hold it); none when a link in or around it goes to the
    site's home (:func:`.heading.links_home_around`): the site's name, not the page's."""
    first = next(body.iter("h1"), None)
    if first is None or links_home_around(first):
        return frozenset()
    return frozenset(first.iterancestors())


def _leaves_the_heading_behind(
    sizer: ChildSizes, container: etree._Element, held: int, found: etree._Element,
    heading_path: frozenset[etree._Element],
) -> bool:
    """Whether descending from *container* (which holds the page's first ``<h1>``,
    *heading_path*) into its dominant child *found* (which does not) leaves text of the
    page's own behind: :data:`OWN_TEXT_BESIDE` characters in its other children that are
    not headings, paragraphs or code (those before *found* the descent keeps anyway; those
    after it are a thread's replies, a "last modified" line). *found* is
    then a block the site shows on every page (a disclaimer, an appeal for support, a legal
    notice) outweighing a short page's own text (a term's definition, a brief): the descent
    stops there, both kept. Descending kept the block alone, and a dictionary's or a news
    site's short pages were copies of each other at distance 0 (reviews of generated
    sites), on WordPress' markup too, whose ``<h1>`` is in a pruned ``<header>``."""
    if container not in heading_path or found in heading_path:
        return False
    rest = sum(
        chars for child, chars in sizer.of_children(container, held)
        if child is not found and child.tag not in KEPT_SIBLINGS and not (isinstance(child.tag, str) and _is_code(child))
    )
    return rest >= OWN_TEXT_BESIDE


def _is_code(element: etree._Element) -> bool:
    """Whether all of *element*'s text is in :data:`CODE_TAGS` elements, and some is."""
    outside, inside = _text_by_code(element)
    return inside and not outside


def _text_by_code(element: etree._Element) -> tuple[bool, bool]:
    """Whether *element* holds text outside code elements, and inside them (its tail aside)."""
    if element.tag in CODE_TAGS:
        return False, not _blank(etree.tostring(element, method="text", encoding=str, with_tail=False))
    outside, inside = not _blank(element.text), False
    for child in element:
        if outside:
            break
        if isinstance(child.tag, str):
            child_outside, child_inside = _text_by_code(child)
            outside, inside = outside or child_outside, inside or child_inside
        outside = outside or not _blank(child.tail)
    return outside, inside


def _blank(text: str | None) -> bool:
    """Spaces and link markers only (or nothing)."""
    return not text or not without_markers(text).strip()


def _is_text_block(element: etree._Element) -> bool:
    # A paragraph or a code listing (or a wrapper of one listing) is a part of the content,
    # never its container: descending into it would leave the rest of the article behind.
    # (A wrapper of one paragraph may be the article: <div id="content"><p>...</p></div>.)
    if element.tag in TEXT_BLOCKS:
        return True
    while len(element) == 1:
        element = element[0]
        if element.tag == "pre":
            return True
    return False


def _semantic_start(
    body: etree._Element, landmarks: list[etree._Element], prose: bool, total: int | None
) -> tuple[etree._Element, int]:
    if total is None:
        total = measure(body, prose)
    for tag in ("main", "article"):
        found = [element for element in landmarks if element.tag == tag]
        if len(found) == 1:
            chars = measure(found[0], prose)
            if chars >= FAIR_SHARE * total:
                return found[0], chars
    return body, total


def _heading_child(
    sizes: list[tuple[int, etree._Element]], held: int, on_heading_path: set[etree._Element | None],
    heading_chars: int,
) -> tuple[etree._Element, int] | None:
    for chars, child in sizes:
        if child in on_heading_path:
            if chars < FAIR_SHARE * held or chars <= HEADING_ALONE * heading_chars:
                return None
            return child, chars
    return None


def _clear_winner(
    sizes: list[tuple[int, etree._Element]], held: int
) -> tuple[etree._Element, int] | None:
    ranked = sorted(sizes, key=lambda size: size[0], reverse=True)
    if not ranked or ranked[0][0] < WINNER_SHARE * held:
        return None
    if len(ranked) > 1 and ranked[0][0] < WINNER_MARGIN * ranked[1][0]:
        return None
    winner = ranked[0][1]
    if winner.tag in ENTRY_PARTS:
        return None
    lead = 0
    for chars, child in sizes:  # (in document order)
        if child is winner:
            break
        lead += chars
    return None if lead > WINNER_LEAD * held else (winner, ranked[0][0])


def _dominant_child(
    children: Iterator[tuple[etree._Element, int]], left: int, needed: float
) -> tuple[etree._Element, int] | None:
    """The child (of a parent holding *left* characters) holding *needed* of them."""
    if left < needed:
        return None
    for child, chars in children:
        if chars >= needed:
            return child, chars
        left -= chars
        if left < needed:
            return None  # what remains cannot hold enough: stop measuring
    return None
