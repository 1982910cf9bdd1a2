"""Main-content extraction: token-level precision/recall against the reference main text, and speed.

Compares scrapy-simhash's extractor (``content.extract_main_blocks``), trafilatura
(if installed) and a plain dump of all visible text, on the dev corpus pages, per
language. Precision/recall are over the bag of tokens (every Han character, every
other word run, as the ground truth counts them), over all pages at once and as the
mean of the pages' own ("page P/R"); "lost half" counts the pages that keep less than
half of their main text's tokens; MB/s is HTML bytes per CPU second of extraction
(parsing included), one core.

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

#: An extractor: a page's HTML and its URL (None: unknown) -> its main text.
Extractor = Callable[[bytes, "str | None"], str]


def ours(html: bytes, url: str | None = None) -> str:
    """As a crawl extracts: the page's <title> read (its heading), at its URL (its own links)."""
    return "\n".join(content.extract_main_blocks(text.parse_html(html, strip_invisible=False), url))


def plain_dump(html: bytes, url: str | None = None) -> str:
    return text.visible_text(text.parse_html(html))


def _trafilatura() -> Extractor | None:
    try:
        import trafilatura
    except ImportError:
        return None

    def extract(html: bytes, url: str | None = None) -> str:
        return trafilatura.extract(html, url=url, include_comments=False, include_tables=True) or ""

    return extract


def tokens(value: str) -> Counter[str]:
    return Counter(_TOKEN.findall(text.normalize(value)))


def measure(
    extract: Extractor, pages: list[dict[str, object]], reference: dict[str, str]
) -> dict[str, float]:
    """Precision, recall (all tokens, and the mean of the pages'), pages that lost half
    of their main text, and MB/s of *extract* over *pages*."""
    common = found = wanted = 0
    page_precisions, page_recalls = [], []
    seconds = 0.0
    for page in pages:
        html = str(page["html"]).encode("utf-8")
        start = time.process_time()
        extracted = extract(html, page_url(page))
        seconds += time.process_time() - start
        got, ref = tokens(extracted), tokens(reference[str(page["id"])])
        shared = sum((got & ref).values())
        common, found, wanted = common + shared, found + sum(got.values()), wanted + sum(ref.values())
        if ref:
            page_recalls.append(shared / sum(ref.values()))
            page_precisions.append(shared / sum(got.values()) if got else 0.0)
    size = sum(len(str(page["html"]).encode("utf-8")) for page in pages) / 1e6
    return {
        "precision": common / max(found, 1), "recall": common / max(wanted, 1),
        "page_precision": sum(page_precisions) / max(len(page_precisions), 1),
        "page_recall": sum(page_recalls) / max(len(page_recalls), 1),
        "lost_half": sum(recall < 0.5 for recall in page_recalls), "mb_s": size / max(seconds, 1e-9),
    }


def page_url(page: dict[str, object]) -> str | None:
    """The page's URL: its own, or for a page of ``diversity_data.py`` (``id`` =
    ``generator/path``) one on a host of its generator, as a crawl of its site would see."""
    if page.get("url"):
        return str(page["url"])
    site, _, path = str(page["id"]).partition("/")
    return f"http://{site}.test/{path}" if path else None


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
    print(f"{'extractor':<16} {'lang':<4} {'pages':>5} {'precision':>9} {'recall':>7} {'page P':>7}"
          f" {'page R':>7} {'lost half':>9} {'MB/s':>7}")
    for language in ("en", "zh"):
        chosen = [page for page in pages if page["lang"] == language]
        if args.quick:
            chosen = chosen[:200]
        for name, extract in extractors.items():
            if extract is None:
                print(f"{name:<16} {language:<4} (not installed)")
                continue
            m = measure(extract, chosen, reference)
            scores = (f"{m['precision']:>9.3f} {m['recall']:>7.3f} {m['page_precision']:>7.3f} {m['page_recall']:>7.3f}"
                      f" {m['lost_half']:>9d} {m['mb_s']:>7.1f}")
            print(f"{name:<16} {language:<4} {len(chosen):>5} {scores}")


if __name__ == "__main__":
    main()
