"""A thread's replies (core/threads.py) are left out of the main text, by both twins."""

from __future__ import annotations

from contextlib import nullcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from c_modules import python_instead_of
from test_extract_c import both_ways, needs_c

from scrapy_simhash.core import content, text
from scrapy_simhash.core.threads import has_stamp

ARTICLE = "<h2>Partitioning</h2><p>Put /home on its own partition, and /var too when the disk is big enough.</p>"
REPLIES = ["Thanks, that worked for me on the old laptop.", "Which file system do you use for /var?",
           "Bump: still the same question here."]


def _post(first: bool, body: str, stamp: str) -> str:
    return (f"<table class='post {'first' if first else 'reply'}'><tr><td class='author'>user{len(body)}<br>"
            f"Posts: 42</td><td><div class='date'>{stamp} | #1</div><div>{body}</div></td></tr></table>")


def _thread(article: str = ARTICLE, replies: list[str] = REPLIES, stamp: str = "2021-01-22 12:20") -> str:
    posts = [_post(True, article, stamp), *(_post(False, f"<span>{reply}</span>", stamp) for reply in replies)]
    return f"<html><body><div id='postlist'>{''.join(posts)}</div></body></html>"


def _extract(html: str, python: bool) -> str:
    with python_instead_of("extraction") if python else nullcontext():
        return "\n".join(content.extract_main_blocks(text.parse_html(html)))


@pytest.mark.parametrize("python", [False, True])
@pytest.mark.parametrize("stamp", ["2021-01-22 12:20", "2021年1月22日 12:20", "Jul 16, 2025 00:35:47",
                                   "16 July 2025, 00:35"])
def test_the_replies_of_a_thread_are_left_out(stamp: str, python: bool) -> None:
    extracted = _extract(_thread(stamp=stamp), python)
    assert "Put /home on its own partition" in extracted
    assert not any(reply in extracted for reply in REPLIES)


@pytest.mark.parametrize("python", [False, True])
def test_the_same_thread_with_other_replies_extracts_the_same(python: bool) -> None:
    assert _extract(_thread(), python) == _extract(_thread(replies=["Another reply, written much later."]), python)


_NESTED = _thread(article=ARTICLE + _thread().split("<body>")[1].split("</body>")[0])  # a thread in the first post
_NAMED = _thread().replace("class='post reply'", "class='post reply comment'", 1)  # a reply named a comment too
_UNSTAMPED = _thread().replace("2021-01-22 12:20", "yesterday", 2)  # the first reply has no stamp
_EARLIER = _post(False, "Earlier", "2021-01-22 12:20")
# Posts of many shapes under one parent (each its own first class name, as WordPress's
# "post-123 post"), and one thread among them; a heading inside a heading.
_SHAPES = "<html><body>" + "".join(
    f"<div class='post-{n} post'><h2>Post {n}</h2><p>On 2021-01-22 12:{n:02d}, post {n}.</p></div>" for n in range(40)
) + _thread().split("<body>")[1]
_NESTED_HEADINGS = _thread(article="<h2>Partitioning <h3 class='x'>a</h3><h3 class='x'>b 2021-01-22 12:20</h3></h2>")
_NOT_FIRST = _thread().replace("<div id='postlist'>", f"<div id='postlist'>{_EARLIER}")


@pytest.mark.parametrize("python", [False, True])
@pytest.mark.parametrize("page", [
    _thread(article="<p>Put /home on its own partition, and /var too when the disk is big enough.</p>"),  # no heading
    _thread(stamp="2021-01-22"),  # dates without a time of day: a listing's
    _thread(replies=[f"<h3>Reply {n}</h3>{reply}" for n, reply in enumerate(REPLIES)]),  # each under a heading
    _NOT_FIRST,  # the post with a heading is not the first of its shape
])  # fmt: skip
def test_posts_that_are_no_thread_stay(page: str, python: bool) -> None:
    extracted = _extract(page, python)
    assert all(reply in extracted for reply in REPLIES)


def test_a_stamp_is_a_date_then_a_time_of_day() -> None:
    assert has_stamp("Posted on March 3rd, 2024 at 9:05 by Ann")
    assert has_stamp("发表于 2023/06/28 21:04")
    assert not has_stamp("Version 2.0 (2024-05-03), 12 changes")
    assert not has_stamp("March 2024 at 9:05")


@needs_c
@pytest.mark.parametrize("page", [_thread(), _NESTED, _NAMED, _UNSTAMPED, _NOT_FIRST,
                                  _thread(stamp="Jul 16, 2025 00:35"), _SHAPES, _NESTED_HEADINGS])
def test_the_c_extraction_finds_the_same_replies(page: str) -> None:
    c_blocks, python_blocks = both_ways(page)
    assert c_blocks == python_blocks


# Generated lists of posts: shapes that are threads and shapes that are not.
_POSTS = st.tuples(
    st.sampled_from(["div", "table", "li"]),
    st.sampled_from(["post", "post first", "post reply", "reply x", "post\tz"]),
    st.booleans(),  # under a heading
    st.sampled_from(["2021-01-22 12:20", "Jul 16, 2025 00:35", "2021-01-22", ""]),
    st.sampled_from(["Some words of the post, long enough to be a sentence of text.", "<b>bold</b> words",
                     "<div class='post'>a post inside, 2021-01-22 12:20</div>"]),
)


def _render(post: tuple[str, str, bool, str, str]) -> str:
    tag, names, headed, stamp, body = post
    inner = f"{'<h2>Heading of it</h2>' if headed else ''}<span>{stamp}</span> {body}"
    return f"<table class='{names}'><tr><td>{inner}</td></tr></table>" if tag == "table" else (
        f"<{tag} class='{names}'>{inner}</{tag}>")


_LISTS = st.lists(st.lists(_POSTS, min_size=1, max_size=6).map(lambda posts: "".join(map(_render, posts))),
                  min_size=1, max_size=3).map(lambda lists: "".join(f"<div>{posts}</div>" for posts in lists))


@needs_c
@settings(max_examples=300, deadline=None)
@given(_LISTS)
def test_generated_lists_of_posts_give_the_python_blocks(posts: str) -> None:
    c_blocks, python_blocks = both_ways(f"<html><head><title>Heading of it</title></head><body>{posts}</body></html>")
    assert c_blocks == python_blocks
