"""Parts of a page that copy another document's entries: left out of its main text.

API references repeat another page's documentation on every page that uses it. rustdoc
prints, on the page of each of ~200 iterator types of Rust's standard library, the 75
methods of the ``Iterator`` trait with the first paragraph of their documentation: 95% of
the text of ``std::iter::Map``, ``std::ascii::EscapeDefault`` and their siblings. Their
own text (a line or two of documentation) is what tells them apart; with the copy, any
two of them are 0.9 alike and the second one was dropped (README, "Precision at scale").

Such a copy says where it comes from: each of its entries links to the entry it copies,
an anchor in the other document (``trait.Iterator.html#method.count``). A part of the page
is a *digest* of another document when

* at least :data:`MIN_ENTRIES` links with as many different texts point into anchors of
  that one document (not "[source]" buttons, whose texts are all alike), and it is the
  smallest element holding :data:`COVER` of the page's links there;
* those are at least half of its links into other documents' anchors;
* it is entries with prose, not a table of contents or an index: at least
  :data:`MIN_ENTRIES` paragraphs, at most half of its text inside links;
* it is dense: at most :data:`MAX_CHARS_PER_LINK` characters of text per link there, where
  prose that cites another page now and then has hundreds.

The page's own document is known by the last segment of its URL's path: a page that links
to its own anchors by file name (``cairo-Paths.html#cairo-move-to`` on ``cairo-Paths.html``)
does not digest itself. Without a URL only ``#anchor`` links are the page's own.

The C extraction finds them itself (``extract_c/links.c`` and ``digest.c``) and skips them
without touching the tree; this is its twin, for where it was not built, held to the same
results by tests/test_digests.py.
"""

from __future__ import annotations

import math
from collections import Counter

from lxml import etree

from .boilerplate import remove_keeping_tail

__all__ = ["COVER", "MAX_CHARS_PER_LINK", "MIN_ENTRIES", "digest_parts", "page_document", "remove_digests"]

#: Entries (links with different texts, paragraphs) of the smallest digest.
MIN_ENTRIES = 20
#: The share of the page's links into the other document that the digest holds.
COVER = 0.9
#: Characters of text per link into the other document, at most.
MAX_CHARS_PER_LINK = 100

# Plain strings first: most pages stop there, having made no Python element.
# (descendant::, not //: libxml2 builds the node-set of every node for //.)
_ANCHORED_HREFS = etree.XPath("descendant::a/@href[contains(., '#')]", smart_strings=False)
_ANCHORED_LINKS = etree.XPath("descendant::a[contains(@href, '#')]")
_TEXT = etree.XPath("string()")
# Measured inside libxml2: a big candidate's text is never copied into Python.
_TEXT_LENGTH = etree.XPath("string-length(string())")
_PARAGRAPHS = etree.XPath("count(descendant::p)")
_NOT_DOCUMENTS = ("javascript:", "mailto:")
_ASCII_SPACES = " \t\n\r\f\v"


def digest_parts(root: etree._Element, url: str | None = None) -> list[etree._Element]:
    """The elements of the page *root* (at *url*, if known) that digest another document."""
    hrefs = _ANCHORED_HREFS(root)
    if len(hrefs) < MIN_ENTRIES:
        return []
    own = page_document(url)
    documents = {href: _other_document(href, own) for href in set(hrefs)}
    counts = Counter(map(documents.__getitem__, hrefs))
    wanted = {document for document, count in counts.items() if document is not None and count >= MIN_ENTRIES}
    if not wanted:
        return []
    links_into: dict[str, list[etree._Element]] = {document: [] for document in wanted}
    for link in _ANCHORED_LINKS(root):
        document = documents.get(link.get("href"))
        if document in links_into:
            links_into[document].append(link)
    parts = []
    sizes: dict[etree._Element, tuple[int, float]] = {}  # the candidates of a page share a few holders
    for document, links in links_into.items():
        part, held = _smallest_holder(links)
        if part is not None and _is_digest(part, held, document, documents, sizes):
            parts.append(part)
    return parts


def remove_digests(root: etree._Element, url: str | None = None) -> int:
    """Remove :func:`digest_parts` from the tree (their tails stay); how many were removed."""
    removed = 0
    for part in digest_parts(root, url):
        parent = part.getparent()
        if parent is not None and part.tag not in ("html", "body"):
            remove_keeping_tail(parent, part)
            removed += 1
    return removed


def _smallest_holder(links: list[etree._Element]) -> tuple[etree._Element | None, int]:
    """The deepest element that holds :data:`COVER` of *links* (a few strays elsewhere, such
    as a mention in the page's own text, do not make the whole page the holder), and how
    many of them it holds."""
    needed = math.ceil(COVER * len(links))
    held: Counter[etree._Element] = Counter()
    depth: dict[etree._Element, int] = {}
    for link in links:
        for level, ancestor in enumerate(reversed(list(link.iterancestors()))):
            held[ancestor] += 1
            depth[ancestor] = level
    holders = [element for element, count in held.items() if count >= needed]
    part = max(holders, key=depth.__getitem__, default=None)
    return part, held[part] if part is not None else 0


def _is_digest(
    part: etree._Element, held: int, document: str, documents: dict[str, str | None],
    sizes: dict[etree._Element, tuple[int, float]],
) -> bool:
    """The tests of the module doc on *part*, which holds *held* links into *document*; the
    cheap ones first (a source listing has dozens of candidates, each holding thousands
    of links). *sizes*: the paragraphs and characters of the parts measured so far."""
    if part not in sizes:
        paragraphs = int(_PARAGRAPHS(part))
        sizes[part] = paragraphs, _TEXT_LENGTH(part) if paragraphs >= MIN_ENTRIES else math.inf
    paragraphs, chars = sizes[part]
    if paragraphs < MIN_ENTRIES or chars > MAX_CHARS_PER_LINK * held:
        return False
    linked = [(link, documents.get(link.get("href") or "")) for link in part.iter("a")]
    into_document = [link for link, its in linked if its == document]
    if 2 * len(into_document) < sum(1 for _, its in linked if its is not None):
        return False
    if 2 * sum(_TEXT_LENGTH(link) for link, _ in linked) > chars:
        return False  # a table of contents, an index: links are what it is
    return len({_text(link) for link in into_document}) >= MIN_ENTRIES


def page_document(url: str | None) -> str | None:
    """The name of the page at *url* as its links name it: the last segment of its path
    (without ``?query``, ``#anchor`` or ``;parameters``), or None for no URL."""
    if not url:
        return None
    return _document_name(url.partition("#")[0].partition("?")[0])


def _other_document(href: str | None, own: str | None) -> str | None:
    """The document an anchored *href* points into, or None: no anchor, this page itself."""
    if not href:
        return None
    path, _, anchor = href.partition("#")
    path = path.partition("?")[0].strip(_ASCII_SPACES)
    if not anchor or not path or path.startswith(_NOT_DOCUMENTS):
        return None
    if own is not None and _document_name(path) == own:
        return None
    return path


def _document_name(path: str) -> str:
    """The last segment of a path or URL, without ``;parameters`` (a session id)."""
    segments = [segment for segment in path.partition(";")[0].split("/") if segment]
    return segments[-1] if segments else ""


def _text(element: etree._Element) -> str:
    return str(_TEXT(element))
