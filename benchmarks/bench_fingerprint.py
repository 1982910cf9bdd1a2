"""HTML -> fingerprint throughput (MB/s of HTML, one core), English and Chinese apart.

Side by side, on the pages of the dev corpus:

- ours: ``Fingerprinter().from_html(body, url=url)`` with the default options (Han
  characters as tokens), then with ``segmenter="rjieba"`` and ``segmenter="jieba"``
  (jieba words; the pair shows what rjieba saves), then with the defaults but our C
  modules switched off (what an install without a C compiler runs);
- the usual recipe: lxml text dump + ``simhash.Simhash(text)`` of the `simhash` PyPI
  package (its default features: character 4-grams);
- lxml parsing alone, the floor of any lxml-based pipeline;

then where our time goes (parse / extract / features / simhash). Each pipeline is new
(cold caches) for each run and sees each page once; the best of ``--repeat`` runs counts.
Times are CPU seconds of this single-threaded process (BLAS kept to one thread), which
other processes on the machine disturb less than wall time.

    python benchmarks/bench_fingerprint.py            # all 2,598 pages
    python benchmarks/bench_fingerprint.py --quick    # 200 pages per language
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gzip
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # one core, before NumPy starts its BLAS

import lxml.html  # noqa: E402
import numpy as np  # noqa: E402
import simhash as simhash_pypi  # noqa: E402
from lxml import etree  # noqa: E402

from scrapy_simhash import Fingerprinter, FingerprintOptions  # noqa: E402
from scrapy_simhash.core import content, features, fingerprint, fingerprinter, templates, text  # noqa: E402
from scrapy_simhash.core.fingerprinter import Segmenter  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dev" / "pages.jsonl.gz"
Page = tuple[str, bytes]  # url, body
Pipeline = Callable[[bytes, str], object]
_PARSER = etree.HTMLParser(encoding="utf-8", remove_comments=True, no_network=True)
_WARM_UP = "<html><body><p>预热 warm up</p></body></html>".encode()


def load_pages(per_language: int | None) -> dict[str, list[Page]]:
    pages: dict[str, list[Page]] = {"en": [], "zh": []}
    with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
        for line in lines:
            page = json.loads(line)
            pages[page["lang"]].append((page["url"], page["html"].encode("utf-8")))
    return {lang: found[:per_language] for lang, found in pages.items()}


def ours(segmenter: Segmenter | None = None) -> Pipeline:
    options = FingerprintOptions()
    if segmenter is not None:
        options = dataclasses.replace(options, segmenter=segmenter)
    fingerprinter = Fingerprinter(options)
    return lambda body, url: fingerprinter.from_html(body, url=url)


#: Where our modules keep their C module (None: the Python twin runs).
#: (The same list as tests/c_modules.py: a script does not import the tests.)
_C_MODULES = (
    (content, "_extract"), (text, "_extract"), (templates, "_extract"), (features, "_features"), (fingerprint, "_features"),
)  # fmt: skip


@contextlib.contextmanager
def c_modules_off() -> Iterator[None]:
    """Our C modules switched off: what an install without a C compiler runs."""
    saved = [getattr(module, name) for module, name in _C_MODULES]
    for module, name in _C_MODULES:
        setattr(module, name, None)
    try:
        yield
    finally:
        for (module, name), value in zip(_C_MODULES, saved):
            setattr(module, name, value)


def ours_without_c() -> Pipeline:
    with c_modules_off():
        fingerprinter = Fingerprinter()  # (its featurizer chooses its code when it is made)

    def fingerprint_page(body: bytes, url: str) -> object:
        with c_modules_off():
            return fingerprinter.from_html(body, url=url)

    return fingerprint_page


class _PackageSimhash(simhash_pypi.Simhash):  # type: ignore[misc]
    """simhash 2.1.2 unchanged, but for a crash under NumPy 2: a feature seen > 255 times
    multiplies a uint8 bit array by its count (OverflowError); widen that array."""

    @staticmethod
    def _bitarray_from_bytes(b: bytes) -> np.ndarray:
        return np.unpackbits(np.frombuffer(b, dtype=np.uint8)).astype(np.int64)


def lxml_and_simhash_package() -> Pipeline:
    def fingerprint(body: bytes, url: str) -> int:
        root = lxml.html.document_fromstring(body)
        return _PackageSimhash(root.text_content()).value

    return fingerprint


def lxml_parse_only() -> Pipeline:
    return lambda body, url: etree.fromstring(body, _PARSER)


PIPELINES: dict[str, Callable[[], Pipeline]] = {
    "scrapy-simhash (defaults)": ours,
    "scrapy-simhash segmenter=rjieba": lambda: ours("rjieba"),
    "scrapy-simhash segmenter=jieba": lambda: ours("jieba"),
    "scrapy-simhash without its C code": ours_without_c,
    "lxml + simhash package": lxml_and_simhash_package,
    "lxml parse only (floor)": lxml_parse_only,
}


def best_seconds(make: Callable[[], Pipeline], pages: list[Page], repeat: int) -> float:
    """Best wall time of *repeat* runs, each with a new pipeline (no warm caches carried over)."""
    times = []
    for _ in range(repeat):
        pipeline = make()
        pipeline(_WARM_UP, "http://warm.up/")  # load dictionaries outside the clock: once a crawl
        started = time.process_time()
        for url, body in pages:
            pipeline(body, url)
        times.append(time.process_time() - started)
    return min(times)


@contextlib.contextmanager
def stage_clock(totals: dict[str, float]) -> Iterator[None]:
    """Time the named stages of our pipeline by wrapping the functions it calls."""
    targets = [  # where the callers look the functions up (wrapped once each)
        ("parse", text, "parse_html"),
        ("parse", fingerprinter, "parse_html"),
        ("features", features.Featurizer, "features"),
        # The facade's call (the sketch's shingles with the features); in C it calls no
        # other timed function, so nothing is counted twice.
        ("features", features.Featurizer, "features_and_shingle_set"),
        ("simhash", features, "simhash"),
        ("simhash", fingerprinter, "simhash"),
        ("simhash", fingerprinter, "simhash_margins"),
    ]
    saved = []
    for stage, owner, name in targets:
        if name not in vars(owner):  # e.g. the facade calls text.parse_html, not its own
            continue
        original = getattr(owner, name)
        saved.append((owner, name, original))
        setattr(owner, name, _timed(original, stage, totals))
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _timed(
    function: Callable[..., object], stage: str, totals: dict[str, float]
) -> Callable[..., object]:
    def wrapper(*args: object, **kwargs: object) -> object:
        started = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            totals[stage] = totals.get(stage, 0.0) + time.process_time() - started

    return wrapper


def breakdown(pages: list[Page]) -> dict[str, float]:
    """Share of our time per stage; "extract" is everything not in another stage."""
    totals: dict[str, float] = {}
    pipeline = ours()
    pipeline(_WARM_UP, "http://warm.up/")
    with stage_clock(totals):
        started = time.process_time()
        for url, body in pages:
            pipeline(body, url)
        total = time.process_time() - started
    totals["extract+rest"] = total - sum(totals.values())
    return {stage: seconds / total for stage, seconds in totals.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="200 pages per language, one run")
    parser.add_argument("--repeat", type=int, default=None, help="runs per pipeline (best counts)")
    args = parser.parse_args()
    pages = load_pages(200 if args.quick else None)
    repeat = args.repeat or (1 if args.quick else 3)
    print(f"{'lang':4} {'pipeline':34} {'pages':>5} {'MB':>6} {'ms/page':>8} {'MB/s':>6} {'x pkg':>6}")
    for lang, found in pages.items():
        megabytes = sum(len(body) for _, body in found) / 1e6
        rates = {name: megabytes / best_seconds(make, found, repeat) for name, make in PIPELINES.items()}
        for name, rate in rates.items():
            ms = megabytes / rate / len(found) * 1e3
            ratio = rate / rates["lxml + simhash package"]
            row = f"{lang:4} {name:34} {len(found):5} {megabytes:6.1f} {ms:8.3f} {rate:6.1f} {ratio:6.2f}"
            print(row)
        shares = breakdown(found)
        print(f"{lang:4} our time by stage: " + ", ".join(f"{k} {v:.0%}" for k, v in shares.items()))
    print(f"(one core; best of {repeat} run(s); MB = 10^6 bytes of HTML)")


if __name__ == "__main__":
    main()
