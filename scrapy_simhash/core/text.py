"""HTML -> normalised text with lxml (baseline; main-content extraction comes later)."""

from __future__ import annotations

import re
import unicodedata

from lxml import etree
from w3lib.encoding import html_to_unicode

_PARSER = etree.HTMLParser(
    encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True, recover=True
)
_DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "head")
_WHITESPACE = re.compile(r"\s+")


class NotHtmlError(ValueError):
    """The input cannot be treated as an HTML page; ``reason`` is a short stats key."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def decode_html(body: bytes, encoding: str | None = None) -> str:
    """Decode by BOM, then the declared (HTTP) encoding, then ``<meta>``, then a fallback."""
    content_type = f"text/html; charset={encoding}" if encoding else None
    return html_to_unicode(content_type, body)[1]


def parse_html(html: bytes | str, encoding: str | None = None) -> etree._Element:
    """Parse *html* into an lxml tree; raise :class:`NotHtmlError` when it is not a page."""
    if isinstance(html, bytes):
        if b"\x00" in html[:1024]:
            raise NotHtmlError("binary")
        html = decode_html(html, encoding)
    if not html.strip():
        raise NotHtmlError("empty")
    # lxml refuses str with an encoding declaration: re-encode and say it is UTF-8.
    root = etree.fromstring(html.encode("utf-8", "surrogatepass"), _PARSER)
    if root is None:
        raise NotHtmlError("empty")
    return root


def main_text(root: etree._Element) -> str:
    """The visible text of a page, blocks separated by newlines."""
    etree.strip_elements(root, *_DROPPED_TAGS, with_tail=False)
    return "\n".join(t for t in root.itertext() if not t.isspace())


def normalize(content: str) -> str:
    """NFKC, case-fold, collapse whitespace."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", content).casefold()).strip()
