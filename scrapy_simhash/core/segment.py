"""Text -> word tokens, script run by script run.

Han text has no spaces, so its runs go to a dictionary segmenter: jieba, or rjieba (the
Rust port of jieba: the same dictionary and the same cuts, ~25x faster); or, with the
``"char"`` segmenter, every Han character is a token. Every other script goes through
one precompiled regex. Mixed text is split at Han runs first, so the segmenter only ever
sees pure Han text: that is the input on which jieba and rjieba are known to agree (on
mixed text they split digits and punctuation differently).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator

Segment = Callable[[str], list[str]]

#: Names accepted by the ``segmenter`` option.
SEGMENTERS = ("auto", "jieba", "rjieba", "char")
#: Joins text blocks: the tokenizer returns it as a token of its own, so the blocks'
#: tokens can be told apart after one tokenizer call (ASCII "record separator").
BLOCK_SEPARATOR = "\x1e"

# jieba's own Han class (``jieba.re_han_default``): the segmenter sees these runs only.
_SEGMENTED_HAN = "\u4e00-\u9fd5"
# Other ideographs (extension A, late unified, compatibility, planes 2-3): jieba cuts them
# one character per token, and so do we, without calling it.
_ASTRAL_IDEOGRAPHS = "\U00020000-\U0003ffff"
_OTHER_IDEOGRAPHS = "\u3400-\u4dbf\u9fd6-\u9fff\uf900-\ufaff" + _ASTRAL_IDEOGRAPHS
_HIRAGANA = "\u3041-\u309f"
_KATAKANA = "\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"  # without the middle dot U+30FB
# Thai, Lao, Myanmar, Khmer: written without spaces and with no segmenter here, so one
# token per character (shingles of them behave like character n-grams).
_UNSPACED = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
# Combining marks that Python's ``\w`` does not match (Devanagari vowel signs: r"\w+" cuts
# "हिन्दी" into three pieces). Block-level ranges, without the Indic dandas U+0964/5.
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670"
    "\u06d6-\u06ed\u0711\u0730-\u074a\u0900-\u0963\u0966-\u0dff\u0f18-\u0fbc"
    "\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\u302a-\u302f\u3099\u309a\ufe20-\ufe2f"
)
_NOT_WORD = _HIRAGANA + _KATAKANA + _OTHER_IDEOGRAPHS + _UNSPACED + _SEGMENTED_HAN

# Split with a capturing group: pieces alternate non-Han, Han, non-Han, ...
_HAN_RUNS = re.compile(f"([{_SEGMENTED_HAN}]+)")
# The common case (a word of letters/digits, marks allowed inside) is tried first.
_WORD = re.compile(
    f"[^\\W{_NOT_WORD}]+(?:[{_MARKS}]+[^\\W{_NOT_WORD}]*)*"
    f"|[{_HIRAGANA}]+|[{_KATAKANA}]+|[{_OTHER_IDEOGRAPHS}{_UNSPACED}]|{BLOCK_SEPARATOR}"
)
# With the "char" segmenter a Han character is a token: one findall does all the text
# (a _WORD match never holds Han, so it never crosses a Han run).
_CHAR_OR_WORD = re.compile(f"[{_SEGMENTED_HAN}]|{_WORD.pattern}")
# Text with none of these characters (most Latin, Cyrillic, Greek, Hangul text) is
# tokenized by plain \w+, ~2x faster than _WORD. Planes 2-3 ideographs are left out
# because a class with astral ranges is searched ~2x slower; alone, without any BMP
# Han, they are vanishingly rare.
_NEEDS_SCRIPT_RULES = re.compile(f"[{_MARKS}{_NOT_WORD.replace(_ASTRAL_IDEOGRAPHS, '')}]")
#: The classes of _CHAR_OR_WORD's alternatives, in its order (Han, marks continuing a word,
#: hiragana runs, katakana runs, one-character tokens), for the C tokenizer (core/features_c/classes.c).
SCRIPT_CLASSES = (_SEGMENTED_HAN, _MARKS, _HIRAGANA, _KATAKANA, _OTHER_IDEOGRAPHS + _UNSPACED)
_PLAIN_WORD = re.compile(f"\\w+|{BLOCK_SEPARATOR}")
# Plain text is tokenized ~3x faster than by _PLAIN_WORD in UTF-8: ASCII bytes that are
# not word characters become spaces and bytes.split() cuts there, in C. Non-ASCII bytes
# stay, so only the few chunks that hold them ("café", "don’t") go through _PLAIN_WORD.
_SEPARATOR_BYTES = BLOCK_SEPARATOR.encode()
_ASCII_NOT_WORD = bytes(code for code in range(128) if not re.match(r"\w", chr(code)))
_ASCII_TO_SPACE = bytes.maketrans(
    _ASCII_NOT_WORD.replace(_SEPARATOR_BYTES, b""),
    b" " * (len(_ASCII_NOT_WORD) - 1),
)
_NON_ASCII = re.compile(rb"[\x80-\xff]+")
# The commonest non-ASCII punctuation of English pages (95% of their non-ASCII characters
# on the dev corpus): blanked before encoding, they no longer make chunks for _PLAIN_WORD.
_COMMON_PUNCTUATION = "’¶“”–‘—\xa0"
_NEEDS_RJIEBA = "segmenter='rjieba' needs the rjieba package: pip install rjieba"


class Tokenizer:
    """Split normalised text into tokens; Han runs go to the segmenter named *segmenter*.

    The segmenter is loaded on the first text with Han, never before.

    >>> tokenize = Tokenizer(segmenter="jieba")
    >>> tokenize("hello world")
    ['hello', 'world']
    >>> tokenize("rjieba是jieba的rust移植版本")
    ['rjieba', '是', 'jieba', '的', 'rust', '移植', '版本']
    >>> tokenize("naïve café, 한국어 2023-07-29 テスト・ケース の हिन्दी")
    ['naïve', 'café', '한국어', '2023', '07', '29', 'テスト', 'ケース', 'の', 'हिन्दी']
    >>> sorted(tokenize.counts("中文 text, 中文!").items())
    [('text', 1), ('中文', 2)]
    """

    def __init__(self, segmenter: str = "auto") -> None:
        self.segmenter = check_segmenter(segmenter)
        if segmenter == "rjieba" and importlib.util.find_spec("rjieba") is None:
            raise ImportError(_NEEDS_RJIEBA)  # fail now, not at the first Chinese page

    def __call__(self, text: str) -> list[str]:
        """The tokens of *text*, in order."""
        if not _NEEDS_SCRIPT_RULES.search(text):
            return _PLAIN_WORD.findall(text)
        return self._with_script_rules(text)

    def raw(self, text: str) -> list[str] | list[bytes]:
        """The tokens of *text*, in order, faster: plain text's come as UTF-8 bytes.

        :mod:`.hashing` hashes a token and its UTF-8 bytes alike.
        """
        # Blanking punctuation changes no token (it is never part of one), and leaves
        # most English text ASCII: known plain without a regex scan.
        text = _blank_punctuation(text)
        if text.isascii() or not _NEEDS_SCRIPT_RULES.search(text):
            return _plain_tokens(text)
        return self._with_script_rules(text)

    def _with_script_rules(self, text: str) -> list[str]:
        if self.segmenter == "char":
            return _CHAR_OR_WORD.findall(text)
        pieces = _HAN_RUNS.split(text)
        tokens = _WORD.findall(pieces[0])
        for index in range(1, len(pieces), 2):
            tokens += self._cut(pieces[index])
            tokens += _WORD.findall(pieces[index + 1])
        return tokens

    def counts(self, text: str) -> Counter[str] | Counter[bytes]:
        """How often each token occurs in *text* (keys as :meth:`raw` gives them).

        Block separators are not counted: they only matter to shingles of 2+ tokens.

        All Han runs are cut in one call, joined by newlines: jieba cuts at every
        non-Han character, so each run is cut as if alone (the newlines come back as
        tokens, dropped here). A page has hundreds of runs: ~40% faster.
        """
        if not _NEEDS_SCRIPT_RULES.search(text):
            plain = Counter(_plain_tokens(text))
            plain.pop(_SEPARATOR_BYTES, None)
            return plain
        pieces = _HAN_RUNS.split(text)
        counts = Counter(_WORD.findall(" ".join(pieces[0::2])))
        if len(pieces) > 1:
            counts.update(self._cut("\n".join(pieces[1::2])))
            counts.pop("\n", None)
        counts.pop(BLOCK_SEPARATOR, None)
        return counts

    @functools.cached_property
    def _cut(self) -> Segment:
        return load_segmenter(self.segmenter)


def _plain_tokens(text: str) -> list[bytes]:
    """The tokens of text without script rules, in order, as UTF-8 bytes.

    >>> _plain_tokens("don’t panic: naïve (x²)")
    [b'don', b't', b'panic', b'na\\xc3\\xafve', b'x\\xc2\\xb2']
    """
    text = _blank_punctuation(text.replace(BLOCK_SEPARATOR, f" {BLOCK_SEPARATOR} "))
    data = text.encode("utf-8", "surrogatepass").translate(_ASCII_TO_SPACE)
    if text.isascii():  # most English pages, once punctuation is blanked: no regex scan
        return data.split()
    tokens: list[bytes] = []
    done = 0
    for run in _NON_ASCII.finditer(data):
        if run.start() < done:
            continue  # in the chunk just tokenized
        start = data.rfind(b" ", 0, run.start()) + 1
        end = data.find(b" ", run.end())
        end = len(data) if end < 0 else end
        tokens += data[done:start].split()
        chunk = data[start:end].decode("utf-8", "surrogatepass")
        tokens += [token.encode("utf-8", "surrogatepass") for token in _PLAIN_WORD.findall(chunk)]
        done = end
    tokens += data[done:].split()
    return tokens


def _blank_punctuation(text: str) -> str:
    """*text* with the commonest non-ASCII punctuation as spaces (no token changes)."""
    for mark in _COMMON_PUNCTUATION:
        if mark in text:
            text = text.replace(mark, " ")
    return text


def check_segmenter(name: str) -> str:
    """Return *name* if it names a segmenter, else raise ``ValueError``."""
    if name not in SEGMENTERS:
        choices = ", ".join(map(repr, SEGMENTERS))
        raise ValueError(f"segmenter must be one of {choices}, not {name!r}")
    return name


@functools.cache
def load_segmenter(name: str) -> Segment:
    """The Han segmenter called *name* ("auto" = rjieba if importable, else jieba).

    Raises ``ValueError`` for an unknown name, ``ImportError`` when the package is missing.
    """
    if check_segmenter(name) == "char":
        return list  # "中文" -> ["中", "文"]
    if name != "jieba":
        try:
            return _load_rjieba()
        except ImportError:
            if name == "rjieba":
                raise
    return _load_jieba()


def _load_rjieba() -> Segment:
    try:
        import rjieba  # builds its dictionary on import (~0.2 s), hence the lazy import
    except ImportError as exc:
        raise ImportError(_NEEDS_RJIEBA) from exc
    return rjieba.cut


def _load_jieba() -> Segment:
    import jieba

    with _quiet(logging.getLogger("jieba")):
        jieba.initialize()  # loads the dictionary (~1 s) and logs about it at DEBUG
    return jieba.lcut


@contextlib.contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    """Raise *logger* to WARNING for a while, then give it back its own level."""
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)
