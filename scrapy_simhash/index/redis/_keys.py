"""How a Redis log stores keys: UTF-8 with common URL pieces cut to one byte each.

Keys are mostly URLs, and in Redis their bytes are most of a record (8 bytes of
fingerprint and 4 of key end besides), so the pieces nearly every URL repeats
(scheme, ``www.``, a common top-level domain, a file extension) are stored as one
byte each. Lossless for every ``str``, URL or not: keys are UTF-8 with lone
surrogates kept (``surrogatepass``), which never holds the bytes 0xC0, 0xC1 or
0xF5-0xFF (RFC 3629, section 3), so those 13 bytes can stand for the pieces with
no escape. A key's coded bytes are the same wherever it is coded, so the scripts
compare coded keys as they are (``remove`` of one key).

>>> encode_stored_key("https://www.example.com/a.html")
b'\\xc0example\\xf8a\\xfb'
>>> decode_stored_key(encode_stored_key("https://www.example.com/a.html"))
'https://www.example.com/a.html'
"""

from __future__ import annotations

import re

from .._storage import decode_key, encode_key

# The bytes UTF-8 never holds (RFC 3629, section 3): each stands for one piece.
_CODES = bytes([0xC0, 0xC1, *range(0xF5, 0x100)])
# In the order the encoder replaces them: a piece before any piece it contains
# ("https://www." before "https://" and "www.", ".html" before ".htm"). Changing
# this list changes the stored format (_layout.FORMAT_VERSION).
_URL_PIECES = (b"https://www.", b"http://www.", b"https://", b"http://", b"www.", b".com/", b".org/",
               b".net/", b".html", b".htm", b".php", b".asp", b"/index")
_PIECES = tuple(zip((bytes([code]) for code in _CODES), _URL_PIECES, strict=True))
# Only keys with a code need expanding.
_HAS_CODE = re.compile(b"[" + re.escape(_CODES) + b"]")


def encode_stored_key(key: str) -> bytes:
    """*key* as a Redis log stores it (see the module doc)."""
    data = encode_key(key)
    for code, piece in _PIECES:
        data = data.replace(piece, code)
    return data


def decode_stored_key(data: bytes) -> str:
    """The key :func:`encode_stored_key` coded as *data*."""
    if _HAS_CODE.search(data):
        for code, piece in _PIECES:
            data = data.replace(code, piece)
    return decode_key(data)
