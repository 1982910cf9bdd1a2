"""The page's heading, kept when the name rules would lose it (step 1 of :mod:`.content`).

Generated documentation prints a page's heading inside a container named for the page's
frame: Javadoc's ``<div class="header"><h1>Class Element</h1>``, Doxygen's
``<div class="header"><div class="headertitle"><div class="title">SolverCG Struct
Reference</div>``. The class/id rules prune such a "header" and the heading with it, and
sibling pages of one site (the structs of one family, a ``.cc`` file and its header) are
then left with nothing kept that tells them apart: the largest share of the wrong drops
on a big Doxygen site (README, "Precision at scale").

The page's heading is its first ``<h1>`` (none when all its text is a link and a link in
or around it goes to the site's home: a site's name, :func:`links_home`; a question's
title linking to its own page, as Stack Exchange prints it, is the heading); on a page
without ``<h1>``, the element with no child element but line
breaks (:func:`shown_text`), neither a link nor in one, whose text is the page's
``<title>``, or the title less a part before or after a separator (the site's name:
"deal.II: SolverCG Struct Reference"), a last part in brackets (Javadoc's "Uses of Class
org.jsoup.Jsoup (jsoup Java HTML Parser 1.15.3 API)", shown as ``<h2>Uses of
Class<br>org.jsoup.Jsoup</h2>``) or a file's path ("generators.cc File Reference" for
"deal.II: source/particles/generators.cc File Reference"), or the file's name alone
("config.h" for "deal.II: include/deal.II/base/config.h Source File"), the longest of those
it shows; on a page without a ``<title>``, the text of its first visible element named
``title`` stands for it (:func:`heading_texts`). It is kept, first among the page's blocks,
when the descent did not keep it and a container named boilerplate by its class or id (or
the heading itself) is what lost it. Not when an element around it is boilerplate by its
tag or role: an HTML5 ``<header>`` holds a byline and a date too, and they stay out as
before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from lxml import etree

from . import boilerplate
from .names import BY_NAME, BY_ROLE
from .text import INVISIBLE_TAGS, body_of

#: What sites put between a page's heading and their name in its <title> (the
#: fingerprinter's separators less the comma); a separator has a space beside it, so that
#: ``Functions::ZeroFunction`` is one part.
_TITLE_SEPARATOR = re.compile(r"\s+[-_|:·•–—>»›]+\s*|[-_|:·•–—>»›]+\s+")

#: A file's name: a stem with a letter, and an extension of letters and digits that starts
#: with a letter ("helper_functions.h", "index.rst"; not "3.11").
_FILE_NAME = re.compile(r"[^\s/]*[^\W\d_][^\s/]*\.[^\W\d_][^\W_]{0,7}")


def title_parts(title: str) -> tuple[str, ...]:
    """The texts that show a page's *title* as its heading: the whole title, and the
    title less its first or its last part, any of those less a last part in brackets, and
    any of those less a path before its last ``/``, and the file's name that follows such
    a path (spaces collapsed, longest first).

    >>> title_parts("The deal.II Library: SolverCG Struct Reference")
    ('The deal.II Library: SolverCG Struct Reference', 'SolverCG Struct Reference', 'The deal.II Library')
    >>> title_parts("  Settings   | Django | Docs ")
    ('Settings | Django | Docs', 'Settings | Django', 'Django | Docs')
    >>> title_parts("Lib: src/fe/block_mask.cc File Reference")[2:4]
    ('block_mask.cc File Reference', 'block_mask.cc')

    """
    title = " ".join(title.split())
    pieces = _TITLE_SEPARATOR.split(title)
    parts = {title}
    if len(pieces) > 1:
        first_cut = _TITLE_SEPARATOR.search(title)
        last_cut = list(_TITLE_SEPARATOR.finditer(title))[-1]
        assert first_cut is not None
        parts.update((title[first_cut.end() :].strip(), title[: last_cut.start()].strip()))
    # "Uses of Class org.jsoup.Jsoup (jsoup Java HTML Parser 1.15.3 API)": the site in brackets.
    parts.update([part[: part.rindex(" (")].strip() for part in list(parts) if part.endswith(")") and " (" in part])
    # A file's page names it by its path in the title, by its name on the page:
    # "deal.II: source/particles/generators.cc File Reference" shows "generators.cc File Reference",
    # and "deal.II: include/deal.II/base/config.h Source File" shows "config.h" alone.
    after_paths = [part.rpartition("/")[2].strip() for part in parts if "/" in part]
    parts.update(after_paths)
    parts.update(name for name in (_file_name(part) for part in after_paths) if name)
    return tuple(sorted((part for part in parts if part), key=lambda part: (-len(part), part)))


def _file_name(after_path: str) -> str | None:
    """The first word of what follows a title's path, when it is a file's name (it has an
    extension: ``config.h``), else None."""
    words = after_path.split(maxsplit=1)
    return words[0] if words and _FILE_NAME.fullmatch(words[0]) else None


def heading_texts(root: etree._Element, title: str) -> tuple[str, ...]:
    """What may show the page's heading: the parts of its *title* (:func:`title_parts`) or,
    for a page without one, of the text of the first visible element in the body of *root*
    (the page) named ``title`` by its class or id (Doxygen's ``<div class="title">``, where a
    site's own page header left out the ``<title>``), with no child element but line breaks
    and not in a link. (The body is found only then: most pages have a title.)

    Asked of the whole tree, before anything is stripped (comments, invisible elements,
    digests), by the C and the Python extraction alike. Only the exact name: a
    ``widget-title`` names a sidebar's box, not the page.
    """
    if title.strip():
        return title_parts(title)
    for element in body_of(root).iter(etree.Element):  # (a walk that stops at the first: cheaper than an XPath)
        if not _named_title(element):
            continue
        if any(node.tag in INVISIBLE_TAGS or node.tag == "a" for node in (element, *element.iterancestors())):
            continue
        shown = shown_text(element)
        if shown:
            return title_parts(shown)
    return ()


def _named_title(element: etree._Element) -> bool:
    """Whether *element*'s class holds the word ``title`` or its id is ``title``, any case."""
    return "title" in (element.get("class") or "").lower().split() or (element.get("id") or "").lower() == "title"


def page_heading(body: etree._Element, parts: Iterable[str]) -> etree._Element | None:
    """The page's first ``<h1>``, or else its longest element showing one of the title's
    *parts* (see the module doc); first in document order among equals."""
    h1 = next(body.iter("h1"), None)
    if h1 is not None:
        return None if _all_link_text(h1) and links_home_around(h1) else h1
    wanted = frozenset(parts)
    best, best_length = None, 0
    for element in body.iter(etree.Element):
        if element is body or element.tag == "a":
            continue
        text = shown_text(element)
        if text is not None and len(text) > best_length and text in wanted and not _in_link(element):
            best, best_length = element, len(text)
    return best


def shown_text(element: etree._Element) -> str | None:
    """The text of an element that holds no child element but line breaks (Javadoc's
    ``<h2>Uses of Class<br>org.jsoup.Jsoup</h2>``), spaces collapsed, a break a space
    (comments' text left out); ``None`` for an element with other children."""
    pieces = [element.text or ""]
    for child in element:
        if isinstance(child.tag, str):
            if child.tag != "br":
                return None
            pieces.append(" ")
        pieces.append(child.tail or "")
    return " ".join("".join(pieces).split())


def lost_by_name(heading: etree._Element, body: etree._Element) -> bool:
    """Whether the name rules prune *heading* (or an element around it, below *body*),
    and no element around it is boilerplate by its tag or its role. Asked before pruning."""
    named = False
    repeated = boilerplate.repeated_in(body)
    for element in (heading, *heading.iterancestors()):
        if element is body:
            break
        if element.tag in boilerplate.BOILERPLATE_TAGS:
            return False
        if element.tag not in boilerplate.CONTAINER_TAGS:
            continue
        verdict = boilerplate.container_verdict(element, repeated)
        if verdict == BY_ROLE:
            return False
        named = named or (verdict == BY_NAME and not boilerplate.reads_as_section(element))
    return named


def is_kept(heading: etree._Element, kept: list[etree._Element]) -> bool:
    """Whether *heading* is in the *kept* elements (and was not pruned with an element
    around it: then its ancestors end at that element)."""
    kept_ids = {id(element) for element in kept}
    return any(id(element) in kept_ids for element in (heading, *heading.iterancestors()))


def _all_link_text(element: etree._Element) -> bool:
    """Whether all of *element*'s text (spaces aside) is inside links: a site's name linking
    home (``<div id="header"><h1><a href="/">Blog</a></h1>``), not the page's heading."""
    return not any(
        (text or "").strip() for node in (element, *element.iterdescendants()) if isinstance(node.tag, str)
        for text in ((node.text if node.tag != "a" and not _in_link(node) else None),
                     (node.tail if node is not element and not _in_link(node) else None))
    )


def links_home_around(element: etree._Element) -> bool:
    """Whether a link around *element* or inside it goes to the site's home (:func:`links_home`)."""
    links = (*element.iterancestors("a"), *element.iterdescendants("a"))
    return any(links_home(link.get("href")) for link in links)


#: The path of a site's home page, relative or from the root: ``/``, ``./``, ``../../``,
#: ``index.html``, ``/default.aspx``, ``home.php``.
_HOME_PATH = re.compile(r"(?:\.{1,2}/)*/?(?:(?:index|default|home)(?:\.[A-Za-z0-9]+)?)?", re.IGNORECASE | re.ASCII)
#: A scheme and a host (``https://example.com``, ``//example.com``), before the path.
_SCHEME_AND_HOST = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//[^/?#]*", re.ASCII)


def links_home(href: str | None) -> bool:
    """Whether a link to *href* goes to a site's home page (its query and fragment aside).
    A link to the page itself (``""``, ``#top``, ``?page=2``) does not, nor one to no
    page (an ``<a name>``).

    >>> [links_home(href) for href in ("/", "https://example.com", "../index.html", "#top", "/q/101/title")]
    [True, True, True, False, False]
    """
    if href is None:
        return False
    href = href.strip(" \t\n\r\f")
    path = href[: min((at for at in (href.find("?"), href.find("#")) if at >= 0), default=len(href))]
    host = _SCHEME_AND_HOST.match(path)
    if host is not None:
        path = path[host.end() :]
    elif not path:
        return False  # (the page itself)
    return _HOME_PATH.fullmatch(path) is not None


def _in_link(element: etree._Element) -> bool:
    return any(ancestor.tag == "a" for ancestor in element.iterancestors())
