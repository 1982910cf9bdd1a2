"""Main-content extraction: token-level precision/recall against the reference main text, and speed.

Compares scrapy-simhash's extractor (``content.extract_main_blocks``), trafilatura
(if installed) and a plain dump of all visible text, on the dev corpus pages, per
language. Precision/recall are over the bag of tokens (every Han character, every
other word run, as the ground truth counts them); MB/s is HTML bytes per CPU second
of extraction (parsing included), one core.

    python benchmarks/bench_extraction.py [--quick] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from scrapy_simhash.core import content, text

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dev"
# The ground truth's tokens: each Han character, each other run of word characters.
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(f"[{_HAN}]|[^\\W{_HAN}]+")

Extractor = Callable[[bytes], str]


def ours(html: bytes) -> str:
    return "\n".join(content.extract_main_blocks(text.parse_html(html)))


def plain_dump(html: bytes) -> str:
    return text.visible_text(text.parse_html(html))


def _trafilatura() -> Extractor | None:
    try:
        import trafilatura
    except ImportError:
        return None

    def extract(html: bytes) -> str:
        return trafilatura.extract(html, include_comments=False, include_tables=True) or ""

    return extract


def tokens(value: str) -> Counter[str]:
    return Counter(_TOKEN.findall(text.normalize(value)))


def measure(
    extract: Extractor, pages: list[dict[str, object]], reference: dict[str, str]
) -> tuple[float, float, float]:
    """(precision, recall, MB/s) of *extract* over *pages*."""
    common = found = wanted = 0
    seconds = 0.0
    for page in pages:
        html = str(page["html"]).encode("utf-8")
        start = time.process_time()
        extracted = extract(html)
        seconds += time.process_time() - start
        got, ref = tokens(extracted), tokens(reference[str(page["id"])])
        common += sum((got & ref).values())
        found += sum(got.values())
        wanted += sum(ref.values())
    size = sum(len(str(page["html"]).encode("utf-8")) for page in pages) / 1e6
    return common / max(found, 1), common / max(wanted, 1), size / max(seconds, 1e-9)


def _read(path: Path) -> list[dict[str, object]]:
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return [json.loads(line) for line in stream]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 pages per language")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    pages = _read(args.corpus / "pages.jsonl.gz")
    reference = {str(row["id"]): str(row["main_text"]) for row in _read(args.corpus / "main_text.jsonl.gz")}
    extractors: dict[str, Extractor | None] = {
        "scrapy-simhash": ours, "trafilatura": _trafilatura(), "plain text dump": plain_dump,
    }
    print(f"{'extractor':<16} {'lang':<4} {'pages':>5} {'precision':>9} {'recall':>7} {'MB/s':>7}")
    for language in ("en", "zh"):
        chosen = [page for page in pages if page["lang"] == language]
        if args.quick:
            chosen = chosen[:200]
        for name, extract in extractors.items():
            if extract is None:
                print(f"{name:<16} {language:<4} (not installed)")
                continue
            precision, recall, speed = measure(extract, chosen, reference)
            scores = f"{precision:>9.3f} {recall:>7.3f} {speed:>7.1f}"
            print(f"{name:<16} {language:<4} {len(chosen):>5} {scores}")


if __name__ == "__main__":
    main()
