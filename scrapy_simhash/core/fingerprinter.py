"""The facade of the core: HTML or text in, a :class:`FingerprintResult` out.

Scrapy glue, the CLI and benchmarks use only this module's three names; how text is
extracted and which features are built is free to change behind them.

The pipeline: decode and parse (:mod:`.text`) -> main content (:mod:`.content`, or
any extractor you pass) -> normalised blocks -> the site's template blocks left out
(:mod:`.templates`) -> weighted shingles (:mod:`.features`) -> 64-bit SimHash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable
from urllib.parse import urlsplit

from lxml import etree

from . import content, features, templates, text
from .fingerprint import simhash_margins, weakest_bits
from .options import ALGORITHM_VERSION, FingerprintOptions, Segmenter, Weighting
from .sketch import MIN_SKETCHED_SHINGLES, SKETCH_SHINGLE_SIZE, page_sketch

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "ALGORITHM_VERSION", "FingerprintOptions", "FingerprintResult", "Fingerprinter", "Segmenter", "Weighting",
    "content_blocks", "main_text", "python_stages",
]


@dataclass(frozen=True, slots=True)
class FingerprintResult:
    """A fingerprint, or the reason there is none (``skip_reason``).

    ``template_blocks`` counts the blocks left out as the site's template.
    ``wildcard`` masks the fingerprint's least-confident bits: those whose SimHash
    vote was closest to a tie, the first to flip under a small edit of the page.
    ``sketch`` is the 32-byte minwise sketch of the page's shingle set
    (:mod:`.sketch`), which confirms a match within k. Pass both to
    :meth:`SimhashIndex.add_if_new`.
    """

    fingerprint: int | None
    tokens: int = 0
    skip_reason: str | None = None
    blocks: int = 0
    template_blocks: int = 0
    wildcard: int = 0
    sketch: bytes | None = field(default=None, repr=False)

    @property
    def skipped(self) -> bool:
        return self.fingerprint is None


class Fingerprinter:
    """Turn pages into 64-bit SimHash fingerprints.

    With the default options a page's fingerprint depends on the page alone, the same
    in any order, process or machine. With ``template_suppression`` it keeps per-site
    state (the template blocks learned so far): then use one instance per crawl and
    feed it pages with their URL (only the host is used). It caches token hashes and
    attribute verdicts either way, so keep one per crawl. *extractor* replaces the
    main-content extraction: any callable taking the parsed lxml root and returning the
    page's text blocks.
    """

    def __init__(
        self, options: FingerprintOptions | None = None, *, extractor: content.Extractor | None = None
    ) -> None:
        self.options = options or FingerprintOptions()
        if extractor is None:
            extractor = content.extract_main_blocks if self.options.main_content else text.split_blocks
        self._extract = extractor
        self._featurizer = features.Featurizer(
            shingle_size=self.options.shingle_size,
            hash_key=self.options.hash_key,
            segmenter=self.options.segmenter,
            weighting=self.options.weighting,
            max_weight=self.options.max_weight,
        )
        self.templates = templates.TemplateMemory() if self.options.template_suppression else None

    def from_html(
        self, html: bytes | str, *, url: str | None = None, encoding: str | None = None
    ) -> FingerprintResult:
        """Fingerprint a page; *encoding* is the HTTP-declared one, if any."""
        _check_url(url)
        try:
            raw_blocks, title = self._raw_blocks(html, encoding, url)
        except text.NotHtmlError as exc:
            return FingerprintResult(None, skip_reason=exc.reason)
        return self._from_raw_blocks(raw_blocks, title, url)

    def main_blocks(self, html: bytes | str, *, encoding: str | None = None, url: str | None = None) -> list[str]:
        """The text blocks of a page as :meth:`from_html` fingerprints them: its main text,
        normalised (the template memory aside). What "why was this page dropped?" reads.
        Give the page's *url* as :meth:`from_html` got it: it tells the page's links to its
        own anchors from links into other pages (:mod:`.digests`).

        Raise :class:`~.text.NotHtmlError` (``.reason``) when it is not a page.
        """
        _check_url(url)
        raw_blocks, title = self._raw_blocks(html, encoding, url)
        return self._fingerprinted_text(content_blocks(raw_blocks), title)

    def _raw_blocks(self, html: bytes | str, encoding: str | None, url: str | None) -> tuple[list[str], str]:
        """The extractor's blocks of a page, and its title (read first: it is in <head>)."""
        root = text.parse_html(html, encoding=encoding, strip_invisible=False)
        title = content.read_title(root)
        if self._extract is content.extract_main_blocks:
            # (Which leaves invisible elements out itself, in C, without a walk of the tree.)
            return content.extract_main_blocks(root, url, title=title), title
        text.strip_invisible_elements(root)
        return self._extract(root), title

    def from_tree(
        self, tree: Callable[[], etree._Element], html: bytes | str, *, url: str | None = None
    ) -> FingerprintResult:
        """Fingerprint a page that lxml's HTML parser parses for someone else too, leaving
        the tree as it is: Scrapy's ``response.selector.root``, which the spider's callback
        reads after us. One parse for both, where :meth:`from_html` makes its own.

        *tree* returns the parsed page (``lambda: response.selector.root``); *html* is the
        page it parses (``response.text``). *html* is checked first, as :meth:`from_html`
        checks it, and *tree* called only if it is a page. :meth:`from_html` parses *html*
        itself when the tree cannot be read without modifying it (the C extraction was not
        built, another extractor) or the page is longer than it reads.
        """
        _check_url(url)
        if self._extract is not content.extract_main_blocks or content.kernel() != "c":
            return self.from_html(html, url=url)  # (which checks the page itself)
        try:
            whole = text.check_html(html)
        except text.NotHtmlError as exc:
            return FingerprintResult(None, skip_reason=exc.reason)
        root = tree() if whole else None
        title = content.read_title(root) if root is not None else None
        raw = content.extract_leaving_tree(root, url, title=title) if root is not None else None
        if raw is None or title is None:
            return self.from_html(html, url=url)
        return self._from_raw_blocks(raw, title, url)

    def _from_raw_blocks(self, raw_blocks: list[str], title: str, url: str | None) -> FingerprintResult:
        blocks = content_blocks(raw_blocks)
        domain = _domain(url) if self.templates is not None else None
        if domain is None or self.templates is None:
            return self._fingerprint(blocks, title)
        kept = self.templates.filter(domain, blocks)
        result = self._fingerprint(kept, title, template_blocks=len(blocks) - len(kept))
        if result.fingerprint is not None:
            self.templates.learn(domain, blocks, result.fingerprint)
        return result

    def from_text(self, content_text: str) -> FingerprintResult:
        """Fingerprint plain text (already extracted main content); lines are blocks."""
        return self._fingerprint(content_blocks(content_text.splitlines()))

    def _fingerprint(self, blocks: list[str], title: str = "", template_blocks: int = 0) -> FingerprintResult:
        found, shingles = self._features(blocks)
        if found.n_tokens < self.options.min_tokens:
            reason = "empty" if not found.n_tokens else "too_short"
            return FingerprintResult(None, found.n_tokens, reason, len(blocks), template_blocks)
        text_blocks = self._fingerprinted_blocks(blocks, shingles, title)
        if text_blocks is not blocks:
            (found, shingles), blocks = self._features(text_blocks), text_blocks
        fingerprint, margins = simhash_margins(found.hashes, found.weights)
        wildcard = weakest_bits(margins, self.options.wildcard_bits)
        return FingerprintResult(
            fingerprint, found.n_tokens, None, len(blocks), template_blocks, wildcard, page_sketch(shingles)
        )

    def _fingerprinted_text(self, blocks: list[str], title: str) -> list[str]:
        """The blocks a page is fingerprinted on (see :meth:`_fingerprinted_blocks`)."""
        return self._fingerprinted_blocks(blocks, self._features(blocks)[1], title)

    @staticmethod
    def _fingerprinted_blocks(blocks: list[str], shingles: npt.NDArray[np.uint64], title: str) -> list[str]:
        """The blocks a page is fingerprinted on, given its sketch's *shingles*: a short
        page's (fewer than MIN_SKETCHED_SHINGLES) with its title first. What little text a
        short page has is often all its site's template (a one-entry listing whose entry is
        a link, its title in a "header"): its <title> is then what tells it from its siblings
        (measured on big sites, README "Precision at scale"), less the site's name when it
        names one of the page's first blocks (:func:`without_site_name`). Only short pages: a
        long page's title differs in its copies (a repost's site name, "printer-friendly version").
        """
        if len(shingles) >= MIN_SKETCHED_SHINGLES or not title:
            return blocks
        titles = content_blocks([title])
        return [without_site_name(titles[0], blocks), *blocks] if titles else blocks

    def _features(self, blocks: list[str]) -> tuple[features.Features, npt.NDArray[np.uint64]]:
        """The blocks' features and their sketch's shingles, from one pass over their tokens.

        The sketch's shingles run across blocks, as the near-duplicate definition's do
        (Broder's, over the page's token stream): block-bounded ones let a page of short
        blocks (signatures, table cells) keep most of its shingles through an edit of a
        few words, and look 0.9 alike to a sibling whose text is 0.6 alike.
        """
        return self._featurizer.features_and_shingle_set(blocks, SKETCH_SHINGLE_SIZE)


#: What sites put between a page's heading and their name in its <title>. Not "/": a file's
#: page names it by its path ("deal.II: include/gmsh Directory Reference"), and the path is
#: what tells it from its namesake in another folder ("source/gmsh").
_TITLE_SEPARATORS = frozenset("-_|:·•–—,>»›")
#: Where the page's heading is among its blocks (its title block, a template's h1).
_HEADING_BLOCKS = 3


def without_site_name(title: str, blocks: list[str]) -> str:
    """A page's *title* without the site's name, when it is one of the page's first blocks
    with the name after or before a separator ("Title_SiteName", "Site: Title"): a repost's
    title has its own site's name.

    >>> without_site_name("数字格式: 删除小数位数_科讯网", ["数字格式: 删除小数位数", "..."])
    '数字格式: 删除小数位数'
    >>> without_site_name("deal.ii: class list", ["class list"]), without_site_name("class list", ["class"])
    ('class list', 'class list')
    """
    for block in blocks[:_HEADING_BLOCKS]:
        if title.startswith(block) and title[len(block) :].lstrip()[:1] in _TITLE_SEPARATORS:
            return block
        if title.endswith(block) and title[: -len(block)].rstrip()[-1:] in _TITLE_SEPARATORS:
            return block
    return title


def python_stages() -> list[str]:
    """The stages of fingerprinting that run in Python here, not in C: their C modules were
    not built at install (no C compiler), and fingerprinting takes about twice as long."""
    kernels = {"main-content extraction": content.kernel(), "features": features.kernel()}
    return [stage for stage, kernel in kernels.items() if kernel != "c"]


def main_text(html: bytes | str, options: FingerprintOptions | None = None, *, url: str | None = None) -> str:
    """The main text of a page (at *url*, if known: see :meth:`Fingerprinter.main_blocks`)
    as it is fingerprinted, a block a line (``""`` for what is not a page):
    ``scrapy-simhash text`` in Python.

    >>> main_text("<html><body><nav><a href=/>Home</a></nav><p>Hello,   World!</p></body></html>")
    'hello, world!'
    """
    try:
        return "\n".join(Fingerprinter(options).main_blocks(html, url=url))
    except text.NotHtmlError:
        return ""


def content_blocks(raw_blocks: list[str]) -> list[str]:
    """Normalised blocks (see :func:`.text.normalize_blocks`) that hold a letter."""
    return text.normalize_blocks(raw_blocks, with_letter=True)


def _check_url(url: object) -> None:
    # Else bytes fail deep in the extraction, with a message that names no argument.
    if url is not None and not isinstance(url, str):
        raise TypeError(f"url must be a str or None, not {type(url).__name__}: {url!r}")


def _domain(url: str | None) -> str | None:
    if not url:
        return None
    try:
        return urlsplit(url).hostname
    except ValueError:  # a malformed URL (bad port, bad IPv6): no per-site state
        return None
