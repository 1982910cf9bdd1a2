"""Main-content extraction on an lxml tree, by general signals only.

A few cheap passes (C-level scans of the tree; Python touches only containers, never
the thousands of inline ``<span>`` of a code listing):

1. *Prune* boilerplate by its role (:mod:`.boilerplate`): semantic tags, ARIA
   landmarks, hidden elements, Readability-style class/id names.
2. *Locate* the main content by text density (:func:`main_container`): from
   ``<body>`` (or the page's only ``<main>``/``<article>``), descend into the child
   holding most of the page's *prose*, text not inside links, so navigation lists
   weigh nothing. Headings and paragraphs before the chosen child are kept (an
   article's title and lead), and the descent never enters a paragraph or a code
   listing: those are parts of an article, not its container.
3. *Split* it into text blocks at block-level elements, and drop the blocks that
   are mostly link text (link lists), unless the whole page is links (a table of
   contents), and the credit and legal lines (:func:`.boilerplate.is_credit_line`).

Any callable ``(root) -> list[str]`` can replace :func:`extract_main_blocks` (see
:class:`~scrapy_simhash.core.fingerprinter.Fingerprinter`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from lxml import etree

from . import boilerplate, textsize
from .boilerplate import is_credit_line, prune_boilerplate
from .text import BLOCK_BOUNDARY, BLOCK_TAGS, INVISIBLE_TAGS, split_blocks, strip_invisible_elements
from .textsize import (
    LINK_CLOSE, LINK_OPEN, LINK_TEXT, ChildSizes, mark_links, measure, measure_both, visible_chars,
)  # fmt: skip

try:
    from . import _extract  # this module's algorithm in C, built at install when a compiler is there
except ImportError:
    _extract = None  # type: ignore[assignment]

#: A pluggable extractor: parsed page (modifiable) -> its main-content text blocks.
Extractor = Callable[[etree._Element], list[str]]

#: Descend into a child while it holds at least this share of the page's prose.
_DESCEND_SHARE = 0.8
#: ...or into the child holding the page's <h1> (or its <main>/<article>) if it holds
#: this share of its parent's prose...
_FAIR_SHARE = 0.2
#: ...or into a child holding this share, and three times more than any sibling.
_WINNER_SHARE, _WINNER_MARGIN = 0.6, 3.0
#: Those two rules weigh every child: only for elements with few children (columns,
#: posts), not for an article's hundred paragraphs.
_MAX_CONTESTANTS = 16
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
#: Kept when the descent leaves them behind (an article's title and lead)...
_KEPT_SIBLINGS = _HEADINGS | {"p"}
#: ...and never descended into (nor a wrapper of exactly one <pre>).
_TEXT_BLOCKS = _KEPT_SIBLINGS | {"pre", "blockquote"}
#: Blocks whose text is mostly link text are navigation, not prose.
_MAX_LINK_DENSITY = 0.5
#: Below this share of prose the page is a list of links (an index, a table of contents).
_MIN_PROSE_SHARE = 0.3
_JOINER = BLOCK_BOUNDARY


def kernel() -> str:
    """Which code extracts: ``"c"`` (:mod:`._extract`, ~10x faster) or ``"python"``.

    Both give the same blocks; the C code does not modify the tree.
    """
    return "python" if _extract is None else "c"


def extract_main_blocks(root: etree._Element) -> list[str]:
    """The text blocks of the main content of a parsed page (see the module doc).

    Invisible elements (:data:`.text.INVISIBLE_TAGS`) are left out, whether *root*
    still has them or not (``parse_html(..., strip_invisible=False)``).
    """
    blocks = extract_leaving_tree(root)
    return blocks if blocks is not None else _extract_in_python(root)


def extract_leaving_tree(root: etree._Element) -> list[str] | None:
    """:func:`extract_main_blocks` without modifying the tree, or None when that cannot be
    done here: the C code was not built, or the tree holds what it does not model (entity
    references, line numbers past 65534). For a tree that is someone else's too, such as
    Scrapy's ``response.selector.root``.
    """
    if _extract is None:
        return None
    try:
        return _extract.main_blocks(root)
    except _extract.Unsupported:
        return None


def _extract_in_python(root: etree._Element) -> list[str]:
    strip_invisible_elements(root)  # a walk of the tree, when it was stripped already
    body = root.find("body")
    if body is None:
        body = root
    prune_boilerplate(body)
    mark_links(body)
    # A table of contents is all links: then the links are the content.
    prose, everything = measure_both(body)
    links_are_content = prose < _MIN_PROSE_SHARE * everything
    if links_are_content:
        container, left_behind = main_container(body, prose=False, total=everything)
    else:
        container, left_behind = main_container(body, prose=True, total=prose)
    blocks = [block for element in left_behind for block in split_blocks(element)] + split_blocks(container)
    if not links_are_content:
        blocks = [block for block in blocks if LINK_OPEN not in block or not _is_link_list(block)]
    blocks = [block for block in blocks if not is_credit_line(block)]
    if not blocks:
        return blocks
    # Markers out of all blocks at once: they were cut at _JOINER, so none holds it.
    unmarked = _JOINER.join(blocks).replace(LINK_OPEN, "").replace(LINK_CLOSE, "")
    return unmarked.split(_JOINER)


def _is_link_list(block: str) -> bool:
    # Counting the (short) link texts, not the block less them: the same difference.
    link_chars = visible_chars("".join(LINK_TEXT.findall(block)))
    return link_chars > _MAX_LINK_DENSITY * visible_chars(block)


def main_container(
    body: etree._Element, prose: bool = True, total: int | None = None
) -> tuple[etree._Element, list[etree._Element]]:
    """The deepest element holding most of the page's prose (or text).

    Start from the page's only ``<main>`` or ``<article>``, if it holds a fair share
    of the prose. Then, level by level, descend into the child holding 80% of it;
    failing that, into the child holding the page's first ``<h1>`` if that child
    holds a fair share (an article outweighed by its site's sidebar); failing that,
    into a clear winner, three times the size of any sibling (a forum post above its
    replies); never into a paragraph or a code listing. Headings and paragraphs before
    the chosen child are kept (the title and lead of an article whose biggest section
    won). Return the container and those elements.

    *total*, if given, must be ``measure(body, prose)`` (sizes are derived from it).
    """
    left_behind: list[etree._Element] = []
    landmarks = list(body.iter("h1", "main", "article"))  # one walk of the tree for the three
    heading = next((element for element in landmarks if element.tag == "h1"), None)
    on_heading_path = set(heading.iterancestors()) if heading is not None else set()
    on_heading_path.add(heading)
    container, total = _semantic_start(body, landmarks, prose, total)
    held = total
    sizer = ChildSizes(prose)
    while held > 0:
        found = _dominant_child(sizer.of_children(container, held), held, _DESCEND_SHARE * total)
        if found is None and len(container) <= _MAX_CONTESTANTS:
            sizes = [(chars, child) for child, chars in sizer.of_children(container, held)]
            found = _heading_child(sizes, held, on_heading_path)
            if found is None:
                found = _clear_winner(sizes, held)
            if found is not None:
                total = found[1]
        if found is None or _is_text_block(found[0]):
            break
        # The headings and paragraphs before the chosen child stay: the title of an article
        # whose biggest section won, its lead. (Those after it: replies, "last modified".)
        for child in container:
            if child is found[0]:
                break
            if child.tag in _KEPT_SIBLINGS:
                left_behind.append(child)
        container, held = found
    return container, left_behind


def _is_text_block(element: etree._Element) -> bool:
    # A paragraph or a code listing (or a wrapper of one listing) is a part of the content,
    # never its container: descending into it would leave the rest of the article behind.
    # (A wrapper of one paragraph may be the article: <div id="content"><p>...</p></div>.)
    if element.tag in _TEXT_BLOCKS:
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
            if chars >= _FAIR_SHARE * total:
                return found[0], chars
    return body, total


def _heading_child(
    sizes: list[tuple[int, etree._Element]], held: int, on_heading_path: set[etree._Element | None]
) -> tuple[etree._Element, int] | None:
    for chars, child in sizes:
        if child in on_heading_path:
            return (child, chars) if chars >= _FAIR_SHARE * held else None
    return None


def _clear_winner(
    sizes: list[tuple[int, etree._Element]], held: int
) -> tuple[etree._Element, int] | None:
    ranked = sorted(sizes, key=lambda size: size[0], reverse=True)
    if not ranked or ranked[0][0] < _WINNER_SHARE * held:
        return None
    if len(ranked) > 1 and ranked[0][0] < _WINNER_MARGIN * ranked[1][0]:
        return None
    return ranked[0][1], ranked[0][0]


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


def _configure_c_code() -> None:
    """Give :mod:`._extract` the rules of this module and its helpers: written once."""
    assert _extract is not None
    classes = [
        (BLOCK_TAGS, _extract.BLOCK),
        (boilerplate.BOILERPLATE_TAGS, _extract.BOILERPLATE),
        (boilerplate.CONTAINER_TAGS, _extract.CONTAINER),
        ({"a"}, _extract.LINK),
        ({"h1"}, _extract.HEADING),
        ({"main"}, _extract.MAIN),
        ({"article"}, _extract.ARTICLE),
        (_KEPT_SIBLINGS, _extract.KEPT),
        (_TEXT_BLOCKS, _extract.TEXT_BLOCK),
        ({"pre"}, _extract.LISTING),
        (INVISIBLE_TAGS, _extract.INVISIBLE),
    ]
    tags: dict[bytes, int] = {}
    for names, flag in classes:
        for name in names:
            tags[name.encode()] = tags.get(name.encode(), 0) | flag
    shares = (
        _DESCEND_SHARE, _FAIR_SHARE, _WINNER_SHARE, _WINNER_MARGIN, _MAX_LINK_DENSITY, _MIN_PROSE_SHARE,
        boilerplate.MAX_PRUNED_SHARE,
    )  # fmt: skip
    counts = (_MAX_CONTESTANTS, textsize.MAX_SIZED_AT_ONCE)
    credit = (is_credit_line, boilerplate.CREDIT_BRACKETS, boilerplate.CREDIT_FIRST_LETTERS)
    _extract.configure(tags, boilerplate.attributes_say_boilerplate, credit, shares, counts)


if _extract is not None:
    _configure_c_code()
