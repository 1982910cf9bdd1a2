from __future__ import annotations

import gzip
import importlib.util
import itertools
import json
import subprocess
import sys
from collections import Counter

import pytest

from conftest import CORPUS, needs_corpus
from scrapy_simhash.core import segment
from scrapy_simhash.core.segment import Tokenizer, load_segmenter

HAS_RJIEBA = importlib.util.find_spec("rjieba") is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the quick brown fox, the end.", ["the", "quick", "brown", "fox", "the", "end"]),
        ("v2.0 on 2023-07-29: 100% snake_case", ["v2", "0", "on", "2023", "07", "29", "100", "snake_case"]),
        ("naïve café über", ["naïve", "café", "über"]),
        ("привет мир γειά σου", ["привет", "мир", "γειά", "σου"]),
        ("한국어 텍스트입니다", ["한국어", "텍스트입니다"]),
        ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),  # vowel signs are not \w: they must not cut words
        ("カタカナのテスト・ケース", ["カタカナ", "の", "テスト", "ケース"]),
        ("ไทย", ["ไ", "ท", "ย"]),  # no spaces, no segmenter: one token per character
        ("emoji 🎉 party 😀!", ["emoji", "party"]),
        ("", []),
        (" \n\t ,.;", []),
        ("\u3400\u3401 are extension-A ideographs", ["\u3400", "\u3401", "are", "extension", "a", "ideographs"]),
    ],
)
def test_tokens_of_scripts_without_segmenter(text: str, expected: list[str]) -> None:
    assert Tokenizer()(text.lower()) == expected


def test_non_han_text_never_loads_a_segmenter() -> None:
    tokenize = Tokenizer(segmenter="jieba")
    tokenize("plain english, кириллица, カタカナ, 한국어")
    assert "_cut" not in vars(tokenize)


@pytest.mark.parametrize("name", ["jieba", "auto"])
def test_chinese_is_segmented_into_words(name: str) -> None:
    tokens = Tokenizer(segmenter=name)("我们在北京天安门看升旗")
    assert "".join(tokens) == "我们在北京天安门看升旗"
    assert "北京" in tokens and len(tokens) < 8


def test_char_segmenter_makes_every_han_character_a_token() -> None:
    tokenize = Tokenizer(segmenter="char")
    assert tokenize("debian 12 安装指南，第3章") == ["debian", "12", "安", "装", "指", "南", "第", "3", "章"]
    assert _as_text(tokenize.counts("中文 text 中文")) == Counter({"中": 2, "文": 2, "text": 1})


def test_block_separator_is_a_token_of_its_own() -> None:
    for name in ("jieba", "char"):
        tokens = Tokenizer(segmenter=name)(segment.BLOCK_SEPARATOR.join(["a b", "中文", "", "ä"]))
        assert tokens.count(segment.BLOCK_SEPARATOR) == 3, name


def test_mixed_text_is_split_by_script_runs() -> None:
    tokens = Tokenizer(segmenter="jieba")("2023-07-29发布的debian安装指南，共12章")
    assert tokens[:5] == ["2023", "07", "29", "发布", "的"]
    assert "debian" in tokens and "12" in tokens and "，" not in tokens
    assert "".join(tokens) == "20230729发布的debian安装指南共12章"


def test_japanese_kanji_go_to_the_segmenter_and_kana_to_the_regex() -> None:
    tokens = Tokenizer(segmenter="jieba")("日本語のテキストを分割する")
    assert "の" in tokens and "テキスト" in tokens and "を" in tokens
    assert "".join(tokens) == "日本語のテキストを分割する"


@pytest.mark.parametrize(
    "text",
    ["", "plain words, plain words", "中文", "第一章：安装。第二章：配置\n第一章 mixed 文本 text", "a\nb 中\n文"],
)
@pytest.mark.parametrize("name", ["jieba", "char"])
def test_counts_are_the_counts_of_the_tokens(text: str, name: str) -> None:
    tokenize = Tokenizer(segmenter=name)
    assert _as_text(tokenize.counts(text)) == Counter(tokenize(text))


@needs_corpus
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", ["auto", "char"])
def test_counts_match_tokens_on_corpus_pages(lang: str, name: str) -> None:
    tokenize = Tokenizer(segmenter=name)
    for text in _corpus_texts(lang, 40):
        assert _as_text(tokenize.counts(text)) == Counter(tokenize(text))


@pytest.mark.parametrize(
    "text",
    ["", "don’t panic: naïve (x²) ¶ ok", "a\x1eb é\x1e\x1eö", "ünïcödé…", "中文 and text", "“q” – ‘x’—\xa0y"],
)
def test_raw_tokens_are_the_tokens_or_their_utf8(text: str) -> None:
    tokenize = Tokenizer()
    assert [_decoded(t) for t in tokenize.raw(text)] == tokenize(text)


@needs_corpus
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_raw_tokens_match_tokens_on_corpus_pages(lang: str) -> None:
    tokenize = Tokenizer()
    for text in _corpus_texts(lang, 40):
        assert [_decoded(t) for t in tokenize.raw(text)] == tokenize(text)


@pytest.mark.parametrize(
    "text",
    [
        "中文字符", "rjieba是jieba的rust移植版本", "\u4e00\u9fd5\u9fd6 カナ の 한국어 ไทย",
        "a\x1e中\x1e\x1eb", "", "数字 2023年",
    ],  # fmt: skip
)
def test_char_tokens_are_han_runs_cut_into_characters(text: str) -> None:
    assert Tokenizer(segmenter="char")(text) == _char_tokens_run_by_run(text)


@needs_corpus
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_char_tokens_match_run_by_run_cutting_on_corpus_pages(lang: str) -> None:
    tokenize = Tokenizer(segmenter="char")
    for text in _corpus_texts(lang, 40):
        assert tokenize(text) == _char_tokens_run_by_run(text)


def _char_tokens_run_by_run(text: str) -> list[str]:
    """The reference: split at Han runs, each run one token per character, regex words between."""
    pieces = segment._HAN_RUNS.split(text)
    tokens = segment._WORD.findall(pieces[0])
    for run, after in zip(pieces[1::2], pieces[2::2]):
        tokens += list(run) + segment._WORD.findall(after)
    return tokens


def _decoded(token: str | bytes) -> str:
    return token.decode() if isinstance(token, bytes) else token


def _as_text(counts: Counter[str] | Counter[bytes]) -> Counter[str]:
    """Counts keyed by str (the fast path counts UTF-8 bytes)."""
    return Counter({_decoded(k): v for k, v in counts.items()})


@pytest.mark.parametrize("name", ["", "Jieba", "pkuseg", "chars", None])
def test_unknown_segmenter_is_refused(name: object) -> None:
    with pytest.raises(ValueError, match="segmenter must be one of"):
        Tokenizer(segmenter=name)  # type: ignore[arg-type]


def test_missing_rjieba(monkeypatch: pytest.MonkeyPatch) -> None:
    # rjieba is installed here, so hide it: the only way to test the fallback for real.
    monkeypatch.setitem(sys.modules, "rjieba", None)
    load_segmenter.cache_clear()
    try:
        with pytest.raises(ImportError, match="pip install rjieba"):
            Tokenizer(segmenter="rjieba")
        with pytest.raises(ImportError, match="pip install rjieba"):
            load_segmenter("rjieba")
        assert Tokenizer(segmenter="auto")("北京天安门") == Tokenizer(segmenter="jieba")("北京天安门")
    finally:
        load_segmenter.cache_clear()


def test_loading_jieba_logs_nothing() -> None:
    code = "from scrapy_simhash.core.segment import load_segmenter; print(load_segmenter('jieba')('中文'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['中文']"
    assert done.stderr == ""


def _corpus_texts(lang: str, count: int) -> list[str]:
    """Main texts of the dev corpus (lower-cased) in English or with Han (zh)."""
    with gzip.open(CORPUS / "main_text.jsonl.gz", "rt", encoding="utf-8") as lines:
        texts = (json.loads(line)["main_text"].lower() for line in lines)
        wanted = (t for t in texts if bool(segment._HAN_RUNS.search(t)) == (lang == "zh"))
        return list(itertools.islice(wanted, count))


@needs_corpus
@pytest.mark.skipif(not HAS_RJIEBA, reason="rjieba is not installed")
def test_rjieba_segments_han_text_like_jieba() -> None:
    runs = [run for text in _corpus_texts("zh", 60) for run in segment._HAN_RUNS.findall(text)]
    jieba_cut, rjieba_cut = load_segmenter("jieba"), load_segmenter("rjieba")
    assert len(runs) > 1000
    for run in runs:
        assert rjieba_cut(run) == jieba_cut(run), run


@needs_corpus
@pytest.mark.skipif(not HAS_RJIEBA, reason="rjieba is not installed")
def test_rjieba_and_jieba_tokenizers_agree_on_mixed_text() -> None:
    texts = _corpus_texts("zh", 40)
    fast, reference = Tokenizer("rjieba"), Tokenizer("jieba")
    assert [fast(t) for t in texts] == [reference(t) for t in texts]
    assert [fast.counts(t) for t in texts] == [reference.counts(t) for t in texts]
