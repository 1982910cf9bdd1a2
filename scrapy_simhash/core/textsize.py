"""How much text, and how much prose, an element holds: the measure of :mod:`.content`.

Link text is wrapped in private-use markers (:func:`mark_links`), so one C-level
text serialisation of a subtree gives both its text and its prose (text outside
links). Serialising is the costly part (~10 ns a character), and the descent of
:func:`.descent.main_container` measures each level again, so :class:`ChildSizes`
measures each child at most once and leaves one child per parent unserialised: its
size follows from the parent's, as sizes add up over a parent's own text, its
children and their tails.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator

from lxml import etree

# Private-use characters: never rendered, never in real text.
LINK_OPEN, LINK_CLOSE = "\ue001", "\ue002"
LINK_TEXT = re.compile("\ue001[^\ue002]*\ue002")
#: Parents with at most this many children have all of them sized at once (and the
#: likely biggest derived, not serialised); more (an article's paragraphs) in order,
#: lazily, as the descent usually stops early among them.
MAX_SIZED_AT_ONCE = 16


def mark_links(body: etree._Element, prose: Collection[etree._Element] = ()) -> None:
    """Wrap the text of every link in markers, so link text can be counted in C; the
    links in *prose* (a table of contents') are left as they are, prose."""
    for link in body.iter("a"):
        if link in prose:
            continue
        text, tail = link.text, link.tail  # read once: each read decodes a new string
        link.text = LINK_OPEN + text if text else LINK_OPEN
        link.tail = LINK_CLOSE + tail if tail else LINK_CLOSE


def without_markers(text: str) -> str:
    """*text* less the markers of :func:`mark_links`."""
    return text.replace(LINK_OPEN, "").replace(LINK_CLOSE, "")


def unmark_links(element: etree._Element, within: frozenset[str]) -> None:
    """Take the markers of :func:`mark_links` off the links inside *within* elements."""
    for outer in element.iter(*within):
        for link in outer.iter("a"):
            link.text = (link.text or "").removeprefix(LINK_OPEN) or None
            link.tail = (link.tail or "").removeprefix(LINK_CLOSE) or None


def visible_chars(serialised: str) -> int:
    """Characters of *serialised* text, spaces (indentation mostly) and markers not counted."""
    return len(serialised) - serialised.count(" ") - 2 * serialised.count(LINK_OPEN)


def measure(element: etree._Element, prose: bool = True) -> int:
    """Characters of text inside *element*, whitespace not counted.

    With *prose*, link text is not counted either (links must have been marked by
    :func:`mark_links`).
    """
    return measure_both(element)[0 if prose else 1]


def measure_both(element: etree._Element) -> tuple[int, int]:
    """:func:`measure` with and without *prose*, from one serialisation."""
    serialised = etree.tostring(element, method="text", encoding=str, with_tail=False)
    everything = visible_chars(serialised)
    if LINK_OPEN not in serialised:
        return everything, everything
    return visible_chars(LINK_TEXT.sub("", serialised)), everything


class ChildSizes:
    """Sizes (prose, or all text) of children along a descent, each found at most once."""

    def __init__(self, prose: bool) -> None:
        self.prose = prose
        self._known: dict[etree._Element, int] = {}

    def of_children(self, parent: etree._Element, held: int) -> Iterator[tuple[etree._Element, int]]:
        """``(child, chars)`` for the children of *parent*, which holds *held* characters."""
        if len(parent) <= MAX_SIZED_AT_ONCE:
            return iter(self._all_at_once(parent, held))
        return self._in_order(parent, held)

    def _size(self, child: etree._Element) -> int:
        chars = self._known.get(child)
        if chars is None:
            chars = self._known[child] = measure(child, self.prose)
        return chars

    def _all_at_once(self, parent: etree._Element, held: int) -> list[tuple[etree._Element, int]]:
        children = list(parent)
        known = self._known
        unknown = [index for index, child in enumerate(children) if child not in known]
        loose = _loose_chars(parent)
        if unknown and loose is not None:
            # Measure the others and derive the one likely biggest: the main column.
            spans = _line_spans(parent, children)
            derived = max(unknown, key=spans.__getitem__)
            others = sum(self._size(child) for index, child in enumerate(children) if index != derived)
            known[children[derived]] = held - others - loose
        return [(child, self._size(child)) for child in children]

    def _in_order(self, parent: etree._Element, held: int) -> Iterator[tuple[etree._Element, int]]:
        measured = 0
        last = len(parent) - 1
        for index, child in enumerate(parent):
            chars = self._known.get(child)
            if chars is None and index == last:
                loose = _loose_chars(parent)
                if loose is not None:
                    chars = self._known[child] = held - measured - loose
            if chars is None:
                chars = self._size(child)
            measured += chars
            yield child, chars


def _loose_chars(parent: etree._Element) -> int | None:
    """Characters of *parent*'s own text and its children's tails.

    None when a marker is among them: a link cut in two, so sizes do not add up.
    """
    loose = "".join([parent.text or "", *(child.tail or "" for child in parent)])
    if LINK_OPEN in loose or LINK_CLOSE in loose:
        return None
    return visible_chars(loose)


def _line_spans(parent: etree._Element, children: list[etree._Element]) -> list[int]:
    """Source lines from each child to the next one: a cheap guess at its size."""
    lines = [child.sourceline or 0 for child in children] + [_last_line(children[-1]) + 1]
    return [end - start for start, end in zip(lines, lines[1:])]


def _last_line(element: etree._Element) -> int:
    """The line of the last element inside *element* (about where it ends)."""
    while len(element):
        element = element[-1]
    return element.sourceline or 0
