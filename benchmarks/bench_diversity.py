"""Main-content extraction across many page templates: per generator and per language.

    python benchmarks/diversity_data.py            # the data, once (~30 s, ~80 MB downloaded)
    python benchmarks/bench_diversity.py [--quick] [--pages DIR/pages.jsonl.gz] [--show N]

Scores scrapy-simhash's extractor, trafilatura (if installed) and a plain dump of the
visible text against the reference main text of ``diversity_data.py``'s pages (Debian
documentation packages of generators that are not in the dev corpus), with
``bench_extraction.py``'s measures: token precision and recall over all the pages' tokens,
the mean of the pages' recall ("page R"), the pages keeping less than half of their main
text's tokens ("lost half", count and %), and MB/s of HTML per CPU second, one core.
One row per generator and extractor, then all English and all Chinese pages together.
``--show N`` lists our N pages of lowest recall, with the first reference line we miss.
``--quick``: the first 20 pages of each generator. Each extractor gets the page's HTML and a URL
on a host of its generator (``http://doxygen.test/<path>``), as a crawl would: ours tells the
page's own links from links into other pages by it (:mod:`scrapy_simhash.core.digests`).

The goal (issue 16): mean token recall >= 0.95, precision >= 0.98, at most 0.5% of the
pages losing half of their main text, in English and in Chinese.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

import bench_extraction
import scale_data
from bench_extraction import Extractor
from diversity_data import DEFAULT_CACHE

Page = dict[str, object]
QUICK_PAGES = 20


def extractors() -> dict[str, Extractor | None]:
    return {"scrapy-simhash": bench_extraction.ours, "trafilatura": bench_extraction._trafilatura(),
            "plain text dump": bench_extraction.plain_dump}


def groups(pages: list[Page]) -> list[tuple[str, str, list[Page]]]:
    """(generator, lang, pages) per generator in file order, then all pages per language."""
    by_generator: dict[str, list[Page]] = {}
    for page in pages:
        by_generator.setdefault(str(page["generator"]), []).append(page)
    rows = [(name, str(chosen[0]["lang"]), chosen) for name, chosen in by_generator.items()]
    for language in ("en", "zh"):
        chosen = [page for page in pages if page["lang"] == language]
        if chosen:
            rows.append((f"all {language}", language, chosen))
    return rows


def row(name: str, language: str, extractor: str, pages: list[Page], m: dict[str, float]) -> str:
    share = 100 * m["lost_half"] / max(len(pages), 1)
    return (f"{name:<15} {language:<4} {extractor:<16} {len(pages):>5} {m['precision']:>9.3f} {m['recall']:>7.3f}"
            f" {m['page_recall']:>7.3f} {int(m['lost_half']):>5d} {share:>6.1f}% {m['mb_s']:>7.1f}")


def worst(pages: list[Page], reference: dict[str, str], count: int) -> Iterable[str]:
    """Our *count* pages of lowest recall, each with the first reference line we miss."""
    scored = []
    for page in pages:
        html = str(page["html"]).encode("utf-8")
        got = bench_extraction.tokens(bench_extraction.ours(html, bench_extraction.page_url(page)))
        wanted = bench_extraction.tokens(reference[str(page["id"])])
        scored.append((sum((got & wanted).values()) / max(sum(wanted.values()), 1), page, got))
    for recall, page, got in sorted(scored, key=lambda item: item[0])[:count]:
        missed = next((line for line in reference[str(page["id"])].splitlines()
                       if not bench_extraction.tokens(line) <= got), "")
        yield f"{recall:.2f} {page['id']}  missed: {missed[:100]!r}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=Path, default=DEFAULT_CACHE / "pages.jsonl.gz")
    parser.add_argument("--quick", action="store_true", help=f"the first {QUICK_PAGES} pages of each generator")
    parser.add_argument("--show", type=int, default=0, help="list our N pages of lowest recall")
    args = parser.parse_args()
    pages: list[Page] = list(scale_data.read_pages(args.pages))
    if args.quick:
        pages = [page for name, _, chosen in groups(pages) if not name.startswith("all ")
                 for page in chosen[:QUICK_PAGES]]
    reference = {str(page["id"]): str(page["main_text"]) for page in pages}
    print(f"{'generator':<15} {'lang':<4} {'extractor':<16} {'pages':>5} {'precision':>9} {'recall':>7}"
          f" {'page R':>7} {'lost half':>13} {'MB/s':>7}")
    for name, language, chosen in groups(pages):
        for extractor, extract in extractors().items():
            if extract is None:
                print(f"{name:<15} {language:<4} {extractor:<16} (not installed)")
                continue
            print(row(name, language, extractor, chosen, bench_extraction.measure(extract, chosen, reference)))
    if args.show:
        print("\nlowest recall (ours):")
        print("\n".join(worst(pages, reference, args.show)))


if __name__ == "__main__":
    main()
