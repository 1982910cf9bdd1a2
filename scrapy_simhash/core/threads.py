"""A thread's replies: the posts after the first are its comments.

A forum thread or an article with comments shows its posts as siblings of one shape (the
same tag and the same first class name), each under its author's name and the time it was
posted. The page is its first post; the replies change from one copy to the next (a
repost in a forum gathers others; the same thread, crawled again, has more), as a comment
section does. They are left out of the main text, as comments named so are
(:mod:`.names`), when

* at least two such siblings each hold a date and a time of day (:func:`has_stamp`: a
  date alone is a listing's, "2024-05-03", a post's says when, "2024-05-03 21:04");
* the first holds a heading (the post's title, or the headings of an article posted in
  it) and none of the others does: a list of articles, each under its heading, is not a
  thread, and neither is a thread whose posts are all alike (a discussion), which stays
  whole.

The C extraction (``extract_c/threads.c``) finds them itself and asks :func:`has_stamp` of
the candidates' text; tests/test_threads.py holds both to the same results.
"""

from __future__ import annotations

import re

from lxml import etree

from .text import HEADING_TAGS

__all__ = ["has_stamp", "thread_replies"]

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_STAMP = re.compile(
    r"(?:\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}日?"  # 2021-01-22, 2021年1月22日
    rf"|{_MONTH}\s+{_DAY},?\s+\d{{4}}"  # Jul 16, 2025
    rf"|{_DAY}\s+{_MONTH},?\s+\d{{4}})"  # 16 July 2025
    r",?\s*(?:at\s+)?\d{1,2}:\d{2}",  # then the time of day: 00:35
    re.IGNORECASE,
)
# The first class name, as the C code cuts it: HTML's spaces only.
_HTML_SPACES = " \t\n\r\f"
_FIRST_CLASS = re.compile(f"[^{_HTML_SPACES}]+")


def has_stamp(text: str) -> bool:
    """Whether *text* says when it was posted: a date, then a time of day.

    >>> has_stamp("楼主 发表于 2021-01-22 12:20 | 只看该作者"), has_stamp("Jul 16, 2025 00:35:47 · #2")
    (True, True)
    >>> has_stamp("Released 2024-05-03"), has_stamp("Meet at 12:20")
    (False, False)
    """
    return _STAMP.search(text) is not None


def thread_replies(body: etree._Element) -> list[etree._Element]:
    """The replies of the threads in *body* (see the module), in document order."""
    holders: set[etree._Element] = set()  # the elements that hold a heading: posts may open threads
    parents: dict[etree._Element, None] = {}  # ...and those that hold one of them
    for heading in body.iter(*HEADING_TAGS):
        holders.add(heading)
        for parent in heading.iterancestors():
            holders.add(parent)
            if parent in parents or parent is body:
                parents[parent] = None
                break  # (its ancestors are in already, or outside the body)
            parents[parent] = None
    replies = {reply for parent in parents for reply in _replies_among(parent, holders)}
    if not replies:
        return []
    return [element for element in body.iter() if element in replies]


def _replies_among(parent: etree._Element, holders: set[etree._Element]) -> list[etree._Element]:
    """The replies among *parent*'s children: each shape's posts after the first, if they
    are a thread's (each child looked at once, whatever the number of shapes)."""
    posts: dict[tuple[str, str], list[etree._Element]] = {}
    for child in parent:
        key = _post_key(child)
        if key is not None:
            posts.setdefault(key, []).append(child)
    replies = []
    for first, *later in posts.values():
        if first in holders and later and not any(post in holders for post in later):
            if all(has_stamp(_text(post)) for post in (first, *later)):
                replies.extend(later)
    return replies


def _post_key(element: etree._Element) -> tuple[str, str] | None:
    """The shape of a post: its tag and its first class name (None: no class, no post)."""
    if not isinstance(element.tag, str):
        return None  # (a comment)
    first = _FIRST_CLASS.search(element.get("class") or "")
    return None if first is None else (element.tag, first.group())


def _text(element: etree._Element) -> str:
    return etree.tostring(element, method="text", encoding=str, with_tail=False)
