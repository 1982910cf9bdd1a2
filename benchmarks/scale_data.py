"""Build the same-site scale benchmark's data: real documentation sites from Debian packages.

    python benchmarks/scale_data.py [--cache DIR] [--sites rust,dealii] [--max-pages 15000]

The dev corpus holds ~2,600 pages of a few sites; a crawl meets tens of thousands of pages
of one site, all in one template, many of them short, generated and alike (API references:
one page per function, member lists, indexes). This script turns big HTML documentation
packages that no one here wrote into such sites. Per site it downloads the package with
``apt-get download`` into ``DIR/debs`` (default ``~/.cache/scrapy-simhash/scale``),
unpacks it with ``dpkg-deb -x`` into ``DIR/unpacked``, and writes ``DIR/sites/NAME/``:

* ``pages.jsonl.gz``: one HTML page a line, ``{"id", "url", "site", "lang", "generator",
  "reached", "html", "main_text"}``; ``url`` (= ``id``) is ``http://NAME.test/<path under
  the doc root>``; ``html`` the file as text (decoded with its declared charset).
* ``site.json``: the package and its version, the start page, page counts, and the
  site's redirects (``{path: target path}``) for ``bench_scale_crawl.py``'s server.

**Order** = crawl order: breadth-first from the start page, following ``<a href>`` within
the site (fragments and queries cut, ``dir/`` read as ``dir/index.html``); pages no link
reaches come after, in path order, with ``"reached": false``. A page that only redirects
(``<meta http-equiv="refresh">``, rustdoc's re-export stubs) is not a page: a link to it
leads to its target, as a browser or Scrapy's MetaRefreshMiddleware goes. The first
``--max-pages`` pages in that order are written.

**Sites** (``SITES``): ``rust`` (rust-doc: rustdoc API pages of std/core/alloc/..., their
source pages, and the mdBook books), ``dealii`` (libdeal.ii-doc, Doxygen), ``statsmodels``
(python-statsmodels-doc, Sphinx), ``lazarus`` (lazarus-doc-2.2, FPDoc), and ``lilypond-zh``
(lilypond-doc-html-zh, texi2html, Simplified Chinese: the largest Chinese HTML documentation
in Debian that is not kept for the independent check, 169 pages, part of them untranslated).

**Reference main text**: per generator (``RULES``, detected per page by ``generator_of``),
the text of the generator's content area minus named parts. Text is read with a line break
at each block element, whitespace collapsed. Listing pages (indexes, member lists, "all
items") keep their entries: they are what tells two listings apart.

* rustdoc: ``section#main-content`` (a standalone page without it: ``<body>``), minus
  version and source links (``.out-of-band``, ``.rightside``, ``.since``, ``.srclink``),
  toggle labels (``summary.hideme``), "Run" buttons, the copy-path button, line numbers of source pages, the
  notable-traits pop-ups, the "Auto Trait Implementations" and "Blanket Implementations"
  sections (generated alike on every type page), and the documentation that trait
  implementations and "Methods from Deref" copy from the trait's or target's own page
  (``.docblock`` and ``.item-info`` inside ``#trait-implementations-list`` and
  ``[id^=deref-methods-]``;
  their ``impl`` lines and method signatures stay). Copied text is what makes
  ``std::iter::Map`` and ``std::iter::Filter`` 90% alike; a reader sees distinct pages.
* mdBook: ``div#content main``.
* Doxygen: ``div.headertitle`` and ``div.contents``, minus diagrams (``div.dynheader``,
  ``div.dyncontent``), members inherited from base classes (``tr.inherit_header``,
  ``tr.inherit``: the base class's own list, collapsed), line numbers (``span.lineno``)
  and hidden tool-tips (``div.ttc``) of source pages.
* Sphinx: ``div.body`` (or ``[role=main]``), minus ``a.headerlink`` and notebook prompts.
* FPDoc: ``<body>`` minus the navigation bar ``table.bar``.
* texi2html: ``div#main`` minus ``table.nav_table`` and ``div#footer``.
* anything else: ``<body>`` minus ``nav``, ``header``, ``footer``, ``form``.

Scripts, styles and ``noscript`` are dropped everywhere. The ground truth on this text is
the dev corpus's: NFKC, lower case, tokens (every CJK character a token, every other run
of word characters a token), the set of 5-token shingles, exact Jaccard (``shingles``,
``jaccard``; ``bench_scale.py`` uses them).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import posixpath
import re
import subprocess
import sys
import time
import unicodedata
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import lxml.html
import numpy as np
from lxml import etree

DEFAULT_CACHE = Path.home() / ".cache" / "scrapy-simhash" / "scale"
DEFAULT_MAX_PAGES = 15_000
SHINGLE_SIZE = 5


@dataclass(frozen=True)
class Site:
    name: str
    package: str
    root: str  # the doc root inside the unpacked package
    start: str  # the start page, relative to the root
    lang: str

    @property
    def host(self) -> str:
        return f"{self.name}.test"


SITES: dict[str, Site] = {site.name: site for site in (
    Site("rust", "rust-doc", "usr/share/doc/rust-doc/html", "index.html", "en"),
    Site("dealii", "libdeal.ii-doc", "usr/share/doc/libdeal.ii-doc/html", "index.html", "en"),
    Site("statsmodels", "python-statsmodels-doc", "usr/share/doc/python-statsmodels-doc/html", "index.html", "en"),
    Site("lazarus", "lazarus-doc-2.2", "usr/share/doc/lazarus/2.2.6", "lcl/index.html", "en"),
    Site("lilypond-zh", "lilypond-doc-html-zh", "usr/share/doc/lilypond/html/Documentation", "web/index.zh.html", "zh"),
)}


@dataclass(frozen=True)
class Rule:
    """The reference main text: the elements *content* selects (the first selector that
    matches anything), less the elements *drop* selects inside them."""

    content: tuple[str, ...]
    drop: str


_ALWAYS_DROPPED = "script, style, noscript"
RULES: dict[str, Rule] = {
    "rustdoc": Rule(("section#main-content", "body"), ", ".join((
        ".out-of-band", ".rightside", ".since", ".srclink", "summary.hideme", "#copy-path", ".line-numbers",
        ".test-arrow",
        ".notable-traits", ".tooltip", "#synthetic-implementations", "#synthetic-implementations-list",
        "#blanket-implementations", "#blanket-implementations-list",
        "#trait-implementations-list .impl-items", "[id^=deref-methods-]", "nav", "form",
    ))),
    "mdbook": Rule(("div#content main",), ""),
    "doxygen": Rule(("div.headertitle, div.contents",), "div.dynheader, div.dyncontent, tr.inherit_header, "
                    "tr.inherit, span.lineno, div.ttc"),
    "sphinx": Rule(("div.body", "[role=main]"), "a.headerlink, div.prompt"),
    "fpdoc": Rule(("body",), "table.bar"),
    "texinfo": Rule(("div#main",), "table.nav_table, div#footer"),
    "html": Rule(("body",), "nav, header, footer, form"),
}

# Elements whose text starts and ends a line when the text of a page is read.
_BLOCKS = frozenset(
    "address article aside blockquote br caption dd details div dl dt fieldset figcaption figure "
    "footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section summary table tbody td "
    "tfoot th thead tr ul".split()
)
_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([\w.:-]+)""", re.IGNORECASE)
_REFRESH = re.compile(r"^\s*\d*\s*;?\s*url\s*=\s*['\"]?([^'\"]+)", re.IGNORECASE)
# The ground truth's tokens: each CJK character, each other run of word characters.
_CJK = "\u2e80-\u2fdf\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")
_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


# -- the ground truth ---------------------------------------------------------------


def tokens(text: str) -> list[str]:
    """The ground truth's tokens: NFKC, lower case, CJK characters and word runs."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).lower())


def shingles(text: str, vocabulary: dict[str, int]) -> np.ndarray:
    """The sorted set of 64-bit hashes of *text*'s 5-token shingles (one shingle of all
    tokens when there are fewer than 5; empty without tokens). *vocabulary* numbers the
    tokens (it grows), so a shingle hash is a mix of its tokens' numbers: no collision
    in practice, and no string hashing in Python."""
    ids = np.fromiter((vocabulary.setdefault(t, len(vocabulary) + 1) for t in tokens(text)), np.uint64)
    if not len(ids):
        return ids
    size = min(SHINGLE_SIZE, len(ids))
    mixed = np.zeros(len(ids) - size + 1, np.uint64)
    with np.errstate(over="ignore"):
        for offset in range(size):
            mixed = mixed * np.uint64(0x100000001B3) + ids[offset: offset + len(mixed)]
        mixed = _splitmix(mixed)
    return np.unique(mixed)


def _splitmix(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: spreads the bits of each value over all 64."""
    with np.errstate(over="ignore"):
        values = (values ^ (values >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        values = (values ^ (values >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return (values ^ (values >> np.uint64(31))) & _MASK


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard similarity of two sorted shingle sets (0 when both are empty)."""
    if not len(a) or not len(b):
        return 0.0
    common = len(np.intersect1d(a, b, assume_unique=True))
    return common / (len(a) + len(b) - common)


# -- reading a page -------------------------------------------------------------------


def decode(data: bytes) -> tuple[str, str]:
    """(text, charset) of a page: its declared charset, else UTF-8, else windows-1252."""
    declared = _CHARSET.search(data[:4096])
    for charset in ([declared.group(1).decode("ascii")] if declared else []) + ["utf-8"]:
        try:
            return data.decode(charset), charset
        except (LookupError, UnicodeDecodeError):
            continue
    return data.decode("windows-1252", errors="replace"), "windows-1252"


def parse(html: str) -> lxml.html.HtmlElement:
    """The page's tree (an XML declaration, which lxml refuses in text, is cut first)."""
    return lxml.html.document_fromstring(re.sub(r"^\s*<\?xml[^>]*>", "", html))


def generator_of(root: lxml.html.HtmlElement, html: str) -> str:
    """Which generator made the page: the key of its rule in ``RULES``."""
    meta = " ".join(root.xpath("//meta[translate(@name,'GENERATOR','generator')='generator']/@content"))
    if meta.startswith("rustdoc"):
        return "rustdoc"
    if meta.startswith("Doxygen"):
        return "doxygen"
    if meta.startswith(("texi2html", "texi2any", "makeinfo")):
        return "texinfo"
    if "Book generated using mdBook" in html:
        return "mdbook"
    if meta.startswith("Docutils") or root.cssselect("div.sphinxsidebar"):
        return "sphinx"
    if "fpdoc.css" in html:
        return "fpdoc"
    return "html"


def content_elements(root: lxml.html.HtmlElement, generator: str) -> list[lxml.html.HtmlElement]:
    """The elements of the generator's content area (before the rule's drops)."""
    return rule_elements(root, RULES[generator])


def rule_elements(root: lxml.html.HtmlElement, rule: Rule) -> list[lxml.html.HtmlElement]:
    """The elements of *rule*'s content area: the first of its selectors that matches."""
    for selector in rule.content:
        found = root.cssselect(selector)
        if found:
            return found
    return []


def main_text(root: lxml.html.HtmlElement, generator: str) -> str:
    """The reference main text of a page (modifies the tree: the dropped parts go)."""
    return rule_text(root, RULES[generator])


def rule_text(root: lxml.html.HtmlElement, rule: Rule) -> str:
    """The text of *rule*'s content area less its drops (modifies the tree). Other
    benchmarks (``diversity_data.py``) apply their own rules with it."""
    elements = rule_elements(root, rule)
    drop = f"{_ALWAYS_DROPPED}, {rule.drop}" if rule.drop else _ALWAYS_DROPPED
    for element in elements:
        for unwanted in element.cssselect(drop):
            if unwanted.getparent() is not None:
                unwanted.drop_tree()
    return "\n".join(line for element in elements for line in text_lines(element))


def text_lines(element: lxml.html.HtmlElement) -> list[str]:
    """The text of *element*, a line per block element, whitespace collapsed."""
    parts: list[str] = []
    _walk(element, parts)
    return [" ".join(line.split()) for line in "".join(parts).split("\n") if line.strip()]


def _walk(element: etree._Element, parts: list[str]) -> None:
    block = isinstance(element.tag, str) and element.tag in _BLOCKS
    if block:
        parts.append("\n")
    if isinstance(element.tag, str) and element.text:
        parts.append(element.text)
    for child in element:
        _walk(child, parts)
        if child.tail:
            parts.append(child.tail)
    if block:
        parts.append("\n")


def refresh_target(root: lxml.html.HtmlElement) -> str | None:
    """The URL a ``<meta http-equiv="refresh">`` page sends its reader to, if any."""
    for content in root.xpath("//meta[translate(@http-equiv,'REFSH','refsh')='refresh']/@content"):
        found = _REFRESH.match(content)
        if found:
            return found.group(1).strip()
    return None


# -- a site ------------------------------------------------------------------------


@dataclass
class Page:
    path: str
    html: str
    generator: str
    links: list[str]  # raw hrefs, in document order
    redirect: str | None  # the raw target of a refresh page
    main_text: str


def read_page(args: tuple[str, str]) -> Page:
    """Read one file of a site (in a worker process)."""
    root_dir, path = args
    html, _ = decode((Path(root_dir) / path).read_bytes())
    root = parse(html)
    links = [str(href) for href in root.xpath("//a/@href")]
    redirect = refresh_target(root)
    generator = generator_of(root, html)
    text = "" if redirect else main_text(root, generator)
    return Page(path, html, generator, links, redirect, text)


def resolve(path: str, href: str, host: str) -> str | None:
    """The site path a link of the page at *path* leads to, or None if it leaves the site."""
    base = f"http://{host}/{path}"
    target = urlsplit(urljoin(base, href.strip()))
    if target.scheme not in ("http", "https") or target.netloc != host:
        return None
    resolved = posixpath.normpath(unquote(target.path)).lstrip("/")
    if target.path.endswith("/") or not resolved or resolved == ".":
        resolved = posixpath.join(resolved, "index.html").lstrip("/")
    return resolved


def crawl_order(site: Site, pages: dict[str, Page], redirects: dict[str, str]) -> Iterator[tuple[str, bool]]:
    """(path, reached) of every page: breadth-first from the start page, then the rest."""
    seen: set[str] = set()
    queue = deque([site.start])
    while queue:
        path = follow(queue.popleft(), redirects)
        if path is None or path in seen or path not in pages:
            continue
        seen.add(path)
        yield path, True
        for href in pages[path].links:
            target = resolve(path, href, site.host)
            if target is not None and target not in seen:
                queue.append(target)
    for path in sorted(set(pages) - seen):
        yield path, False


def follow(path: str, redirects: dict[str, str]) -> str | None:
    """*path* after its redirects (None for a loop)."""
    for _ in range(10):
        if path not in redirects:
            return path
        path = redirects[path]
    return None


def html_files(root: Path) -> list[str]:
    return sorted(
        str(path.relative_to(root)) for path in root.rglob("*")
        if path.suffix in (".html", ".htm") and path.is_file()
    )


def build_site(site: Site, unpacked: Path, out_dir: Path, max_pages: int, version: str) -> dict[str, object]:
    """Read every page of *site*, order them and write its files; return its summary."""
    root = unpacked / site.root
    files = html_files(root)
    started = time.monotonic()
    with ProcessPoolExecutor(os.cpu_count()) as pool:
        read = list(pool.map(read_page, ((str(root), path) for path in files), chunksize=64))
    redirects = {
        page.path: target for page in read if page.redirect
        for target in [resolve(page.path, page.redirect, site.host)] if target is not None
    }
    pages = {page.path: page for page in read if not page.redirect}
    print(f"{site.name}: read {len(files)} files ({len(redirects)} redirects) in "
          f"{time.monotonic() - started:.0f} s", file=sys.stderr)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = reached = 0
    generators: Counter[str] = Counter()
    with gzip.open(out_dir / "pages.jsonl.gz", "wt", encoding="utf-8", compresslevel=5) as stream:
        for path, was_reached in crawl_order(site, pages, redirects):
            if written == max_pages:
                break
            stream.write(json.dumps(record(site, pages[path], was_reached), ensure_ascii=False) + "\n")
            written += 1
            reached += was_reached
            generators[pages[path].generator] += 1
    summary: dict[str, object] = {
        "site": site.name, "package": site.package, "version": version, "host": site.host,
        "start": site.start, "lang": site.lang, "html_files": len(files), "pages_in_package": len(pages),
        "pages": written, "reached": reached, "generators": dict(generators.most_common()),
        "redirects": {path: follow(target, redirects) for path, target in sorted(redirects.items())},
    }
    (out_dir / "site.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False), encoding="utf-8")
    return summary


def record(site: Site, page: Page, reached: bool) -> dict[str, object]:
    url = f"http://{site.host}/{page.path}"
    return {
        "id": url, "url": url, "site": site.name, "lang": site.lang, "generator": page.generator,
        "reached": reached, "html": page.html, "main_text": page.main_text,
    }


# -- packages ------------------------------------------------------------------------


def fetch_package(package: str, cache: Path) -> tuple[Path, str]:
    """Download (once) and unpack *package*; return the unpack directory and its version."""
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    deb = _deb_file(package, debs)
    if deb is None:
        subprocess.run(["apt-get", "download", package], cwd=debs, check=True)
        deb = _deb_file(package, debs)
        assert deb is not None, f"apt-get download {package} left no .deb in {debs}"
    version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    unpacked = cache / "unpacked" / package
    if not (unpacked / ".done").exists():
        unpacked.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
        (unpacked / ".done").write_text(version, encoding="utf-8")
    return unpacked, version


def _deb_file(package: str, debs: Path) -> Path | None:
    found = sorted(debs.glob(f"{package}_*.deb"))
    return found[-1] if found else None


def read_pages(path: Path) -> Iterable[dict[str, object]]:
    """The records of a ``pages.jsonl.gz``, in crawl order."""
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        for line in stream:
            yield json.loads(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="download and output directory")
    parser.add_argument("--sites", default=",".join(SITES), help="comma-separated site names")
    parser.add_argument("--max-pages", type=int, default=DEFAULT_MAX_PAGES, help="pages per site at most")
    args = parser.parse_args()
    for name in args.sites.split(","):
        site = SITES[name]
        started = time.monotonic()
        unpacked, version = fetch_package(site.package, args.cache)
        summary = build_site(site, unpacked, args.cache / "sites" / name, args.max_pages, version)
        print(f"{name}: {site.package} {version}: {summary['pages']} pages written "
              f"({summary['reached']} reached by links, {summary['pages_in_package']} in the package), "
              f"generators {summary['generators']}, {time.monotonic() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
