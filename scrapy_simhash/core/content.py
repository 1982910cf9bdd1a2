"""Main-content extraction on an lxml tree, by general signals only.

A few cheap passes (C-level scans of the tree; Python touches only containers, never
the thousands of inline ``<span>`` of a code listing):

0. Leave out the parts that copy another document's entries (:mod:`.digests`).
1. *Prune* boilerplate by its role (:mod:`.boilerplate`): semantic tags, ARIA
   landmarks, hidden elements, Readability-style class/id names; but the page's heading
   stays (:mod:`.heading`).
2. *Locate* the main content by text density (:func:`.descent.main_container`): from
   ``<body>`` (or the page's only ``<main>``/``<article>``), descend into the child
   holding most of the page's *prose*, text not inside links, so navigation lists
   weigh nothing (the links of a numbered table of contents are prose:
   :func:`.entries.contents_links`, and so are those of a list of cards, a shop's
   products: :func:`.entries.card_links`). Headings and paragraphs before the chosen child
   are kept (an article's title and lead), and the descent never enters a paragraph or
   a code listing: those are parts of an article, not its container.
3. *Split* it into text blocks at block-level elements, and drop the blocks that
   are mostly link text (link lists), unless the whole page is links (a table of
   contents), they are in a list of text (:mod:`.entries`) or their links are in code or
   a heading; the credit and legal lines (:func:`.boilerplate.is_credit_line`), and
   a title that the next block repeats (:func:`without_repeats`).

Any callable ``(root) -> list[str]`` can replace :func:`extract_main_blocks` (see
:class:`~scrapy_simhash.core.fingerprinter.Fingerprinter`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import lxml
from lxml import etree

from . import boilerplate, descent, digests, entries, heading, names, textsize, threads
from .boilerplate import is_credit_line, prune_boilerplate
from .descent import main_container
from .text import (
    BLOCK_BOUNDARY, BLOCK_TAGS, CELL_TAGS, HEADING_TAGS, INVISIBLE_TAGS, body_of, page_title, split_blocks,
    strip_invisible_elements,
)
from .textsize import LINK_OPEN, LINK_TEXT, mark_links, measure_both, unmark_links, visible_chars, without_markers

try:
    from . import _extract  # this module's algorithm in C, built at install when a compiler is there
except ImportError:
    _extract = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

#: A pluggable extractor: parsed page (modifiable) -> its main-content text blocks.
Extractor = Callable[[etree._Element], list[str]]

#: Blocks whose text is mostly link text are navigation, not prose. Not from half: a line
#: that names where something is ("Definition at line 131 of file types.h.", the number and
#: the file linked) is 53% links, a menu ("Home | About | Contact") 90%.
_MAX_LINK_DENSITY = 0.6
#: Below this share of prose the page is a list of links (an index, a table of contents).
_MIN_PROSE_SHARE = 0.3
#: Never a link list, whatever their links: a heading made of links (rustdoc's
#: ``core::arch::vadd_u16``) is the page's title, a listing's linked types are its code, and
#: so are the links in code (``#include <deal.II/base/config.h>``, a signature's types).
_NEVER_LINK_LISTS = frozenset(HEADING_TAGS) | descent.CODE_TAGS
_JOINER = BLOCK_BOUNDARY
#: What a C string of UTF-8 cannot hold: a NUL ends it, a lone surrogate has no UTF-8.
_NOT_IN_C_STRINGS = re.compile("[\0\ud800-\udfff]")


def kernel() -> str:
    """Which code extracts: ``"c"`` (:mod:`._extract`, ~10x faster) or ``"python"``.

    Both give the same blocks; the C code does not modify the tree.
    """
    return "python" if _extract is None else "c"


def extract_main_blocks(root: etree._Element, url: str | None = None, *, title: str | None = None) -> list[str]:
    """The text blocks of the main content of a parsed page (see the module doc), at
    *url* if known (:mod:`.digests` tells the page's own links by it). *title*: its
    :func:`.text.page_title`, when the caller read it already (else read here).

    Invisible elements (:data:`.text.INVISIBLE_TAGS`) are left out, whether *root*
    still has them or not (``parse_html(..., strip_invisible=False)``).
    """
    blocks = extract_leaving_tree(root, url, title=title)
    return blocks if blocks is not None else _extract_in_python(root, url, title)


def extract_leaving_tree(
    root: etree._Element, url: str | None = None, *, title: str | None = None
) -> list[str] | None:
    """:func:`extract_main_blocks` without modifying the tree, or None when that cannot be
    done here: the C code was not built, or the tree holds what it does not model (entity
    references, line numbers past 65534). For a tree that is someone else's too, such as
    Scrapy's ``response.selector.root``.
    """
    if _extract is None:
        return None
    try:
        return without_repeats(_extract.main_blocks(root, *c_arguments(root, url, title)))
    except _extract.Unsupported:
        return None


def read_title(root: etree._Element) -> str:
    """:func:`.text.page_title`, read in C where the C extraction runs: the same text, without
    lxml's proxies for ``<head>`` and ``<title>`` (most of its ~8 us)."""
    if _extract is not None:
        try:
            return _extract.page_title(root)  # type: ignore[no-any-return]
        except _extract.Unsupported:
            pass
    return page_title(root)


def c_arguments(
    root: etree._Element, url: str | None, title: str | None = None
) -> tuple[str | None, tuple[bytes, ...]]:
    """What :mod:`._extract`'s ``main_blocks`` takes after the root: the page's document
    name (:func:`.digests.page_document`) and the texts that may show its heading
    (:func:`.heading.heading_texts`)."""
    title = read_title(root) if title is None else title
    return _c_document(url), tuple(part.encode() for part in heading.heading_texts(root, title))


def _c_document(url: str | None) -> str | None:
    """:func:`.digests.page_document` as C can take it (UTF-8, NUL-terminated). A name with a
    lone surrogate or a NUL is no link's (lxml's hrefs have neither): it tells no link
    apart, as no name does, so it goes as None, as the Python twin's compares (and fails)."""
    document = digests.page_document(url)
    if document is not None and _NOT_IN_C_STRINGS.search(document):
        return None
    return document


def _extract_in_python(root: etree._Element, url: str | None = None, title: str | None = None) -> list[str]:
    title = page_title(root) if title is None else title  # (before <head> is stripped)
    shown_heading = heading.heading_texts(root, title)  # (of the whole tree, as the C code's)
    digests.remove_digests(root, url)  # first: its measures count the text of scripts, as the C code does
    strip_invisible_elements(root)  # a walk of the tree, when it was stripped already
    body = body_of(root)
    page_heading = heading.page_heading(body, shown_heading)
    heading_path = descent.first_heading_path(body)  # (before pruning: a <header> may hold it)
    if page_heading is not None and not heading.lost_by_name(page_heading, body):
        page_heading = None  # (asked before pruning: it looks at what will be pruned)
    prune_boilerplate(body)
    mark_links(body, prose=entries.contents_links(body) | entries.card_links(body))
    # A table of contents is all links: then the links are the content.
    prose, everything = measure_both(body)
    links_are_content = prose < _MIN_PROSE_SHARE * everything
    if links_are_content:
        container, left_behind = main_container(body, prose=False, total=everything, heading_path=heading_path)
    else:
        container, left_behind = main_container(body, prose=True, total=prose, heading_path=heading_path)
    kept = [*left_behind, container]
    if page_heading is not None and not heading.is_kept(page_heading, kept):
        kept.insert(0, page_heading)
    if not links_are_content:
        list_entries = [entry for element in kept for entry in entries.text_list_entries(element, _MAX_LINK_DENSITY)]
        for element in kept:
            unmark_links(element, _NEVER_LINK_LISTS)
        entries.unmark_entries(list_entries)
    blocks = [block for element in kept for block in split_blocks(element)]
    # (the credit lines first: they go anyway, so they must not weigh against the link lists)
    blocks = [block for block in blocks if not is_credit_line(block)]
    if not links_are_content:
        blocks = _without_link_lists(blocks)
    if not blocks:
        return blocks
    # Markers out of all blocks at once: they were cut at _JOINER, so none holds it.
    unmarked = without_markers(_JOINER.join(blocks))
    return without_repeats(unmarked.split(_JOINER))


def without_repeats(blocks: list[str]) -> list[str]:
    """*blocks* without a title that repeats in the block after it (spaces aside, and
    blocks of spaces skipped): a repost's template prints the title above an article that
    starts with it too. (Only there: a page's own text may repeat a line on purpose, as
    table rows do.)

    >>> without_repeats(["Models", "Models", "Model API reference.", "Models", "Models"])
    ['Models', 'Model API reference.', 'Models', 'Models']
    >>> without_repeats(["\\n", "Models", " \\n ", " Models", "Model API reference."])
    ['\\n', ' \\n ', ' Models', 'Model API reference.']

    Link markers aside: :func:`_without_link_lists` weighs blocks that still hold them.
    """
    first = -1
    title: list[str] | None = None
    for number, block in enumerate(blocks):
        words = _words(block)
        if not words:
            continue
        if title is not None:
            return blocks[:first] + blocks[first + 1 :] if words == title else blocks
        first, title = number, words
    return blocks


def _words(block: str) -> list[str]:
    return without_markers(block).split()


def _without_link_lists(blocks: list[str]) -> list[str]:
    """*blocks* less the link lists (navigation), unless those outweigh the rest: then
    the container is a listing (an index, a list of members), whose entries are links
    and tell it apart from the site's other listings."""
    kept = [block for block in blocks if LINK_OPEN not in block or not _is_link_list(block)]
    if len(kept) == len(blocks):
        return blocks
    # Weighed without a title that the next block repeats: it goes anyway, and a repost's
    # template brings one (a chapter's repost lost the table of contents its original kept).
    weighed = without_repeats(blocks)
    kept_chars = sum(visible_chars(block) for block in weighed if LINK_OPEN not in block or not _is_link_list(block))
    return kept if 2 * kept_chars >= sum(visible_chars(block) for block in weighed) else blocks


def _is_link_list(block: str) -> bool:
    # Counting the (short) link texts, not the block less them: the same difference.
    link_chars = visible_chars("".join(LINK_TEXT.findall(block)))
    return link_chars > _MAX_LINK_DENSITY * visible_chars(block)


def _configure_c_code() -> None:
    """Give :mod:`._extract` the rules of this module and its helpers: written once."""
    assert _extract is not None
    classes = [
        (BLOCK_TAGS, _extract.BLOCK),
        (boilerplate.BOILERPLATE_TAGS, _extract.BOILERPLATE),
        (boilerplate.CONTAINER_TAGS, _extract.CONTAINER),
        (boilerplate.LANDMARK_TAGS, _extract.LANDMARK),
        ({"a"}, _extract.LINK),
        ({"h1"}, _extract.HEADING),
        ({"main"}, _extract.MAIN),
        ({"article"}, _extract.ARTICLE),
        (descent.KEPT_SIBLINGS, _extract.KEPT),
        (descent.TEXT_BLOCKS, _extract.TEXT_BLOCK),
        ({"pre"}, _extract.LISTING),
        (INVISIBLE_TAGS, _extract.INVISIBLE),
        (_NEVER_LINK_LISTS, _extract.NEVER_LINK_LIST),
        (boilerplate.SECTION_HEADINGS, _extract.SECTION_HEADING),
        ({"p"}, _extract.PARAGRAPH),
        (descent.ENTRY_PARTS, _extract.ENTRY_PART),
        (CELL_TAGS, _extract.CELL),
        (entries.LIST_TAGS, _extract.LIST),
        (descent.CODE_TAGS, _extract.CODE),
        ({"br"}, _extract.BREAK),
    ]
    tags: dict[bytes, int] = {}
    for tag_names, flag in classes:
        for name in tag_names:
            tags[name.encode()] = tags.get(name.encode(), 0) | flag
    shares = (
        descent.DESCEND_SHARE, descent.FAIR_SHARE, descent.WINNER_SHARE, descent.WINNER_MARGIN,
        _MAX_LINK_DENSITY, _MIN_PROSE_SHARE, boilerplate.MAX_PRUNED_SHARE, boilerplate.MAX_LINK_SHARE,
        descent.WINNER_LEAD, entries.MIN_TEXT_SHARE, descent.HEADING_ALONE, entries.MIN_NUMBERED_SHARE,
        entries.MIN_CARD_SHARE,
    )  # fmt: skip
    counts = (descent.MAX_CONTESTANTS, textsize.MAX_SIZED_AT_ONCE, boilerplate.MIN_SECTION_PROSE, entries.MIN_ENTRIES,
              entries.MIN_CARD_TEXTS, descent.OWN_TEXT_BESIDE)
    credit = (is_credit_line, boilerplate.CREDIT_BRACKETS, boilerplate.CREDIT_STARTS, boilerplate.CASE_FOLDS_TO_ASCII,
              boilerplate.MAX_STAMP_LINE, boilerplate.MAX_CREDIT_LINE)
    # (the C verdict asks names.attributes_say_boilerplate only about a few rare styles)
    _extract.configure(tags, names.attributes_say_boilerplate, credit, shares, counts)
    _extract.configure_names(*names.RULES)
    _extract.configure_digests(digests.MIN_ENTRIES, digests.COVER, digests.MAX_CHARS_PER_LINK)
    _extract.configure_threads(threads.has_stamp)


def c_code_mismatch(built: tuple[str, int], running: tuple[str, int]) -> str | None:
    """Why the C extraction must not run here, or ``None``: it reads lxml's ``_Element``
    and libxml2's nodes as the headers it was built with lay them out, so after an
    upgrade of lxml (or a libxml2 of another version) it could misread the tree.
    *built* and *running*: ``(lxml version, libxml2 version number)``.
    """
    if built == running:
        return None
    return (f"it was built against lxml {built[0]} with libxml2 {built[1]}, and lxml {running[0]} with "
            f"libxml2 {running[1]} runs")


def _running_lxml() -> tuple[str, int]:
    major, minor, patch = etree.LIBXML_VERSION[:3]
    return lxml.__version__, major * 10000 + minor * 100 + patch


if _extract is not None:
    _mismatch = c_code_mismatch((_extract.BUILT_LXML_VERSION, _extract.BUILT_LIBXML_VERSION), _running_lxml())
    if _mismatch is None:
        _configure_c_code()
    else:
        logger.warning(
            "Simhash runs its main-content extraction in Python, about 10x slower: %s."
            " Reinstall scrapy-simhash to build it again (see the README, Set-up)", _mismatch,
        )
        _extract = None
