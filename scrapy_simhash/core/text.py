"""Bytes -> lxml tree -> normalised text blocks.

Decoding follows the browser order (BOM, HTTP charset, ``<meta>``, then a guess);
UTF-8 bytes go straight to lxml, the fast path (no Python-side decode). Elements that
are never visible text (scripts, styles, ...) are dropped, and text is cut into
blocks at block-level elements so that words of adjacent blocks never glue.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from lxml import etree
from w3lib.encoding import html_body_declared_encoding, html_to_unicode, read_bom

from .folding import fold_class

try:
    from . import _extract  # C, built at install when a compiler is there (see content.py)
except ImportError:
    _extract = None  # type: ignore[assignment]
else:
    _extract.configure_folding(fold_class)

#: Pages larger than this are cut before parsing: the main text of a real page is
#: far smaller, and an unbounded body must not stall a crawl.
MAX_HTML_BYTES = 4 * 1024 * 1024

# No table of ids (collect_ids): nothing looks elements up by id, and it costs ~4%.
_PARSER = etree.HTMLParser(
    encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True, recover=True,
    collect_ids=False,
)  # fmt: skip
#: Elements that are never visible text (with comments and processing instructions).
INVISIBLE_TAGS = frozenset(
    "script style noscript template svg iframe head object embed canvas math select textarea button".split()
)
#: Headings, of the page and of its sections.
HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6")
#: Elements that start a new line in a browser: text on either side is a separate block.
BLOCK_TAGS = frozenset(
    "address article aside blockquote body br dd details dialog div dl dt fieldset figcaption "
    "figure footer form h1 h2 h3 h4 h5 h6 header hr html li main nav ol p pre section summary "
    "table tbody tfoot thead tr ul caption center menu legend".split()
)
#: Table cells: a row is one block, its cells apart by a space. A row is one record (a
#: member's type and its name, a term and where it is defined): cut into cells, the
#: cell that is only a link (the name) would be dropped as a list of links.
CELL_TAGS = frozenset({"td", "th"})
# A word character that is not a digit or "_": a block without one carries no content.
_HAS_LETTER = re.compile(r"[^\W\d_]")
#: Marks block boundaries in serialised text (a private-use character, never rendered):
#: no block from :func:`split_blocks` holds it.
BLOCK_BOUNDARY = "\ue000"
# The characters that keep the text of dev-corpus pages from being NFKC already, nearly
# all (no-break space, ellipsis, full-width punctuation of Chinese text), with their
# NFKC forms: all ASCII.
_COMPATIBILITY_PUNCTUATION = tuple(
    (character, unicodedata.normalize("NFKC", character))
    for character in "\xa0\u2026\u2122\uff01\uff05\uff06\uff08\uff09\uff0c\uff0d\uff0f\uff1a\uff1b\uff1f"
)
# Magic numbers of common non-HTML bodies served as text/html by mistake.
_BINARY_MAGIC = (b"%PDF", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"PK\x03\x04", b"\x1f\x8b", b"BZh")
_UTF8_NAMES = frozenset({"utf-8", "utf8", "utf_8"})
#: What bytes.isspace() calls a space (str.isspace() also counts "\x1c"-"\x1f" and non-ASCII ones).
_ASCII_SPACES = " \t\n\r\x0b\x0c"


class NotHtmlError(ValueError):
    """The input cannot be treated as an HTML page; ``reason`` is a short stats key."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def decode_html(body: bytes, encoding: str | None = None) -> str:
    """Decode by BOM, then the declared (HTTP) encoding, then ``<meta>``, then a fallback.

    >>> decode_html('<p>caf\\xe9</p>'.encode('latin-1'), 'iso-8859-1')
    '<p>café</p>'
    """
    content_type = f"text/html; charset={encoding}" if encoding else None
    return html_to_unicode(content_type, body)[1]


def _is_utf8(body: bytes, encoding: str | None) -> bool:
    """True when *body* is to be read as UTF-8 (so lxml may parse the bytes directly)."""
    bom, _ = read_bom(body)
    if bom is not None:
        return bom == "utf-8"
    declared = encoding or html_body_declared_encoding(body[:4096])
    if declared is not None and declared.lower() not in _UTF8_NAMES:
        return False
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _encode(html: str) -> tuple[bytes, bool]:
    """*html* in UTF-8, and whether that is valid UTF-8 (not to be checked again)."""
    try:
        return html.encode("utf-8"), True
    except UnicodeEncodeError:  # lone surrogates, from a badly decoded page
        return html.encode("utf-8", "surrogatepass"), False


def _check_body(body: bytes) -> None:
    _check_head(body[:1024])
    if not body or body.isspace():  # not body.strip(): that copies the whole body
        raise NotHtmlError("empty")
    if b"<" not in body:
        raise NotHtmlError("not_html")


def _check_text(html: str) -> None:
    """:func:`_check_body` of *html* in UTF-8, without encoding it all: its first 1024
    characters hold its first 1024 bytes, and its other bytes are ASCII spaces or "<"
    only where its characters are."""
    _check_head(_encode(html[:1024])[0][:1024])
    # (isspace() first: it stops at a page's first character, where strip() copies it)
    if not html or (html.isspace() and not html.strip(_ASCII_SPACES)):
        raise NotHtmlError("empty")
    if "<" not in html:
        raise NotHtmlError("not_html")


def _check_head(head: bytes) -> None:
    if b"\x00" in head or head.startswith(_BINARY_MAGIC):
        raise NotHtmlError("binary")


def parse_html(
    html: bytes | str, encoding: str | None = None, *, strip_invisible: bool = True
) -> etree._Element:
    """Parse *html* into an lxml tree without invisible elements (unless not *strip_invisible*).

    Raise :class:`NotHtmlError` (``binary``, ``empty``, ``not_html``) when it is not a page,
    and ``too_deep`` when it nests elements deeper than libxml2 reads (256 levels): the
    parser then leaves out what lies deeper, so the text left is not the page's.
    """
    data, known_utf8, _ = _page_bytes(html)
    if isinstance(html, str) or _has_wide_bom(html):  # (a UTF-16 or UTF-32 page is UTF-8 by now, cut or not)
        encoding = "utf-8"
    if not known_utf8 and not _is_utf8(data, encoding):
        # lxml refuses str with an encoding declaration: re-encode and say it is UTF-8.
        data = decode_html(data, encoding).encode("utf-8", "surrogatepass")
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.LxmlError:
        root = None
    if _hit_depth_limit(_PARSER.error_log):
        raise NotHtmlError("too_deep")
    if root is None:
        raise NotHtmlError("empty")
    if strip_invisible:
        strip_invisible_elements(root)
    return root


def _hit_depth_limit(log: etree._ListErrorLog) -> bool:
    return any(error.type == etree.ErrorTypes.ERR_RESOURCE_LIMIT for error in log)


def check_html(html: bytes | str) -> bool:
    """Check *html* as :func:`parse_html` does, without parsing it: raise :class:`NotHtmlError`
    when it is not a page. Return whether it would be parsed whole (not cut at
    :data:`MAX_HTML_BYTES`).
    """
    if isinstance(html, str) and len(html) <= MAX_HTML_BYTES // 4:  # (4 bytes a character at most)
        _check_text(html)  # Scrapy's response.text: ~25 us less than encoding it all
        return True
    return not _page_bytes(html)[2]


def _page_bytes(html: bytes | str) -> tuple[bytes, bool, bool]:
    """The bytes to parse of *html*, whether they are known UTF-8, and whether they were cut."""
    known_utf8 = False
    if isinstance(html, str):  # Scrapy's response.text, decoded already
        html, known_utf8 = _encode(html)
    elif not isinstance(html, (bytes, bytearray, memoryview)):
        raise TypeError(f"html must be bytes or str, not {type(html).__name__}")
    elif _has_wide_bom(html):  # BOM first: UTF-16's NULs would make the page "binary"
        html, known_utf8 = _encode(decode_html(bytes(html)))
    cut = len(html) > MAX_HTML_BYTES
    data = bytes(html[:MAX_HTML_BYTES])
    _check_body(data)
    return data, known_utf8 and not cut, cut


def _has_wide_bom(body: bytes | bytearray | memoryview) -> bool:
    """Whether *body* starts with a UTF-16 or UTF-32 byte order mark."""
    bom, _ = read_bom(bytes(body[:4]))
    return bom is not None and bom != "utf-8"


def page_title(root: etree._Element) -> str:
    """The text of the page's ``<title>`` (``""`` for none), read before invisible elements
    (``<head>`` among them) are stripped.

    >>> page_title(parse_html("<title>Exceptions Namespace Reference</title><p>Hi</p>", strip_invisible=False))
    'Exceptions Namespace Reference'
    """
    # (Children by tag: ElementPath's "head/title" costs a third more. content.read_title reads it in C.)
    for head in root.iterchildren("head"):
        for title in head.iterchildren("title"):
            return title.text or ""
    return ""


def body_of(root: etree._Element) -> etree._Element:
    """The page's ``<body>``, or the root when it has none."""
    return next(root.iterchildren("body"), root)


def strip_invisible_elements(root: etree._Element) -> None:
    """Remove the invisible elements (:data:`INVISIBLE_TAGS`, comments, ...), keeping their tails."""
    etree.strip_elements(root, *INVISIBLE_TAGS, etree.Comment, etree.ProcessingInstruction, with_tail=False)


def normalize(content: str) -> str:
    """NFKC, case-fold, collapse whitespace.

    >>> normalize('  Ｃａｆé\\n\\tBAR ')
    'café bar'
    """
    return " ".join(unicodedata.normalize("NFKC", content).casefold().split())


def normalize_blocks(blocks: Iterable[str], *, with_letter: bool = False) -> list[str]:
    """:func:`normalize` each block, in one NFKC and case-fold call; empty ones dropped,
    and (*with_letter*) those without a letter (a lone counter, a date, "|").

    >>> normalize_blocks(["  Ｈｅｌｌｏ\\n World ", " ", "ÉTÉ", "2024-01-12"])
    ['hello world', 'été', '2024-01-12']
    >>> normalize_blocks(["ÉTÉ", "2024-01-12"], with_letter=True)
    ['été']
    """
    if _extract is not None and isinstance(blocks, list):
        # A character at a time, where no character changes its neighbours (.folding).
        folded = _extract.fold_blocks(blocks, BLOCK_BOUNDARY, with_letter)
        if folded is not None:
            return folded
    joined = _nfkc(BLOCK_BOUNDARY.join(blocks)).casefold()
    if _extract is not None:  # the same, in one pass of C over the characters
        return _extract.collapse_blocks(joined, BLOCK_BOUNDARY, with_letter)
    normalised = (" ".join(block.split()) for block in joined.split(BLOCK_BOUNDARY))
    return [block for block in normalised if block and (not with_letter or _HAS_LETTER.search(block))]


def _nfkc(content: str) -> str:
    """``unicodedata.normalize("NFKC", content)``, ~5x faster on most pages.

    Most pages are NFKC already but for a few compatibility characters (full-width
    punctuation, no-break spaces): those are replaced by their NFKC forms, which are
    ASCII (so NFKC of the result is NFKC of the original), and only when what is left
    is not NFKC does the full normalisation run.
    """
    for character, replacement in _COMPATIBILITY_PUNCTUATION:
        if character in content:
            content = content.replace(character, replacement)
    if unicodedata.is_normalized("NFKC", content):
        return content
    return unicodedata.normalize("NFKC", content)


def visible_text(root: etree._Element) -> str:
    """All text of a parsed page (no main-content selection), blocks on separate lines."""
    return "\n".join(split_blocks(root))


def split_blocks(element: etree._Element) -> list[str]:
    """The text of each block-level run inside *element*, in document order.

    Block elements get a separator before and after them, then the subtree is
    serialised as text in C and split there: much faster than a Python tree walk.
    The tree is modified (separators added).
    """
    for block in element.iter(*BLOCK_TAGS, *CELL_TAGS):
        text = block.text  # read once: each read decodes a new string
        if block.tag in CELL_TAGS:
            block.text = " " + text if text else " "
            continue
        block.text = BLOCK_BOUNDARY + text if text else BLOCK_BOUNDARY
        if block is not element:
            tail = block.tail
            block.tail = BLOCK_BOUNDARY + tail if tail else BLOCK_BOUNDARY
    serialised = etree.tostring(element, method="text", encoding=str, with_tail=False)
    return [block for block in serialised.split(BLOCK_BOUNDARY) if block and not block.isspace()]
