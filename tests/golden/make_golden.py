"""Write ``fingerprints.json``: the golden fingerprints that ``tests/test_golden.py`` holds.

Run it after a change that alters fingerprints (extraction, tokens, features, SimHash,
sketch), from the repository root: ``python tests/golden/make_golden.py``. It refuses
to write new fingerprints under the version that recorded other ones: bump
``ALGORITHM_VERSION`` in ``scrapy_simhash/core/options.py`` first, so that stored
indexes of the old fingerprints are refused instead of mixed with the new ones.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from scrapy_simhash import Fingerprinter
from scrapy_simhash.core.fingerprinter import ALGORITHM_VERSION

HERE = Path(__file__).parent
GOLDEN = HERE / "fingerprints.json"
#: The fixed pages, kept in the repository: the test runs wherever the tests do.
PAGES = HERE / "pages.jsonl.gz"
#: Where they were sampled from, once.
CORPUS_PAGES = HERE.parents[1].parent / "shared" / "corpus" / "dev" / "pages.jsonl.gz"
#: Every this-many-th page of the dev corpus: English and Chinese, articles and variants.
EVERY = 97


def golden_pages() -> list[dict[str, str]]:
    """The fixed pages: a sample of the dev corpus, in file order (sampled into
    :data:`PAGES` the first time), and pages added since where a version changed what
    the sample does not hold (version 13: a book's chapter page, its title and table of
    contents, ``dev-01261``; version 14: a book's front page, its table of contents
    numbered, ``dev-00611``; version 15, from Debian's doc packages: a Doxygen source page
    that shows its file's name alone, ``dealii-helper__functions_8h_source``, and one
    without a ``<title>``, ``jsoncpp-roadmap_8dox``, and a Javadoc "uses of" page, its
    heading an ``<h2>`` with a line break, ``jsoup-class-use-Jsoup``; version 16: a repost in
    a forum's thread, its replies left out, ``dev-00241``; version 17: a pydoctor class page,
    each member's signature in a repeated ``div.functionHeader``,
    ``twisted-doc-twisted.protocols.dict.Definition``; version 18, pages of generated sites
    a review found dropped: a shop's category page of product cards,
    ``shop-category-laptops-page1``, a question whose ``<h1>`` links to itself,
    ``qa-question-linked-h1``, and a dictionary's term beside a disclaimer every page shows,
    ``dictionary-term-beside-disclaimer``; version 19: a WordPress brief beside an appeal
    for support, its ``<h1>`` in a pruned ``<header>``, ``wordpress-brief-beside-appeal``)."""
    if not PAGES.exists():
        with gzip.open(CORPUS_PAGES, "rt", encoding="utf-8") as lines:
            sample = [line for number, line in enumerate(lines) if number % EVERY == 0]
        with gzip.open(PAGES, "wt", encoding="utf-8") as out:
            out.writelines(sample)
    with gzip.open(PAGES, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def fingerprints_of(pages: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Each page's fingerprint, wildcard mask and sketch under the default options."""
    fingerprinter = Fingerprinter()
    rows = []
    for page in pages:
        result = fingerprinter.from_html(page["html"], url=page["url"])
        rows.append({
            "id": page["id"],
            "fingerprint": None if result.fingerprint is None else f"{result.fingerprint:016x}",
            "wildcard": f"{result.wildcard:016x}",
            "sketch": result.sketch.hex() if result.sketch else None,
            "skip_reason": result.skip_reason,
        })
    return rows


def digest(rows: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]


def main() -> int:
    rows = fingerprints_of(golden_pages())
    previous = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {"versions": {}}
    versions: dict[str, str] = previous["versions"]
    recorded = versions.get(str(ALGORITHM_VERSION))
    if recorded not in (None, digest(rows)):
        print(f"fingerprints changed under ALGORITHM_VERSION {ALGORITHM_VERSION}: bump it first", file=sys.stderr)
        return 1
    versions[str(ALGORITHM_VERSION)] = digest(rows)
    golden = {"algorithm_version": ALGORITHM_VERSION, "versions": versions, "pages": rows}
    GOLDEN.write_text(json.dumps(golden, indent=1) + "\n")
    print(f"{GOLDEN}: {len(rows)} pages, version {ALGORITHM_VERSION}, digest {versions[str(ALGORITHM_VERSION)]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
