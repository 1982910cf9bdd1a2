from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from scrapy_simhash.index.redis._keys import _HAS_CODE, _PIECES, decode_stored_key, encode_stored_key
from scrapy_simhash.index._storage import encode_key

PIECES = [piece.decode() for _, piece in _PIECES]


# every code point, lone surrogates (category Cs) too
EVERY_STR = st.text(st.characters(codec=None, exclude_categories=()))


@given(EVERY_STR)
def test_every_str_round_trips(key: str) -> None:
    assert decode_stored_key(encode_stored_key(key)) == key


@given(EVERY_STR)
def test_no_key_holds_a_code_before_coding(key: str) -> None:
    # what makes the coding lossless without an escape
    assert not _HAS_CODE.search(encode_key(key))


@given(st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=3)), max_size=12).map("".join))
def test_keys_made_of_pieces_round_trip(key: str) -> None:
    assert decode_stored_key(encode_stored_key(key)) == key


def test_url_pieces_take_one_byte_each() -> None:
    url = "https://www.example.com/section-1/article/2.html"
    assert len(encode_stored_key(url)) == len(url) - len("https://www.") - len(".com/") - len(".html") + 3
    assert encode_stored_key("http://example.net/a/index.php") == b"\xf6example\xfaa\xff\xfd"


def test_keys_without_pieces_are_plain_utf8() -> None:
    assert encode_stored_key("item:42 é") == "item:42 é".encode()


def test_damaged_bytes_come_back_replaced_not_raised() -> None:
    assert decode_stored_key(b"a\xed\xa0b") == "a\ufffd\ufffdb"
